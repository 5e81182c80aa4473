//! What liveness pings cost (asserts nothing; `cargo bench --bench liveness`): 19 000 idle
//! WebSocket connections to a server with one worker, every one answering pings, held for
//! 10 s with `ping_interval` 1 s and then with pings off; the server's CPU in each period,
//! the pings it sent, and its RSS per connection (is an idle connection still what it was).
//!
//! The server runs in a child process (this program, re-run with `LIVENESS_BENCH_SERVER=1`;
//! `LIVENESS_BENCH_PINGS=0` turns its pings off); the client holds the connections in one
//! `mio` poll and answers each ping with a pong. Everything talks to 127.0.0.0/8 only (client
//! sockets bound to 127.0.0.2.. so ports never run out); bounded in count and time.
//! `LIVENESS_BENCH_N` changes the count.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use web::http::{Request, Response, Server, text_response};
use web::ws::{FIXED_MASK, Message, OP_PONG, Ws, WsHandler, write_frame, ws_handshake_request};

mod child;

struct Quiet;

impl WsHandler for Quiet {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

fn serve() {
    let pings = std::env::var("LIVENESS_BENCH_PINGS").map_or(true, |v| v != "0");
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(Duration::from_secs(600))
        .ping_interval(pings.then_some(Duration::from_secs(1)))
        .websocket("/", Quiet);
    let handle = server
        .spawn(|_req| {
            text_response(
                200,
                format!(
                    "{} {}",
                    child::cpu_micros(),
                    child::status_kib("self", "VmRSS:")
                ),
            )
        })
        .unwrap();
    child::serve_until_stdin_closes(handle.local_addr().port());
    let _ = handle.shutdown();
}

/// (CPU µs, RSS KiB) of the server.
fn stats(port: u16) -> (i64, u64) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(b"GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or_default();
    let mut v = body.split_whitespace().map(|x| x.parse::<i64>().unwrap());
    (v.next().unwrap(), v.next().unwrap() as u64)
}

/// Connections held in one poll, every ping answered with a pong as soon as it is read.
struct Held {
    poll: Poll,
    streams: Vec<mio::net::TcpStream>,
    events: Events,
    pong: Vec<u8>,
    pings: usize,
}

impl Held {
    fn new() -> Held {
        let mut pong = Vec::new();
        write_frame(&mut pong, 0x80 | OP_PONG, b"", Some(FIXED_MASK));
        Held {
            poll: Poll::new().unwrap(),
            streams: Vec::new(),
            events: Events::with_capacity(1024),
            pong,
            pings: 0,
        }
    }

    /// Opens and upgrades `n` connections, answering the pings of those already open meanwhile
    /// (the first are pinged before the last are open).
    fn open(&mut self, port: u16, n: usize) {
        for i in 0..n {
            let mut conn = child::connect_from_spread(port, self.streams.len());
            conn.set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            conn.write_all(&ws_handshake_request("127.0.0.1", "/"))
                .unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                conn.read_exact(&mut byte).unwrap();
                head.push(byte[0]);
            }
            assert!(head.starts_with(b"HTTP/1.1 101 "));
            conn.set_nonblocking(true).unwrap();
            let mut stream = mio::net::TcpStream::from_std(conn);
            self.poll
                .registry()
                .register(&mut stream, Token(self.streams.len()), Interest::READABLE)
                .unwrap();
            self.streams.push(stream);
            if i % 100 == 0 {
                self.answer(Duration::ZERO);
            }
        }
    }

    /// Answers the pings that arrive within `wait`.
    fn answer(&mut self, wait: Duration) {
        self.poll.poll(&mut self.events, Some(wait)).unwrap();
        let mut buf = [0u8; 4096];
        for event in &self.events {
            let s = &mut self.streams[event.token().0];
            loop {
                match s.read(&mut buf) {
                    Ok(0) => panic!("the server closed a connection that answers pings"),
                    Ok(n) => {
                        // Pings are two bytes each (no payload).
                        for _ in buf[..n].chunks(2).filter(|f| f == &[0x89, 0x00]) {
                            self.pings += 1;
                            s.write_all(&self.pong).unwrap();
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
        }
    }

    /// Holds the connections for `period`; the pings answered meanwhile.
    fn hold(&mut self, period: Duration) -> usize {
        let before = self.pings;
        let end = Instant::now() + period;
        while Instant::now() < end {
            self.answer(Duration::from_millis(50));
        }
        self.pings - before
    }
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    let n: usize = std::env::var("LIVENESS_BENCH_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(19_000);
    child::raise_open_files();
    const PERIOD: Duration = Duration::from_secs(10);
    for pings_on in [true, false] {
        let vars: &[(&str, &str)] = if pings_on {
            &[]
        } else {
            &[("LIVENESS_BENCH_PINGS", "0")]
        };
        child::run_with("LIVENESS_BENCH_SERVER", vars, serve, |port, _| {
            let (_, rss_before) = stats(port);
            let mut held = Held::new();
            held.open(port, n);
            held.hold(Duration::from_secs(1));
            let (cpu0, rss_open) = stats(port);
            let pings = held.hold(PERIOD);
            let (cpu1, rss_after) = stats(port);
            let cpu_ms = (cpu1 - cpu0) as f64 / 1000.0;
            println!(
                "{n} idle WebSockets, pings {}: {} pings answered in {} s; server CPU {:.1} ms ({:.2}% of a core){}; RSS per connection {:.1} B open, {:.1} B after",
                if pings_on { "every 1 s" } else { "off" },
                pings,
                PERIOD.as_secs(),
                cpu_ms,
                cpu_ms / PERIOD.as_secs_f64() / 10.0,
                if pings > 0 {
                    format!(", {:.2} µs per ping", cpu_ms * 1000.0 / pings as f64)
                } else {
                    String::new()
                },
                (rss_open as f64 - rss_before as f64) * 1024.0 / n as f64,
                (rss_after as f64 - rss_before as f64) * 1024.0 / n as f64,
            );
            drop(held);
        });
    }
}
