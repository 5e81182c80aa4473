//! What liveness costs (asserts nothing; `cargo bench --bench liveness`): 19 000 idle
//! WebSocket connections to a server with one worker, every one answering pings, held for
//! 10 s with pings every 1 s (`ping_interval` 1 s), then with the kernel's keep-alive probes
//! every 1 s instead (`Liveness::Kernel`, `ping_interval` 2 s: a probe after 1 s of
//! silence, then every 1 s), then with neither; the server's CPU in each period, the whole
//! machine's (the client's side and the kernel's work outside the server's threads included:
//! probes are sent from the kernel's timers), the pings answered, and the server's RSS per
//! connection (is an idle connection still what it was).
//!
//! The server runs in a child process (this program, re-run with `LIVENESS_BENCH_SERVER=1`;
//! `LIVENESS_BENCH_PINGS=0` turns its pings off, `kernel` chooses the probes); the client
//! holds the connections in one `mio` poll and answers each ping with a pong. Everything talks to 127.0.0.0/8 only (client
//! sockets bound to 127.0.0.2.. so ports never run out); bounded in count and time.
//! `LIVENESS_BENCH_N` changes the count.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use web::http::{Request, Response, Server, text_response};
use web::ws::{
    FIXED_MASK, Liveness, Message, OP_PONG, Ws, WsHandler, write_frame, ws_handshake_request,
};

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
    let mode = std::env::var("LIVENESS_BENCH_PINGS").unwrap_or_default();
    let (every, liveness) = match mode.as_str() {
        "0" => (None, Liveness::Pings),
        "kernel" => (Some(Duration::from_secs(2)), Liveness::Kernel),
        _ => (Some(Duration::from_secs(1)), Liveness::Pings),
    };
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(Duration::from_secs(600))
        .ping_interval(every)
        .liveness(liveness)
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
    for (mode, what) in [
        ("1", "pings every 1 s"),
        ("kernel", "the kernel's probes every 1 s"),
        ("0", "no liveness"),
    ] {
        let vars: &[(&str, &str)] = &[("LIVENESS_BENCH_PINGS", mode)];
        child::run_with("LIVENESS_BENCH_SERVER", vars, serve, |port, _| {
            let (_, rss_before) = stats(port);
            let mut held = Held::new();
            held.open(port, n);
            // The first probes (after 2 s of silence at most) are under way.
            held.hold(Duration::from_secs(3));
            let (cpu0, rss_open) = stats(port);
            let busy0 = machine_busy_ms();
            let pings = held.hold(PERIOD);
            let busy1 = machine_busy_ms();
            let (cpu1, rss_after) = stats(port);
            let cpu_ms = (cpu1 - cpu0) as f64 / 1000.0;
            let machine_ms = busy1.saturating_sub(busy0) as f64;
            let per_conn_second = |ms: f64| ms * 1000.0 / (n as f64 * PERIOD.as_secs_f64());
            println!(
                "{n} idle WebSockets, {what}: {pings} pings answered in {} s; server CPU {cpu_ms:.1} ms ({:.3} µs per connection-second{}); the machine's CPU {machine_ms:.0} ms ({:.3} µs per connection-second); RSS per connection {:.1} B open, {:.1} B after",
                PERIOD.as_secs(),
                per_conn_second(cpu_ms),
                if pings > 0 {
                    format!(", {:.2} µs per ping", cpu_ms * 1000.0 / pings as f64)
                } else {
                    String::new()
                },
                per_conn_second(machine_ms),
                (rss_open as f64 - rss_before as f64) * 1024.0 / n as f64,
                (rss_after as f64 - rss_before as f64) * 1024.0 / n as f64,
            );
            drop(held);
        });
    }
}

/// Milliseconds every CPU of the machine has spent busy since boot (`/proc/stat`: all but
/// idle and iowait; 0 where it cannot be read).
fn machine_busy_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    (total - idle) * 1000 / hz
}
