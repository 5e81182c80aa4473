//! What a frame costs an HTTP/2 connection as its open streams grow, with figures (asserts
//! nothing; `cargo bench --bench h2_frames`): the server's CPU per MB of
//!
//! - **DATA**: 1-byte DATA frames spread over the connection's streams, each a request body
//!   still arriving;
//! - **SETTINGS**: SETTINGS frames full of SETTINGS_INITIAL_WINDOW_SIZE parameters (2 730 a
//!   frame), which move every open stream's window;
//!
//! with 1 and with 250 streams open. Flat is the goal: a frame's work should not depend on how
//! many streams are open. Each case runs on several connections in turn (each within the
//! server's flood budget and the streams' windows), three rounds, and prints each round and the
//! spread.
//!
//! The server runs in a child process (this program, re-run with `H2_FRAMES_BENCH_SERVER=1`),
//! one worker. Everything talks to 127.0.0.1 only; every phase is bounded in count.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;

use web::http::{Server, text_response};

mod child;

use child::h2::{head, hello, request};
/// 1-byte DATA frames sent on one connection (60 000 body bytes in all, within every window).
const DATA_FRAMES: usize = 60_000;
/// SETTINGS frames sent on one connection (well within the flood budget).
const SETTINGS_FRAMES: usize = 400;
const CONNECTIONS: usize = 8;
const ROUNDS: usize = 3;

fn serve() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    let port = server.local_addr().unwrap().port();
    let _running = server
        .spawn(|req| match req.path() {
            "/stats" => text_response(200, child::stats_line()),
            _ => text_response(200, "ok"),
        })
        .unwrap();
    child::serve_until_stdin_closes(port);
}

/// A connection with `streams` POST streams open (their bodies to come), and a thread that
/// reads and drops what the server sends, telling when a PING is answered.
fn open(port: u16, streams: u32) -> (TcpStream, mpsc::Receiver<()>) {
    let conn = TcpStream::connect(("127.0.0.1", port)).expect("the child listens");
    conn.set_nodelay(true).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut reader = conn.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                return;
            }
            held.extend_from_slice(&buf[..n]);
            let mut at = 0;
            while held.len() >= at + 9 {
                let len = u32::from_be_bytes([0, held[at], held[at + 1], held[at + 2]]) as usize;
                if held.len() < at + 9 + len {
                    break;
                }
                if held[at + 3] == 0x6 && held[at + 4] & 1 == 1 && tx.send(()).is_err() {
                    return;
                }
                if held[at + 3] == 0x7 && held[at + 13..at + 17] != [0, 0, 0, 0] {
                    let code = &held[at + 13..at + 17];
                    eprintln!("h2_frames: GOAWAY with error {code:?}: the figures are not whole");
                }
                at += 9 + len;
            }
            held.drain(..at);
        }
    });
    let mut out = hello();
    for i in 0..streams {
        request(&mut out, 1 + 2 * i, "POST", "/up", false);
    }
    let mut conn = conn;
    conn.write_all(&out).expect("the child reads");
    (conn, rx)
}

/// Sends `frames` and waits until the server has taken them (a PING answered).
fn send_all(conn: &mut TcpStream, acks: &mpsc::Receiver<()>, frames: &[u8]) {
    let mut out = frames.to_vec();
    head(&mut out, 8, 0x6, 0, 0);
    out.extend_from_slice(b"measured");
    conn.write_all(&out).expect("the child reads");
    acks.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the PING answered");
}

fn data_frames(streams: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(DATA_FRAMES * 10);
    for i in 0..DATA_FRAMES {
        head(&mut out, 1, 0x0, 0, 1 + 2 * (i as u32 % streams));
        out.push(b'x');
    }
    out
}

fn settings_frames() -> Vec<u8> {
    let params = 16_380 / 6;
    let mut out = Vec::new();
    for f in 0..SETTINGS_FRAMES {
        head(&mut out, params * 6, 0x4, 0, 0);
        for p in 0..params {
            out.extend_from_slice(&[0, 4]);
            let size: u32 = 65_535 - ((f + p) % 2) as u32;
            out.extend_from_slice(&size.to_be_bytes());
        }
    }
    out
}

/// The server's CPU per MB of `frames` sent on connections with `streams` open, in ms.
fn cpu_per_mb(port: u16, streams: u32, frames: &[u8]) -> f64 {
    let mut conns: Vec<_> = (0..CONNECTIONS).map(|_| open(port, streams)).collect();
    // Every stream open and answered with nothing yet: a PING on each.
    for (conn, acks) in &mut conns {
        send_all(conn, acks, &[]);
    }
    let before = child::stats(port).cpu_micros;
    for (conn, acks) in &mut conns {
        send_all(conn, acks, frames);
    }
    let after = child::stats(port).cpu_micros;
    let mb = (frames.len() * CONNECTIONS) as f64 / 1e6;
    (after - before) as f64 / 1e3 / mb
}

fn main() {
    child::run("H2_FRAMES_BENCH_SERVER", serve, |port, _child| {
        println!("server CPU per MB of frames, one worker ({CONNECTIONS} connections a round)");
        println!(
            "{:<10} {:>8} {:>30} {:>14}",
            "frames", "streams", "ms per MB (rounds)", "250 / 1"
        );
        for (name, frames) in [
            ("DATA", data_frames as fn(u32) -> Vec<u8>),
            ("SETTINGS", |_| settings_frames()),
        ] {
            let mut by_streams = Vec::new();
            for streams in [1u32, 250] {
                let bytes = frames(streams);
                let rounds: Vec<f64> = (0..ROUNDS)
                    .map(|_| cpu_per_mb(port, streams, &bytes))
                    .collect();
                by_streams.push(rounds);
            }
            let median = |v: &Vec<f64>| {
                let mut s = v.clone();
                s.sort_by(f64::total_cmp);
                s[s.len() / 2]
            };
            for (streams, rounds) in [1, 250].iter().zip(&by_streams) {
                let shown: Vec<String> = rounds.iter().map(|r| format!("{r:.1}")).collect();
                let ratio = match streams {
                    250 => format!("{:.2}", median(rounds) / median(&by_streams[0]).max(1e-9)),
                    _ => String::new(),
                };
                println!(
                    "{name:<10} {streams:>8} {:>30} {ratio:>14}",
                    shown.join(" ")
                );
            }
        }
    });
}
