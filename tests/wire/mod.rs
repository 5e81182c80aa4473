//! A raw HTTP/1.1 client over `std::net` for the server tests: it writes exactly the bytes a
//! test gives it and reads replies back one at a time, every read bounded by a timeout so a
//! failing test fails instead of hanging.

#![allow(dead_code)] // each test file uses a different part of it

#[cfg(feature = "tls")]
pub mod certs;
pub mod chat;
pub mod drive;
pub mod examples;
pub mod fake_redis;
#[cfg(feature = "redis")]
pub mod fleet;
pub mod redis_server;
#[cfg(feature = "tls")]
pub mod tls_drive;
#[cfg(feature = "tls")]
pub mod tls_raw;
pub mod ws;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use web::http::{Header, ReplyFraming, parse_reply_head};

/// How long any single read may wait before the test fails.
pub const READ_LIMIT: Duration = Duration::from_secs(5);

/// A reply as received.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header lines in order, names lower-cased.
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The value of the first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.value.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the reply says `Connection: close`.
    pub fn assert_closes(&self) {
        assert_eq!(
            self.header("connection"),
            Some("close"),
            "expected Connection: close in {self:?}"
        );
    }

    /// Asserts the reply says `Connection: keep-alive`.
    pub fn assert_keeps_alive(&self) {
        assert_eq!(
            self.header("connection"),
            Some("keep-alive"),
            "expected Connection: keep-alive in {self:?}"
        );
    }
}

/// One client connection with the bytes it has received but not yet taken apart.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        Client::over(TcpStream::connect(addr).expect("connect"))
    }

    /// Connects to `addr` from the loopback address `from` (127.0.0.2, say): a caller of its
    /// own as the server sees its peer.
    pub fn connect_from(from: std::net::Ipv4Addr, addr: SocketAddr) -> Client {
        Client::over(connect_from(from, addr).expect("connect from a loopback address"))
    }

    fn over(stream: TcpStream) -> Client {
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(READ_LIMIT)).unwrap();
        stream
            .set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: impl AsRef<[u8]>) {
        self.stream.write_all(bytes.as_ref()).expect("send");
    }

    /// Closes the client's sending side (the server sees the end of stream).
    #[allow(dead_code)]
    pub fn shutdown_write(&mut self) {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown");
    }

    /// Sends, reporting a failure (the server may have closed) instead of panicking.
    #[allow(dead_code)]
    pub fn try_send(&mut self, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
        self.stream.write_all(bytes.as_ref())
    }

    /// Sends `GET <path>` with a Host header and reads its reply.
    pub fn get(&mut self, path: &str) -> Reply {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        self.reply()
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of stream). Panics when
    /// nothing arrives within [`READ_LIMIT`].
    fn fill(&mut self) -> usize {
        self.read_more(false)
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of stream, and at a reset
    /// when `reset_is_end`). Panics on any other failure, or when nothing arrives within
    /// [`READ_LIMIT`].
    fn read_more(&mut self, reset_is_end: bool) -> usize {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return n;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if reset_is_end && e.kind() == ErrorKind::ConnectionReset => return 0,
                Err(e) => panic!(
                    "read failed ({e}) with {:?} buffered",
                    String::from_utf8_lossy(&self.buf)
                ),
            }
        }
    }

    /// Reads one reply head, then its body as its framing says.
    pub fn reply(&mut self) -> Reply {
        self.read_reply(false)
    }

    /// Reads the reply to a HEAD request: a head, no body whatever it announces.
    pub fn head_reply(&mut self) -> Reply {
        self.read_reply(true)
    }

    fn read_reply(&mut self, to_head: bool) -> Reply {
        let head = loop {
            match parse_reply_head(&self.buf) {
                Ok(Some(head)) => break head,
                Ok(None) => {
                    if self.fill() == 0 {
                        panic!(
                            "end of stream inside a reply head: {:?}",
                            String::from_utf8_lossy(&self.buf)
                        );
                    }
                }
                Err(e) => panic!(
                    "bad reply head ({e:?}): {:?}",
                    String::from_utf8_lossy(&self.buf)
                ),
            }
        };
        self.buf.drain(..head.len);
        let body = match (to_head, head.framing) {
            (true, _) | (_, ReplyFraming::None) => Vec::new(),
            (false, ReplyFraming::Length(n)) => {
                let n = n as usize;
                while self.buf.len() < n {
                    if self.fill() == 0 {
                        panic!("end of stream inside a body of {n} bytes");
                    }
                }
                self.buf.drain(..n).collect()
            }
            (false, ReplyFraming::UntilClose) => {
                while self.fill() > 0 {}
                std::mem::take(&mut self.buf)
            }
            (false, ReplyFraming::Chunked) => match self.chunked_body() {
                Ok(body) => body,
                Err(partial) => panic!(
                    "end of stream inside a chunked body after {} bytes",
                    partial.len()
                ),
            },
        };
        Reply {
            status: head.status,
            headers: head.headers,
            body,
        }
    }

    /// Reads a chunked body (RFC 9112 §7.1, written here independently of the library's
    /// decoder): its bytes, or `Err` with what came when the stream ended before the last chunk.
    pub fn chunked_body(&mut self) -> Result<Vec<u8>, Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let Some(line) = self.line() else {
                return Err(body);
            };
            let size = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size, 16)
                .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    match self.line() {
                        Some(l) if l.is_empty() => return Ok(body),
                        Some(_) => {}
                        None => return Err(body),
                    }
                }
            }
            while self.buf.len() < size + 2 {
                if self.read_more(true) == 0 {
                    body.extend_from_slice(&self.buf);
                    return Err(body);
                }
            }
            body.extend_from_slice(&self.buf[..size]);
            assert_eq!(
                &self.buf[size..size + 2],
                b"\r\n",
                "chunk data not followed by CRLF"
            );
            self.buf.drain(..size + 2);
        }
    }

    /// One CRLF-ended line (without it), or `None` at end of stream.
    fn line(&mut self) -> Option<String> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..at]).into_owned();
                self.buf.drain(..at + 2);
                return Some(line);
            }
            if self.read_more(true) == 0 {
                return None;
            }
        }
    }

    /// Reads exactly `n` raw bytes.
    pub fn exact(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            if self.fill() == 0 {
                panic!(
                    "end of stream after {:?}, {n} bytes expected",
                    String::from_utf8_lossy(&self.buf)
                );
            }
        }
        self.buf.drain(..n).collect()
    }

    /// Reads a body of `total` bytes whose byte `i` is `i % period % 256` (what the streaming
    /// tests produce), checking each, a MiB at a time.
    pub fn cycled_body(&mut self, total: u64, period: u64) {
        let mut at = 0u64;
        while at < total {
            let want = (total - at).min(1 << 20) as usize;
            let bytes = self.exact(want);
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(
                    *b,
                    ((at + i as u64) % period % 256) as u8,
                    "byte {}",
                    at + i as u64
                );
            }
            at += want as u64;
        }
    }

    /// Asserts the server closed the connection with nothing more sent.
    pub fn assert_eof(&mut self) {
        let n = self.fill();
        assert_eq!(
            n,
            0,
            "expected end of stream, got {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        assert!(
            self.buf.is_empty(),
            "unread bytes before end of stream: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    /// Asserts nothing arrives (and the connection stays open) for `wait`.
    pub fn assert_silent_for(&mut self, wait: Duration) {
        assert!(self.buf.is_empty(), "unread bytes: {:?}", self.buf);
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let mut byte = [0u8; 1];
        let got = self.stream.read(&mut byte);
        self.stream.set_read_timeout(Some(READ_LIMIT)).unwrap();
        match got {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Ok(0) => panic!("the server closed the connection"),
            Ok(_) => panic!("unexpected byte {:?}", byte[0] as char),
            Err(e) => panic!("read failed: {e}"),
        }
    }

    /// Whether any bytes are buffered but not yet taken apart.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

/// A port of 127.0.0.1 where nothing listens and nothing else can: a socket bound to it that
/// never listens (a connection there is refused), held until the returned guard is dropped. A
/// port found free and let go may be taken by another test's server before it is used.
/// A TCP connection to `to` bound first to `from` (std binds only after connecting).
pub fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else {
        return Err(std::io::Error::other("an IPv4 address to connect to"));
    };
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket is owned by the TcpStream made from it right away (closed on every
    // path); the addresses passed live on the stack for the calls and `len` is their size.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let local = sockaddr(from, 0);
        if libc::bind(fd, (&raw const local).cast(), len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let remote = sockaddr(*to.ip(), to.port());
        if libc::connect(fd, (&raw const remote).cast(), len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}

pub fn closed_port() -> (u16, ClosedPort) {
    // SAFETY: socket(2), bind(2) and getsockname(2) on a descriptor this function owns, with a
    // `sockaddr_in` and its length; the descriptor is closed by the guard's drop.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let bound = libc::bind(fd, (&raw const addr).cast(), len);
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        let mut len = len;
        let named = libc::getsockname(fd, (&raw mut addr).cast(), &mut len);
        assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
        (u16::from_be(addr.sin_port), ClosedPort(fd))
    }
}

/// Holds a [`closed_port`].
pub struct ClosedPort(libc::c_int);

impl Drop for ClosedPort {
    fn drop(&mut self) {
        // SAFETY: the descriptor `closed_port` opened, closed once.
        unsafe {
            libc::close(self.0);
        }
    }
}

/// The name the test harness knows test `name` of module `module` (its `module_path!()`) by:
/// for a test that runs itself again in a child process (`--exact`).
pub fn harness_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_owned(),
    }
}

/// Runs `sequence(attempt)` inside one wall-clock second, starting it just after a second
/// begins; tries again (up to 5 times) when the second changed while it ran.
pub fn within_one_second<T>(mut sequence: impl FnMut(u32) -> T) -> T {
    let second = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
    };
    for attempt in 0..5 {
        std::thread::sleep(Duration::from_nanos(
            1_000_000_000 - u64::from(second().subsec_nanos()) + 5_000_000,
        ));
        let start = second().as_secs();
        let result = sequence(attempt);
        if second().as_secs() == start {
            return result;
        }
    }
    panic!("five attempts in a row straddled a second boundary: is the machine overloaded?");
}

/// Polls `cond` every few milliseconds until it holds; panics with `what` after `limit`.
pub fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A handler that describes the request: `<method> <target>\n`, one `<name>: <value>\n` per
/// header, a blank line, then the body.
pub fn echo(req: web::http::Request) -> web::http::Response {
    let mut text = format!("{} {}\n", req.method(), req.path()).into_bytes();
    for h in req.headers() {
        text.extend_from_slice(h.name().as_bytes());
        text.extend_from_slice(b": ");
        text.extend_from_slice(h.value());
        text.push(b'\n');
    }
    text.push(b'\n');
    text.extend_from_slice(req.body());
    web::http::text_response(200, text)
}
