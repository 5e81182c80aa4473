//! How long a graceful stop takes, with figures (asserts nothing; `cargo bench --bench stop`):
//! from `Control::shutdown` to the server's `join` returning, for a server with everything
//! that runs on a schedule configured (two workers, a `Pool`, a WebSocket ping interval, the
//! event streams' heartbeat, a long-poll route), and
//!
//! 1. no clients;
//! 2. 200 idle keep-alive clients that never close their side;
//! 3. 200 event-stream readers that never close theirs;
//! 4. 200 WebSocket peers that answer the close frame, as browsers do;
//! 5. 200 long-polls waiting (each answered 204 at once);
//! 6. 20 WebSocket peers that never answer (bounded by the stop's linger, 250 ms).
//!
//! The server listens on two addresses (`Server::also_bind`), the clients of each case dealt
//! between them: the stop ends both. Each case 7 times; the median and the spread. Everything
//! talks to 127.0.0.1 only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{Pool, Request, Response, Server, defer_for, text_response};
use web::sse::{Sse, SseHandler};
use web::ws::{FIXED_MASK, Message, OP_CLOSE, Ws, WsHandler, write_frame, ws_handshake_request};

const CLIENTS: usize = 200;
const ROUNDS: usize = 7;

struct Feed;

impl SseHandler for Feed {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
        sse.send(&web::sse::Event::new("hello"));
    }
}

struct Echo;

impl WsHandler for Echo {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        ws.send(&msg);
    }
}

/// A server configured with everything that runs on a schedule.
fn start() -> web::http::ServerHandle {
    let pool = Pool::new(4, 64).unwrap();
    Server::bind("127.0.0.1:0")
        .unwrap()
        .also_bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .ping_interval(Some(Duration::from_secs(1)))
        .heartbeat(Duration::from_secs(1))
        .sse("/events", Feed)
        .websocket("/ws", Echo)
        .spawn(move |req| match req.path() {
            "/poll" => {
                let (reply, later) = defer_for(Duration::from_secs(30));
                std::mem::forget(reply); // nothing ever comes
                later
            }
            "/pool" => pool.answer(|| text_response(200, "pooled")),
            _ => text_response(200, "hi"),
        })
        .unwrap()
}

/// Reads until `end` has come (or the connection ends).
fn read_until(c: &mut TcpStream, end: &[u8]) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(end.len()).any(|w| w == end) {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Opens `n` clients of `kind`, dealt between `ports`, and returns them once each is where
/// the case wants it.
fn clients(ports: &[u16], kind: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            let port = ports[i % ports.len()];
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            match kind {
                "keep-alive" => {
                    c.write_all(b"GET /pool HTTP/1.1\r\nHost: b\r\n\r\n")
                        .unwrap();
                    read_until(&mut c, b"pooled");
                }
                "sse" => {
                    c.write_all(b"GET /events HTTP/1.1\r\nHost: b\r\n\r\n")
                        .unwrap();
                    read_until(&mut c, b"hello\n\n");
                }
                "poll" => c
                    .write_all(b"GET /poll HTTP/1.1\r\nHost: b\r\n\r\n")
                    .unwrap(),
                _ => {
                    c.write_all(&ws_handshake_request("127.0.0.1", "/ws"))
                        .unwrap();
                    read_until(&mut c, b"\r\n\r\n");
                }
            }
            c
        })
        .collect()
}

/// Peers that answer the server's close frame (1001) with their own, as browsers do.
fn answer_closes(peers: Vec<TcpStream>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for mut p in peers {
            let mut head = [0u8; 4];
            if p.read_exact(&mut head).is_ok() && head[0] == 0x80 | OP_CLOSE {
                let mut reply = Vec::new();
                write_frame(&mut reply, 0x80 | OP_CLOSE, &head[2..4], Some(FIXED_MASK));
                let _ = p.write_all(&reply);
            }
            drop(p.read(&mut head));
        }
    })
}

/// One stop of a server with `n` clients of `kind`; how long it took.
fn once(kind: &str, n: usize) -> Duration {
    let server = start();
    let ports: Vec<u16> = server.local_addrs().iter().map(|a| a.port()).collect();
    let peers = if n == 0 {
        Vec::new()
    } else {
        clients(&ports, kind, n)
    };
    std::thread::sleep(Duration::from_millis(100));
    let (answering, kept) = if kind == "websocket (answering)" {
        (Some(answer_closes(peers)), Vec::new())
    } else {
        (None, peers)
    };
    let began = Instant::now();
    server.shutdown().unwrap();
    let took = began.elapsed();
    if let Some(a) = answering {
        let _ = a.join();
    }
    drop(kept);
    took
}

fn main() {
    println!("graceful stop of a server with a Pool, pings, heartbeats and a long-poll route");
    println!(
        "{:<34} {:>8} {:>8} {:>8}",
        "clients", "median", "min", "max"
    );
    for (kind, n) in [
        ("none", 0),
        ("keep-alive", CLIENTS),
        ("sse", CLIENTS),
        ("websocket (answering)", CLIENTS),
        ("poll", CLIENTS),
        ("websocket (silent)", 20),
    ] {
        let mut took: Vec<Duration> = (0..ROUNDS).map(|_| once(kind, n)).collect();
        took.sort();
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
        println!(
            "{:<34} {:>8} {:>8} {:>8}",
            format!("{n} {kind}"),
            ms(took[ROUNDS / 2]),
            ms(took[0]),
            ms(took[ROUNDS - 1])
        );
    }
}
