//! What TLS costs (asserts nothing; `cargo bench --features tls --bench tls`):
//!
//! 1. **Idle cost:** user-space bytes per idle connection with 10 000 held — HTTPS keep-alive
//!    after a full handshake and one request, WSS after a full handshake and one echoed
//!    message — beside plain HTTP keep-alive and plain WebSocket measured the same way; each kind
//!    in a fresh server (RSS after less RSS before, over the count; the heap's own count beside
//!    it).
//! 2. **Where a TLS connection's bytes go:** rustls' unbuffered server connection alone, after
//!    a handshake and one exchange in memory (its value and its heap, counted): what a
//!    connection would hold if rustls kept protecting its records.
//! 3. **Speed** (with `TLS_BENCH_SPEED=1`): requests per server core-second — keep-alive over
//!    TLS 1.3, full handshakes with one request each (no resumption), and plain keep-alive
//!    beside them — for this library, nginx (`worker_processes 1`) and hyper 1 with
//!    tokio-rustls (`bench/peers`, built on demand), each with the same ECDSA P-256
//!    certificate; the server pinned to CPU 0, the load (8 connections, rustls clients) to
//!    CPU 1; two rounds, each figure per round.
//!
//! The server runs in a child process (this program, re-run with `TLS_BENCH_SERVER=1`) with one
//! worker and an ECDSA P-256 certificate made for the run; it counts its allocations and
//! reports them at `GET /stats`. Everything talks to 127.0.0.0/8 only (client sockets bound to
//! 127.0.0.2.. so ports never run out); bounded in count and time; the child ends when the
//! parent closes its standard input. `TLS_BENCH_N` changes the count.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use web::http::{Request, Response, Server, text_response};
use web::ws::{FIXED_MASK, Message, OP_TEXT, Ws, WsHandler, write_frame, ws_handshake_request};

mod child;

#[global_allocator]
static GLOBAL: child::Counting = child::Counting;

// ---------------------------------------------------------------------------------------------
// The server (child process).

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

fn serve() {
    if std::env::var_os("TLS_BENCH_PIN").is_some() {
        pin_to(0);
    }
    let mut server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(Duration::from_secs(600))
        .ping_interval(None)
        .websocket("/ws", Echo);
    if let (Ok(cert), Ok(key)) = (
        std::env::var("TLS_BENCH_CERT"),
        std::env::var("TLS_BENCH_KEY"),
    ) {
        server = server.tls(web::tls::ServerTls::from_pem_files(cert, key).unwrap());
    }
    let handle = server
        .spawn(|req| match req.path() {
            "/stats" => text_response(200, child::stats_line()),
            _ => text_response(200, "Hello, World!"),
        })
        .unwrap();
    if std::env::var_os("TLS_BENCH_BOTH").is_some() {
        // The speed phase: a plain server beside the TLS one, both ports on the line.
        let plain = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .spawn(|_req| text_response(200, "Hello, World!"))
            .unwrap();
        print!("{} ", handle.local_addr().port());
        child::serve_until_stdin_closes(plain.local_addr().port());
        let _ = plain.shutdown();
    } else {
        child::serve_until_stdin_closes(handle.local_addr().port());
    }
    let _ = handle.shutdown();
}

// ---------------------------------------------------------------------------------------------
// The client (parent process).

use child::ProcessStats as Stats;

/// A client connection, plain or TLS.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// How the parent connects: plain, or TLS trusting the run's certificate.
#[derive(Clone)]
struct Dialer {
    tls: Option<Arc<rustls::ClientConfig>>,
}

static SOURCES: AtomicU64 = AtomicU64::new(0);

impl Dialer {
    fn connect(&self, port: u16) -> Conn {
        let n = SOURCES.fetch_add(1, Ordering::Relaxed) as usize;
        let tcp = child::connect_from_spread(port, n);
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        tcp.set_nodelay(true).unwrap();
        match &self.tls {
            None => Conn::Plain(tcp),
            Some(config) => {
                let name = ServerName::try_from("localhost").unwrap();
                let conn = rustls::ClientConnection::new(Arc::clone(config), name).unwrap();
                Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
            }
        }
    }

    /// A keep-alive connection that has had one request answered.
    fn http(&self, port: u16) -> Conn {
        let mut conn = self.connect(port);
        conn.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        read_until(&mut conn, b"\r\n\r\nHello, World!");
        conn
    }

    /// A WebSocket that has had one message echoed.
    fn ws(&self, port: u16) -> Conn {
        let mut conn = self.connect(port);
        conn.write_all(&ws_handshake_request("localhost", "/ws"))
            .unwrap();
        read_until(&mut conn, b"\r\n\r\n");
        let mut frame = Vec::new();
        write_frame(&mut frame, 0x80 | OP_TEXT, b"hi", Some(FIXED_MASK));
        conn.write_all(&frame).unwrap();
        read_until(&mut conn, b"\x81\x02hi");
        conn
    }

    fn stats(&self, port: u16) -> Stats {
        let mut conn = self.connect(port);
        conn.write_all(b"GET /stats HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        // The end: the server's close_notify (TLS) or end of stream.
        let _ = conn.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        Stats::parse(text.split("\r\n\r\n").nth(1).expect("a stats reply"))
    }
}

fn read_until(conn: &mut Conn, end: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while !got.windows(end.len()).any(|w| w == end) {
        let n = match conn.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => panic!("the server answers: {e}"),
        };
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// A certificate for `localhost` (ECDSA P-256, self-signed), as PEM files; its client config.
fn certificate() -> (
    std::path::PathBuf,
    std::path::PathBuf,
    Arc<rustls::ClientConfig>,
) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let dir = std::env::temp_dir().join(format!("web-tls-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(made.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    // Every connection a full handshake, as a fresh client's.
    config.resumption = rustls::client::Resumption::disabled();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (cert, key, Arc::new(config))
}

fn count() -> usize {
    std::env::var("TLS_BENCH_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    if std::env::var_os("TLS_BENCH_SERVER").is_some() {
        return child::run("TLS_BENCH_SERVER", serve, |_, _| ()); // the child: serves
    }
    let n = count();
    let limit = child::raise_open_files();
    if limit < n as u64 + 200 {
        println!("(descriptor limit {limit} is below {}: raise it)", n + 200);
    }
    let (cert, key, config) = certificate();
    println!("idle connections, {n} held, each kind in a fresh server (one worker):");
    type Open = fn(&Dialer, u16) -> Conn;
    let kinds: [(&str, bool, Open); 4] = [
        ("HTTP keep-alive", false, Dialer::http),
        ("HTTPS keep-alive", true, Dialer::http),
        ("WebSocket", false, Dialer::ws),
        ("WSS", true, Dialer::ws),
    ];
    for (kind, tls, open) in kinds {
        let (cert_path, key_path) = (cert.to_string_lossy(), key.to_string_lossy());
        let vars: &[(&str, &str)] = if tls {
            &[("TLS_BENCH_CERT", &cert_path), ("TLS_BENCH_KEY", &key_path)]
        } else {
            &[]
        };
        let dialer = Dialer {
            tls: tls.then(|| Arc::clone(&config)),
        };
        child::run_with("TLS_BENCH_SERVER", vars, serve, |port, _| {
            idle(&dialer, port, kind, n, open)
        });
    }
    anatomy();
    if std::env::var_os("TLS_BENCH_SPEED").is_some() {
        speed::run(&cert, &key, &config);
    }
    let _ = std::fs::remove_dir_all(cert.parent().unwrap_or(&cert));
}

/// Phase 1: bytes per idle connection of one kind.
fn idle(dialer: &Dialer, port: u16, kind: &str, n: usize, open: fn(&Dialer, u16) -> Conn) {
    // Warm the server (first-use allocations, the worker's buffers) with a few, then let them go.
    let warm: Vec<Conn> = (0..64).map(|_| open(dialer, port)).collect();
    drop(warm);
    std::thread::sleep(Duration::from_millis(300));
    let before = child::settled(|| dialer.stats(port));
    let started = Instant::now();
    let held: Vec<Conn> = (0..n).map(|_| open(dialer, port)).collect();
    let opened = started.elapsed();
    let now = child::settled(|| dialer.stats(port));
    let per = |a: f64, b: f64| (b - a) / n as f64;
    println!(
        "  {kind:<17} RSS {:>7.1} B each  heap {:>7.1} B each  (RSS {:.1} → {:.1} MiB; opened in {:.1} s)",
        per(before.rss_kib as f64 * 1024.0, now.rss_kib as f64 * 1024.0),
        per(before.heap as f64, now.heap as f64),
        before.rss_kib as f64 / 1024.0,
        now.rss_kib as f64 / 1024.0,
        opened.as_secs_f64(),
    );
    drop(held);
}

/// Phase 2: rustls' server connection alone, after a handshake and one exchange in memory.
fn anatomy() {
    const N: usize = 200;
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert = CertificateDer::from_pem_slice(made.cert.pem().as_bytes()).unwrap();
    let key = PrivateKeyDer::from_pem_slice(made.signing_key.serialize_pem().as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    server.ticketer = rustls::crypto::ring::Ticketer::new().unwrap();
    let server = Arc::new(server);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    let client = Arc::new(client);
    let (heap0, blocks0) = (child::live_bytes(), child::live_blocks());
    let mut kept = Vec::with_capacity(N);
    let mut clients = Vec::with_capacity(N);
    for _ in 0..N {
        let (s, c) = exchange(&server, &client);
        kept.push(s);
        clients.push(c);
    }
    // The clients' share goes; the servers' stays (`kept` itself is 8 B a connection).
    drop(clients);
    let heap = (child::live_bytes() - heap0) as f64 / N as f64 - 8.0;
    let blocks = (child::live_blocks() - blocks0) as f64 / N as f64;
    let value = std::mem::size_of::<rustls::server::UnbufferedServerConnection>();
    println!(
        "where an idle TLS connection's bytes go (TLS 1.3, after a handshake and one exchange):\n  \
         rustls' unbuffered server connection alone: {heap:.0} B of heap in {blocks:.1} blocks \
         (its value, boxed: {value} B); the library adds its session around it and 8 B of slab \
         entry, and malloc a header per block"
    );
    drop(kept);
}

/// A server connection (unbuffered) after a handshake and one request/response, in memory.
fn exchange(
    server: &Arc<rustls::ServerConfig>,
    client: &Arc<rustls::ClientConfig>,
) -> (
    Box<rustls::server::UnbufferedServerConnection>,
    rustls::ClientConnection,
) {
    use rustls::unbuffered::ConnectionState;
    let name = ServerName::try_from("localhost").unwrap();
    let mut c = rustls::ClientConnection::new(Arc::clone(client), name).unwrap();
    let mut s =
        Box::new(rustls::server::UnbufferedServerConnection::new(Arc::clone(server)).unwrap());
    c.writer().write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let (mut incoming, mut outgoing) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut used = 0;
    let mut answered = false;
    for _ in 0..10 {
        let mut wire = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        incoming[used..used + wire.len()].copy_from_slice(&wire);
        used += wire.len();
        let mut back = Vec::new();
        let mut got = false;
        loop {
            let status = s.process_tls_records(&mut incoming[..used]);
            let discard = status.discard;
            let done = match status.state.unwrap() {
                ConnectionState::ReadTraffic(mut r) => {
                    while let Some(rec) = r.next_record() {
                        got |= !rec.unwrap().payload.is_empty();
                    }
                    false
                }
                ConnectionState::EncodeTlsData(mut e) => {
                    let n = e.encode(&mut outgoing).unwrap();
                    back.extend_from_slice(&outgoing[..n]);
                    false
                }
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    false
                }
                ConnectionState::WriteTraffic(mut w) => {
                    if got && !answered {
                        let n = w
                            .encrypt(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                                &mut outgoing,
                            )
                            .unwrap();
                        back.extend_from_slice(&outgoing[..n]);
                        answered = true;
                    }
                    true
                }
                _ => true,
            };
            incoming.copy_within(discard..used, 0);
            used -= discard;
            if done {
                break;
            }
        }
        c.read_tls(&mut &back[..]).unwrap();
        c.process_new_packets().unwrap();
        if answered {
            break;
        }
    }
    assert!(answered, "the in-memory exchange finished");
    (s, c)
}

/// Pins this thread (and threads it starts afterwards) to one CPU.
fn pin_to(cpu: usize) {
    // SAFETY: sched_setaffinity(2) reads the zeroed, then filled, cpu_set_t it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[path = "tls_speed/mod.rs"]
mod speed;
