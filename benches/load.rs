//! Our own server under load, with nothing but this repository (`cargo bench --bench load`):
//!
//! 1. idle cost: 19 000 keep-alive connections, each after one `GET`, left idle — the server's
//!    RSS growth per connection, and the latency of a request on a fresh connection (connect,
//!    `GET`, reply: 2 000 one after another, median and 99th percentile) with none held and with
//!    the 19 000 held;
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

use web::http::{Server, text_response};

const IDLE: usize = 19_000;
const FRESH: usize = 2_000;
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
    child::raise_open_files();
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
    let (p50_none, p99_none) = fresh_latency(port);
    let (_, before) = stats(port);
    let mut idle = Vec::with_capacity(IDLE);
    let mut buf = Vec::new();
    for i in 0..IDLE {
        // From 127.0.0.2 to 127.0.0.50, so that the fresh connections' source ports stay free.
        let mut c = connect_from([127, 0, 0, 2 + (i % 49) as u8], port);
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
    let (p50_idle, p99_idle) = fresh_latency(port);
    println!(
        "fresh request (connect, GET, reply; {FRESH} in turn): median {p50_none:.1} µs, p99 {p99_none:.1} µs with none held; median {p50_idle:.1} µs ({:.2}×), p99 {p99_idle:.1} µs with {IDLE} idle held",
        p50_idle / p50_none
    );
    drop(idle);
}

/// Median and 99th percentile, in µs, of `FRESH` requests each on a connection of its own.
fn fresh_latency(port: u16) -> (f64, f64) {
    let mut buf = Vec::new();
    let mut took: Vec<Duration> = (0..FRESH)
        .map(|_| {
            let t = Instant::now();
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_nodelay(true).unwrap();
            c.write_all(REQUEST).unwrap();
            read_replies(&mut c, &mut buf, 1);
            let took = t.elapsed();
            buf.clear();
            took
        })
        .collect();
    took.sort();
    let at = |p: f64| took[((FRESH as f64 * p) as usize).min(FRESH - 1)].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

/// A connection to the server from source address `from` (an ephemeral port of it): the
/// kernel looks for a free source port among those of one source address, and with 19 000
/// connections from 127.0.0.1 that search, not the server, would be what a fresh connection
/// waits for.
fn connect_from(from: [u8; 4], port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;

    let addr = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let (src, dst) = (addr(from, 0), addr([127, 0, 0, 1], port));
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: socket(2) takes no pointers; bind(2) and connect(2) read `len` bytes of a live
    // `sockaddr_in`; the descriptor is ours alone until `TcpStream` owns it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let bound = libc::bind(fd, (&src as *const libc::sockaddr_in).cast(), len);
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        let connected = libc::connect(fd, (&dst as *const libc::sockaddr_in).cast(), len);
        assert_eq!(connected, 0, "connect: {}", std::io::Error::last_os_error());
        stream
    }
}
