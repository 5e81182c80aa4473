//! The chat example as a process of its own, for the tests of its contract.

use std::io::{BufReader, Read, Write};
use std::process::{Child, ChildStderr};
use std::time::{Duration, Instant};

use super::examples::serving;
use super::ws::Client;

/// A chat process on a port of 127.0.0.1 it bound itself (`--port 0`, the port read from
/// the line it prints), killed (by its PID) when dropped. (A port found free here and handed
/// over could be taken first by another test's server.)
pub struct Chat {
    child: Child,
    pub port: u16,
    /// The chat's standard error, kept open so that its last lines can be written.
    _stderr: BufReader<ChildStderr>,
}

impl Chat {
    pub fn start(args: &[&str]) -> Chat {
        let args = [&["--workers", "2"][..], args].concat();
        let (child, port, stderr) = serving("chat", &args, "chat: http://127.0.0.1:");
        Chat {
            child,
            port,
            _stderr: stderr,
        }
    }

    /// One request (`<method> <target>`, `extra` header lines, `Connection: close`); the
    /// status and the body.
    pub fn ask(&self, request: &str, extra: &[&str], body: &str) -> (u16, String) {
        self.ask_from([127, 0, 0, 1], request, extra, body)
    }

    /// [`ask`](Chat::ask) from the loopback address `from`.
    pub fn ask_from(
        &self,
        from: [u8; 4],
        request: &str,
        extra: &[&str],
        body: &str,
    ) -> (u16, String) {
        let to = ([127, 0, 0, 1], self.port).into();
        let mut c = super::connect_from(from.into(), to).unwrap();
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
