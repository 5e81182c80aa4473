//! Whether one HTTP/2 connection is fair to the streams it carries, with figures (asserts
//! nothing; `cargo bench --bench h2_fairness`): a 1 GiB download whose client reads as fast
//! as it can, and beside it on the same connection ten event streams of a room posted to every
//! 15 ms (from another connection). Printed, three rounds: the download's speed alone and with
//! the events, and how long each event took from its post to the last of the ten streams —
//! the goal is every event within 50 ms while the download runs, and the download at 90 % or
//! more of its speed alone.
//!
//! The server runs in a child process (this program, re-run with `H2_FAIRNESS_BENCH_SERVER=1`),
//! one worker: `hello --events news --download BYTES`'s routes. Everything talks to 127.0.0.1
//! only; every phase is bounded in count and time.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use web::http::{Server, text_response};

mod child;

use child::h2::{head, hello, request};

const DOWNLOAD: u64 = 1 << 30;
const STREAMS: u32 = 10;
const POST_EVERY: Duration = Duration::from_millis(15);
const ROUNDS: usize = 3;

fn serve() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .sse("/events", child::rooms::JoinsRoom("news"));
    let rooms = server.rooms();
    let control = server.control();
    let port = server.local_addr().unwrap().port();
    let _running = server
        .spawn(move |req| match (req.method(), req.path()) {
            ("GET", "/stats") => {
                let s = control.stats();
                text_response(
                    200,
                    format!(
                        "panics {} lagging_closed {} queued {} held {}",
                        s.panics, s.lagging_closed, s.queued_output, s.held_bytes
                    ),
                )
            }
            ("POST", "/events") => {
                let data = String::from_utf8_lossy(req.body());
                rooms.publish_event("news", &web::sse::Event::new(data));
                text_response(200, "published")
            }
            ("GET", "/download") => {
                let (reply, later) = web::http::defer();
                std::thread::spawn(move || {
                    let Ok(mut body) = reply.stream_sized(text_response(200, ""), DOWNLOAD) else {
                        return;
                    };
                    let piece = vec![b'd'; 64 * 1024];
                    let mut left = DOWNLOAD;
                    while left > 0 {
                        let n = left.min(piece.len() as u64) as usize;
                        if body.write_all(&piece[..n]).is_err() {
                            return;
                        }
                        left -= n as u64;
                    }
                    let _ = body.finish();
                });
                later
            }
            _ => text_response(200, "ok"),
        })
        .unwrap();
    child::serve_until_stdin_closes(port);
}

/// What one round saw: the download's time, and each event's time from post to the last
/// stream that got it.
struct Round {
    download: Duration,
    latencies: Vec<Duration>,
}

/// One connection: `streams` event streams (1, 3, ...) and the download after them; reads
/// everything, opening the windows as it goes, until the download ends. With `post`, events
/// are posted every 15 ms meanwhile.
fn round(port: u16, streams: u32, post: bool) -> Round {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_nodelay(true).unwrap();
    let mut out = hello();
    // Windows as browsers open them: the connection's to 16 MiB, each stream's 6 MiB.
    head(&mut out, 6, 0x4, 0, 0);
    out.extend_from_slice(&[0, 4]);
    out.extend_from_slice(&(6u32 << 20).to_be_bytes());
    head(&mut out, 4, 0x8, 0, 0);
    out.extend_from_slice(&((16u32 << 20) - 65_535).to_be_bytes());
    for i in 0..streams {
        request(&mut out, 1 + 2 * i, "GET", "/events", true);
    }
    let download = 1 + 2 * streams;
    c.write_all(&out).unwrap();
    // Once the event streams' heads came, the download starts (and the posts).
    let posted: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let mut seen: HashMap<u64, (u32, Instant)> = HashMap::new();
    let mut input = Vec::new();
    let mut buf = vec![0u8; 1 << 18];
    let mut heads = 0;
    let mut started = None;
    let mut poster = None;
    let mut got = 0u64;
    let mut consumed = 0u64;
    let deadline = Instant::now() + Duration::from_secs(120);
    while got < DOWNLOAD && Instant::now() < deadline {
        let n = match c.read(&mut buf) {
            Ok(n) => n,
            Err(e) => panic!("{e} after {got} bytes; server: {}", server_figures(port)),
        };
        assert!(n > 0, "the connection ended");
        input.extend_from_slice(&buf[..n]);
        let mut at = 0;
        let mut updates = Vec::new();
        while input.len() >= at + 9 {
            let len = u32::from_be_bytes([0, input[at], input[at + 1], input[at + 2]]) as usize;
            if input.len() < at + 9 + len {
                break;
            }
            let (kind, stream) = (
                input[at + 3],
                u32::from_be_bytes(input[at + 5..at + 9].try_into().unwrap()),
            );
            let payload = &input[at + 9..at + 9 + len];
            match kind {
                0x7 => {
                    let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
                    panic!("GOAWAY {code} after {got} bytes of the download");
                }
                0x3 => {
                    let code = u32::from_be_bytes(payload[..4].try_into().unwrap());
                    panic!("stream {stream} reset ({code}) after {got} bytes of the download");
                }
                0x1 if stream < download => heads += 1,
                0x0 if stream == download => got += len as u64,
                0x0 => {
                    // "data: <seq>\n\n" events (heartbeats and the like are not).
                    for line in String::from_utf8_lossy(payload).lines() {
                        if let Some(seq) = line
                            .strip_prefix("data: ")
                            .and_then(|s| s.parse::<u64>().ok())
                        {
                            let now = Instant::now();
                            let e = seen.entry(seq).or_insert((0, now));
                            e.0 += 1;
                            e.1 = now;
                        }
                    }
                }
                _ => {}
            }
            if kind == 0x0 && len > 0 {
                consumed += len as u64;
                updates.push((stream, len as u32));
            }
            at += 9 + len;
        }
        input.drain(..at);
        // Open what was read, at once (the stream's, and the connection's in one sum).
        let mut wu = Vec::new();
        for (stream, len) in updates {
            head(&mut wu, 4, 0x8, 0, stream);
            wu.extend_from_slice(&len.to_be_bytes());
        }
        if consumed > 0 {
            head(&mut wu, 4, 0x8, 0, 0);
            wu.extend_from_slice(&(consumed as u32).to_be_bytes());
            consumed = 0;
        }
        if heads == streams && started.is_none() {
            let mut start = Vec::new();
            request(&mut start, download, "GET", "/download", true);
            wu.extend_from_slice(&start);
            started = Some(Instant::now());
            if post {
                let (posted, done) = (Arc::clone(&posted), Arc::clone(&done));
                poster = Some(std::thread::spawn(move || {
                    let mut p = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    let mut seq = 0u64;
                    let mut reply = [0u8; 512];
                    while !done.load(Ordering::Relaxed) {
                        let body = seq.to_string();
                        let req = format!(
                            "POST /events HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        posted.lock().unwrap().insert(seq, Instant::now());
                        p.write_all(req.as_bytes()).unwrap();
                        let _ = p.read(&mut reply).unwrap();
                        seq += 1;
                        std::thread::sleep(POST_EVERY);
                    }
                }));
            }
        }
        if !wu.is_empty()
            && let Err(e) = c.write_all(&wu)
        {
            panic!("{e} after {got} bytes; server: {}", server_figures(port));
        }
    }
    let download_time = started.map_or(Duration::ZERO, |s| s.elapsed());
    done.store(true, Ordering::Relaxed);
    if let Some(p) = poster {
        p.join().unwrap();
    }
    let posted = posted.lock().unwrap();
    let mut latencies: Vec<Duration> = seen
        .iter()
        .filter(|(_, (count, _))| *count == streams)
        .filter_map(|(seq, (_, last))| posted.get(seq).map(|p| last.saturating_duration_since(*p)))
        .collect();
    latencies.sort();
    Round {
        download: download_time,
        latencies,
    }
}

/// The server's figures that say why a connection would end.
fn server_figures(port: u16) -> String {
    child::http(
        port,
        "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
}

fn main() {
    child::run("H2_FAIRNESS_BENCH_SERVER", serve, |port, _child| {
        println!(
            "one HTTP/2 connection: a {} MiB download beside {STREAMS} event streams posted to every {} ms, one worker",
            DOWNLOAD >> 20,
            POST_EVERY.as_millis()
        );
        println!(
            "{:>5} {:>14} {:>16} {:>9} {:>30}",
            "round", "alone MB/s", "with events MB/s", "ratio", "events: p50 / p99 / max ms (n)"
        );
        let mb = DOWNLOAD as f64 / 1e6;
        for r in 0..ROUNDS {
            let alone = round(port, STREAMS, false);
            let with = round(port, STREAMS, true);
            let ms = |d: Option<&Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
            let l = &with.latencies;
            let pct =
                |p: f64| l.get(((l.len() as f64 * p) as usize).min(l.len().saturating_sub(1)));
            let (a, w) = (
                mb / alone.download.as_secs_f64(),
                mb / with.download.as_secs_f64(),
            );
            println!(
                "{:>5} {:>14.0} {:>16.0} {:>9.2} {:>30}",
                r + 1,
                a,
                w,
                w / a,
                format!(
                    "{:.1} / {:.1} / {:.1} ({})",
                    ms(pct(0.5)),
                    ms(pct(0.99)),
                    ms(l.last()),
                    l.len()
                )
            );
        }
    });
}
