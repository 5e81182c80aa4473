//! Rooms under load, with figures (asserts nothing; `cargo bench --bench rooms`):
//!
//! 1. one 32-byte message published (from an HTTP handler) to a room of 10 000 idle WebSocket
//!    members over 2 workers: time until the last member has read it, server CPU, server heap
//!    allocations for the publish;
//! 2. 100 publishes a second to those members for 10 s: the server's CPU share and RSS;
//! 3. four rounds of 1 000 members joining a room and leaving at once, each leave announced to
//!    the room: the server's heap in use and RSS after each round, against the baseline.
//!
//! The server runs in a child process (this program, re-run with `ROOMS_BENCH_SERVER=1`) so its
//! memory and CPU are its own and each process stays under the descriptor limit; it counts its
//! allocations with a counting global allocator and reports them at `GET /stats`. Everything
//! talks to 127.0.0.1 only; the child ends when the parent closes its standard input.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, param, query_of, text_response};
use web::ws::{ConnId, Message, Rooms, Ws, WsHandler, client_frame, ws_handshake_request};

/// Publishes sent so far by the sustained phase.
static PUBLISHED: AtomicU64 = AtomicU64::new(0);

#[global_allocator]
static GLOBAL: child::Counting = child::Counting;

/// Members of the publish figures (`ROOMS_BENCH_MEMBERS` to change it).
fn members_wanted() -> usize {
    std::env::var("ROOMS_BENCH_MEMBERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}
const BURST: usize = 1_000;

/// Members join `?room=`; when one leaves, the room hears of it.
struct Bench {
    rooms: Rooms,
}

impl WsHandler for Bench {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        Ok(param(query_of(req.path()), "room"))
    }

    fn open(&self, ws: &mut Ws<'_>, room: &mut String) {
        ws.join(room);
        ws.send_text("in");
    }

    fn message(&self, _ws: &mut Ws<'_>, _room: &mut String, _msg: Message) {}

    fn close(&self, id: ConnId, room: String, _code: Option<u16>) {
        let note = format!("{:>24} left", format!("{id:?}"));
        self.rooms.publish(&room, &Message::Text(note));
    }
}

mod child;

fn serve() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(2);
    let rooms = server.rooms();
    let control = server.control();
    let server = server.websocket(
        "/",
        Bench {
            rooms: rooms.clone(),
        },
    );
    let handle = server
        .spawn(move |req| match web::http::path_of(req.path()) {
            "/publish" => {
                let room = param(query_of(req.path()), "room");
                let text = String::from_utf8_lossy(req.body()).into_owned();
                text_response(200, rooms.publish(&room, &Message::Text(text)).to_string())
            }
            _ => {
                let s = control.stats();
                let more = format!(
                    " | {} websockets, {} parked, {} held bytes, {} refused messages",
                    s.websockets, s.parked, s.held_bytes, s.refused_messages
                );
                text_response(200, child::stats_line() + &more)
            }
        })
        .unwrap();
    child::serve_until_stdin_closes(handle.local_addr().port());
    let _ = handle.shutdown();
}

use child::{http, stats};

fn publish(port: u16, room: &str, text: &str) -> String {
    http(
        port,
        &format!(
            "POST /publish?room={room} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        ),
    )
}

/// A WebSocket member: upgraded, greeted.
fn member(port: u16, room: &str) -> TcpStream {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(&ws_handshake_request(
        "127.0.0.1",
        &format!("/?room={room}"),
    ))
    .unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        conn.read_exact(&mut byte).unwrap();
        got.push(byte[0]);
    }
    assert!(got.starts_with(b"HTTP/1.1 101 "));
    read_frame(&mut conn);
    conn
}

/// One short (< 126 bytes) unmasked server frame's payload.
fn read_frame(conn: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 2];
    conn.read_exact(&mut head).unwrap();
    let mut payload = vec![0u8; usize::from(head[1] & 0x7f)];
    conn.read_exact(&mut payload).unwrap();
    payload
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    child::run("ROOMS_BENCH_SERVER", serve, |port, _| run(port));
}

fn run(port: u16) {
    // --- 3 first, from a clean start: bursts of members joining and leaving at once.
    println!(
        "burst: {BURST} members join room `burst`, then all leave at once (each leave announced)"
    );
    // One warm-up round, so the baseline includes what every server keeps after its first use.
    burst_round(port);
    let base = stats(port);
    println!(
        "  baseline            heap {:>8.2} MiB   RSS {:>6.2} MiB",
        base.heap as f64 / 1048576.0,
        mib(base.rss_kib)
    );
    let rounds: u32 = std::env::var("ROOMS_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(4);
    for round in 1..=rounds {
        burst_round(port);
        let s = stats(port);
        println!(
            "  after round {round}       heap {:>8.2} MiB ({:+.1}%)   RSS {:>6.2} MiB ({:+.1}%)",
            s.heap as f64 / 1048576.0,
            (s.heap - base.heap) as f64 * 100.0 / base.heap as f64,
            mib(s.rss_kib),
            (s.rss_kib as f64 - base.rss_kib as f64) * 100.0 / base.rss_kib as f64
        );
    }

    if std::env::var_os("ROOMS_BENCH_ONLY_BURST").is_some() {
        return;
    }
    // --- 1: one publish to 10 000 idle members.
    let started = Instant::now();
    let members_wanted = members_wanted();
    let mut members: Vec<TcpStream> = (0..members_wanted).map(|_| member(port, "all")).collect();
    println!(
        "\n{members_wanted} idle members joined room `all` in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let message = "0123456789abcdefghijklmnopqrstuv"; // 32 bytes
    let quiet = {
        let a = stats(port);
        let b = stats(port);
        (b.allocations - a.allocations, b.cpu_micros - a.cpu_micros)
    };
    let before = stats(port);
    let t0 = Instant::now();
    let queued = publish(port, "all", message);
    for (i, m) in members.iter_mut().enumerate() {
        assert_eq!(read_frame(m), message.as_bytes(), "member {i}");
    }
    let reach = t0.elapsed();
    let after = stats(port);
    println!(
        "publish one 32-byte message to {members_wanted} members (queued for {queued}) on 2 workers: last member had it after {:.1} ms \
         (read by one client thread in turn: an upper bound)",
        reach.as_secs_f64() * 1000.0
    );
    println!(
        "  server CPU {:.1} ms, heap allocations {} (the publish request, its fan-out and one /stats request, less a /stats alone: {})",
        (after.cpu_micros - before.cpu_micros - quiet.1) as f64 / 1000.0,
        after.allocations - before.allocations - quiet.0,
        quiet.0
    );

    // --- 2: 100 publishes a second for 10 s.
    for m in &members {
        m.set_nonblocking(true).unwrap();
    }
    let before = stats(port);
    let t0 = Instant::now();
    let client_cpu = child::cpu_micros();
    // Publishes come at their times whatever the server is doing (an open loop, as from many
    // sources): pipelined requests on one keep-alive connection, the replies read by another
    // thread. A worker busy with one publish finds the next ones waiting, and a member gets
    // what one turn delivers in one write.
    let publisher = std::thread::spawn(move || {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut replies = conn.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            replies.read_to_end(&mut all).unwrap();
            let all = String::from_utf8_lossy(&all);
            (
                all.matches("HTTP/1.1 200 ").count(),
                all.matches("HTTP/1.1 ").count(),
            )
        });
        let start = Instant::now();
        for i in 0..1000u32 {
            let due = start + Duration::from_millis(10 * u64::from(i));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let last = if i == 999 {
                "Connection: close\r\n"
            } else {
                ""
            };
            let request = format!(
                "POST /publish?room=all HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n{last}\r\n{message}",
                message.len()
            );
            conn.write_all(request.as_bytes()).unwrap();
            PUBLISHED.fetch_add(1, Ordering::Relaxed);
        }
        let sent = start.elapsed();
        let (ok, replies) = reader.join().unwrap();
        assert_eq!((ok, replies), (1000, 1000), "every publish answered 200");
        sent
    });
    let frame_len = 2 + message.len();
    let mut received = vec![0usize; members_wanted];
    let mut chunk = vec![0u8; 64 * 1024];
    // One client thread reads all members in sweeps at most every 20 ms (a sweep reads what
    // arrived since the last: a few frames a member), so the client stays cheaper than the
    // server it measures.
    let mut sweep = Instant::now();
    // The server's RSS, read once a second during the run (its peak) and after it.
    let (mut rss_peak, mut rss_read) = (before.rss_kib, Instant::now());
    while !publisher.is_finished() || received.iter().any(|&r| r < 1000 * frame_len) {
        if rss_read.elapsed() >= Duration::from_secs(1) {
            rss_peak = rss_peak.max(stats(port).rss_kib);
            rss_read = Instant::now();
        }
        if let Some(wait) =
            (sweep + Duration::from_millis(20)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
        sweep = Instant::now();
        for (m, got) in members.iter_mut().zip(received.iter_mut()) {
            loop {
                match m.read(&mut chunk) {
                    Ok(n) if n == chunk.len() => *got += n,
                    Ok(n) => {
                        *got += n;
                        break;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let short: Vec<usize> = received
                .iter()
                .filter(|&&r| r < 1000 * frame_len)
                .map(|&r| 1000 * frame_len - r)
                .collect();
            panic!(
                "after 60 s, {} members lack bytes (at most {}, {} publishes sent); server: {}",
                short.len(),
                short.iter().max().unwrap_or(&0),
                PUBLISHED.load(Ordering::Relaxed),
                http(
                    port,
                    "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                )
            );
        }
    }
    let publishing = publisher.join().unwrap();
    let elapsed = t0.elapsed();
    let client_cpu = child::cpu_micros() - client_cpu;
    let after = stats(port);
    rss_peak = rss_peak.max(after.rss_kib);
    // After the workers' trim interval.
    std::thread::sleep(Duration::from_millis(1300));
    let settled = stats(port);
    println!(
        "\n1000 publishes at 100/s to {members_wanted} members: sent in {:.1} s, every member had all 1000 \
         after {:.1} s",
        publishing.as_secs_f64(),
        elapsed.as_secs_f64(),
    );
    println!(
        "  server CPU share {:.1}% of one core (client {:.1}%); server RSS {:.2} MiB before, at most {:.2} MiB \
         during, {:.2} MiB after (heap in use {:.2} MiB)",
        (after.cpu_micros - before.cpu_micros) as f64 / elapsed.as_micros() as f64 * 100.0,
        client_cpu as f64 / elapsed.as_micros() as f64 * 100.0,
        mib(before.rss_kib),
        mib(rss_peak),
        mib(settled.rss_kib),
        settled.heap as f64 / 1048576.0
    );
    drop(members);
}

/// `BURST` members join room `burst`, then all disconnect at once; waits until the server has
/// let every one go.
fn burst_round(port: u16) {
    let members: Vec<TcpStream> = (0..BURST).map(|_| member(port, "burst")).collect();
    // Each member says something, so their output buffers exist while they are in the room.
    for m in &members {
        let _ = (&*m).write_all(&client_frame("hi"));
    }
    drop(members);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let count = publish(port, "burst", "anyone?");
        if count == "0" {
            break;
        }
        assert!(Instant::now() < deadline, "members did not leave");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let the last announcements drain, and the workers' memory trim come (at most one a
    // second per worker: the reactor's TRIM_INTERVAL).
    std::thread::sleep(Duration::from_millis(1300));
}
