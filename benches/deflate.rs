//! What permessage-deflate costs and saves, with figures (asserts nothing; `cargo bench --bench
//! deflate`). One server (2 workers, `Server::deflate(Some(Deflate::default()))`) in a child
//! process; clients that offer the extension and clients that do not, side by side in one run:
//!
//! 1. **echo**: one client sends 4 000 chat lines (the chat's JSON, 90–260 bytes) one after
//!    another and reads each echo — bytes on the wire each way and server CPU per message,
//!    compressing vs plain;
//! 2. **publish**: 10 000 idle compressing members and 10 000 plain ones, in two rooms; 200
//!    chat lines published to each room — server CPU per publish, bytes per member per message;
//!    Then the same compressing members spread over 1, 4, 5 and 8 window sizes
//!    (`server_max_window_bits`) in rotation: server CPU per publish of a 3.7 KB line, which
//!    stays flat while each worker compresses it once per window in use;
//! 3. **idle**: in a fresh server for each kind, the RSS per connection of 10 000 idle
//!    WebSockets after messages each way (plain; compressed without context; with a kept window
//!    of 10 and 12 bits, after 1, 20 and 40 messages), against the baseline taken once both
//!    workers have made their compressor and decompressor.
//!
//! Everything talks to 127.0.0.1 only; the child ends when the parent closes its standard input.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, param, query_of, text_response};
use web::ws::{Deflate, Message, Ws, WsHandler, write_frame};

mod chat_lines;
mod child;

use chat_lines::chat_line;

#[global_allocator]
static GLOBAL: child::Counting = child::Counting;

const MEMBERS: usize = 10_000;
const ECHOES: usize = 4_000;
const PUBLISHES: usize = 200;
const OFFER: &str = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";

/// Echoes; at `?room=R` joins R.
struct Bench;

impl WsHandler for Bench {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        let _ = ws;
    }
    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        match &msg {
            Message::Text(t) if t.starts_with("join ") => {
                ws.join(&t[5..]);
                ws.send_text(&chat_line(0)); // one message each way before idling
            }
            _ => ws.send(&msg),
        }
    }
}

/// The server's settings: `Deflate::default()`, or with a kept window of the bits
/// `DEFLATE_BENCH_KEEP` names.
fn serve() {
    let deflate = match std::env::var("DEFLATE_BENCH_KEEP")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        Some(bits) => Deflate::default().context_takeover(bits),
        None => Deflate::default(),
    };
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .deflate(Some(deflate));
    let rooms = server.rooms();
    let handle = server
        .websocket("/", Bench)
        .spawn(move |req| match web::http::path_of(req.path()) {
            "/publish" => {
                let room = param(query_of(req.path()), "room");
                let text = String::from_utf8_lossy(req.body()).into_owned();
                text_response(200, rooms.publish(&room, &Message::Text(text)).to_string())
            }
            _ => text_response(200, child::stats_line()),
        })
        .unwrap();
    child::serve_until_stdin_closes(handle.local_addr().port());
    let _ = handle.shutdown();
}

use child::{http, stats};

/// A raw WebSocket client that reads frames by hand.
struct Peer {
    conn: TcpStream,
    buf: Vec<u8>,
    /// Bytes read and written on the wire after the handshake.
    read: usize,
    written: usize,
    compressor: Option<zlib_rs::Deflate>,
}

impl Peer {
    fn connect(port: u16, n: usize, deflate: bool) -> Peer {
        Peer::connect_offering(port, n, if deflate { OFFER } else { "" })
    }

    /// Connects with `offer` as its extension header line (empty: none).
    fn connect_offering(port: u16, n: usize, offer: &str) -> Peer {
        let deflate = !offer.is_empty();
        let mut conn = child::connect_from_spread(port, n);
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            conn,
            "GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{offer}\r\n"
        )
        .unwrap();
        let mut peer = Peer {
            conn,
            buf: Vec::new(),
            read: 0,
            written: 0,
            compressor: deflate.then(|| zlib_rs::Deflate::new(6, false, 15)),
        };
        while !peer.buf.windows(4).any(|w| w == b"\r\n\r\n") {
            peer.more();
        }
        let end = peer.buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&peer.buf[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert_eq!(head.contains("permessage-deflate"), deflate, "{head}");
        peer.buf.drain(..end);
        peer.read = peer.buf.len();
        peer
    }

    fn more(&mut self) {
        let mut chunk = [0u8; 16384];
        let n = self.conn.read(&mut chunk).unwrap();
        assert!(n > 0, "the server closed");
        self.buf.extend_from_slice(&chunk[..n]);
        self.read += n;
    }

    /// The next frame: (first byte, payload).
    fn frame(&mut self) -> (u8, Vec<u8>) {
        loop {
            let b = &self.buf;
            if b.len() >= 2 {
                let (len, at) = match b[1] & 0x7f {
                    126 if b.len() >= 4 => (usize::from(u16::from_be_bytes([b[2], b[3]])), 4),
                    126 | 127 => (usize::MAX, 0),
                    n => (usize::from(n), 2),
                };
                if at > 0 && b.len() >= at + len {
                    let frame = (b[0], b[at..at + len].to_vec());
                    self.buf.drain(..at + len);
                    if frame.0 == 0x89 {
                        // The server's liveness ping (a slow run outlasts its interval).
                        let mut pong = Vec::new();
                        write_frame(&mut pong, 0x8a, &frame.1, Some([1, 2, 3, 4]));
                        self.conn.write_all(&pong).unwrap();
                        continue;
                    }
                    return frame;
                }
            }
            self.more();
        }
    }

    /// Sends `text` (compressed when this peer agreed to the extension).
    fn send(&mut self, text: &str) {
        let mut out = Vec::new();
        match self.compressor.as_mut() {
            Some(c) => {
                c.reset();
                let mut z = vec![0u8; text.len() + 64];
                c.compress(text.as_bytes(), &mut z, zlib_rs::DeflateFlush::SyncFlush)
                    .unwrap();
                z.truncate(c.total_out() as usize - 4);
                write_frame(&mut out, 0xc1, &z, Some([1, 2, 3, 4]));
            }
            None => write_frame(&mut out, 0x81, text.as_bytes(), Some([1, 2, 3, 4])),
        }
        self.conn.write_all(&out).unwrap();
        self.written += out.len();
    }
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    let limit = child::raise_open_files();
    child::run("DEFLATE_BENCH_SERVER", serve, |port, _| run(port, limit));
    println!("\n3. idle: server RSS per idle WebSocket, a fresh server each");
    let kinds: [(&str, bool, Option<u8>, usize); 5] = [
        ("plain", false, None, 1),
        ("compressing", true, None, 1),
        ("kept 10 bits", true, Some(10), 1),
        ("kept 10 bits", true, Some(10), 20),
        ("kept 12 bits", true, Some(12), 40),
    ];
    for (name, deflate, keep, messages) in kinds {
        // Read by the child.
        let bits = keep.map(|b| b.to_string());
        let vars: Vec<(&str, &str)> = bits
            .iter()
            .map(|b| ("DEFLATE_BENCH_KEEP", b.as_str()))
            .collect();
        child::run_with("DEFLATE_BENCH_SERVER", &vars, serve, |port, _| {
            idle(port, limit, name, deflate, messages)
        });
    }
}

/// 10 000 idle connections, each after `messages` messages each way.
fn idle(port: u16, limit: u64, name: &str, deflate: bool, messages: usize) {
    let line = chat_line(7);
    // Both workers make their codecs (a per-worker cost, not a per-connection one).
    for n in 0..8 {
        let mut p = Peer::connect(port, n, true);
        p.send(&line);
        p.frame();
    }
    let members = MEMBERS.min((limit as usize).saturating_sub(200));
    let before = child::settled(|| stats(port));
    let mut peers: Vec<Peer> = (0..members)
        .map(|n| Peer::connect(port, n, deflate))
        .collect();
    for i in 0..messages {
        let line = chat_line(i);
        for p in &mut peers {
            p.send(&line);
        }
        for p in &mut peers {
            let (first, _) = p.frame();
            assert_eq!(first & 0x40 != 0, deflate);
        }
    }
    let after = child::settled(|| stats(port));
    println!(
        "   {name:<12} after {messages:>2} message(s) each way: {:>6.1} B RSS per connection, {:>6.1} B of live heap ({members} held; baseline {:.1} MiB)",
        (after.rss_kib as f64 - before.rss_kib as f64) * 1024.0 / members as f64,
        (after.heap as f64 - before.heap as f64) / members as f64,
        before.rss_kib as f64 / 1024.0
    );
}

fn run(port: u16, limit: u64) {
    println!(
        "permessage-deflate: server with Deflate::default() (level 6, no context takeover), 2 workers"
    );
    let lines: Vec<String> = (0..64).map(chat_line).collect();
    let average = lines.iter().map(String::len).sum::<usize>() / lines.len();
    println!(
        "chat lines: {} distinct, {average} bytes on average\n",
        lines.len()
    );

    // 1. Echo, one message at a time.
    println!("1. echo of {ECHOES} chat lines, one at a time");
    for deflate in [false, true] {
        let mut peer = Peer::connect(port, 0, deflate);
        let before = stats(port);
        let t0 = Instant::now();
        for i in 0..ECHOES {
            peer.send(&lines[i % lines.len()]);
            let (first, _) = peer.frame();
            assert_eq!(first & 0x0f, 1);
        }
        let elapsed = t0.elapsed();
        let after = stats(port);
        println!(
            "   {:<12} to server {:>6.1} B/msg, from server {:>6.1} B/msg, server CPU {:>5.2} µs/msg ({:.0} msg/s one client)",
            if deflate { "compressed" } else { "plain" },
            peer.written as f64 / ECHOES as f64,
            peer.read as f64 / ECHOES as f64,
            (after.cpu_micros - before.cpu_micros) as f64 / ECHOES as f64,
            ECHOES as f64 / elapsed.as_secs_f64()
        );
    }

    let members = MEMBERS.min((limit as usize).saturating_sub(200) / 2);
    println!(
        "\n2. publish: {members} compressing members in room `z`, {members} plain ones in room `p`"
    );
    let mut groups = Vec::new();
    for (room, deflate) in [("z", true), ("p", false)] {
        let mut peers: Vec<Peer> = (0..members)
            .map(|n| {
                let mut p = Peer::connect(port, n, deflate);
                p.send(&format!("join {room}"));
                p
            })
            .collect();
        for p in &mut peers {
            let (first, _) = p.frame();
            assert_eq!(
                first & 0x40 != 0,
                deflate,
                "the greeting is compressed iff agreed"
            );
            p.read = p.buf.len();
        }
        groups.push((room, deflate, peers));
    }
    for (room, deflate, peers) in &mut groups {
        let before = stats(port);
        for i in 0..PUBLISHES {
            let line = &lines[i % lines.len()];
            publish_to_all(port, room, line, peers, *deflate);
        }
        let after = stats(port);
        // Less the HTTP requests themselves: measured with a publish to nobody.
        let bytes = peers.iter().map(|p| p.read).sum::<usize>() as f64 / peers.len() as f64;
        println!(
            "   {:<12} server CPU {:>7.2} ms per publish to {} members ({:.2} µs per member), {:>6.1} B per member per message",
            if *deflate { "compressing" } else { "plain" },
            (after.cpu_micros - before.cpu_micros) as f64 / 1000.0 / PUBLISHES as f64,
            peers.len(),
            (after.cpu_micros - before.cpu_micros) as f64 / (PUBLISHES * peers.len()) as f64,
            bytes / PUBLISHES as f64
        );
    }
    drop(groups);
    windows(port, members);

    let empty = stats(port);
    for i in 0..PUBLISHES {
        let line = &lines[i % lines.len()];
        http(
            port,
            &format!(
                "POST /publish?room=none HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{line}",
                line.len()
            ),
        );
    }
    println!(
        "   (the publish request alone, to an empty room: {:.3} ms of server CPU)",
        (stats(port).cpu_micros - empty.cpu_micros) as f64 / 1000.0 / PUBLISHES as f64
    );
}

/// Publishes of a 3.7 KB line to `members` compressing members whose agreements rotate over
/// `k` window sizes: each worker compresses a publish once per window in use, so the CPU per
/// publish should not jump once `k` passes a cache's size.
fn windows(port: u16, members: usize) {
    let line: String = (0..)
        .map(chat_line)
        .take_while(|_| true)
        .take(20)
        .collect::<String>();
    let line = &line[..line.len().min(3_700)];
    println!(
        "   one room of {members} compressing members, agreements over k window sizes, {} B a publish:",
        line.len()
    );
    for k in [1u8, 4, 5, 8] {
        let room = format!("w{k}");
        let mut peers: Vec<Peer> = (0..members)
            .map(|n| {
                let bits = 15 - (n % usize::from(k)) as u8;
                let offer = format!(
                    "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits={bits}\r\n"
                );
                let mut p = Peer::connect_offering(port, n, &offer);
                p.send(&format!("join {room}"));
                p
            })
            .collect();
        for p in &mut peers {
            p.frame();
        }
        let publishes = PUBLISHES / 4;
        let before = stats(port);
        for _ in 0..publishes {
            publish_to_all(port, &room, line, &mut peers, true);
        }
        let after = stats(port);
        println!(
            "   k = {k}: server CPU {:>7.2} ms per publish",
            (after.cpu_micros - before.cpu_micros) as f64 / 1000.0 / publishes as f64
        );
    }
}

/// Publishes `line` to `room` and reads it at every one of its `peers`, compressed iff
/// `deflate`.
fn publish_to_all(port: u16, room: &str, line: &str, peers: &mut [Peer], deflate: bool) {
    let queued = http(
        port,
        &format!(
            "POST /publish?room={room} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{line}",
            line.len()
        ),
    );
    assert_eq!(queued.trim(), peers.len().to_string());
    for p in peers.iter_mut() {
        let (first, _) = p.frame();
        assert_eq!(first & 0x40 != 0, deflate, "compressed iff agreed");
    }
}
