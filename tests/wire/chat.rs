//! The chat example as a process of its own, for the tests of its contract.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::examples::examples_dir;
use super::ws::Client;

/// A chat process on a free port of 127.0.0.1, killed (by its PID) when dropped.
pub struct Chat {
    child: Child,
    pub port: u16,
}

impl Chat {
    pub fn start(args: &[&str]) -> Chat {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(examples_dir().join("chat"))
            .args(["--port", &port.to_string(), "--workers", "2"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let chat = Chat { child, port };
        let until = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "the chat did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        chat
    }

    /// One request (`<method> <target>`, `extra` header lines, `Connection: close`); the
    /// status and the body.
    pub fn ask(&self, request: &str, extra: &[&str], body: &str) -> (u16, String) {
        let mut c = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let extra: String = extra.iter().map(|h| format!("{h}\r\n")).collect();
        write!(
            c,
            "{request} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        c.read_to_string(&mut reply).unwrap();
        let status = reply[9..12].parse().unwrap();
        let body = reply
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    /// An upgrade at `target` with `extra` header lines: the status of the answer.
    pub fn upgrade(&self, target: &str, extra: &[&str]) -> (u16, Client) {
        let (c, head) = Client::try_connect(self.port, target, extra);
        (String::from_utf8_lossy(&head[9..12]).parse().unwrap(), c)
    }
}

impl Chat {
    /// The chat's PID, to signal it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (at most `limit`) for the process to end; its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let until = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Chat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
