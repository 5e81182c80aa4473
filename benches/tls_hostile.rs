//! What a hostile TLS peer costs once the handshake is done (asserts nothing;
//! `cargo bench --features tls --bench tls_hostile`). One connection floods the server with
//! records that carry almost nothing — key updates asking for ours, or empty records — each run
//! of 31 followed by one byte of a request body that never ends (so the 32-in-a-row limits are
//! kept and nothing is ever answered), and never reads. Meanwhile a second, kept-alive
//! connection on the same worker asks `GET /` every 20 ms. Printed for each flood, beside a run
//! without one: what the flooder sent, how it ended, the server's RSS before, at its peak and
//! after, and the probe's latency (p50, p99, max).
//!
//! The server is this program re-run with `TLS_HOSTILE_SERVER=1` (one worker, a 1 GiB body
//! limit, an ECDSA P-256 certificate made for the run). `TLS_HOSTILE_TARGET=PORT:PID` attacks
//! another server on 127.0.0.1 instead (e.g. an older build of the `hello` example started
//! with the certificate and key whose paths the run prints first), for a comparison in one run.
//! `TLS_HOSTILE_SECONDS` sets each flood's length (default 8). Records are sealed by the
//! benchmark itself (`tests/wire/tls_raw.rs`), never by the code under test. Talks to
//! 127.0.0.1 only; bounded in time.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use web::http::{Server, text_response};

mod child;
#[allow(dead_code)]
#[path = "../tests/wire/tls_raw.rs"]
mod tls_raw;

use tls_raw::{APPLICATION_DATA, Raw, Version};

fn serve() {
    let cert = std::env::var("TLS_HOSTILE_CERT").expect("cert");
    let key = std::env::var("TLS_HOSTILE_KEY").expect("key");
    let tls = web::tls::ServerTls::from_pem_files(cert, key).expect("tls");
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_body(1 << 30)
        .tls(tls)
        .spawn(|_req| text_response(200, "ok"))
        .unwrap();
    child::serve_until_stdin_closes(server.local_addr().port());
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flood {
    None,
    KeyUpdates,
    EmptyRecords,
}

/// What the flooder saw.
#[derive(Debug, Default)]
struct Flooded {
    sent: u64,
    records: u64,
    /// Writes that waited over 200 ms: the server had stopped reading.
    stalls: u64,
    ended: String,
}

fn roots(cert_pem: &str) -> rustls::RootCertStore {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap())
        .unwrap();
    roots
}

/// Sends the flood until `stop`; never reads.
fn flood(port: u16, cert_pem: &str, kind: Flood, stop: &AtomicBool) -> Flooded {
    let mut out = Flooded::default();
    let addr = ([127, 0, 0, 1], port).into();
    let mut raw = match Raw::connect(addr, roots(cert_pem), Version::Tls13) {
        Ok(raw) => raw,
        Err(e) => {
            out.ended = format!("no connection: {e}");
            return out;
        }
    };
    raw.tcp
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let head = raw.record(
        APPLICATION_DATA,
        b"POST /flood HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n",
    );
    let mut pending = head;
    out.ended = "the time was up".into();
    while !stop.load(Ordering::Relaxed) {
        if pending.is_empty() {
            // 64 runs of 31 records and a body byte.
            for _ in 0..64 {
                for _ in 0..31 {
                    let record = match kind {
                        Flood::KeyUpdates => raw.key_update(true),
                        _ => raw.record(APPLICATION_DATA, b""),
                    };
                    pending.extend_from_slice(&record);
                }
                pending.extend_from_slice(&raw.record(APPLICATION_DATA, b"x"));
                out.records += 32;
            }
        }
        match raw.tcp.write(&pending) {
            Ok(n) => {
                out.sent += n as u64;
                pending.drain(..n);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                out.stalls += 1
            }
            Err(e) => {
                out.ended = format!("the server closed ({e})");
                break;
            }
        }
    }
    out
}

/// A kept-alive HTTPS connection asking `GET /` every 20 ms until `stop`: each latency.
fn probe(port: u16, config: &Arc<rustls::ClientConfig>, stop: &AtomicBool) -> (Vec<Duration>, u32) {
    let mut latencies = Vec::new();
    let mut failures = 0;
    let mut conn: Option<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> = None;
    while !stop.load(Ordering::Relaxed) {
        let c = conn.get_or_insert_with(|| {
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let tls = rustls::ClientConnection::new(Arc::clone(config), name).unwrap();
            let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            rustls::StreamOwned::new(tls, tcp)
        });
        let start = Instant::now();
        let ok = c
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .and_then(|_| read_reply(c));
        match ok {
            Ok(()) => latencies.push(start.elapsed()),
            Err(_) => {
                failures += 1;
                conn = None;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (latencies, failures)
}

/// Reads one `200` reply with `Content-Length: 2`.
fn read_reply(c: &mut impl Read) -> std::io::Result<()> {
    let mut got = Vec::new();
    let mut buf = [0; 1024];
    while !(got.ends_with(b"\r\n\r\nok")) {
        let n = c.read(&mut buf)?;
        if n == 0 {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&buf[..n]);
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn measure(port: u16, pid: &str, cert_pem: &str) {
    let seconds: u64 = std::env::var("TLS_HOSTILE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots(cert_pem))
    .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    let config = Arc::new(config);
    println!(
        "{:<14} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>6}  ended",
        "flood",
        "sent MB",
        "records",
        "stalls",
        "RSS MB",
        "peak MB",
        "after MB",
        "p50 ms",
        "p99 ms",
        "max ms",
        "fails"
    );
    for kind in [Flood::None, Flood::KeyUpdates, Flood::EmptyRecords] {
        let rss = || child::status_kib(pid, "VmRSS:") as f64 / 1024.0;
        let before = rss();
        let stop = AtomicBool::new(false);
        let (flooded, (mut latencies, failures), peak) = std::thread::scope(|s| {
            let flooder = s.spawn(|| match kind {
                Flood::None => Flooded {
                    ended: "-".into(),
                    ..Flooded::default()
                },
                _ => flood(port, cert_pem, kind, &stop),
            });
            let prober = s.spawn(|| probe(port, &config, &stop));
            let end = Instant::now() + Duration::from_secs(seconds);
            let mut peak = before;
            while Instant::now() < end {
                std::thread::sleep(Duration::from_millis(250));
                peak = peak.max(rss());
            }
            stop.store(true, Ordering::Relaxed);
            (flooder.join().unwrap(), prober.join().unwrap(), peak)
        });
        std::thread::sleep(Duration::from_millis(500));
        latencies.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{:<14} {:>9.1} {:>9} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>8.2} {:>8.2} {:>8.2} {:>6}  {}",
            format!("{kind:?}"),
            flooded.sent as f64 / 1e6,
            flooded.records,
            flooded.stalls,
            before,
            peak,
            rss(),
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99)),
            ms(latencies.last().copied().unwrap_or_default()),
            failures,
            flooded.ended,
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    if std::env::var_os("TLS_HOSTILE_SERVER").is_some() {
        return child::run("TLS_HOSTILE_SERVER", serve, |_, _| ());
    }
    let dir = std::env::temp_dir().join(format!("web-tls-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert_pem, key_pem) = (made.cert.pem(), made.signing_key.serialize_pem());
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &cert_pem).unwrap();
    std::fs::write(&key, &key_pem).unwrap();
    println!("certificate {} key {}", cert.display(), key.display());
    match std::env::var("TLS_HOSTILE_TARGET") {
        Ok(target) => {
            let (port, pid) = target.split_once(':').expect("PORT:PID");
            let cert_pem = std::env::var("TLS_HOSTILE_TARGET_CERT")
                .map(|p| std::fs::read_to_string(p).expect("the target's certificate"))
                .unwrap_or(cert_pem);
            println!("the server on 127.0.0.1:{port} (pid {pid}):");
            measure(port.parse().expect("a port"), pid, &cert_pem);
        }
        Err(_) => {
            let vars = [
                ("TLS_HOSTILE_CERT", &*cert.to_string_lossy()),
                ("TLS_HOSTILE_KEY", &*key.to_string_lossy()),
            ];
            child::run_with("TLS_HOSTILE_SERVER", &vars, serve, |port, child| {
                println!("this library, one worker, 127.0.0.1:{port}:");
                measure(port, &child.id().to_string(), &cert_pem);
            });
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
