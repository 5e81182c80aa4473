//! Long-lived HTTP under load, with figures (asserts nothing; `cargo bench --bench long_lived`):
//!
//! 1. **Idle cost:** user-space bytes per idle Server-Sent Events subscriber and per request
//!    parked on a deferred reply, with 10 000 and then 19 000 held (RSS after less RSS before,
//!    over the count, as the idle WebSocket figure is taken; the heap's own count beside it);
//! 2. **Publish:** one 32-byte message to a room of 10 000 SSE members, and to a room of 10 000
//!    WebSocket members, in the same run: server CPU and the time until the last member read it;
//! 3. **Pool:** one worker; 50 callers keep asking a route that blocks 200 ms (run on a `Pool`)
//!    while one caller asks a fast route: both routes' latency percentiles;
//! 4. **Streamed download:** 1 GiB streamed (`Pool::stream`) to a reader that takes it slowly:
//!    the server's RSS growth over the whole download.
//!
//! The server runs in a child process (this program, re-run with `LONG_BENCH_SERVER=1`) with
//! one worker; it counts its allocations and reports them at `GET /stats`. Everything talks to
//! 127.0.0.0/8 only (client sockets bound to 127.0.0.2.. so ports never run out); every phase
//! is bounded in count and time, and the child ends when the parent closes its standard input.
//! `LONG_BENCH_COUNTS=1000,2000` changes the idle counts, `LONG_BENCH_GIB=0.25` the download.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use web::http::{
    Pool, Reply, Request, Response, Server, defer, param, path_of, query_of, text_response,
    with_header,
};
use web::sse::{Event, Sse, SseHandler};
use web::ws::{ConnId, Message, Ws, WsHandler, ws_handshake_request};

mod child;

#[global_allocator]
static GLOBAL: child::Counting = child::Counting;

// ---------------------------------------------------------------------------------------------
// The server (child process).

/// SSE members join `?room=` and are greeted with one event.
struct Subscribers;

impl SseHandler for Subscribers {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        Ok(param(query_of(req.path()), "room"))
    }

    fn open(&self, sse: &mut Sse<'_>, room: &mut String) {
        sse.join(room);
        sse.send(&Event::new("in"));
    }
}

/// SSE streams with no state and no room (what the bare strand costs), greeted with one event.
struct Bare;

impl SseHandler for Bare {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
        sse.send(&Event::new("in"));
    }
}

impl WsHandler for Bare {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.send_text("in");
    }

    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

/// WebSocket members join `?room=` and are greeted with one message.
struct Members;

impl WsHandler for Members {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        Ok(param(query_of(req.path()), "room"))
    }

    fn open(&self, ws: &mut Ws<'_>, room: &mut String) {
        ws.join(room);
        ws.send_text("in");
    }

    fn message(&self, _ws: &mut Ws<'_>, _room: &mut String, _msg: Message) {}

    fn close(&self, _id: ConnId, _room: String, _code: Option<u16>) {}
}

/// Bytes `0, 1, ..., 250, 0, ...` without end: a reader that costs nothing to produce.
struct Pattern {
    at: u64,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        for b in buf.iter_mut() {
            *b = (self.at % 251) as u8;
            self.at += 1;
        }
        Ok(buf.len())
    }
}

fn serve() {
    let pool = Pool::new(64, 4096).expect("pool threads");
    let parked: Arc<Mutex<Vec<Reply>>> = Arc::default();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(Duration::from_secs(600))
        .reply_timeout(Duration::from_secs(600));
    let rooms = server.rooms();
    let server = server
        .sse("/sse", Subscribers)
        .sse("/sse-bare", Bare)
        .websocket("/ws", Members)
        .websocket("/ws-bare", Bare);
    let handle = server
        .spawn(move |req| match path_of(req.path()) {
            "/park" => {
                let (reply, later) = defer();
                parked.lock().unwrap().push(reply);
                later
            }
            "/release" => {
                let replies = std::mem::take(&mut *parked.lock().unwrap());
                let n = replies.len();
                for reply in replies {
                    let res = with_header(text_response(200, "done"), "Connection", "close");
                    reply.send(res);
                }
                text_response(200, n.to_string())
            }
            "/publish" => {
                let room = param(query_of(req.path()), "room");
                let text = String::from_utf8_lossy(req.body()).into_owned();
                text_response(200, rooms.publish(&room, &Message::Text(text)).to_string())
            }
            "/slow" => pool.answer(|| {
                std::thread::sleep(Duration::from_millis(200));
                text_response(200, "slow")
            }),
            "/fast" => text_response(200, "fast"),
            "/download" => {
                let bytes: u64 = param(query_of(req.path()), "bytes").parse().unwrap_or(0);
                let body = Pattern { at: 0 }.take(bytes);
                pool.stream(text_response(200, ""), Some(bytes), body)
            }
            _ => text_response(200, child::stats_line()),
        })
        .unwrap();
    child::serve_until_stdin_closes(handle.local_addr().port());
    let _ = handle.shutdown();
}

// ---------------------------------------------------------------------------------------------
// The client (parent process).

use child::ProcessStats as Stats;

/// Sockets made so far: each new one is bound to the next source address.
static SOURCES: AtomicU64 = AtomicU64::new(0);

/// A connection to the server from a source address of its own turn (see
/// `child::connect_from_spread`), with a read timeout.
fn connect(port: u16) -> TcpStream {
    let conn = child::connect_from_spread(port, SOURCES.fetch_add(1, Ordering::Relaxed) as usize);
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn
}

/// One request on a connection of its own; the reply's body.
fn http(port: u16, request: &str) -> String {
    let mut conn = connect(port);
    conn.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    reply
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

fn get(port: u16, path: &str) -> String {
    http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    )
}

fn stats(port: u16) -> Stats {
    Stats::parse(&get(port, "/stats"))
}

/// An SSE subscriber of `room`: head and greeting read.
fn subscriber(port: u16, room: &str) -> TcpStream {
    subscriber_at(port, &format!("/sse?room={room}"))
}

/// An SSE stream at `target`: head and greeting read.
fn subscriber_at(port: u16, target: &str) -> TcpStream {
    let mut conn = connect(port);
    let request = format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n");
    conn.write_all(request.as_bytes()).unwrap();
    let got = child::read_until(&mut conn, b"data: in\n\n");
    assert!(got.starts_with(b"HTTP/1.1 200 "));
    conn
}

/// A WebSocket member of `room`: upgraded, greeted.
fn member(port: u16, room: &str) -> TcpStream {
    member_at(port, &format!("/ws?room={room}"))
}

/// A WebSocket at `target`: upgraded, greeted.
fn member_at(port: u16, target: &str) -> TcpStream {
    let mut conn = connect(port);
    conn.write_all(&ws_handshake_request("127.0.0.1", target))
        .unwrap();
    let got = child::read_until(&mut conn, b"\x81\x02in");
    assert!(got.starts_with(b"HTTP/1.1 101 "));
    conn
}

/// A request parked on a deferred reply (its request sent, no reply yet).
fn parked(port: u16) -> TcpStream {
    let mut conn = connect(port);
    conn.write_all(b"GET /park HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    conn
}

fn counts() -> Vec<usize> {
    std::env::var("LONG_BENCH_COUNTS")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 19_000])
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    if std::env::var_os("LONG_BENCH_SERVER").is_some() {
        return child::run("LONG_BENCH_SERVER", serve, |_, _| ()); // the child: serves
    }
    let need = counts().into_iter().max().unwrap_or(0) as u64 + 200;
    let limit = child::raise_open_files();
    if limit < need {
        println!(
            "(descriptor limit {limit} is below {need}: the larger counts will fail; raise it)"
        );
    }
    // Each idle kind in a server of its own, so that none finds the slab already grown by
    // another (the slab entry is part of what a connection costs).
    println!(
        "idle connections, each kind in a fresh server (`room`: String state, one room joined):"
    );
    type Opener = fn(u16) -> TcpStream;
    let kinds: [(&str, Opener); 5] = [
        ("SSE stream, bare", |p| subscriber_at(p, "/sse-bare")),
        ("SSE stream, room", |p| subscriber_at(p, "/sse?room=idle")),
        ("WebSocket, bare", |p| member_at(p, "/ws-bare")),
        ("WebSocket, room", |p| member_at(p, "/ws?room=idle")),
        ("parked deferred request", parked),
    ];
    for (kind, open) in kinds {
        child::run("LONG_BENCH_SERVER", serve, |port, child| {
            idle(port, kind, &child.id().to_string(), open)
        });
    }
    child::run("LONG_BENCH_SERVER", serve, |port, _| {
        publish(port);
        pool(port);
        download(port);
    });
}

/// Phase 1: bytes per idle connection of one kind at each count.
fn idle(port: u16, kind: &str, pid: &str, open: fn(u16) -> TcpStream) {
    // Warm the server (first-use allocations) with a few of the kind, then let them go.
    let warm: Vec<TcpStream> = (0..64).map(|_| open(port)).collect();
    release(port, warm);
    let before = child::settled(|| stats(port));
    let mut held = Vec::new();
    let started = Instant::now();
    for target in counts() {
        while held.len() < target {
            held.push(open(port));
        }
        let now = child::settled(|| stats(port));
        let n = held.len() as f64;
        println!(
            "  {kind:<24} {:>6} held  RSS {:>6.1} B each  heap {:>6.1} B each  (RSS {:.1} → {:.1} MiB, opened in {:.1} s; server threads {})",
            held.len(),
            (now.rss_kib as f64 - before.rss_kib as f64) * 1024.0 / n,
            (now.heap - before.heap) as f64 / n,
            before.rss_kib as f64 / 1024.0,
            now.rss_kib as f64 / 1024.0,
            started.elapsed().as_secs_f64(),
            child::status_kib(pid, "Threads:"),
        );
    }
    release(port, held);
}

/// Lets connections go: parked requests are answered (and close), streams are dropped.
fn release(port: u16, conns: Vec<TcpStream>) {
    let _ = get(port, "/release");
    drop(conns);
    std::thread::sleep(Duration::from_millis(500));
}

/// Phase 2: one 32-byte publish to 10 000 SSE members, then to 10 000 WebSocket members.
fn publish(port: u16) {
    let n = counts().first().copied().unwrap_or(10_000);
    let message = "0123456789abcdefghijklmnopqrstuv";
    println!();
    for (kind, room, open, expect) in [
        (
            "SSE",
            "sse-all",
            subscriber as fn(u16, &str) -> TcpStream,
            &b"opqrstuv\n\n"[..],
        ),
        ("WebSocket", "ws-all", member, &message.as_bytes()[24..]),
    ] {
        let mut members: Vec<TcpStream> = (0..n).map(|_| open(port, room)).collect();
        let mut spread = Vec::new();
        for _ in 0..5 {
            let quiet = {
                let a = stats(port);
                let b = stats(port);
                b.cpu_micros - a.cpu_micros
            };
            let before = stats(port);
            let t0 = Instant::now();
            let body = message;
            let request = format!(
                "POST /publish?room={room} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = http(port, &request);
            for m in &mut members {
                child::read_until(m, expect);
            }
            let reach = t0.elapsed();
            let after = stats(port);
            let cpu = (after.cpu_micros - before.cpu_micros - quiet) as f64 / 1000.0;
            spread.push((reach.as_secs_f64() * 1000.0, cpu));
        }
        let measured = &spread[1..]; // the first round warms up
        let fmt = |f: fn(&(f64, f64)) -> f64| {
            let mut v: Vec<f64> = measured.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            format!(
                "median {:.1} (min {:.1}, max {:.1})",
                v[v.len() / 2],
                v[0],
                v[v.len() - 1]
            )
        };
        println!(
            "publish 32 bytes to {n} {kind} members, {} rounds: last member read it after ms {}; server CPU ms {}",
            measured.len(),
            fmt(|r| r.0),
            fmt(|r| r.1)
        );
        drop(members);
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Phase 3: 50 callers of a 200 ms route on the pool, and the fast route's latency meanwhile.
fn pool(port: u16) {
    const CALLERS: usize = 50;
    const RUN: Duration = Duration::from_secs(5);
    println!();
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..CALLERS)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut times = Vec::new();
                let mut conn = connect(port);
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    conn.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
                        .unwrap();
                    child::read_until(&mut conn, b"slow");
                    times.push(t0.elapsed());
                }
                times
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut fast = Vec::new();
    let mut conn = connect(port);
    let end = Instant::now() + RUN;
    while Instant::now() < end {
        let t0 = Instant::now();
        conn.write_all(b"GET /fast HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        child::read_until(&mut conn, b"fast");
        fast.push(t0.elapsed());
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let mut slow: Vec<Duration> = slow.into_iter().flat_map(|t| t.join().unwrap()).collect();
    println!(
        "pool: 1 worker, {CALLERS} callers of a 200 ms route (64 pool threads) for {} s",
        RUN.as_secs()
    );
    println!("  slow route  {}", percentiles(&mut slow));
    println!("  fast route  {}", percentiles(&mut fast));
}

fn percentiles(times: &mut [Duration]) -> String {
    times.sort();
    let at = |p: f64| {
        let i = ((times.len() as f64 * p) as usize).min(times.len() - 1);
        times[i].as_secs_f64() * 1000.0
    };
    format!(
        "{:>6} requests  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        times.len(),
        at(0.50),
        at(0.99),
        at(1.0)
    )
}

/// Phase 4: a streamed download to a slow reader, the server's RSS sampled throughout.
fn download(port: u16) {
    let gib: f64 = std::env::var("LONG_BENCH_GIB")
        .ok()
        .and_then(|g| g.parse().ok())
        .unwrap_or(1.0);
    let bytes = (gib * (1u64 << 30) as f64) as u64;
    println!();
    let before = child::settled(|| stats(port));
    let peak = Arc::new(AtomicU64::new(before.rss_kib));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(stats(port).rss_kib, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut conn = connect(port);
    let t0 = Instant::now();
    conn.write_all(format!("GET /download?bytes={bytes} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .unwrap();
    let head = child::read_until(&mut conn, b"\r\n\r\n");
    let at = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 4;
    let mut got = (head.len() - at) as u64;
    // A slow reader: 64 KiB, then a pause of 1 ms (about 60 MB/s at most on loopback).
    let mut buf = vec![0u8; 64 * 1024];
    while got < bytes {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => panic!("download: {e}"),
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = t0.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);
    println!(
        "streamed download: {:.2} GiB in {:.1} s ({:.0} MB/s) to a slow reader; server RSS {:.2} MiB before, peak {:.2} MiB (+{:.2} MiB)",
        got as f64 / (1u64 << 30) as f64,
        took.as_secs_f64(),
        got as f64 / took.as_secs_f64() / 1e6,
        before.rss_kib as f64 / 1024.0,
        peak as f64 / 1024.0,
        (peak as f64 - before.rss_kib as f64) / 1024.0
    );
    assert_eq!(got, bytes, "the whole body arrived");
}
