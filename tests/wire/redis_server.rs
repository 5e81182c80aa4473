//! A `redis-server` of a test's own: started on a port of 127.0.0.1 with the arguments the test
//! adds, ready once it answers `PING`, killed by its PID by whoever holds it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts one on `port`, its files in `dir`, with `extra` arguments; `None` when it exits
/// before it answers (another process took the port).
pub fn start(port: u16, dir: &Path, extra: &[&str]) -> Option<Child> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server is needed for this test (apt-get install -y redis-server)");
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if answers_ping(port) {
            return Some(child);
        }
        if let Ok(Some(_)) = child.try_wait() {
            return None; // exited: the port was taken
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Whether a Redis on `port` answers `PING` within a second.
fn answers_ping(port: u16) -> bool {
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    conn.write_all(b"*1\r\n$4\r\nPING\r\n").is_ok()
        && conn.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}
