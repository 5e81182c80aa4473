//! What HTTP/2 request bodies that never end cost the server, with figures (asserts nothing;
//! `cargo bench --bench h2_bodies`): 20, 40 and 100 connections each open 4 POST streams and
//! send 1 000 KiB on each (as the windows allow), never ending them. Printed per step: the
//! server's memory growth (RSS) once the senders stop, what became of the streams, and the
//! growth again after the header timeout (10 s) has passed — bodies that stop arriving get
//! 408 and are let go. The server's budget for bodies held (`max_held_bodies`, 64 MiB by
//! default) bounds the first figure whatever the number of connections; without it memory
//! grew ~4 MiB per connection and was never given back.
//!
//! The server runs in a child process (this program, re-run with `H2_BODIES_BENCH_SERVER=1`),
//! one worker, default limits. Everything talks to 127.0.0.1 only; every phase is bounded.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{Server, text_response};

mod child;

use child::h2::{head, hello, request};

const STREAMS: u32 = 4;
const BODY: usize = 1_000 * 1024;
const PIECE: usize = 16_384;

fn serve() {
    child::raise_open_files();
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    let port = server.local_addr().unwrap().port();
    let _running = server
        .spawn(|req| match req.path() {
            "/stats" => text_response(200, child::stats_line()),
            _ => text_response(200, req.body().len().to_string()),
        })
        .unwrap();
    child::serve_until_stdin_closes(port);
}

/// What became of a connection's streams.
#[derive(Default)]
struct Outcome {
    /// Streams that sent all their body (unended).
    sent_all: usize,
    /// Streams the server refused or reset (and with what code).
    reset: HashMap<u32, usize>,
    /// Statuses the server answered with.
    answered: HashMap<u16, usize>,
}

/// One connection: 4 POST streams, 1 000 KiB each as the windows allow, never ended; reads
/// what comes meanwhile (windows, resets). Returns once every stream is done or stuck.
fn upload(port: u16) -> (TcpStream, Outcome) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut out = hello();
    for i in 0..STREAMS {
        request(&mut out, 1 + 2 * i, "POST", "/up", false);
    }
    c.write_all(&out).unwrap();
    let mut outcome = Outcome::default();
    let mut conn_window: i64 = 65_535;
    let mut windows: HashMap<u32, i64> = (0..STREAMS).map(|i| (1 + 2 * i, 65_535)).collect();
    let mut sent: HashMap<u32, usize> = windows.keys().map(|&s| (s, 0)).collect();
    let mut input = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let piece = vec![b'b'; PIECE];
    let mut quiet_since = Instant::now();
    loop {
        // Send what the windows allow.
        let mut wrote = false;
        for (&s, window) in windows.iter_mut() {
            let done = sent[&s];
            let n = (BODY - done)
                .min(PIECE)
                .min(*window as usize)
                .min(conn_window.max(0) as usize);
            if n == 0 {
                continue;
            }
            let mut f = Vec::with_capacity(9 + n);
            head(&mut f, n, 0x0, 0, s);
            f.extend_from_slice(&piece[..n]);
            if c.write_all(&f).is_err() {
                return (c, outcome);
            }
            *window -= n as i64;
            conn_window -= n as i64;
            *sent.get_mut(&s).unwrap() += n;
            wrote = true;
        }
        // Read what came.
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => input.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        let mut at = 0;
        let mut heard = false;
        while input.len() >= at + 9 {
            let len = u32::from_be_bytes([0, input[at], input[at + 1], input[at + 2]]) as usize;
            if input.len() < at + 9 + len {
                break;
            }
            let (kind, flags) = (input[at + 3], input[at + 4]);
            let stream =
                u32::from_be_bytes(input[at + 5..at + 9].try_into().unwrap()) & 0x7fff_ffff;
            let payload = &input[at + 9..at + 9 + len];
            match kind {
                0x8 => {
                    let inc = i64::from(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                    if stream == 0 {
                        conn_window += inc;
                    } else if let Some(w) = windows.get_mut(&stream) {
                        *w += inc;
                    }
                    heard = true;
                }
                0x3 => {
                    let code = u32::from_be_bytes(payload[..4].try_into().unwrap());
                    *outcome.reset.entry(code).or_default() += 1;
                    windows.remove(&stream);
                    heard = true;
                }
                0x1 if flags & 0x4 != 0 => {
                    // A status as the first byte of a one-field block (indexed, or a literal
                    // with an indexed name: 8 → 200, 13 → 500; 408 comes as a literal).
                    let status = match payload.first() {
                        Some(0x88) => 200,
                        _ => 0,
                    };
                    *outcome.answered.entry(status).or_default() += 1;
                    heard = true;
                }
                0x7 => return (c, outcome),
                _ => {}
            }
            at += 9 + len;
        }
        input.drain(..at);
        if wrote || heard {
            quiet_since = Instant::now();
        }
        let all_sent = windows.keys().all(|s| sent[s] == BODY);
        if windows.is_empty() || all_sent || quiet_since.elapsed() > Duration::from_secs(2) {
            outcome.sent_all = windows.keys().filter(|s| sent[s] == BODY).count();
            return (c, outcome);
        }
    }
    (c, outcome)
}

fn main() {
    child::run("H2_BODIES_BENCH_SERVER", serve, |port, _child| {
        println!("HTTP/2 request bodies never ended: 4 streams a connection, 1 000 KiB each");
        println!(
            "{:>11} {:>16} {:>30} {:>22}",
            "connections", "RSS growth MiB", "streams (sent all / reset)", "after 15 s, MiB"
        );
        for n in [20usize, 40, 100] {
            let base = child::settled(|| child::stats(port)).rss_kib;
            let threads: Vec<_> = (0..n)
                .map(|_| std::thread::spawn(move || upload(port)))
                .collect();
            let done: Vec<(TcpStream, Outcome)> =
                threads.into_iter().map(|t| t.join().unwrap()).collect();
            let held = child::settled(|| child::stats(port)).rss_kib;
            let sent_all: usize = done.iter().map(|(_, o)| o.sent_all).sum();
            let reset: usize = done.iter().flat_map(|(_, o)| o.reset.values()).sum();
            std::thread::sleep(Duration::from_secs(15));
            let after = child::settled(|| child::stats(port)).rss_kib;
            let mib = |kib: u64, base: u64| kib.saturating_sub(base) as f64 / 1024.0;
            println!(
                "{n:>11} {:>16.1} {:>30} {:>22.1}",
                mib(held, base),
                format!("{sent_all} / {reset}"),
                mib(after, base)
            );
            drop(done);
            std::thread::sleep(Duration::from_millis(500));
        }
    });
}
