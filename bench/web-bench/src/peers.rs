//! The servers `compare` runs: `web`'s examples and the peers of `bench/peers` (a Cargo
//! project of its own, outside `web`'s dependency graph), each started here, pinned to one CPU
//! with one worker, and stopped here by its PID.

use std::io;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    Http,
    Ws,
    /// HTTP/2 by prior knowledge (h2c).
    H2,
    /// A room: WebSocket members at `/events`, a `POST /events` publishes its body to them
    /// (`web-bench fanout --compare`).
    Room,
}

/// A server of the comparison.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    pub name: &'static str,
    /// The binary, under the repository.
    bin: &'static str,
    /// Arguments beside `--port` and `--workers`.
    args: &'static [&'static str],
    pub speaks: Speaks,
    /// `web` itself: compared, not a peer.
    pub candidate: bool,
    /// An anchor (parses nothing): a ceiling to compare against, not a peer.
    pub ceiling: bool,
    /// Serves plain TCP only (no `--tls-cert`): left out of the TLS scenarios.
    pub plain_only: bool,
}

const fn peer(name: &'static str, bin: &'static str, speaks: Speaks) -> Peer {
    Peer {
        name,
        bin,
        args: &[],
        speaks,
        candidate: false,
        ceiling: false,
        plain_only: false,
    }
}

/// Every server, in the order reports show them.
pub const ALL: &[Peer] = &[
    Peer {
        candidate: true,
        ..peer("web", "target/release/examples/hello", Speaks::Http)
    },
    // The async path: each reply from a task of a one-thread tokio runtime
    // (`answer_async`), against axum on tokio.
    Peer {
        candidate: true,
        args: &["--async"],
        ..peer("web-async", "target/release/examples/hello", Speaks::Http)
    },
    // A team's axum router served by web (`web::tower`), against the same router on
    // `axum::serve` below.
    Peer {
        candidate: true,
        ..peer(
            "web-tower",
            "bench/peers/target/release/web_tower_hello",
            Speaks::Http,
        )
    },
    peer(
        "hyper",
        "bench/peers/target/release/hyper_hello",
        Speaks::Http,
    ),
    peer(
        "axum",
        "bench/peers/target/release/axum_hello",
        Speaks::Http,
    ),
    peer(
        "actix-web",
        "bench/peers/target/release/actix_hello",
        Speaks::Http,
    ),
    peer(
        "may_minihttp",
        "bench/peers/target/release/may_hello",
        Speaks::Http,
    ),
    peer(
        "tiny_http",
        "bench/peers/target/release/tiny_hello",
        Speaks::Http,
    ),
    Peer {
        ceiling: true,
        ..peer(
            "ceiling",
            "bench/peers/target/release/ceiling",
            Speaks::Http,
        )
    },
    Peer {
        candidate: true,
        ..peer("web", "target/release/examples/hello", Speaks::H2)
    },
    Peer {
        candidate: true,
        args: &["--async"],
        ..peer("web-async", "target/release/examples/hello", Speaks::H2)
    },
    Peer {
        candidate: true,
        plain_only: true,
        ..peer(
            "web-tower",
            "bench/peers/target/release/web_tower_hello",
            Speaks::H2,
        )
    },
    peer(
        "hyper",
        "bench/peers/target/release/hyper_h2_hello",
        Speaks::H2,
    ),
    Peer {
        plain_only: true,
        ..peer("axum", "bench/peers/target/release/axum_hello", Speaks::H2)
    },
    // nginx (Debian's) in one process: a script that writes its configuration and becomes it.
    peer("nginx", "bench/peers/nginx_h2.sh", Speaks::H2),
    Peer {
        candidate: true,
        ..peer("web", "target/release/examples/ws_echo", Speaks::Ws)
    },
    peer(
        "tokio-tungstenite",
        "bench/peers/target/release/tokio_tungstenite_echo",
        Speaks::Ws,
    ),
    peer(
        "tungstenite",
        "bench/peers/target/release/tungstenite_echo",
        Speaks::Ws,
    ),
    Peer {
        ceiling: true,
        ..peer(
            "ws_ceiling",
            "bench/peers/target/release/ws_ceiling",
            Speaks::Ws,
        )
    },
];

/// The fan-out servers: `web`'s room (its publishes sent a system call each, and in io_uring
/// batches: `hello` is built with the feature `io-uring` on Linux), the floor (one `write(2)` per member, nothing else; and
/// the same with the sends batched through io_uring), and a tokio team's room.
pub const ROOMS: &[Peer] = &[
    Peer {
        candidate: true,
        args: &["--events", "news", "--no-io-uring"],
        ..peer("web", "target/release/examples/hello", Speaks::Room)
    },
    Peer {
        candidate: true,
        args: &["--events", "news"],
        ..peer(
            "web-io_uring",
            "target/release/examples/hello",
            Speaks::Room,
        )
    },
    Peer {
        ceiling: true,
        ..peer("floor", "bench/peers/target/release/ws_floor", Speaks::Room)
    },
    Peer {
        ceiling: true,
        args: &["--io-uring"],
        ..peer(
            "floor-io_uring",
            "bench/peers/target/release/ws_floor",
            Speaks::Room,
        )
    },
    peer(
        "tokio-tungstenite",
        "bench/peers/target/release/tokio_tungstenite_room",
        Speaks::Room,
    ),
];

/// The repository's root (this crate is `bench/web-bench` in it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds `web`'s examples and the peers (release); the output of a failed build.
pub fn build() -> io::Result<()> {
    let root = root();
    let steps: [&[&str]; 2] = [
        &[
            "build",
            "--release",
            "--features",
            if cfg!(target_os = "linux") {
                "tls,io-uring"
            } else {
                "tls"
            },
            "--example",
            "hello",
            "--example",
            "ws_echo",
        ],
        &[
            "build",
            "--release",
            "--manifest-path",
            "bench/peers/Cargo.toml",
        ],
    ];
    for args in steps {
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(args)
            .current_dir(&root)
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "cargo {} failed:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
    }
    Ok(())
}

/// A self-signed certificate for localhost and its key (PEM files in a directory of this
/// process), made once.
fn certificate() -> io::Result<(PathBuf, PathBuf)> {
    static MADE: std::sync::OnceLock<Result<(PathBuf, PathBuf), String>> =
        std::sync::OnceLock::new();
    let made = MADE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("web-bench-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()])
            .map_err(|e| e.to_string())?;
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, made.cert.pem()).map_err(|e| e.to_string())?;
        std::fs::write(&key, made.signing_key.serialize_pem()).map_err(|e| e.to_string())?;
        Ok((cert, key))
    });
    made.clone().map_err(io::Error::other)
}

/// A server running for one measurement; stopped when dropped.
pub struct Running {
    child: Child,
    pub port: u16,
}

impl Running {
    /// Starts `peer` with one worker on a free port of 127.0.0.1, pinned to `cpu` (serving
    /// TLS with a certificate for localhost made here, when `tls`); waits (at most 15 s) until
    /// it accepts connections.
    pub fn start(peer: &Peer, cpu: usize, tls: bool) -> io::Result<Running> {
        let port = free_port()?;
        let bin = root().join(peer.bin);
        let mut cmd = Command::new(&bin);
        cmd.args(["--port", &port.to_string(), "--workers", "1"])
            .args(peer.args);
        if tls {
            let (cert, key) = certificate()?;
            cmd.arg("--tls-cert").arg(cert).arg("--tls-key").arg(key);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only sched_setaffinity runs, a plain system call on a
        // set built on this stack frame before the fork (async-signal-safe).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut set) };
        unsafe {
            cmd.pre_exec(move || {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", bin.display())))?;
        let mut running = Running { child, port };
        let until = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > until || running.child.try_wait()?.is_some() {
                return Err(io::Error::other(format!("{} did not start", peer.name)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(running)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time the server has used (all its threads), in seconds.
    pub fn cpu(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the command's closing parenthesis: utime and stime are the 12th and
        // 13th of them.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // SAFETY: sysconf only reads a system constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        (ticks(11) + ticks(12)) / hz
    }
}

impl Drop for Running {
    /// SIGTERM, then SIGKILL after 5 s: only the process this started, by its PID.
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with a PID of a child this struct owns and has not reaped.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
