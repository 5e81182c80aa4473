//! What waiting peers cost the server, with figures (asserts nothing; `cargo bench --bench
//! waiting`):
//!
//! 1. **lagging members**: a room posted to 1 000 times a second (300 bytes each) for 30 s,
//!    with 20 event-stream and 20 WebSocket members that read 2 KB/s through a 4 KB receive
//!    buffer (ever further behind), and 20 that read everything: the server's CPU in each 5 s,
//!    and an unrelated `GET /stats` probe's p50/p99/max. Work per queued message is constant
//!    whatever a member's backlog, so the CPU per 5 s stays flat (it grew with the backlog,
//!    quadratically, before).
//! 2. **replays and replies never read**: a room holding 20 messages of 24 KB; 3 000 event
//!    streams joining it from its start and 3 000 requests answered with all of it, none read:
//!    the server's RSS and its output budget's figures. A replay shares the room's encoded
//!    lines, and every reply counts against the one output budget (256 MiB by default).
//!
//! The server runs in a child process (this program, re-run with `WAITING_BENCH_SERVER=1`).
//! Everything talks to 127.0.0.0/8 only; every phase is bounded in count and time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, text_response};
use web::sse::{Sse, SseHandler};
use web::ws::{History, Message, Ws, WsHandler, ws_handshake_request};

mod child;

const POST_EVERY: Duration = Duration::from_millis(1);
const POST_BYTES: usize = 300;
const LAGGING_SECONDS: u64 = 30;
const REPLAY_LINE: usize = 24 * 1024;
const CROWD: usize = 3_000;

/// Members of room `r` (WebSocket and event streams); `/replay` streams join `h` from its start.
struct Member;

impl SseHandler for Member {
    type State = bool;
    fn accept(&self, req: &Request) -> Result<bool, Response> {
        Ok(req.path().starts_with("/replay"))
    }
    fn open(&self, sse: &mut Sse<'_>, replay: &mut bool) {
        if *replay {
            sse.join_after("h", 0);
        } else {
            sse.join("r");
        }
    }
}

impl WsHandler for Member {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join("r");
    }
    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

fn serve() {
    child::raise_open_files();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .max_connections(20_000)
        .history(History::new(20).bytes(64 << 20))
        .sse("/events", Member)
        .sse("/replay", Member)
        .websocket("/ws", Member);
    let rooms = server.rooms();
    let control = server.control();
    for i in 0..20 {
        let fill = char::from(b'a' + i).to_string().repeat(REPLAY_LINE);
        rooms.post("h", move |id| format!("{id} {fill}"));
    }
    let replies = rooms.clone();
    let handle = server
        .spawn(move |req: Request| match req.path() {
            "/stats" => {
                let s = control.stats();
                text_response(
                    200,
                    format!(
                        "{} {} {}",
                        child::stats_line(),
                        s.lagging_closed,
                        s.queued_output
                    ),
                )
            }
            "/poll" => {
                let lines = replies.since("h", 0, || {});
                let body: Vec<&str> = lines.iter().map(|(_, t)| &**t).collect();
                text_response(200, body.join("\n"))
            }
            _ => text_response(404, ""),
        })
        .unwrap();
    let posting = Arc::new(AtomicBool::new(false));
    let poster = {
        let (posting, rooms) = (Arc::clone(&posting), rooms.clone());
        std::thread::spawn(move || {
            let text = "p".repeat(POST_BYTES);
            let mut next = Instant::now();
            loop {
                if posting.load(Ordering::Relaxed) {
                    let text = text.clone();
                    rooms.post("r", move |id| format!("{id} {text}"));
                }
                next += POST_EVERY;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                if Arc::strong_count(&posting) == 1 {
                    return;
                }
            }
        })
    };
    // The parent starts the posts by asking `/start` on a line of standard input.
    let port = handle.local_addr().port();
    println!("{port}");
    let _ = std::io::stdout().flush();
    let mut line = [0u8; 1];
    if std::io::stdin().read(&mut line).is_ok_and(|n| n == 1) {
        posting.store(true, Ordering::Relaxed);
        let _ = std::io::stdin().read(&mut line);
    }
    drop(posting);
    let _ = poster.join();
    let _ = handle.shutdown();
}

fn stats(port: u16) -> (child::ProcessStats, u64, u64) {
    let line = child::http(
        port,
        "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let v: Vec<&str> = line.split_whitespace().collect();
    let (closed, queued) = (v[4].parse().unwrap_or(0), v[5].parse().unwrap_or(0));
    (child::ProcessStats::parse(&line), closed, queued)
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    child::raise_open_files();
    child::run("WAITING_BENCH_SERVER", serve, |port, child| {
        lagging(port, child);
        never_read(port);
    });
}

fn lagging(port: u16, child: &mut std::process::Child) {
    println!(
        "1. lagging members: {} posts/s of {POST_BYTES} B for {LAGGING_SECONDS} s; 20 event streams and 20 WebSockets reading 2 KB/s, 20 reading all",
        1000 / POST_EVERY.as_millis()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for i in 0..60 {
        let slow = i < 40;
        let mut c = if slow {
            child::small_buffer(port, 4096)
        } else {
            TcpStream::connect(("127.0.0.1", port)).unwrap()
        };
        let request = if i % 2 == 0 {
            b"GET /events HTTP/1.1\r\nHost: t\r\n\r\n".to_vec()
        } else {
            ws_handshake_request("127.0.0.1", "/ws")
        };
        c.write_all(&request).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let stop = Arc::clone(&stop);
        readers.push(std::thread::spawn(move || {
            let mut buf = vec![0u8; if slow { 200 } else { 64 * 1024 }];
            while !stop.load(Ordering::Relaxed) {
                if let Ok(0) = c.read(&mut buf) {
                    return;
                }
                if slow {
                    // 200 B every 100 ms: 2 KB/s.
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(500));
    // Start the posts.
    if let Some(stdin) = child.stdin.as_mut() {
        let _ = stdin.write_all(b"s");
        let _ = stdin.flush();
    }
    let mut last = stats(port).0.cpu_micros;
    for window in 0..LAGGING_SECONDS / 5 {
        let until = Instant::now() + Duration::from_secs(5);
        let mut probes = Vec::new();
        while Instant::now() < until {
            let begun = Instant::now();
            let _ = stats(port);
            probes.push(begun.elapsed().as_micros() as u64);
            std::thread::sleep(Duration::from_millis(50));
        }
        let (now, closed, queued) = stats(port);
        probes.sort_unstable();
        let at = |p: f64| probes[((probes.len() - 1) as f64 * p) as usize] as f64 / 1e3;
        println!(
            "  {:>2}-{:>2} s: server CPU {:.2} s; probe p50 {:.2} ms p99 {:.2} ms max {:.2} ms; closed for lagging {closed}, queued {:.1} MiB",
            window * 5,
            window * 5 + 5,
            (now.cpu_micros - last) as f64 / 1e6,
            at(0.5),
            at(0.99),
            at(1.0),
            queued as f64 / (1 << 20) as f64
        );
        last = now.cpu_micros;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.join();
    }
}

fn never_read(port: u16) {
    println!(
        "2. never read: a room of 20 messages of {} KB; {CROWD} event streams joining it from its start and {CROWD} requests answered with all of it",
        REPLAY_LINE / 1024
    );
    let before = child::settled(|| stats(port).0);
    let mut held = Vec::with_capacity(2 * CROWD);
    for (what, path) in [("event streams", "/replay"), ("replies", "/poll")] {
        for n in 0..CROWD {
            let mut c = child::connect_from_spread(port, held.len() + n);
            let _ = write!(c, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
            held.push(c);
        }
        std::thread::sleep(Duration::from_secs(2));
        let (now, closed, queued) = stats(port);
        println!(
            "  + {CROWD} {what}: RSS {:.1} MiB ({:+.1} MiB), output held {:.1} MiB, closed past their share {closed}",
            now.rss_kib as f64 / 1024.0,
            (now.rss_kib as f64 - before.rss_kib as f64) / 1024.0,
            queued as f64 / (1 << 20) as f64
        );
    }
    drop(held);
}
