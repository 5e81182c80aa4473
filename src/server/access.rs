//! The access log: a hook ([`Server::access_log`](super::Server::access_log)) called once per
//! exchange with what was really sent — for replies answered at once, deferred, pooled, async
//! or streamed, and for WebSocket and event-stream sessions when they end.
//!
//! A reply answered at once is logged as it is rendered (its method and target read from the
//! bytes the request came in, which outlive the handler's call). Any other is remembered, per
//! worker, from the handler's return to its end: the reply complete in the connection's output,
//! the session or the connection closed. Nothing of this runs without a hook.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use reactor::ConnId;

/// One exchange as the access log hears it.
///
/// ```
/// use web::http::{Access, Server, text_response};
/// let server = Server::bind("127.0.0.1:0")?.access_log(|a: &Access<'_>| {
///     // A real program hands this to its logger (`tracing::info!`, say).
///     let _line = format!(
///         "{} {} {} {} {} {}B {}ms route={}",
///         a.client_addr.map(|ip| ip.to_string()).unwrap_or_default(),
///         a.protocol.as_str(),
///         a.method, a.target, a.status, a.bytes, a.duration.as_millis(), a.route,
///     );
/// });
/// # drop(server);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Access<'a> {
    /// The request's method (`""` for a request refused before it could be read).
    pub method: &'a str,
    /// The request's target, path and query as sent (cut after 240 bytes; `""` when refused
    /// before it could be read).
    pub target: &'a str,
    /// The status sent: the reply's, a refusal's, `101` for a WebSocket session over
    /// HTTP/1.1 (`200` over HTTP/2, RFC 8441), `200` for an event stream; `0` when the client
    /// left before any reply was sent.
    pub status: u16,
    /// Bytes of the reply put on the connection: head and body as framed (chunk sizes
    /// included); for a session, its opening head.
    pub bytes: u64,
    /// From the request read whole to the reply's last byte handed to the connection (for a
    /// streamed body its end — the socket has taken all but at most one
    /// [`STREAM_WINDOW`](crate::http::STREAM_WINDOW) of it), or to a session's close.
    pub duration: Duration,
    /// The connection's peer address (a proxy's, behind one; see `client_addr`).
    pub peer: Option<SocketAddr>,
    /// The client's address as [`Request::client_addr`](crate::http::Request::client_addr)
    /// reads it: the peer's, or the one a trusted proxy forwarded
    /// ([`Server::proxies`](crate::http::Server::proxies),
    /// [`Server::trust_proxies`](crate::http::Server::trust_proxies)).
    pub client_addr: Option<IpAddr>,
    /// The protocol the exchange came over.
    pub protocol: Protocol,
    /// Whether the connection is TLS (HTTPS, WSS, h2).
    pub tls: bool,
    /// The pattern of the route a [`Router`](crate::http::Router) matched (`/orders/:id`);
    /// `""` when none did (or no router answered).
    pub route: &'a str,
    /// How the reply was made.
    pub kind: AccessKind,
}

/// The protocol an exchange came over, as [`Access::protocol`] says.
///
/// ```
/// assert_eq!(web::http::Protocol::Http2.as_str(), "HTTP/2");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// HTTP/1.0.
    Http10,
    /// HTTP/1.1.
    Http11,
    /// HTTP/2 (h2 over TLS, h2c over plain TCP: see [`Access::tls`]).
    Http2,
}

impl Protocol {
    /// As a request line names it: `HTTP/1.0`, `HTTP/1.1`, `HTTP/2`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http10 => "HTTP/1.0",
            Protocol::Http11 => "HTTP/1.1",
            Protocol::Http2 => "HTTP/2",
        }
    }
}

/// Where an exchange came from, as its record says it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Came {
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) client_addr: Option<IpAddr>,
    pub(crate) protocol: Protocol,
    pub(crate) tls: bool,
}

impl Came {
    /// From `peer`, its own address the client's (no proxy said otherwise).
    pub(crate) fn peer(peer: Option<SocketAddr>, protocol: Protocol, tls: bool) -> Came {
        Came {
            peer,
            client_addr: peer.map(|p| p.ip()),
            protocol,
            tls,
        }
    }
}

/// How an exchange was answered, as [`Access::kind`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessKind {
    /// By the handler's return (or a refusal by the server).
    Now,
    /// Later, through a [`Reply`](crate::http::Reply) (a thread, a `Pool`, async code, a
    /// long-poll).
    Deferred,
    /// Later, as a streamed body ([`Reply::stream`](crate::http::Reply::stream)).
    Streamed,
    /// A WebSocket session, logged when it ends.
    WebSocket,
    /// A Server-Sent Events stream, logged when it ends.
    EventStream,
}

/// The hook as the server keeps it.
pub(crate) type DynAccessLog = dyn Fn(&Access<'_>) + Send + Sync;

/// The longest target kept for the log.
pub(crate) const TARGET_MAX: usize = 240;

/// An exchange not finished when its handler returned.
struct Pending {
    /// Method, a space, target.
    label: Box<str>,
    method_len: usize,
    began: Instant,
    came: Came,
    /// The route matched (empty: none).
    route: Box<str>,
    kind: AccessKind,
    status: u16,
    bytes: u64,
}

thread_local! {
    /// This worker's exchanges in progress, by connection.
    static PENDING: RefCell<HashMap<Key, Pending>> = RefCell::new(HashMap::new());
}

/// Which exchange a record is of: a connection's (stream 0), or one HTTP/2 stream's.
pub(crate) type Key = (ConnId, u32);

/// A request's method and target as the log and a stall's report name them
/// (`GET /a?b=1`): a view of `method SP target` in bytes that outlive the handler's call —
/// HTTP/1.1's request line in the connection's input, or a [`LabelCopy`] — read as text only
/// when a log line or a report is written.
#[derive(Clone, Copy, Default)]
pub(crate) struct Label<'a> {
    line: &'a [u8],
    method_len: usize,
}

impl<'a> Label<'a> {
    /// `line` is `method SP target`, its first `method_len` bytes the method.
    pub(crate) fn new(line: &'a [u8], method_len: usize) -> Label<'a> {
        Label { line, method_len }
    }

    /// The whole label, `"GET /path?query"`, its target cut after [`TARGET_MAX`] bytes at a
    /// character's start.
    pub(crate) fn as_str(&self) -> &'a str {
        let line = self.line;
        let mut end = line
            .len()
            .min(self.method_len.saturating_add(1 + TARGET_MAX));
        // A byte `10xx_xxxx` continues a character: the cut goes before its start.
        while end > 0 && line.get(end).is_some_and(|b| b & 0xC0 == 0x80) {
            end -= 1;
        }
        crate::http::message::text::as_text(&line[..end])
    }

    fn method(&self) -> &'a str {
        self.as_str().get(..self.method_len).unwrap_or("")
    }

    fn target(&self) -> &'a str {
        self.as_str().get(self.method_len + 1..).unwrap_or("")
    }
}

/// A request's method (at most 8 bytes of it) and target (at most [`TARGET_MAX`]), copied
/// for its [`Label`] where the bytes they came in do not outlive the handler's call (HTTP/2's
/// decoded header block).
pub(crate) struct LabelCopy {
    bytes: [u8; 8 + 1 + TARGET_MAX],
    len: usize,
    method_len: usize,
}

impl LabelCopy {
    pub(crate) fn new(method: &str, target: &str) -> LabelCopy {
        let mut copy = LabelCopy {
            bytes: [0; 8 + 1 + TARGET_MAX],
            len: 0,
            method_len: 0,
        };
        copy.push(method, 8);
        copy.method_len = copy.len;
        copy.push(" ", 1);
        copy.push(target, TARGET_MAX);
        copy
    }

    /// Appends `part`, at most `max` bytes of it, cut at a character's start.
    fn push(&mut self, part: &str, max: usize) {
        let mut take = part.len().min(max);
        while !part.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&part.as_bytes()[..take]);
        self.len += take;
    }

    pub(crate) fn label(&self) -> Label<'_> {
        Label::new(&self.bytes[..self.len], self.method_len)
    }
}

/// An exchange answered at once: logged now.
pub(crate) fn now(
    log: &DynAccessLog,
    label: Label<'_>,
    (status, bytes): (u16, u64),
    (began, came, route): (Instant, &Came, &str),
) {
    log(&Access {
        method: label.method(),
        target: label.target(),
        status,
        bytes,
        duration: began.elapsed(),
        peer: came.peer,
        client_addr: came.client_addr,
        protocol: came.protocol,
        tls: came.tls,
        route,
        kind: AccessKind::Now,
    });
}

/// An exchange of connection `id` goes on after its handler returned: remembered until
/// [`done`] or [`closed`]. `status` and `bytes` are what was sent already (a session's head).
pub(crate) fn later(
    id: Key,
    label: Label<'_>,
    (began, came, route): (Instant, &Came, &str),
    (kind, status, bytes): (AccessKind, u16, u64),
) {
    let pending = Pending {
        label: label.as_str().into(),
        method_len: label.method_len,
        began,
        came: *came,
        route: route.into(),
        kind,
        status,
        bytes,
    };
    PENDING.with_borrow_mut(|all| all.insert(id, pending));
}

/// The reply of connection `id` went out (its head, or a piece of its body): its status when
/// it has one, and `bytes` more.
pub(crate) fn sent(id: Key, status: Option<u16>, kind: Option<AccessKind>, bytes: u64) {
    PENDING.with_borrow_mut(|all| {
        if let Some(p) = all.get_mut(&id) {
            if let Some(status) = status {
                p.status = status;
            }
            if let Some(kind) = kind {
                p.kind = kind;
            }
            p.bytes += bytes;
        }
    });
}

/// The exchange of connection `id` is over (its reply complete, the session or connection
/// closed): logged, if one was in progress.
pub(crate) fn done(log: &DynAccessLog, id: Key) {
    let Some(p) = PENDING.with_borrow_mut(|all| all.remove(&id)) else {
        return;
    };
    log(&Access {
        method: p.label.get(..p.method_len).unwrap_or(""),
        target: p.label.get(p.method_len + 1..).unwrap_or(""),
        status: p.status,
        bytes: p.bytes,
        duration: p.began.elapsed(),
        peer: p.came.peer,
        client_addr: p.came.client_addr,
        protocol: p.came.protocol,
        tls: p.came.tls,
        route: &p.route,
        kind: p.kind,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_label_keeps_method_and_target_cut_at_a_character() {
        let l = Label::new(b"GET /a?b=1", 3);
        assert_eq!((l.method(), l.target()), ("GET", "/a?b=1"));
        let long = format!("POST /{}", "é".repeat(200));
        let l = Label::new(long.as_bytes(), 4);
        assert_eq!(l.method(), "POST");
        assert!(l.target().len() <= TARGET_MAX && long[5..].starts_with(l.target()));
        assert!(
            TARGET_MAX - l.target().len() < 2,
            "cut at the last character that fits"
        );
        let l = Label::default();
        assert_eq!((l.method(), l.target(), l.as_str()), ("", "", ""));
        let l = Label::new(b"\xff /x", 1);
        assert_eq!((l.method(), l.target()), ("", ""), "not text: nothing");
    }

    #[test]
    fn a_copied_label_cuts_method_and_target_at_a_character() {
        let copy = LabelCopy::new("GET", "/a?b=1");
        assert_eq!(copy.label().as_str(), "GET /a?b=1");
        let long = format!("/{}", "é".repeat(200));
        let copy = LabelCopy::new("LONGMETHOD", &long);
        let l = copy.label();
        assert_eq!(l.method(), "LONGMETH");
        assert!(l.target().len() <= TARGET_MAX && long.starts_with(l.target()));
        let copy = LabelCopy::new("", "");
        assert_eq!((copy.label().method(), copy.label().target()), ("", ""));
    }

    #[test]
    fn a_later_exchange_is_logged_once_with_what_was_sent() {
        let heard = std::sync::Arc::new(Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&heard);
        let log = move |a: &Access<'_>| {
            kept.lock().unwrap().push((
                a.method.to_owned(),
                a.target.to_owned(),
                a.status,
                a.bytes,
                a.kind,
            ))
        };
        let id = (ConnId::from_parts(0, 7, 1), 0);
        let came = Came::peer(None, Protocol::Http11, false);
        later(
            id,
            Label::new(b"GET /x", 3),
            (Instant::now(), &came, "/:x"),
            (AccessKind::Deferred, 0, 0),
        );
        sent(id, Some(200), Some(AccessKind::Streamed), 100);
        sent(id, None, None, 50);
        done(&log, id);
        done(&log, id); // already logged: nothing
        assert_eq!(
            *heard.lock().unwrap(),
            [("GET".into(), "/x".into(), 200, 150, AccessKind::Streamed)]
        );
    }
}
