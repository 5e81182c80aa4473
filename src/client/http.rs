//! The blocking HTTP/1.1 client: [`ask`], [`get`], [`get_all`], [`read_response`], and the
//! [`Client`] value that holds their timeouts and limits.

pub use super::fetch::{CLIENT_IDLE_TIMEOUT, ClientResponse, MAX_IDLE_PER_HOST, RequestBuilder};

use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::fetch::SharedIdle;
use super::wire::Wire;
use crate::http::ParseError;
use crate::http::chunked::ChunkedDecoder;
use crate::http::fields::{ConnectionOptions, frames_body};
use crate::http::grammar::{find_lf, is_field_byte, is_sendable_target_byte, is_token};
use crate::http::head::Version;
use crate::http::message::Header;
use crate::http::reply::{ReplyFraming, ReplyHead, parse_reply_head};

/// Default time to establish a connection.
pub const CLIENT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a whole reply may take to arrive, from the first read to the last.
pub const CLIENT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a request may take to be sent.
pub const CLIENT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default largest reply accepted, head and body, in bytes.
pub const MAX_REPLY: usize = 16 * 1024 * 1024;
/// Largest reply head accepted, in bytes.
const MAX_REPLY_HEAD: usize = 64 * 1024;

/// A blocking HTTP/1.1 client: its timeouts and its reply limit. The free functions ([`ask`],
/// [`get`], [`get_all`], [`read_response`]) use `Client::default()`.
///
/// Failures are `io::Error`s: the connection's own (`ConnectionRefused`, ...), `TimedOut` when a
/// timeout passes, `InvalidInput` for a request that cannot be sent as given (a method that is
/// not a token, a CR or LF in the path or a header), `InvalidData` for a malformed reply or one
/// over the limit, `UnexpectedEof` when the server closes in the middle of a reply.
///
/// ```no_run
/// use std::time::Duration;
/// use web::http::{status_of, Client};
/// let client = Client::new().read_timeout(Duration::from_secs(5)).max_reply(1 << 20);
/// let reply = client.get("127.0.0.1", 8080, "/")?;
/// assert_eq!(status_of(&reply), Some(200));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    connect_timeout: Duration,
    read_timeout: Duration,
    write_timeout: Duration,
    max_reply: usize,
    /// Idle keep-alive connections for [`Client::request`], shared by the client's clones.
    pub(crate) idle: SharedIdle,
    pub(crate) max_idle_per_host: usize,
    pub(crate) idle_timeout: Duration,
    /// Whose certificates `https://` trusts (`None`: the system's roots).
    pub(crate) tls: Option<super::wire::TlsChoice>,
}

impl Default for Client {
    fn default() -> Client {
        Client {
            connect_timeout: CLIENT_CONNECT_TIMEOUT,
            read_timeout: CLIENT_READ_TIMEOUT,
            write_timeout: CLIENT_WRITE_TIMEOUT,
            max_reply: MAX_REPLY,
            idle: SharedIdle::default(),
            max_idle_per_host: MAX_IDLE_PER_HOST,
            idle_timeout: CLIENT_IDLE_TIMEOUT,
            tls: None,
        }
    }
}

/// Why reading a reply failed.
pub(crate) enum Failure {
    /// The server closed the connection before sending any byte of the reply (on a reused
    /// keep-alive connection: it closed it while idle).
    ClosedBeforeReply,
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

impl From<ParseError> for Failure {
    fn from(e: ParseError) -> Failure {
        Failure::Io(e.into())
    }
}

impl From<Failure> for io::Error {
    fn from(f: Failure) -> io::Error {
        match f {
            Failure::ClosedBeforeReply => io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection without replying",
            ),
            Failure::Io(e) => e,
        }
    }
}

impl Client {
    /// A client with the default timeouts and limit.
    ///
    /// ```
    /// let client = web::http::Client::new();
    /// # let _ = client;
    /// ```
    pub fn new() -> Client {
        Client::default()
    }

    /// Time to establish a connection (default [`CLIENT_CONNECT_TIMEOUT`]).
    ///
    /// ```
    /// let client = web::http::Client::new().connect_timeout(std::time::Duration::from_secs(2));
    /// # let _ = client;
    /// ```
    pub fn connect_timeout(mut self, d: Duration) -> Client {
        self.connect_timeout = d;
        self
    }

    /// Time a whole reply may take to arrive (default [`CLIENT_READ_TIMEOUT`]).
    ///
    /// ```
    /// let client = web::http::Client::new().read_timeout(std::time::Duration::from_secs(5));
    /// # let _ = client;
    /// ```
    pub fn read_timeout(mut self, d: Duration) -> Client {
        self.read_timeout = d;
        self
    }

    /// Time a request may take to be sent (default [`CLIENT_WRITE_TIMEOUT`]).
    ///
    /// ```
    /// let client = web::http::Client::new().write_timeout(std::time::Duration::from_secs(5));
    /// # let _ = client;
    /// ```
    pub fn write_timeout(mut self, d: Duration) -> Client {
        self.write_timeout = d;
        self
    }

    /// Largest reply accepted, head and body (default [`MAX_REPLY`]).
    ///
    /// ```
    /// let client = web::http::Client::new().max_reply(1 << 20); // larger replies: InvalidData
    /// # let _ = client;
    /// ```
    pub fn max_reply(mut self, bytes: usize) -> Client {
        self.max_reply = bytes;
        self
    }

    /// Idle connections kept per host and port for [`Client::request`] (default
    /// [`MAX_IDLE_PER_HOST`]; 0 keeps none: every request gets a connection of its own).
    ///
    /// ```
    /// let client = web::http::Client::new().max_idle_per_host(2);
    /// # let _ = client;
    /// ```
    pub fn max_idle_per_host(mut self, n: usize) -> Client {
        self.max_idle_per_host = n;
        self
    }

    /// How long an idle connection is kept for [`Client::request`] (default
    /// [`CLIENT_IDLE_TIMEOUT`]); an older one is closed instead of being reused.
    ///
    /// ```
    /// let client = web::http::Client::new().idle_timeout(std::time::Duration::from_secs(5));
    /// # let _ = client;
    /// ```
    pub fn idle_timeout(mut self, d: Duration) -> Client {
        self.idle_timeout = d;
        self
    }

    /// Whose certificates the client trusts over `https://` (feature `tls`; by default the
    /// system's roots, see [`ClientTls::system`](crate::tls::ClientTls::system)).
    ///
    /// ```no_run
    /// let client = web::http::Client::new().tls(web::tls::ClientTls::roots_pem_file("ca.pem")?);
    /// let res = client.request("GET", "https://localhost:8443/").send()?;
    /// # let _ = res;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: crate::tls::ClientTls) -> Client {
        self.tls = Some(tls);
        self
    }

    /// Idle connections the client (and its clones, which share them) keeps now.
    ///
    /// ```
    /// assert_eq!(web::http::Client::new().idle_connections(), 0);
    /// ```
    pub fn idle_connections(&self) -> usize {
        self.idle.count()
    }

    /// Starts a request with `method` to `url` (`http://host[:port]/path?query`): add headers
    /// and a body, then [`send`](RequestBuilder::send) it for a [`ClientResponse`](crate::http::ClientResponse). Requests
    /// of a client and its clones share kept-alive connections.
    ///
    /// ```no_run
    /// let client = web::http::Client::new();
    /// let res = client.request("GET", "http://127.0.0.1:8080/api/rooms").send()?;
    /// println!("{} {}", res.status(), res.text());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn request(&self, method: &str, url: &str) -> RequestBuilder<'_> {
        RequestBuilder::new(self, method, url)
    }

    /// Sends one request and returns the raw reply. See [`ask`].
    ///
    /// ```no_run
    /// let client = web::http::Client::new();
    /// let raw = client.ask("127.0.0.1", 8080, "POST", "/notes", &[], b"hello")?;
    /// println!("{:?}", web::http::status_of(&raw));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ask(
        &self,
        host: &str,
        port: u16,
        method: &str,
        path: &str,
        headers: &[Header],
        body: &[u8],
    ) -> io::Result<Vec<u8>> {
        let request = request_bytes(host, port, method, path, headers, body, false)?;
        let mut stream = self.connect(host, port)?;
        self.send(&mut stream, &request)?;
        Ok(self.read_reply(&mut stream, Vec::new(), method == "HEAD")?)
    }

    /// `GET path`; the raw reply. See [`get`].
    ///
    /// ```no_run
    /// let raw = web::http::Client::new().get("127.0.0.1", 8080, "/")?;
    /// println!("{}", String::from_utf8_lossy(&raw));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get(&self, host: &str, port: u16, path: &str) -> io::Result<Vec<u8>> {
        self.ask(host, port, "GET", path, &[], b"")
    }

    /// Every path over one keep-alive connection, replies in order. See [`get_all`].
    ///
    /// ```no_run
    /// let replies = web::http::Client::new().get_all("127.0.0.1", 8080, &["/a", "/b"])?;
    /// assert_eq!(replies.len(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get_all<P: AsRef<str>>(
        &self,
        host: &str,
        port: u16,
        paths: &[P],
    ) -> io::Result<Vec<Vec<u8>>> {
        let mut replies = Vec::with_capacity(paths.len());
        let mut conn: Option<TcpStream> = None;
        for path in paths {
            let request = request_bytes(host, port, "GET", path.as_ref(), &[], b"", true)?;
            let mut retried = false;
            loop {
                let reused = conn.is_some();
                let stream = match &mut conn {
                    Some(s) => s,
                    None => conn.insert(self.connect(host, port)?),
                };
                let result = match self.send(stream, &request) {
                    Ok(()) => self.read_reply(stream, Vec::new(), false),
                    Err(e) => Err(Failure::Io(e)),
                };
                match result {
                    Ok(reply) => {
                        if !keeps_alive(&reply) {
                            conn = None;
                        }
                        replies.push(reply);
                        break;
                    }
                    // A kept-alive connection the server closed while it was idle: GET is
                    // idempotent, so connect again and send it once more.
                    Err(failure) if reused && !retried && is_stale(&failure) => {
                        conn = None;
                        retried = true;
                    }
                    Err(failure) => return Err(failure.into()),
                }
            }
        }
        Ok(replies)
    }

    /// Reads one whole reply from `stream`. See [`read_response`].
    ///
    /// ```no_run
    /// use std::io::Write;
    /// let mut conn = std::net::TcpStream::connect("127.0.0.1:8080")?;
    /// conn.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")?;
    /// let reply = web::http::Client::new().read_response(&mut conn, Vec::new())?;
    /// # let _ = reply;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read_response(&self, stream: &mut TcpStream, acc: Vec<u8>) -> io::Result<Vec<u8>> {
        Ok(self.read_reply(stream, acc, false)?)
    }

    /// Reads one whole reply to a request with `method` (a reply to `HEAD` has no body,
    /// whatever its Content-Length says).
    ///
    /// ```no_run
    /// use std::io::Write;
    /// let mut conn = std::net::TcpStream::connect("127.0.0.1:8080")?;
    /// conn.write_all(b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n")?;
    /// let head = web::http::Client::new().read_response_to(&mut conn, Vec::new(), "HEAD")?;
    /// # let _ = head;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read_response_to(
        &self,
        stream: &mut TcpStream,
        acc: Vec<u8>,
        method: &str,
    ) -> io::Result<Vec<u8>> {
        Ok(self.read_reply(stream, acc, method == "HEAD")?)
    }

    /// A new connection (the connect timeout, the write timeout set).
    pub(crate) fn connect(&self, host: &str, port: u16) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, self.connect_timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_write_timeout(Some(self.write_timeout))?;
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"))
        }))
    }

    pub(crate) fn send(&self, stream: &mut impl Write, request: &[u8]) -> io::Result<()> {
        stream.write_all(request).map_err(timed_out)
    }

    /// Reads exactly one reply: every byte read belongs to it (bytes are looked at with `peek`
    /// first and consumed only as far as the reply goes), so the next reply on the connection
    /// stays intact. Interim 1xx replies other than 101 are read and dropped.
    pub(crate) fn read_reply(
        &self,
        stream: &mut impl Wire,
        acc: Vec<u8>,
        head_request: bool,
    ) -> Result<Vec<u8>, Failure> {
        let mut reader = Reader {
            stream,
            deadline: Instant::now() + self.read_timeout,
            peeked: vec![0; 16 * 1024],
        };
        let mut reply = acc;
        let head = loop {
            let head = reader.head(&mut reply)?;
            if (100..200).contains(&head.status) && head.status != 101 {
                reply.drain(..head.len);
                continue;
            }
            break head;
        };
        let limit = self.max_reply;
        if head_request {
            return Ok(reply);
        }
        match head.framing {
            ReplyFraming::None => {}
            ReplyFraming::Length(n) => {
                let end = usize::try_from(n)
                    .ok()
                    .and_then(|n| n.checked_add(head.len))
                    .filter(|&e| e <= limit)
                    .ok_or_else(|| too_large(limit))?;
                reader.exactly(&mut reply, end)?;
            }
            ReplyFraming::Chunked => {
                let mut decoder = ChunkedDecoder::new(limit as u64);
                let mut sink = Vec::new();
                let used = decoder.decode(reply.get(head.len..).unwrap_or_default(), &mut sink)?;
                reply.truncate(head.len + used);
                while !decoder.is_done() {
                    let available = reader.peek()?;
                    sink.clear();
                    let used = decoder.decode(&reader.peeked[..available], &mut sink)?;
                    if reply.len() + used > limit {
                        return Err(too_large(limit).into());
                    }
                    reader.consume(&mut reply, used)?;
                }
            }
            ReplyFraming::UntilClose => reader.until_closed(&mut reply, limit)?,
        }
        Ok(reply)
    }
}

/// Reads a reply's bytes within a deadline.
struct Reader<'a, W> {
    stream: &'a mut W,
    deadline: Instant,
    peeked: Vec<u8>,
}

impl<W: Wire> Reader<'_, W> {
    fn arm(&mut self) -> io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the reply did not arrive in time",
            ));
        }
        self.stream.set_read_timeout(Some(left))
    }

    /// Looks at what has arrived without consuming it (waits for at least one byte).
    fn peek(&mut self) -> Result<usize, Failure> {
        self.arm()?;
        match self.stream.peek(&mut self.peeked) {
            Ok(0) => Err(Failure::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection in the middle of a reply",
            ))),
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => self.peek(),
            Err(e) => Err(Failure::Io(timed_out(e))),
        }
    }

    /// Consumes `n` bytes already peeked into `reply`.
    fn consume(&mut self, reply: &mut Vec<u8>, n: usize) -> io::Result<()> {
        let start = reply.len();
        reply.resize(start + n, 0);
        self.stream
            .read_exact(&mut reply[start..])
            .map_err(timed_out)
    }

    /// Reads until the head is complete; the bytes consumed stop at its end.
    fn head(&mut self, reply: &mut Vec<u8>) -> Result<ReplyHead, Failure> {
        loop {
            if let Some(head) = parse_reply_head(reply)? {
                return Ok(head);
            }
            if reply.len() > MAX_REPLY_HEAD {
                return Err(
                    io::Error::new(io::ErrorKind::InvalidData, "reply head too large").into(),
                );
            }
            let available = match self.peek() {
                Err(Failure::Io(e))
                    if e.kind() == io::ErrorKind::UnexpectedEof && reply.is_empty() =>
                {
                    return Err(Failure::ClosedBeforeReply);
                }
                other => other?,
            };
            let peeked = &self.peeked[..available];
            // Consume only up to the end of the head if it ends in what was peeked.
            let take = match find_head_end(reply, peeked) {
                Some(end) => end,
                None => available,
            };
            self.consume(reply, take)?;
        }
    }

    /// Reads until `reply` is `end` bytes long.
    fn exactly(&mut self, reply: &mut Vec<u8>, end: usize) -> Result<(), Failure> {
        while reply.len() < end {
            let available = self.peek()?;
            self.consume(reply, available.min(end - reply.len()))?;
        }
        reply.truncate(end);
        Ok(())
    }

    /// Reads to the end of the stream, refusing more than `limit` bytes in all.
    fn until_closed(&mut self, reply: &mut Vec<u8>, limit: usize) -> Result<(), Failure> {
        loop {
            self.arm()?;
            match self.stream.read(&mut self.peeked) {
                Ok(0) => return Ok(()),
                Ok(n) if reply.len() + n > limit => return Err(too_large(limit).into()),
                Ok(n) => reply.extend_from_slice(&self.peeked[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::Io(timed_out(e))),
            }
        }
    }
}

/// How many bytes of `more` complete a reply head that `so_far` begins (the blank line — CRLF or
/// bare LF — included), if they do.
fn find_head_end(so_far: &[u8], more: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(lf) = find_lf(&more[at..]) {
        let lf = at + lf;
        // The byte sequence before this LF, across the two buffers.
        let before = |back: usize| -> Option<u8> {
            if back <= lf {
                Some(more[lf - back])
            } else {
                so_far.len().checked_sub(back - lf).map(|i| so_far[i])
            }
        };
        let blank = match before(1) {
            Some(b'\n') => true,
            Some(b'\r') => before(2) == Some(b'\n'),
            _ => false,
        };
        if blank {
            return Some(lf + 1);
        }
        at = lf + 1;
    }
    None
}

fn too_large(limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("reply larger than the limit of {limit} bytes"),
    )
}

/// `WouldBlock` from a read or write timeout, as `TimedOut`.
fn timed_out(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(io::ErrorKind::TimedOut, "timed out")
    } else {
        e
    }
}

/// Whether a failure means the reused connection had been closed by the server.
pub(crate) fn is_stale(failure: &Failure) -> bool {
    match failure {
        Failure::ClosedBeforeReply => true,
        Failure::Io(e) => matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
        ),
    }
}

/// Whether the server keeps the connection open after this reply.
pub(crate) fn keeps_alive(reply: &[u8]) -> bool {
    let Ok(Some(head)) = parse_reply_head(reply) else {
        return false;
    };
    let mut options = ConnectionOptions::default();
    for h in head.headers.iter().filter(|h| h.name == "connection") {
        options.note(h.value.as_bytes());
    }
    options.persists(head.version == Version::Http11) && head.framing != ReplyFraming::UntilClose
}

/// The bytes of a request: request line, `Host`, the given headers, `Content-Length` when there
/// is a body or the method expects one, `Connection: keep-alive` or `close`, blank line, body.
pub(crate) fn request_bytes(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    headers: &[Header],
    body: &[u8],
    keep_alive: bool,
) -> io::Result<Vec<u8>> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    if !is_token(method.as_bytes()) {
        return Err(invalid(format!("{method:?} is not a method token")));
    }
    if path.is_empty() || !path.bytes().all(is_sendable_target_byte) {
        return Err(invalid(format!(
            "{path:?} is not a request target (no spaces or control characters)"
        )));
    }
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| is_sendable_target_byte(b) && b != b'/')
    {
        return Err(invalid(format!("{host:?} is not a host")));
    }
    let mut out = Vec::with_capacity(128 + body.len());
    out.extend_from_slice(format!("{method} {path} HTTP/1.1\r\n").as_bytes());
    let has = |name: &str| headers.iter().any(|h| h.name.eq_ignore_ascii_case(name));
    if !has("host") {
        let bracketed = host.contains(':') && !host.starts_with('[');
        let host = if bracketed {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let host = if port == 80 {
            host
        } else {
            format!("{host}:{port}")
        };
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    for h in headers {
        if !is_token(h.name.as_bytes()) || !h.value.bytes().all(is_field_byte) {
            return Err(invalid(format!(
                "header {:?}: {:?} cannot be sent (a name must be a token; a value may not hold CR, LF or other control bytes)",
                h.name, h.value
            )));
        }
        if frames_body(&h.name) {
            return Err(invalid(format!(
                "the client frames the body itself: remove the {} header",
                h.name
            )));
        }
        out.extend_from_slice(format!("{}: {}\r\n", h.name, h.value).as_bytes());
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if !has("connection") {
        out.extend_from_slice(if keep_alive {
            &b"Connection: keep-alive\r\n"[..]
        } else {
            b"Connection: close\r\n"
        });
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(out)
}

/// Sends one request and returns the raw reply: the request line, `Host`, the given headers,
/// `Content-Length` when there is a body (or the method is POST, PUT or PATCH),
/// `Connection: close`, then the body. The reply is read to its end by its framing (see
/// [`read_response`]); a reply to HEAD has no body. Uses [`Client::default`]: connect 10 s,
/// whole reply 30 s, send 30 s, replies up to 16 MiB.
///
/// ```no_run
/// use web::http::{ask, response_body, Header};
/// let reply = ask("127.0.0.1", 8080, "POST", "/notes", &[Header::new("Content-Type", "text/plain")], b"remember")?;
/// println!("{}", String::from_utf8_lossy(&response_body(&reply)?));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ask(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    headers: &[Header],
    body: &[u8],
) -> io::Result<Vec<u8>> {
    Client::default().ask(host, port, method, path, headers, body)
}

/// `GET path`; the raw reply.
///
/// ```no_run
/// let reply = web::http::get("127.0.0.1", 8080, "/")?;
/// assert_eq!(web::http::status_of(&reply), Some(200));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn get(host: &str, port: u16, path: &str) -> io::Result<Vec<u8>> {
    Client::default().get(host, port, path)
}

/// GETs every path over ONE keep-alive connection and returns the raw replies in the order of
/// the paths. If the server closes the connection between replies (it said `Connection: close`,
/// or closed an idle connection), the client connects again and goes on: GET is idempotent, so
/// sending a request again whose reply never came is safe. A reply that fails otherwise is the
/// error.
///
/// ```no_run
/// let replies = web::http::get_all("127.0.0.1", 8080, &["/a", "/b", "/c"])?;
/// assert_eq!(replies.len(), 3);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn get_all<P: AsRef<str>>(host: &str, port: u16, paths: &[P]) -> io::Result<Vec<Vec<u8>>> {
    Client::default().get_all(host, port, paths)
}

/// Reads one whole reply from a socket and returns it; `acc` is what was already read of it
/// (pass an empty `Vec` to start). It stops when the reply is complete, not at end of stream:
/// after `Content-Length` bytes of body, after the last chunk and trailers of a chunked body
/// (the reply is returned as received; [`response_body`](crate::http::response_body)
/// de-chunks it), or at end of stream for a body delimited by closing; 1xx (but 101), 204 and
/// 304 replies have no body. It never reads past the reply's end, so the next reply on a
/// keep-alive connection is intact. Interim 1xx replies before the final one are dropped. For a
/// reply to HEAD use [`Client::read_response_to`].
///
/// ```no_run
/// use std::io::Write;
/// let mut conn = std::net::TcpStream::connect("127.0.0.1:8080")?;
/// conn.write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")?;
/// let first = web::http::read_response(&mut conn, Vec::new())?;
/// let second = web::http::read_response(&mut conn, Vec::new())?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read_response(stream: &mut TcpStream, acc: Vec<u8>) -> io::Result<Vec<u8>> {
    Client::default().read_response(stream, acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_and_framing() {
        let req = request_bytes("example.com", 80, "GET", "/a?b", &[], b"", false).unwrap();
        assert_eq!(
            req,
            b"GET /a?b HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"
        );
        let req = request_bytes(
            "127.0.0.1",
            8080,
            "POST",
            "/p",
            &[Header::new("X-A", "1")],
            b"hi",
            true,
        )
        .unwrap();
        assert_eq!(req, b"POST /p HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi");
        let req = request_bytes("::1", 8080, "PUT", "/", &[], b"", false).unwrap();
        assert!(req.starts_with(b"PUT / HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Length: 0\r\n"));
        let req = request_bytes(
            "a",
            1,
            "GET",
            "/",
            &[
                Header::new("host", "b"),
                Header::new("Connection", "upgrade"),
            ],
            b"",
            false,
        )
        .unwrap();
        assert_eq!(
            req,
            b"GET / HTTP/1.1\r\nhost: b\r\nConnection: upgrade\r\n\r\n"
        );
    }

    #[test]
    fn requests_that_cannot_be_sent_are_refused() {
        let bad: &[(&str, &str, &str, Vec<Header>)] = &[
            ("h", "GE T", "/", vec![]),
            ("h", "GET", "/a b", vec![]),
            ("h", "GET", "/a\r\nX: y", vec![]),
            ("h", "GET", "", vec![]),
            ("", "GET", "/", vec![]),
            ("h", "GET", "/", vec![Header::new("X", "a\r\nEvil: 1")]),
            ("h", "GET", "/", vec![Header::new("X Y", "a")]),
            ("h", "GET", "/", vec![Header::new("Content-Length", "5")]),
        ];
        for (host, method, path, headers) in bad {
            let err = request_bytes(host, 80, method, path, headers, b"", false).unwrap_err();
            assert_eq!(
                err.kind(),
                io::ErrorKind::InvalidInput,
                "{method} {path} {headers:?}"
            );
        }
    }

    #[test]
    fn head_end_across_buffers() {
        let cases: &[(&[u8], &[u8], Option<usize>)] = &[
            (b"", b"HTTP/1.1 200 OK\r\n\r\nbody", Some(19)),
            (b"HTTP/1.1 200 OK\r\n", b"\r\nbody", Some(2)),
            (b"HTTP/1.1 200 OK\r\n\r", b"\nbody", Some(1)),
            (b"HTTP/1.1 200 OK\n", b"\nbody", Some(1)),
            (b"HTTP/1.1 200 OK\r\nA: b", b"\r\n", None),
            (b"", b"HTTP/1.1 200 OK\r\nA: b\r\n", None),
        ];
        for (so_far, more, want) in cases {
            assert_eq!(find_head_end(so_far, more), *want, "{so_far:?} + {more:?}");
        }
    }

    #[test]
    fn keep_alive_of_replies() {
        let cases: &[(&[u8], bool)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                false,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            (
                b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n",
                true,
            ),
            (b"HTTP/1.1 200 OK\r\n\r\nto the end", false),
            // HTTP/1.x for x > 1 is read as 1.1 (RFC 9110 §6.2).
            (b"HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", true),
        ];
        for (reply, keep) in cases {
            assert_eq!(keeps_alive(reply), *keep, "{reply:?}");
        }
    }
}
