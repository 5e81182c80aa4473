//! The blocking WebSocket client: [`connect`] (or [`WsConnect`] for headers, subprotocols,
//! timeouts and limits) to a `ws://` URL, then send and receive whole messages — pings
//! answered, fragments put together, the closing handshake done, every breach of RFC 6455 an
//! `io::Error` after the close code it earns was sent. The frames are read by the same
//! [`Decoder`] the server uses.
//!
//! Reading and sending are separate halves: [`WsClient::writer`] hands out a [`WsWriter`]
//! (cheap to clone) that another thread may send with while one thread receives.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::url::{Schemes, Url};
use super::wire::{self, ClientConn};
use crate::http::grammar::{is_field_byte, is_token};
use crate::http::{Header, parse_reply_head};
use crate::rooms::Message;
use crate::ws::close::{WsError, close_payload};
use crate::ws::decoder::{Decoder, Event, MAX_MESSAGE};
use crate::ws::deflate::{
    CLIENT_OFFER, ClientAgreed, OwnCompressor, RSV1, accept_response, client_codecs,
};
use crate::ws::frame::{Opcode, Role, write_frame};
use crate::ws::handshake::{accept_key, random_16};

/// Default time to connect and complete the opening handshake ([`WsConnect::timeout`]).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest response head to an upgrade request the client reads.
const MAX_HEAD: usize = 16 * 1024;

/// How long the client waits for the server to close TCP after the closing handshake.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Connects to `url` (`ws://host[:port]/path?query`) with the defaults of [`WsConnect`].
///
/// ```no_run
/// let mut ws = web::ws::connect("ws://127.0.0.1:9001/")?;
/// ws.send_text("hello")?;
/// if let Some(reply) = ws.recv()? {
///     println!("{reply:?}");
/// }
/// ws.close(web::ws::NORMAL, "")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn connect(url: &str) -> io::Result<WsClient> {
    WsConnect::new().connect(url)
}

/// How to connect: extra request headers, subprotocols offered, timeouts, the largest message
/// accepted.
///
/// ```no_run
/// use std::time::Duration;
/// let ws = web::ws::WsConnect::new()
///     .header("Cookie", "session=abc")
///     .protocol("chat.v2")
///     .timeout(Duration::from_secs(5))
///     .read_timeout(Some(Duration::from_secs(60)))
///     .max_message(1 << 20)
///     .connect("ws://127.0.0.1:8080/ws?room=lobby")?;
/// assert_eq!(ws.protocol(), Some("chat.v2"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct WsConnect {
    headers: Vec<(String, String)>,
    protocols: Vec<String>,
    timeout: Duration,
    read_timeout: Option<Duration>,
    max_message: usize,
    /// Whose certificates `wss://` trusts (`None`: the system's roots).
    tls: Option<super::wire::TlsChoice>,
    /// Offer permessage-deflate.
    deflate: bool,
}

impl Default for WsConnect {
    fn default() -> WsConnect {
        WsConnect::new()
    }
}

impl WsConnect {
    /// No extra header, no subprotocol, [`CONNECT_TIMEOUT`], no read timeout,
    /// [`MAX_MESSAGE`](crate::ws::MAX_MESSAGE).
    ///
    /// ```
    /// let _ = web::ws::WsConnect::new();
    /// ```
    pub fn new() -> WsConnect {
        WsConnect {
            headers: Vec::new(),
            protocols: Vec::new(),
            timeout: CONNECT_TIMEOUT,
            read_timeout: None,
            max_message: MAX_MESSAGE,
            tls: None,
            deflate: false,
        }
    }

    /// Offers permessage-deflate (RFC 7692; feature `deflate`): when the server agrees, messages
    /// of 64 bytes or more go compressed when that makes them shorter, and compressed messages
    /// from the server are inflated (`max_message` limits their inflated size).
    ///
    /// ```no_run
    /// let ws = web::ws::WsConnect::new().deflate(true).connect("ws://127.0.0.1:9001/")?;
    /// # let _ = ws;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, offer: bool) -> WsConnect {
        self.deflate = offer;
        self
    }

    /// Adds a header to the upgrade request (a `Cookie`, an `Authorization`, an `Origin`...).
    /// A name that is not a token, a value holding CR, LF or another control byte, or a header
    /// the handshake sets itself (`Host`, `Upgrade`, `Connection`, `Sec-WebSocket-*`) makes
    /// [`connect`](WsConnect::connect) fail with `InvalidInput`.
    ///
    /// ```
    /// let _ = web::ws::WsConnect::new().header("Origin", "https://example.com");
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> WsConnect {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Offers a subprotocol (`Sec-WebSocket-Protocol`), in order of preference; the one the
    /// server picked is [`WsClient::protocol`]. A server that picks one not offered fails the
    /// handshake.
    ///
    /// ```
    /// let _ = web::ws::WsConnect::new().protocol("v2.chat").protocol("v1.chat");
    /// ```
    pub fn protocol(mut self, name: &str) -> WsConnect {
        self.protocols.push(name.to_owned());
        self
    }

    /// Time to connect and complete the opening handshake (default [`CONNECT_TIMEOUT`]).
    ///
    /// ```
    /// let _ = web::ws::WsConnect::new().timeout(std::time::Duration::from_secs(3));
    /// ```
    pub fn timeout(mut self, d: Duration) -> WsConnect {
        self.timeout = d.max(Duration::from_millis(1));
        self
    }

    /// Longest wait for a message in [`WsReader::recv`] (default `None`: wait as long as it
    /// takes; pings answered meanwhile do not count as messages); a wait past it is an error of
    /// kind `TimedOut`, after which the client may go on receiving.
    ///
    /// ```
    /// let _ = web::ws::WsConnect::new().read_timeout(Some(std::time::Duration::from_secs(30)));
    /// ```
    pub fn read_timeout(mut self, d: Option<Duration>) -> WsConnect {
        self.read_timeout = d.filter(|d| !d.is_zero());
        self
    }

    /// Largest message accepted, in bytes (default [`MAX_MESSAGE`](crate::ws::MAX_MESSAGE));
    /// a larger one is refused with close code 1009 and an error.
    ///
    /// ```
    /// let _ = web::ws::WsConnect::new().max_message(16 << 20);
    /// ```
    pub fn max_message(mut self, bytes: usize) -> WsConnect {
        self.max_message = bytes;
        self
    }

    /// Whose certificates `wss://` trusts (feature `tls`; by default the system's roots, see
    /// [`ClientTls::system`](crate::tls::ClientTls::system)).
    ///
    /// ```no_run
    /// let ws = web::ws::WsConnect::new()
    ///     .tls(web::tls::ClientTls::roots_pem_file("ca.pem")?)
    ///     .connect("wss://localhost:9443/")?;
    /// # let _ = ws;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: crate::tls::ClientTls) -> WsConnect {
        self.tls = Some(tls);
        self
    }

    /// Connects to `url` and completes the opening handshake (RFC 6455 §4.1): the answer must
    /// be `101` with the right `Sec-WebSocket-Accept`, no extension but permessage-deflate when
    /// `WsConnect::deflate` offered it (and with parameters the offer allows), and a
    /// subprotocol among those offered, if any. `wss://` runs TLS first (feature `tls`; the
    /// server's certificate is checked for the URL's host). Errors: `InvalidInput` for a bad
    /// URL or header, `Unsupported` for `wss://` in a build without TLS, `InvalidData` for a
    /// certificate that is not trusted or a TLS failure, `ConnectionRefused` when
    /// the server answers anything but 101 (its status in the message; the whole answer —
    /// status, headers, body — as its [`UpgradeRefused`] inner error), `InvalidData` for a
    /// handshake that breaks the RFC, `TimedOut` past the timeout.
    ///
    /// ```no_run
    /// let ws = web::ws::WsConnect::new().connect("ws://127.0.0.1:9001/")?;
    /// # let _ = ws;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect(&self, url: &str) -> io::Result<WsClient> {
        let url = Url::parse(url, Schemes::Ws)?;
        wire::supported(url.secure)?;
        let key = base64::engine::general_purpose::STANDARD.encode(random_16());
        let request = self.request(&url, &key)?;
        let tcp = self.open(&url)?;
        tcp.set_read_timeout(Some(self.timeout))?;
        tcp.set_write_timeout(Some(self.timeout))?;
        let mut stream = wire::secure(
            tcp,
            url.secure,
            url.connect_host(),
            b"http/1.1",
            self.tls.as_ref(),
        )?;
        stream.write_all(&request)?;
        let (head, rest) = read_head(&mut stream)?;
        if head.status != 101 {
            return Err(refused(head, rest, &mut stream));
        }
        let (protocol, agreed) = self.check(&head, &key)?;
        stream.tcp().set_read_timeout(self.read_timeout)?;
        stream.tcp().set_write_timeout(None)?;
        let (compressor, decoder) = match agreed.as_ref().and_then(client_codecs) {
            Some((compressor, inflater)) => (
                Some(compressor),
                Decoder::with_deflate(Role::Client, self.max_message, inflater),
            ),
            None => (None, Decoder::new(Role::Client, self.max_message)),
        };
        let writer = WsWriter {
            side: Arc::new(Mutex::new(WriteSide {
                stream: stream.try_clone()?,
                close_sent: false,
                compressor,
            })),
        };
        let reader = WsReader {
            stream,
            decoder,
            pending: rest,
            writer: writer.clone(),
            ended: None,
            read_timeout: self.read_timeout,
        };
        Ok(WsClient {
            reader,
            writer,
            protocol,
            deflate: agreed.is_some(),
        })
    }

    /// The upgrade request.
    fn request(&self, url: &Url, key: &str) -> io::Result<Vec<u8>> {
        const SET_BY_US: [&str; 4] = ["host", "upgrade", "connection", "content-length"];
        let mut out = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n",
            url.target,
            url.host_header()
        );
        if !self.protocols.is_empty() {
            if let Some(bad) = self.protocols.iter().find(|p| !is_token(p.as_bytes())) {
                return Err(invalid_input(format!("bad subprotocol name {bad:?}")));
            }
            out.push_str(&format!(
                "Sec-WebSocket-Protocol: {}\r\n",
                self.protocols.join(", ")
            ));
        }
        if self.deflate {
            out.push_str(&format!("Sec-WebSocket-Extensions: {CLIENT_OFFER}\r\n"));
        }
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if !is_token(name.as_bytes()) {
                return Err(invalid_input(format!("bad header name {name:?}")));
            }
            if SET_BY_US.contains(&lower.as_str()) || lower.starts_with("sec-websocket-") {
                return Err(invalid_input(format!(
                    "the {name} header is set by the handshake itself"
                )));
            }
            if !value.bytes().all(is_field_byte) {
                return Err(invalid_input(format!(
                    "the value of {name} holds a control character"
                )));
            }
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        Ok(out.into_bytes())
    }

    /// A connection to the URL's host, trying each of its addresses within the timeout.
    fn open(&self, url: &Url) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in (url.connect_host(), url.port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, self.timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} has no address", url.host),
            )
        }))
    }

    /// Checks the server's answer (RFC 6455 §4.1, the client's checks); the subprotocol picked
    /// and what was agreed for permessage-deflate.
    fn check(
        &self,
        head: &crate::http::ReplyHead,
        key: &str,
    ) -> io::Result<(Option<String>, Option<ClientAgreed>)> {
        let field = |name: &str| -> Option<&str> {
            head.headers
                .iter()
                .find(|h: &&Header| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value.as_str())
        };
        let has_token = |name: &str, token: &str| {
            field(name).is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        };
        if !has_token("upgrade", "websocket") || !has_token("connection", "upgrade") {
            return Err(invalid_data(
                "the 101 lacks Upgrade: websocket or Connection: Upgrade",
            ));
        }
        if field("sec-websocket-accept") != Some(accept_key(key).as_str()) {
            return Err(invalid_data("the 101 has a wrong Sec-WebSocket-Accept"));
        }
        let extensions: Vec<&str> = head
            .headers
            .iter()
            .filter(|h: &&Header| h.name.eq_ignore_ascii_case("sec-websocket-extensions"))
            .map(|h| h.value.as_str())
            .collect();
        let agreed = match (self.deflate, extensions.is_empty()) {
            (_, true) => None,
            (false, false) => {
                return Err(invalid_data(
                    "the server chose an extension the client did not offer",
                ));
            }
            (true, false) => accept_response(&extensions).map_err(|why| invalid_data(&why))?,
        };
        let protocol = match field("sec-websocket-protocol") {
            None => None,
            Some(p) if self.protocols.iter().any(|o| o == p) => Some(p.to_owned()),
            Some(p) => {
                return Err(invalid_data(&format!(
                    "the server chose subprotocol {p:?}, which the client did not offer"
                )));
            }
        };
        Ok((protocol, agreed))
    }
}

/// The most of a refusal's body [`UpgradeRefused`] keeps.
const REFUSAL_BODY: usize = 64 * 1024;

/// The server answered an upgrade with something other than 101: what it said, as the
/// `ConnectionRefused` error's inner error ([`io::Error::get_ref`]) — its status, its header
/// lines and its body (as much of it as came within the handshake's timeout, at most 64 KiB),
/// for a client that shows the reason (a 401's, a 403's).
///
/// ```no_run
/// match web::ws::connect("ws://127.0.0.1:9001/private") {
///     Err(e) => {
///         if let Some(refused) = e.get_ref().and_then(|r| r.downcast_ref::<web::ws::UpgradeRefused>()) {
///             println!("{}: {}", refused.status, String::from_utf8_lossy(&refused.body));
///         }
///     }
///     Ok(_) => {}
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpgradeRefused {
    /// The status the server answered.
    pub status: u16,
    /// Its header lines.
    pub headers: Vec<Header>,
    /// Its body, or the start of it.
    pub body: Vec<u8>,
}

impl std::fmt::Display for UpgradeRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server answered {} {}, not 101 Switching Protocols",
            self.status,
            crate::http::status_text(self.status)
        )
    }
}

impl std::error::Error for UpgradeRefused {}

/// The refusal `head` starts, its body read as its framing says (or to the server's close),
/// within the handshake's timeout and [`REFUSAL_BODY`].
fn refused(head: crate::http::ReplyHead, mut raw: Vec<u8>, stream: &mut ClientConn) -> io::Error {
    use crate::http::{ChunkedDecoder, ReplyFraming};
    let mut chunked =
        (head.framing == ReplyFraming::Chunked).then(|| ChunkedDecoder::new(REFUSAL_BODY as u64));
    let want = match head.framing {
        ReplyFraming::None => 0,
        ReplyFraming::Length(n) => usize::try_from(n).unwrap_or(usize::MAX),
        ReplyFraming::Chunked | ReplyFraming::UntilClose => usize::MAX,
    }
    .min(REFUSAL_BODY);
    let mut body = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match chunked.as_mut() {
            Some(decoder) => {
                let used = decoder.decode(&raw, &mut body).unwrap_or(raw.len());
                raw.drain(..used.min(raw.len()));
                if decoder.is_done() || body.len() >= want {
                    break;
                }
            }
            None => {
                body.append(&mut raw);
                if body.len() >= want {
                    break;
                }
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(want);
    let refused = UpgradeRefused {
        status: head.status,
        headers: head.headers,
        body,
    };
    io::Error::new(io::ErrorKind::ConnectionRefused, refused)
}

/// Reads the response head; returns it and the bytes that came after it.
fn read_head(stream: &mut ClientConn) -> io::Result<(crate::http::ReplyHead, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match parse_reply_head(&buf) {
            Ok(Some(head)) => {
                let rest = buf.split_off(head.len);
                return Ok((head, rest));
            }
            Ok(None) if buf.len() > MAX_HEAD => {
                return Err(invalid_data("the answer's head is too long"));
            }
            Ok(None) => {}
            Err(e) => return Err(invalid_data(&format!("a malformed answer: {e}"))),
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before answering the upgrade",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn no_message() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "no message within the read timeout",
    )
}

fn invalid_input(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why)
}

fn invalid_data(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}

/// A connected WebSocket client: receives with [`recv`](WsClient::recv), sends with
/// [`send`](WsClient::send) (or from other threads through [`writer`](WsClient::writer)).
#[derive(Debug)]
pub struct WsClient {
    reader: WsReader,
    writer: WsWriter,
    protocol: Option<String>,
    /// permessage-deflate was agreed.
    deflate: bool,
}

impl WsClient {
    /// Sends a message (one frame, masked).
    ///
    /// ```no_run
    /// # let ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// ws.send(&web::ws::Message::Binary(vec![1, 2, 3]))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send(&self, msg: &Message) -> io::Result<()> {
        self.writer.send(msg)
    }

    /// Sends a text message.
    ///
    /// ```no_run
    /// # let ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// ws.send_text("hello")?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send_text(&self, text: &str) -> io::Result<()> {
        self.writer.send_text(text)
    }

    /// Receives the next whole message; see [`WsReader::recv`].
    ///
    /// ```no_run
    /// # let mut ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// while let Some(msg) = ws.recv()? {
    ///     println!("{msg:?}");
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn recv(&mut self) -> io::Result<Option<Message>> {
        self.reader.recv()
    }

    /// Closes: sends a close frame with `code` and `reason`, then receives (dropping messages
    /// still on their way) until the server's close frame; returns the code it carried (1005
    /// when it had none). `reason` is cut to what fits a control frame.
    ///
    /// ```no_run
    /// # let mut ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// let answered = ws.close(web::ws::NORMAL, "bye")?;
    /// assert_eq!(answered, Some(web::ws::NORMAL));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&mut self, code: u16, reason: &str) -> io::Result<Option<u16>> {
        self.writer.close(code, reason)?;
        while self.reader.recv()?.is_some() {}
        Ok(self.reader.close_code())
    }

    /// The subprotocol the server chose, if any.
    ///
    /// ```no_run
    /// let ws = web::ws::WsConnect::new().protocol("v1").connect("ws://127.0.0.1:9001/")?;
    /// println!("{:?}", ws.protocol());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn protocol(&self) -> Option<&str> {
        self.protocol.as_deref()
    }

    /// Whether permessage-deflate was agreed ([`WsConnect::deflate`] offered it and the server
    /// took it): messages both ways may then be compressed.
    ///
    /// ```no_run
    /// let ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// assert!(!ws.deflate(), "not offered: WsConnect::deflate offers it");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn deflate(&self) -> bool {
        self.deflate
    }

    /// Changes the longest wait for one message ([`WsConnect::read_timeout`]; `None` or zero:
    /// no limit) — what a client that first waits for a greeting and then idles wants.
    ///
    /// ```no_run
    /// let mut ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// ws.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.reader.set_read_timeout(timeout);
    }

    /// A sending half for another thread (all halves send over the one connection, a frame
    /// at a time).
    ///
    /// ```no_run
    /// let mut ws = web::ws::connect("ws://127.0.0.1:9001/")?;
    /// let writer = ws.writer();
    /// std::thread::spawn(move || writer.send_text("from another thread"));
    /// let _echo = ws.recv()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn writer(&self) -> WsWriter {
        self.writer.clone()
    }

    /// The two halves, each for a thread of its own.
    ///
    /// ```no_run
    /// let (mut reader, writer) = web::ws::connect("ws://127.0.0.1:9001/")?.into_split();
    /// writer.send_text("hi")?;
    /// let _ = reader.recv()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_split(self) -> (WsReader, WsWriter) {
        (self.reader, self.writer)
    }
}

/// The sending half of a [`WsClient`]: cheap to clone, usable from any thread.
#[derive(Clone, Debug)]
pub struct WsWriter {
    side: Arc<Mutex<WriteSide>>,
}

#[derive(Debug)]
struct WriteSide {
    stream: ClientConn,
    /// Our close frame went: nothing but a pong may follow it... and not even that.
    close_sent: bool,
    /// permessage-deflate, when agreed.
    compressor: Option<OwnCompressor>,
}

impl WsWriter {
    fn lock(&self) -> MutexGuard<'_, WriteSide> {
        // Each send writes a whole frame or fails: a panic cannot leave a frame half-built.
        self.side.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends one frame, masked with a fresh key; after our close frame, nothing is sent.
    fn frame(&self, opcode: Opcode, payload: &[u8]) -> io::Result<()> {
        let mut side = self.lock();
        if side.close_sent {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the connection is closing: nothing more may be sent",
            ));
        }
        let mut mask = [0u8; 4];
        mask.copy_from_slice(&random_16()[..4]);
        let mut out = Vec::with_capacity(payload.len() + 14);
        let data = matches!(opcode, Opcode::Text | Opcode::Binary);
        let first = opcode.fin();
        let mut compressed = Vec::new();
        let squeezed = match side.compressor.as_mut() {
            Some(c) if data => c.compress(payload, &mut compressed),
            _ => false,
        };
        match squeezed {
            true => write_frame(&mut out, first | RSV1, &compressed, Some(mask)),
            false => write_frame(&mut out, first, payload, Some(mask)),
        }
        if opcode == Opcode::Close {
            side.close_sent = true;
        }
        side.stream.write_all(&out)
    }

    /// Sends a message (one frame).
    ///
    /// ```no_run
    /// # let writer = web::ws::connect("ws://127.0.0.1:9001/")?.writer();
    /// writer.send(&web::ws::Message::Text("hi".into()))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send(&self, msg: &Message) -> io::Result<()> {
        match msg {
            Message::Text(t) => self.frame(Opcode::Text, t.as_bytes()),
            Message::Binary(b) => self.frame(Opcode::Binary, b),
        }
    }

    /// Sends a text message.
    ///
    /// ```no_run
    /// # let writer = web::ws::connect("ws://127.0.0.1:9001/")?.writer();
    /// writer.send_text("hi")?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send_text(&self, text: &str) -> io::Result<()> {
        self.frame(Opcode::Text, text.as_bytes())
    }

    /// Sends a binary message.
    ///
    /// ```no_run
    /// # let writer = web::ws::connect("ws://127.0.0.1:9001/")?.writer();
    /// writer.send_binary(&[0, 1, 2])?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send_binary(&self, bytes: &[u8]) -> io::Result<()> {
        self.frame(Opcode::Binary, bytes)
    }

    /// Sends a ping (at most 125 bytes of payload); the pong is not handed to the application.
    ///
    /// ```no_run
    /// # let writer = web::ws::connect("ws://127.0.0.1:9001/")?.writer();
    /// writer.ping(b"are you there")?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ping(&self, payload: &[u8]) -> io::Result<()> {
        self.frame(Opcode::Ping, &payload[..payload.len().min(125)])
    }

    /// Sends our close frame (once; later calls do nothing) without waiting for the answer:
    /// the reading half then receives until the server's close frame. See
    /// [`WsClient::close`] to do both.
    ///
    /// ```no_run
    /// # let writer = web::ws::connect("ws://127.0.0.1:9001/")?.writer();
    /// writer.close(web::ws::NORMAL, "done")?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self, code: u16, reason: &str) -> io::Result<()> {
        if self.lock().close_sent {
            return Ok(());
        }
        let mut payload = close_payload(code);
        let room = 125 - payload.len();
        let mut cut = reason.len().min(room);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        payload.extend_from_slice(&reason.as_bytes()[..cut]);
        self.frame(Opcode::Close, &payload)
    }

    /// Answers the server's close frame with the same code (none for none), unless ours went.
    fn answer_close(&self, code: Option<u16>) -> io::Result<()> {
        if self.lock().close_sent {
            return Ok(());
        }
        let payload = code.map_or_else(Vec::new, close_payload);
        self.frame(Opcode::Close, &payload)
    }

    fn pong(&self, payload: &[u8]) -> io::Result<()> {
        if self.lock().close_sent {
            return Ok(()); // after our close frame, no more frames (RFC 6455 §5.5.1)
        }
        self.frame(Opcode::Pong, payload)
    }

    fn shutdown(&self) {
        self.lock().stream.shutdown();
    }
}

/// The receiving half of a [`WsClient`].
#[derive(Debug)]
pub struct WsReader {
    stream: ClientConn,
    decoder: Decoder,
    /// Bytes read and not decoded yet.
    pending: Vec<u8>,
    writer: WsWriter,
    /// The closing handshake is over: the server's close code (1005 for none).
    ended: Option<u16>,
    /// Longest wait for one message.
    read_timeout: Option<Duration>,
}

impl WsReader {
    /// Receives the next whole message (text or binary; fragments put together). Pings are
    /// answered and pongs dropped on the way. `Ok(None)` once the closing handshake is done
    /// — the server's close frame came (and was answered) — and on every call after it.
    ///
    /// Errors: a frame that breaks RFC 6455 is answered with the close code it earns (1002,
    /// 1007 for text that is not UTF-8, 1009 past `max_message`) and is an `InvalidData`
    /// error naming it; a connection that ends without a close frame is `UnexpectedEof`; no
    /// message within [`WsConnect::read_timeout`] is `TimedOut` (and the client may go on).
    ///
    /// ```no_run
    /// let (mut reader, _writer) = web::ws::connect("ws://127.0.0.1:9001/")?.into_split();
    /// while let Some(msg) = reader.recv()? {
    ///     println!("{msg:?}");
    /// }
    /// println!("closed with {:?}", reader.close_code());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn recv(&mut self) -> io::Result<Option<Message>> {
        if self.ended.is_some() {
            return Ok(None);
        }
        let mut chunk = [0u8; 16 * 1024];
        let deadline = self.read_timeout.map(|t| Instant::now() + t);
        loop {
            while !self.pending.is_empty() {
                let (used, event) = match self.decoder.next(&self.pending) {
                    Ok(step) => step,
                    Err(broken) => return Err(self.broken(broken)),
                };
                self.pending.drain(..used);
                match event {
                    Some(Event::Text(t)) => return Ok(Some(Message::Text(t))),
                    Some(Event::Binary(b)) => return Ok(Some(Message::Binary(b))),
                    Some(Event::Ping(payload)) => self.writer.pong(&payload)?,
                    Some(Event::Pong(_)) => {}
                    Some(Event::Close(code)) => {
                        let code = code.map(|(c, _)| c);
                        self.writer.answer_close(code)?;
                        self.ended = Some(code.unwrap_or(1005));
                        self.finish();
                        return Ok(None);
                    }
                    None if used == 0 => break,
                    None => {}
                }
            }
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(no_message());
                }
                self.stream.tcp().set_read_timeout(Some(left))?;
            }
            let n = match self.stream.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(no_message()),
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection without a close frame",
                ));
            }
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }

    /// Changes the longest wait for one message (see [`WsClient::set_read_timeout`]).
    ///
    /// ```no_run
    /// let (mut reader, _writer) = web::ws::connect("ws://127.0.0.1:9001/")?.into_split();
    /// reader.set_read_timeout(None); // wait as long as it takes
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout.filter(|d| !d.is_zero());
    }

    /// The code of the server's close frame once the closing handshake is done (1005 when it
    /// carried none); `None` before.
    ///
    /// ```no_run
    /// # let (reader, _w) = web::ws::connect("ws://127.0.0.1:9001/")?.into_split();
    /// assert_eq!(reader.close_code(), None); // still open
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close_code(&self) -> Option<u16> {
        self.ended
    }

    /// The server broke the protocol: it gets the close code that earns, the connection ends.
    fn broken(&mut self, broken: WsError) -> io::Error {
        let _ = self.writer.close(broken.code(), "");
        self.ended = Some(broken.code());
        self.writer.shutdown();
        // The WsError is the io::Error's source (`get_ref`), for a caller that asks which.
        broken.into()
    }

    /// After the closing handshake: the server closes TCP first (RFC 6455 §7.1.1); wait a
    /// little for that, then close our side whatever happened.
    fn finish(&mut self) {
        let _ = self.stream.tcp().set_read_timeout(Some(CLOSE_LINGER));
        let mut sink = [0u8; 512];
        while matches!(self.stream.read(&mut sink), Ok(n) if n > 0) {}
        self.writer.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_headers_and_subprotocols_and_refuses_what_would_break_it() {
        let url = Url::parse("ws://h:9001/p?q=1", Schemes::Ws).unwrap();
        let req = WsConnect::new()
            .header("Cookie", "a=b")
            .protocol("v2")
            .protocol("v1")
            .request(&url, "KEY")
            .unwrap();
        let text = String::from_utf8(req).unwrap();
        assert!(
            text.starts_with("GET /p?q=1 HTTP/1.1\r\nHost: h:9001\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nSec-WebSocket-Key: KEY\r\n"));
        assert!(text.contains("\r\nSec-WebSocket-Protocol: v2, v1\r\n"));
        assert!(text.ends_with("\r\nCookie: a=b\r\n\r\n"));
        for (name, value, why) in [
            ("Bad Name", "x", "bad header name"),
            ("X-A", "a\r\nInjected: yes", "control character"),
            ("Host", "elsewhere", "set by the handshake"),
            ("sec-websocket-key", "x", "set by the handshake"),
        ] {
            let err = WsConnect::new()
                .header(name, value)
                .request(&url, "K")
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(why), "{err}");
        }
        let err = WsConnect::new()
            .protocol("a b")
            .request(&url, "K")
            .unwrap_err();
        assert!(err.to_string().contains("bad subprotocol"), "{err}");
    }
}
