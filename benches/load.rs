//! Our own server under load, with nothing but this repository (`cargo bench --bench load`):
//!
//! 1. idle cost: 5 000 keep-alive connections, each after one `GET`, left idle — the server's
//!    RSS growth per connection;
//! 2. keep-alive throughput: 32 connections, one request in flight on each;
//! 3. pipelined throughput: 32 connections, 16 requests in flight on each;
//! 4. memory after bursts: 5 rounds of 20 concurrent 1 MB POSTs echoed back — the server's RSS
//!    after each round against before the first;
//!
//! for the `hello` handler on one worker. Throughput is given per second of wall time and per
//! second of the server's own CPU time (the robust figure on a shared machine; the load
//! generator here is simple and shares the machine, so compare figures of one run with each
//! other, not with other machines). The server runs in a child process (this program re-run with
//! `LOAD_BENCH_SERVER=1`); everything talks to 127.0.0.1; the child ends when the parent closes
//! its standard input. Asserts nothing but that every reply is the expected one.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{text_response, Server};

const IDLE: usize = 5_000;
const CONNECTIONS: usize = 32;
const RUN: Duration = Duration::from_secs(5);
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

mod child;

fn serve() {
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(|req| match req.path() {
            "/stats" => text_response(
                200,
                format!(
                    "{} {}",
                    child::cpu_micros(),
                    child::status_kib("self", "VmRSS:")
                ),
            ),
            "/echo" => text_response(200, req.into_body()),
            _ => text_response(200, "Hello, World!"),
        })
        .unwrap();
    child::serve_until_stdin_closes(handle.local_addr().port());
    let _ = handle.shutdown();
}

/// (server CPU µs, RSS KiB), asked on a connection of its own.
fn stats(port: u16) -> (i64, u64) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(b"GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    c.read_to_string(&mut reply).unwrap();
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or_default();
    let mut v = body.split_whitespace().map(|x| x.parse::<i64>().unwrap());
    (v.next().unwrap(), v.next().unwrap() as u64)
}

/// Reads `n` whole `Hello, World!` replies from `conn` (each ends with the body).
fn read_replies(conn: &mut TcpStream, buf: &mut Vec<u8>, n: usize) {
    let mut seen = 0;
    let mut chunk = [0u8; 16 * 1024];
    while seen < n {
        let got = conn.read(&mut chunk).unwrap();
        assert!(got > 0, "the server closed a connection");
        buf.extend_from_slice(&chunk[..got]);
        while let Some(at) = buf.windows(13).position(|w| w == b"Hello, World!") {
            assert!(buf.starts_with(b"HTTP/1.1 200 OK\r\n"));
            buf.drain(..at + 13);
            seen += 1;
        }
    }
}

/// Requests per second of wall time and per second of server CPU, with `depth` requests in
/// flight on each of `CONNECTIONS` connections driven by one thread.
fn throughput(port: u16, depth: usize) -> (f64, f64) {
    let mut conns: Vec<(TcpStream, Vec<u8>)> = (0..CONNECTIONS)
        .map(|_| {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_nodelay(true).unwrap();
            (c, Vec::new())
        })
        .collect();
    let batch = REQUEST.repeat(depth);
    // Warm-up.
    for (c, buf) in &mut conns {
        c.write_all(&batch).unwrap();
        read_replies(c, buf, depth);
    }
    let (cpu0, _) = stats(port);
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed() < RUN {
        for (c, _) in &mut conns {
            c.write_all(&batch).unwrap();
        }
        for (c, buf) in &mut conns {
            read_replies(c, buf, depth);
        }
        done += (CONNECTIONS * depth) as u64;
    }
    let wall = start.elapsed().as_secs_f64();
    let (cpu1, _) = stats(port);
    let cpu = (cpu1 - cpu0) as f64 / 1e6;
    (done as f64 / wall, done as f64 / cpu)
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    child::run("LOAD_BENCH_SERVER", serve, |port, _| run(port));
}

/// One round: `BURST` clients at once each POST 1 MB to `/echo` and read it back.
fn burst_round(port: u16) {
    const BURST: usize = 20;
    const BODY: usize = 1_000_000;
    let clients: Vec<_> = (0..BURST)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let body = vec![b'a' + (i % 26) as u8; BODY];
                c.write_all(
                    format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .unwrap();
                c.write_all(&body).unwrap();
                let mut reply = Vec::new();
                c.read_to_end(&mut reply).unwrap();
                assert!(reply.ends_with(&body), "the body came back whole");
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
}

fn run(port: u16) {
    let (_, before) = stats(port);
    for round in 1..=5 {
        burst_round(port);
        std::thread::sleep(Duration::from_millis(1500));
        let (_, after) = stats(port);
        println!(
            "burst round {round}: 20 concurrent 1 MB POSTs echoed; RSS {:.2} MiB before the first, {:.2} MiB after ({:+.1}%)",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            (after as f64 - before as f64) * 100.0 / before as f64
        );
    }

    let (rps, per_core) = throughput(port, 1);
    println!(
        "keep-alive, {CONNECTIONS} connections, 1 in flight each: {rps:>10.0} req/s, {per_core:>10.0} req per server core-second"
    );
    let (rps, per_core) = throughput(port, 16);
    println!(
        "pipelined,  {CONNECTIONS} connections, 16 in flight each: {rps:>10.0} req/s, {per_core:>10.0} req per server core-second"
    );
    std::thread::sleep(Duration::from_millis(300));
    let (_, before) = stats(port);
    let mut idle = Vec::with_capacity(IDLE);
    let mut buf = Vec::new();
    for _ in 0..IDLE {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.write_all(REQUEST).unwrap();
        read_replies(&mut c, &mut buf, 1);
        buf.clear();
        idle.push(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let (_, held) = stats(port);
    println!(
        "idle: {IDLE} keep-alive connections held: RSS {:.2} -> {:.2} MiB, {:.0} bytes per idle connection",
        before as f64 / 1024.0,
        held as f64 / 1024.0,
        (held.saturating_sub(before) * 1024) as f64 / IDLE as f64
    );
}
