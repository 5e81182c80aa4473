//! Connections as a client makes them: one request (or handshake) completed on each, then held.
//! Only to 127.0.0.0/8; source addresses are spread over 127.0.0.2–127.0.0.250 so that tens
//! of thousands of connections never run out of ports.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use sha1::{Digest, Sha1};

/// What is done on a connection before it is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One keep-alive `GET`, its whole reply read.
    Http,
    /// A WebSocket upgrade, its `101` (and accept key) checked.
    Ws,
    /// A Server-Sent Events `GET`, its `200 text/event-stream` head read.
    Sse,
    /// A TLS handshake, then one keep-alive `GET` through it.
    Tls,
    /// HTTP/2 by prior knowledge (h2c; over TLS with an https:// URL): the preface, then one
    /// `GET` on stream 1, its reply read to its end; the connection is then kept idle.
    H2,
    /// Event streams on HTTP/2 connections, [`STREAMS_PER_H2`] to a connection: each a `GET`
    /// of the URL on a stream of its own, its `200` head read, then held. What is measured is
    /// a stream's cost beyond its connection's.
    H2Sse,
}

/// Event streams on one HTTP/2 connection with `--kind h2-sse` (under the default
/// `SETTINGS_MAX_CONCURRENT_STREAMS` of servers: nginx's 128, ours 250).
pub const STREAMS_PER_H2: usize = 100;

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "http" => Ok(Kind::Http),
            "ws" => Ok(Kind::Ws),
            "sse" => Ok(Kind::Sse),
            "tls" => Ok(Kind::Tls),
            "h2" => Ok(Kind::H2),
            "h2-sse" => Ok(Kind::H2Sse),
            _ => Err(format!(
                "--kind is http, ws, sse, tls, h2 or h2-sse, not {s:?}"
            )),
        }
    }
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Ws => "ws",
            Kind::Sse => "sse",
            Kind::Tls => "tls",
            Kind::H2 => "h2",
            Kind::H2Sse => "h2-sse",
        }
    }
}

/// Where connections go: a loopback address, the `Host` to name, the target.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddrV4,
    pub host: String,
    pub path: String,
    /// `https://` or `wss://`: every connection runs TLS first.
    pub secure: bool,
    /// A text message each WebSocket sends once upgraded (a subscription, say).
    pub send: Option<String>,
}

impl Target {
    /// `http://127.0.0.1:8080/path` (also `ws`, `https`, `wss`; `localhost` is 127.0.0.1).
    /// Anything off 127.0.0.0/8 is refused: load goes to this host only.
    pub fn parse(url: &str) -> Result<Target, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("not a URL: {url:?}"))?;
        let default_port = match scheme {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            _ => {
                return Err(format!(
                    "the scheme is http, https, ws or wss, not {scheme:?}"
                ));
            }
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>().map_err(|_| format!("not a port: {p:?}"))?,
            ),
            None => (authority, default_port),
        };
        let ip: Ipv4Addr = if host == "localhost" {
            Ipv4Addr::LOCALHOST
        } else {
            host.parse()
                .map_err(|_| format!("{host:?}: give an address of 127.0.0.0/8"))?
        };
        if ip.octets()[0] != 127 {
            return Err(format!(
                "{ip} is not on 127.0.0.0/8: web-bench loads this host only"
            ));
        }
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!("the path {path:?} holds spaces or control bytes"));
        }
        Ok(Target {
            addr: SocketAddrV4::new(ip, port),
            host: authority.to_owned(),
            path: path.to_owned(),
            secure: default_port == 443,
            send: None,
        })
    }

    /// The target as connection `n` asks for it: `{n}` in the path (or the message sent)
    /// becomes `n`, `{n/K}` becomes `n / K` — a room per connection, or per group of K.
    pub fn for_connection(&self, n: usize) -> Target {
        Target {
            path: numbered(&self.path, n),
            send: self.send.as_deref().map(|s| numbered(s, n)),
            ..self.clone()
        }
    }
}

/// `text` with each `{n}` made `n` and each `{n/K}` made `n / K`.
fn numbered(text: &str, n: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("{n") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let value = match after[..end].strip_prefix('/').map(str::parse::<usize>) {
            None if end == 0 => n,
            Some(Ok(k)) if k > 0 => n / k,
            _ => {
                out.push_str(&rest[at..at + 3 + end]);
                rest = &after[end + 1..];
                continue;
            }
        };
        out.push_str(&value.to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A connection held open.
pub enum Held {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Held {
    /// The socket under it.
    pub fn socket(&self) -> &TcpStream {
        match self {
            Held::Plain(s) => s,
            Held::Tls(t) => &t.sock,
        }
    }
}

/// The `n`-th source address of the spread.
pub fn source(n: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, 2 + (n % 249) as u8)
}

/// A TCP connection from `src` (any port) to `to`.
pub fn connect_from(src: Ipv4Addr, to: SocketAddrV4, timeout: Duration) -> io::Result<TcpStream> {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    // The port is chosen at connect(2), per destination: sources × ports are not exhausted.
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, and an int option of the size given.
    let set = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&sock),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    sock.bind(&SocketAddr::from(SocketAddrV4::new(src, 0)).into())?;
    sock.connect_timeout(&SocketAddr::from(to).into(), timeout)?;
    sock.set_tcp_nodelay(true)?;
    let stream: TcpStream = sock.into();
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    Ok(stream)
}

/// Opens connection `n` to `target` and completes one request or handshake of `kind` on it.
pub fn open(
    kind: Kind,
    target: &Target,
    n: usize,
    tls: &Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> io::Result<Held> {
    let stream = connect_from(source(n), target.addr, timeout)?;
    let numbered = (target.path.contains("{n")
        || target.send.as_ref().is_some_and(|s| s.contains("{n")))
    .then(|| target.for_connection(n));
    let target = numbered.as_ref().unwrap_or(target);
    // An https:// or wss:// URL runs TLS under every kind; `tls` is a GET through it.
    let mut held = if target.secure || kind == Kind::Tls {
        let name = rustls::pki_types::ServerName::try_from(target.addr.ip().to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let conn =
            rustls::ClientConnection::new(Arc::clone(tls), name).map_err(io::Error::other)?;
        Held::Tls(Box::new(rustls::StreamOwned::new(conn, stream)))
    } else {
        Held::Plain(stream)
    };
    let s: &mut dyn ReadWrite = match &mut held {
        Held::Plain(s) => s,
        Held::Tls(t) => &mut **t,
    };
    match kind {
        Kind::Http | Kind::Tls => get(s, target)?,
        Kind::H2 => h2_get(s, target)?,
        Kind::H2Sse => {
            s.write_all(H2_PREFACE)?;
            h2_event_stream(s, target, 1)?;
        }
        Kind::Ws => {
            upgrade(s, target)?;
            if let Some(text) = &target.send {
                s.write_all(&masked_text(text))?;
            }
        }
        Kind::Sse => {
            let request = format!(
                "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
                target.path, target.host
            );
            s.write_all(request.as_bytes())?;
            let head = read_head(s, &mut Vec::new())?;
            let lower = head.to_ascii_lowercase();
            if !head.starts_with("HTTP/1.1 200") || !lower.contains("text/event-stream") {
                return Err(refused("an event stream", &head));
            }
        }
    }
    Ok(held)
}

/// A stream to read and write: plain or TLS.
pub trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One masked text frame, as a client sends it.
pub fn masked_text(text: &str) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let payload = text.as_bytes();
    let mut frame = vec![0x81];
    match payload.len() {
        n @ 0..=125 => frame.push(0x80 | n as u8),
        n @ 126..=0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

/// One `GET` on `s` and its whole reply (a `Content-Length` body, or none).
pub fn get(s: &mut (impl Read + Write + ?Sized), target: &Target) -> io::Result<()> {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\n\r\n",
        target.path, target.host
    );
    s.write_all(request.as_bytes())?;
    let mut rest = Vec::new();
    let head = read_head(s, &mut rest)?;
    if !head.starts_with("HTTP/1.1 2") {
        return Err(refused("a 2xx reply", &head));
    }
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .ok_or_else(|| refused("a Content-Length", &head))?;
    let mut body = rest.len();
    let mut buf = [0u8; 4096];
    while body < length {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        body += n;
    }
    Ok(())
}

/// HTTP/2's preface and empty SETTINGS.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

/// HTTP/2's preface and empty SETTINGS, then `GET` on stream 1 (its fields literal, added to
/// no table), read up to the frame that ends the stream; the server's SETTINGS acknowledged.
pub fn h2_get(s: &mut (impl Read + Write + ?Sized), target: &Target) -> io::Result<()> {
    s.write_all(H2_PREFACE)?;
    s.write_all(&h2_request(target, 1)?)?;
    h2_until(s, 1, true)
}

/// An event stream on `stream` of an HTTP/2 connection whose preface was sent: `GET` of the
/// target, read up to the stream's head (which must not end it).
pub fn h2_event_stream(
    s: &mut (impl Read + Write + ?Sized),
    target: &Target,
    stream: u32,
) -> io::Result<()> {
    s.write_all(&h2_request(target, stream)?)?;
    h2_until(s, stream, false)
}

/// HEADERS of a `GET` of `target` on `stream`, ending the stream.
fn h2_request(target: &Target, stream: u32) -> io::Result<Vec<u8>> {
    let mut block = vec![0x82, 0x86]; // :method GET, :scheme http
    for (index, value) in [(4u8, target.path.as_bytes()), (1, target.host.as_bytes())] {
        // A literal never indexed, its name by static index (:path 4, :authority 1).
        if value.len() > 126 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a path or host over 126 bytes",
            ));
        }
        block.extend_from_slice(&[0x10 | index, value.len() as u8]);
        block.extend_from_slice(value);
    }
    let mut out = (block.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[0x1, 0x5]); // HEADERS, END_STREAM | END_HEADERS
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(&block);
    Ok(out)
}

/// Reads frames up to `stream`'s head (`end`: up to the frame that ends it), acknowledging
/// the server's SETTINGS; a reset or GOAWAY is an error.
fn h2_until(s: &mut (impl Read + Write + ?Sized), want: u32, end: bool) -> io::Result<()> {
    let mut got: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while got.len() >= 9 {
            let len = u32::from_be_bytes([0, got[0], got[1], got[2]]) as usize;
            if got.len() < 9 + len {
                break;
            }
            let (kind, flags, stream) = (
                got[3],
                got[4],
                u32::from_be_bytes([got[5], got[6], got[7], got[8]]),
            );
            got.drain(..9 + len);
            match kind {
                0x4 if flags & 1 == 0 => s.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0])?,
                0x3 | 0x7 => return Err(refused("a reply on its stream", "RST_STREAM or GOAWAY")),
                0x1 if stream == want && !end => {
                    return match flags & 1 {
                        0 => Ok(()),
                        _ => Err(refused("an open stream", "a reply that ends it")),
                    };
                }
                0x0 | 0x1 if stream == want && flags & 1 == 1 => return Ok(()),
                _ => {}
            }
        }
        if got.len() > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a reply over 64 KiB",
            ));
        }
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&buf[..n]);
    }
}

/// A WebSocket upgrade of `s`; its `101` and accept key checked.
pub fn upgrade(s: &mut (impl Read + Write + ?Sized), target: &Target) -> io::Result<()> {
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n",
        target.path, target.host
    );
    s.write_all(request.as_bytes())?;
    let head = read_head(s, &mut Vec::new())?;
    let accept = base64::engine::general_purpose::STANDARD.encode(
        Sha1::new()
            .chain_update(key)
            .chain_update("258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
            .finalize(),
    );
    if !head.starts_with("HTTP/1.1 101") || !head.contains(&accept) {
        return Err(refused("a 101 with the accept key", &head));
    }
    Ok(())
}

/// Reads up to the end of a reply's head: the head (as text), and what came after it in
/// `rest`. At most 64 KiB.
fn read_head(s: &mut (impl Read + ?Sized), rest: &mut Vec<u8>) -> io::Result<String> {
    let mut got = Vec::with_capacity(512);
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            rest.extend_from_slice(&got[end + 4..]);
            got.truncate(end);
            return Ok(String::from_utf8_lossy(&got).into_owned());
        }
        if got.len() > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a head over 64 KiB",
            ));
        }
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&buf[..n]);
    }
}

fn refused(wanted: &str, head: &str) -> io::Error {
    let first = head.lines().next().unwrap_or("");
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("wanted {wanted}, got {first:?}"),
    )
}

/// A TLS client that accepts any certificate: the server is on this host, and what is measured
/// is its memory, not its identity.
pub fn tls_config() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map(|b| {
            b.dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth()
        });
    match config {
        Ok(c) => Arc::new(c),
        // ring offers the default versions: this does not happen.
        Err(e) => panic!("no TLS client: {e}"),
    }
}

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_path_is_numbered_per_connection_or_group() {
        let cases = [
            ("/sse?room=r{n}", 7, "/sse?room=r7"),
            ("/sse?room=g{n/100}&x={n}", 250, "/sse?room=g2&x=250"),
            ("/plain", 3, "/plain"),
            ("/{n/0}/{m}/{n", 5, "/{n/0}/{m}/{n"),
        ];
        for (path, n, want) in cases {
            assert_eq!(numbered(path, n), want, "{path}");
        }
    }

    use super::*;

    #[test]
    fn urls_name_a_loopback_target_or_are_refused() {
        let t = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        assert_eq!(
            (t.addr.to_string().as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/x?y=1")
        );
        assert_eq!(Target::parse("ws://localhost:9").unwrap().path, "/");
        assert!(!Target::parse("ws://127.0.0.1:9/").unwrap().secure);
        assert!(Target::parse("wss://127.0.0.1:9/").unwrap().secure);
        assert!(Target::parse("https://127.0.0.1/").unwrap().secure);
        assert_eq!(Target::parse("https://127.0.0.5").unwrap().addr.port(), 443);
        for bad in [
            "http://10.0.0.1:80/",
            "http://example.com/",
            "ftp://127.0.0.1/",
            "127.0.0.1:80",
            "http://127.0.0.1:99999/",
            "http://127.0.0.1/a b",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sources_stay_on_loopback_and_spread() {
        assert_eq!(source(0), Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(source(248), Ipv4Addr::new(127, 0, 0, 250));
        assert_eq!(source(249), source(0));
    }

    #[test]
    fn a_sent_message_is_one_masked_text_frame() {
        for len in [0usize, 5, 125, 126, 70_000] {
            let text = "x".repeat(len);
            let frame = masked_text(&text);
            assert_eq!(frame[0], 0x81);
            assert_eq!(frame[1] & 0x80, 0x80, "masked");
            let (at, n) = match frame[1] & 0x7f {
                126 => (4, u16::from_be_bytes([frame[2], frame[3]]) as usize),
                127 => (
                    10,
                    u64::from_be_bytes(frame[2..10].try_into().unwrap()) as usize,
                ),
                n => (2, n as usize),
            };
            assert_eq!(n, len);
            let mask = &frame[at..at + 4];
            let payload: Vec<u8> = frame[at + 4..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            assert_eq!(payload, text.as_bytes());
        }
    }
}
