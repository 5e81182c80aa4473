//! Where should a handler's future wait once it is pending — a request waiting on its database?
//! `web` polls an async handler's future first on the worker that read the request; a future
//! that is ready is the answer at once. This measures the two places a pending one can go:
//!
//! - **runtime**: moved to the application's tokio runtime as a task (what `web` does now); when
//!   it ends, the answer is handed to the worker (a queue and the worker's wakeup);
//! - **worker**: kept by the worker; its waker hands the worker the future's number (a queue
//!   and the worker's wakeup), and the worker polls it, with the runtime entered.
//!
//! The "database" is a thread per connection that echoes 8 bytes; each request writes 8 bytes
//! on a pooled tokio `TcpStream` and reads the answer (64 requests in flight, a connection
//! each). The worker is a thread with a `mio` poll and waker, as a `web` worker. Printed: the
//! requests per second and the CPU per request of the worker and the runtime's thread
//! together (the database's threads left out), for each design, in alternating rounds.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const IN_FLIGHT: usize = 64;
const REQUESTS: usize = 100_000;
const ROUNDS: usize = 4;
const WAKER: mio::Token = mio::Token(0);

/// A request: 8 bytes to the database and its 8 back, on a pooled connection.
async fn query(mut conn: tokio::net::TcpStream) -> tokio::net::TcpStream {
    conn.write_all(b"selectme").await.expect("write");
    let mut answer = [0u8; 8];
    conn.read_exact(&mut answer).await.expect("read");
    conn
}

type Query = Pin<Box<dyn Future<Output = tokio::net::TcpStream> + Send>>;

/// What other threads hand the worker: done requests (runtime) or futures to poll (worker).
struct Inbox {
    done: Mutex<Vec<(usize, tokio::net::TcpStream)>>,
    woken: Mutex<Vec<usize>>,
    waker: mio::Waker,
}

/// A worker-held future's waker: its number to the worker's inbox.
struct Wakes {
    slot: usize,
    inbox: Arc<Inbox>,
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.inbox.woken.lock().expect("lock").push(self.slot);
        let _ = self.inbox.waker.wake();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Design {
    Runtime,
    Worker,
}

/// CPU nanoseconds this thread has used.
fn own_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Runs `REQUESTS` requests, `IN_FLIGHT` at a time, on a worker thread; the seconds taken and
/// the worker's CPU nanoseconds.
fn run(design: Design, rt: &tokio::runtime::Runtime, db: SocketAddr) -> (f64, u64) {
    let handle = rt.handle().clone();
    let conns: Vec<tokio::net::TcpStream> = (0..IN_FLIGHT)
        .map(|_| {
            rt.block_on(async {
                let s = tokio::net::TcpStream::connect(db).await.expect("connect");
                s.set_nodelay(true).expect("nodelay");
                s
            })
        })
        .collect();
    let worker = std::thread::spawn(move || {
        let cpu0 = own_cpu_ns();
        let mut poll = mio::Poll::new().expect("poll");
        let waker = mio::Waker::new(poll.registry(), WAKER).expect("waker");
        let inbox = Arc::new(Inbox {
            done: Mutex::new(Vec::new()),
            woken: Mutex::new(Vec::new()),
            waker,
        });
        let mut events = mio::Events::with_capacity(64);
        let mut held: Vec<Option<Query>> = (0..IN_FLIGHT).map(|_| None).collect();
        let mut wakers: Vec<Waker> = (0..IN_FLIGHT)
            .map(|slot| {
                Waker::from(Arc::new(Wakes {
                    slot,
                    inbox: Arc::clone(&inbox),
                }))
            })
            .collect();
        let began = Instant::now();
        let mut started = 0;
        let mut finished = 0;
        let mut ready: Vec<(usize, tokio::net::TcpStream)> = conns.into_iter().enumerate().collect();
        let mut batch = Vec::new();
        while finished < REQUESTS {
            // Start a request on each free connection: polled here first, as `web` does.
            for (slot, conn) in ready.drain(..) {
                if started == REQUESTS {
                    break;
                }
                started += 1;
                let mut fut: Query = Box::pin(query(conn));
                let _entered = handle.enter();
                let polled = match design {
                    Design::Runtime => fut.as_mut().poll(&mut Context::from_waker(Waker::noop())),
                    Design::Worker => fut.as_mut().poll(&mut Context::from_waker(&wakers[slot])),
                };
                match (polled, design) {
                    (Poll::Ready(conn), _) => {
                        finished += 1;
                        batch.push((slot, conn));
                    }
                    (Poll::Pending, Design::Runtime) => {
                        let inbox = Arc::clone(&inbox);
                        handle.spawn(async move {
                            let conn = fut.await;
                            inbox.done.lock().expect("lock").push((slot, conn));
                            let _ = inbox.waker.wake();
                        });
                    }
                    (Poll::Pending, Design::Worker) => held[slot] = Some(fut),
                }
            }
            ready.append(&mut batch);
            if !ready.is_empty() {
                continue;
            }
            poll.poll(&mut events, Some(Duration::from_secs(10))).expect("poll");
            ready.append(&mut inbox.done.lock().expect("lock"));
            finished += ready.len();
            let woken = std::mem::take(&mut *inbox.woken.lock().expect("lock"));
            let _entered = handle.enter();
            for slot in woken {
                let Some(fut) = held[slot].as_mut() else { continue };
                if let Poll::Ready(conn) = fut.as_mut().poll(&mut Context::from_waker(&wakers[slot])) {
                    held[slot] = None;
                    finished += 1;
                    ready.push((slot, conn));
                }
            }
        }
        wakers.clear();
        (began.elapsed().as_secs_f64(), own_cpu_ns().saturating_sub(cpu0))
    });
    worker.join().expect("worker")
}

/// The runtime's threads, whose CPU is counted with the worker's.
struct Tids(Arc<Mutex<Vec<i32>>>);

impl Tids {
    /// Nanoseconds of CPU they have used (`/proc/self/task/*/schedstat`).
    fn cpu_ns(&self) -> u64 {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|tid| std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok())
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }
}

/// The database: echoes each 8 bytes, a thread per connection.
fn database() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_nodelay(true);
            std::thread::spawn(move || {
                let mut buf = [0u8; 8];
                while conn.read_exact(&mut buf).is_ok() {
                    if conn.write_all(&buf).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn main() {
    let db = database();
    let tids = Tids(Arc::new(Mutex::new(Vec::new())));
    let starting = Arc::clone(&tids.0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(move || {
            // SAFETY: gettid(2) takes nothing and cannot fail.
            starting.lock().expect("lock").push(unsafe { libc::gettid() });
        })
        .build()
        .expect("runtime");
    // Warm up both ways once.
    let _ = TcpStream::connect(db);
    println!("{REQUESTS} requests, {IN_FLIGHT} in flight, each a round trip to a local echo over a pooled tokio TcpStream; worker + runtime threads' CPU");
    let mut results: Vec<(&str, f64, f64)> = Vec::new();
    for round in 0..ROUNDS {
        let order = match round % 2 {
            0 => [Design::Runtime, Design::Worker],
            _ => [Design::Worker, Design::Runtime],
        };
        for design in order {
            let name = match design {
                Design::Runtime => "runtime",
                Design::Worker => "worker",
            };
            let cpu0 = tids.cpu_ns();
            let (secs, worker_ns) = run(design, &rt, db);
            let cpu = (tids.cpu_ns().saturating_sub(cpu0) + worker_ns) as f64;
            let per_request_us = cpu / 1e3 / REQUESTS as f64;
            println!(
                "round {} {name:8} {:>8.0} requests/s  {per_request_us:6.2} µs of CPU per request",
                round + 1,
                REQUESTS as f64 / secs
            );
            results.push((name, REQUESTS as f64 / secs, per_request_us));
        }
    }
    for name in ["runtime", "worker"] {
        let cpu: Vec<f64> = results.iter().filter(|r| r.0 == name).map(|r| r.2).collect();
        let rate: Vec<f64> = results.iter().filter(|r| r.0 == name).map(|r| r.1).collect();
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{lo:.2}–{hi:.2}")
        };
        println!("{name:8} CPU per request {} µs, requests per second {}", range(&cpu), range(&rate));
    }
}
