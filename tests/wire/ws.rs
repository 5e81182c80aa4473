//! A WebSocket test client over `std::net`: the handshake, then raw frames either way, every
//! read bounded by a timeout.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use web::ws::{Message, Ws, WsHandler, write_frame, ws_handshake_request};

/// A WebSocket application that echoes every message, for tests that need one beside another.
pub struct Echo;

impl WsHandler for Echo {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        ws.send(&msg);
    }
}

/// A client's frame: `first` (FIN, RSV and opcode), the payload masked with a fixed key.
pub fn masked(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, first, payload, Some([9, 8, 7, 6]));
    out
}

/// A connected client: handshake done.
pub struct Client {
    pub conn: TcpStream,
    pub buf: Vec<u8>,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        Client::connect_to(port, "/")
    }

    /// Connects and upgrades at `path`; panics unless the answer is a 101.
    pub fn connect_to(port: u16, path: &str) -> Client {
        let (c, head) = Client::try_connect(port, path, &[]);
        assert!(
            head.starts_with(b"HTTP/1.1 101 "),
            "{}",
            String::from_utf8_lossy(&head)
        );
        c
    }

    /// Sends an upgrade request for `path` with `extra` header lines; the client and the head of
    /// the answer, whatever it is.
    pub fn try_connect(port: u16, path: &str, extra: &[&str]) -> (Client, Vec<u8>) {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = ws_handshake_request("127.0.0.1", path);
        request.truncate(request.len() - 2);
        for line in extra {
            request.extend_from_slice(line.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"\r\n");
        conn.write_all(&request).unwrap();
        let mut c = Client {
            conn,
            buf: Vec::new(),
        };
        let head = c.until(b"\r\n\r\n");
        (c, head)
    }

    /// Reads until `end` is in the buffer; returns everything up to and including it.
    pub fn until(&mut self, end: &[u8]) -> Vec<u8> {
        loop {
            if let Some(at) = self.buf.windows(end.len()).position(|w| w == end) {
                let rest = self.buf.split_off(at + end.len());
                return std::mem::replace(&mut self.buf, rest);
            }
            self.more();
        }
    }

    pub fn more(&mut self) {
        let mut chunk = [0u8; 65536];
        let n = loop {
            // A read with a timeout is not restarted after a signal (a test beside this one
            // signals its child processes): it is tried again, as the HTTP client's.
            match self.conn.read(&mut chunk) {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                got => break got.unwrap(),
            }
        };
        assert!(n > 0, "connection closed early");
        self.buf.extend_from_slice(&chunk[..n]);
    }

    /// The next frame from the server: (first byte, payload).
    pub fn frame(&mut self) -> (u8, Vec<u8>) {
        loop {
            if self.buf.len() >= 2 {
                let (len, head) = match self.buf[1] & 0x7f {
                    126 if self.buf.len() >= 4 => {
                        (u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize, 4)
                    }
                    127 if self.buf.len() >= 10 => (
                        u64::from_be_bytes(self.buf[2..10].try_into().unwrap()) as usize,
                        10,
                    ),
                    126 | 127 => (usize::MAX, 0),
                    n => (n as usize, 2),
                };
                if head > 0 && self.buf.len() >= head + len {
                    assert_eq!(self.buf[1] & 0x80, 0, "server frames are not masked");
                    let first = self.buf[0];
                    let payload = self.buf[head..head + len].to_vec();
                    self.buf.drain(..head + len);
                    return (first, payload);
                }
            }
            self.more();
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.conn.write_all(bytes).unwrap();
    }

    /// Closes our side (as a client does after the closing handshake), then reads until the
    /// server closes the connection (EOF or reset), within the read timeout.
    pub fn expect_eof(&mut self) {
        let _ = self.conn.shutdown(std::net::Shutdown::Write);
        let mut chunk = [0u8; 4096];
        loop {
            match self.conn.read(&mut chunk) {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => panic!("expected the server to close: {e}"),
            }
        }
    }
}
