//! The speed phase of `benches/tls.rs`: this library, nginx and hyper with tokio-rustls, each
//! serving `Hello, World!` with one worker on CPU 0, loaded from CPU 1; requests per server
//! core-second (the server's own CPU time, read from /proc), so a slow load generator does not
//! flatter or hurt anyone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

/// How long each measured run lasts, and the connections that load it.
const RUN: Duration = Duration::from_secs(3);
const CONNECTIONS: usize = 8;
const ROUNDS: usize = 2;
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
const LAST: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

/// Starts a peer with a certificate and key, in a scratch directory.
type Start = fn(&Path, &Path, &Path) -> Option<Peer>;

/// A server under test: its process (and children, for nginx's worker) and its two ports.
struct Peer {
    name: &'static str,
    child: Child,
    tls_port: u16,
    plain_port: u16,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run(cert: &Path, key: &Path, config: &Arc<rustls::ClientConfig>) {
    super::pin_to(1);
    println!(
        "speed: requests per server core-second (one worker on CPU 0, {CONNECTIONS} connections \
         from CPU 1, {} s runs, rounds listed):",
        RUN.as_secs()
    );
    println!(
        "  {:<22} {:>26} {:>30} {:>26}",
        "server", "TLS 1.3 keep-alive", "full handshake + 1 request", "plain keep-alive"
    );
    let dir = cert.parent().unwrap_or(cert).to_path_buf();
    let starts: [(&str, Start); 3] = [
        ("web", start_web),
        ("nginx", start_nginx),
        ("hyper + tokio-rustls", start_hyper),
    ];
    for (name, start) in starts {
        let Some(peer) = start(cert, key, &dir) else {
            println!("  {name:<22} (not available: skipped)");
            continue;
        };
        let mut rows: [Vec<f64>; 3] = Default::default();
        for _ in 0..ROUNDS {
            rows[0].push(measure(&peer, peer.tls_port, Some(config), true));
            rows[1].push(measure(&peer, peer.tls_port, Some(config), false));
            rows[2].push(measure(&peer, peer.plain_port, None, true));
        }
        let show = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:>8.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "  {:<22} {:>26} {:>30} {:>26}",
            peer.name,
            show(&rows[0]),
            show(&rows[1]),
            show(&rows[2])
        );
    }
}

/// Requests answered per second of the server's CPU, over [`RUN`].
fn measure(
    peer: &Peer,
    port: u16,
    tls: Option<&Arc<rustls::ClientConfig>>,
    keep_alive: bool,
) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let cpu0 = cpu_ticks(peer.child.id());
    let started = Instant::now();
    let threads: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (done, stop, tls) = (Arc::clone(&done), Arc::clone(&stop), tls.cloned());
            std::thread::spawn(move || load(port, tls, keep_alive, &done, &stop))
        })
        .collect();
    std::thread::sleep(RUN);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let _ = started;
    let cpu = (cpu_ticks(peer.child.id()) - cpu0) as f64 / ticks_per_second();
    done.load(Ordering::Relaxed) as f64 / cpu.max(1e-3)
}

/// One connection's worth of load until `stop`: requests on a kept-alive connection, or a new
/// connection (a full handshake) for every request.
fn load(
    port: u16,
    tls: Option<Arc<rustls::ClientConfig>>,
    keep_alive: bool,
    done: &AtomicU64,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(tcp) = TcpStream::connect(("127.0.0.1", port)) else {
            return;
        };
        let _ = tcp.set_nodelay(true);
        let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
        let mut conn: Box<dyn ReadWrite> = match &tls {
            Some(config) => {
                let name = ServerName::try_from("localhost").expect("name");
                let Ok(c) = rustls::ClientConnection::new(Arc::clone(config), name) else {
                    return;
                };
                Box::new(rustls::StreamOwned::new(c, tcp))
            }
            None => Box::new(tcp),
        };
        loop {
            let last = !keep_alive || stop.load(Ordering::Relaxed);
            if conn.write_all(if last { LAST } else { REQUEST }).is_err() || !reply(&mut *conn) {
                break;
            }
            done.fetch_add(1, Ordering::Relaxed);
            if last {
                break;
            }
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Reads one `Hello, World!` reply (its head and 13-byte body).
fn reply(conn: &mut dyn ReadWrite) -> bool {
    let mut got = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    while !got.ends_with(b"Hello, World!") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    true
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf(3) takes no pointers.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// User + system CPU ticks of `pid` and of its children (nginx's worker).
fn cpu_ticks(pid: u32) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command (which may hold spaces) in parentheses.
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let own: u32 = head
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let parent: u32 = fields.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        if own == pid || parent == pid {
            let at = |i: usize| {
                fields
                    .get(i)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            total += at(11) + at(12);
        }
    }
    total
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

fn wait_listening(port: u16) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// This library: the bench's own child server, serving TLS and plain HTTP (two servers of
/// one worker each in one process, pinned to CPU 0; one is loaded at a time).
fn start_web(cert: &Path, key: &Path, _dir: &Path) -> Option<Peer> {
    let mut child = Command::new(std::env::current_exe().ok()?)
        .env("TLS_BENCH_SERVER", "1")
        .env("TLS_BENCH_PIN", "1")
        .env("TLS_BENCH_BOTH", "1")
        .env("TLS_BENCH_CERT", cert)
        .env("TLS_BENCH_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take()?);
    std::io::BufRead::read_line(&mut out, &mut line).ok()?;
    let mut ports = line
        .split_whitespace()
        .filter_map(|p| p.parse::<u16>().ok());
    let (tls_port, plain_port) = (ports.next()?, ports.next()?);
    Some(Peer {
        name: "web",
        child,
        tls_port,
        plain_port,
    })
}

/// nginx, one worker pinned to CPU 0, TLS 1.3 and 1.2 with the same certificate.
fn start_nginx(cert: &Path, key: &Path, dir: &Path) -> Option<Peer> {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let (tls_port, plain_port) = (free_port(), free_port());
    let prefix = dir.join("nginx");
    std::fs::create_dir_all(prefix.join("logs")).ok()?;
    let conf = format!(
        "worker_processes 1;\nworker_cpu_affinity 01;\ndaemon off;\nerror_log {p}/logs/error.log;\npid {p}/nginx.pid;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n access_log off;\n keepalive_requests 10000000;\n keepalive_timeout 300;\n\
         client_body_temp_path {p}/body; proxy_temp_path {p}/proxy; fastcgi_temp_path {p}/fastcgi;\n\
         uwsgi_temp_path {p}/uwsgi; scgi_temp_path {p}/scgi;\n\
         server {{ listen 127.0.0.1:{tls_port} ssl; ssl_certificate {cert}; ssl_certificate_key {key};\n\
         ssl_protocols TLSv1.2 TLSv1.3; location / {{ default_type text/plain; return 200 \"Hello, World!\"; }} }}\n\
         server {{ listen 127.0.0.1:{plain_port}; location / {{ default_type text/plain; return 200 \"Hello, World!\"; }} }}\n}}\n",
        p = prefix.display(),
        cert = cert.display(),
        key = key.display(),
    );
    let file = prefix.join("nginx.conf");
    std::fs::write(&file, conf).ok()?;
    let child = Command::new(nginx)
        .arg("-p")
        .arg(&prefix)
        .arg("-c")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let peer = Peer {
        name: "nginx",
        child,
        tls_port,
        plain_port,
    };
    (wait_listening(tls_port) && wait_listening(plain_port)).then_some(peer)
}

/// hyper 1 with tokio-rustls (`bench/peers`, built here when missing), pinned to CPU 0; the
/// plain figure from a second instance would be another process, so one serves both: two
/// processes measured one at a time, each with its own CPU count.
fn start_hyper(cert: &Path, key: &Path, _dir: &Path) -> Option<Peer> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/peers");
    let binary = root.join("target/release/hyper_hello");
    if !binary.exists() {
        println!("  (building bench/peers: hyper and tokio-rustls)");
        let built = Command::new("cargo")
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(root.join("Cargo.toml"))
            .status()
            .ok()?;
        if !built.success() {
            return None;
        }
    }
    let (tls_port, plain_port) = (free_port(), free_port());
    let child = Command::new("taskset")
        .args(["-c", "0"])
        .arg(&binary)
        .args([
            "--port",
            &tls_port.to_string(),
            "--plain-port",
            &plain_port.to_string(),
        ])
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key)
        .spawn()
        .ok()?;
    let peer = Peer {
        name: "hyper + tokio-rustls",
        child,
        tls_port,
        plain_port,
    };
    (wait_listening(tls_port) && wait_listening(plain_port)).then_some(peer)
}
