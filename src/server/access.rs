//! The access log: a hook ([`Server::access_log`](super::Server::access_log)) called once per
//! exchange with what was really sent — for replies answered at once, deferred, pooled, async
//! or streamed, and for WebSocket and event-stream sessions when they end.
//!
//! A reply answered at once is logged as it is rendered (its method and target were copied on
//! the stack before the handler took the request). Any other is remembered, per worker, from
//! the handler's return to its end: the reply complete in the connection's output, the session
//! or the connection closed. Nothing of this runs without a hook.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reactor::ConnId;

/// One exchange as the access log hears it.
///
/// ```
/// use web::http::{Access, Server, text_response};
/// let server = Server::bind("127.0.0.1:0")?.access_log(|a: &Access<'_>| {
///     // A real program hands this to its logger (`tracing::info!`, say).
///     let _line = format!(
///         "{} {} {} {} {}B {}ms",
///         a.peer.map(|p| p.to_string()).unwrap_or_default(),
///         a.method, a.target, a.status, a.bytes, a.duration.as_millis()
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
    /// The status sent: the reply's, a refusal's, `101` for a WebSocket session, `200` for an
    /// event stream; `0` when the client left before any reply was sent.
    pub status: u16,
    /// Bytes of the reply put on the connection: head and body as framed (chunk sizes
    /// included); for a session, its opening head.
    pub bytes: u64,
    /// From the request read whole to the reply's last byte handed to the connection (for a
    /// streamed body its end — the socket has taken all but at most one
    /// [`STREAM_WINDOW`](crate::http::STREAM_WINDOW) of it), or to a session's close.
    pub duration: Duration,
    /// The connection's peer address (not `X-Forwarded-For`; see
    /// [`Request::client_addr`](crate::http::Request::client_addr)).
    pub peer: Option<SocketAddr>,
    /// How the reply was made.
    pub kind: AccessKind,
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
    peer: Option<SocketAddr>,
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

/// A request's method and target, kept on the stack across its handler call.
pub(crate) struct Label {
    bytes: [u8; 8 + 1 + TARGET_MAX],
    len: usize,
    method_len: usize,
}

impl Label {
    pub(crate) fn new(method: &str, target: &str) -> Label {
        let mut label = Label {
            bytes: [0; 8 + 1 + TARGET_MAX],
            len: 0,
            method_len: 0,
        };
        label.push(method, 8);
        label.method_len = label.len;
        label.push(" ", 1);
        label.push(target, TARGET_MAX);
        label
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

    /// The whole label, `"GET /path?query"`.
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }

    fn method(&self) -> &str {
        self.as_str().get(..self.method_len).unwrap_or("")
    }

    fn target(&self) -> &str {
        self.as_str().get(self.method_len + 1..).unwrap_or("")
    }
}

/// An exchange answered at once: logged now.
pub(crate) fn now(
    log: &DynAccessLog,
    label: Option<&Label>,
    (status, bytes): (u16, u64),
    began: Instant,
    peer: Option<SocketAddr>,
) {
    log(&Access {
        method: label.map_or("", Label::method),
        target: label.map_or("", Label::target),
        status,
        bytes,
        duration: began.elapsed(),
        peer,
        kind: AccessKind::Now,
    });
}

/// An exchange of connection `id` goes on after its handler returned: remembered until
/// [`done`] or [`closed`]. `status` and `bytes` are what was sent already (a session's head).
pub(crate) fn later(
    id: Key,
    label: &Label,
    began: Instant,
    peer: Option<SocketAddr>,
    (kind, status, bytes): (AccessKind, u16, u64),
) {
    let pending = Pending {
        label: label.as_str().into(),
        method_len: label.method_len,
        began,
        peer,
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
        peer: p.peer,
        kind: p.kind,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_label_keeps_method_and_target_cut_at_a_character() {
        let l = Label::new("GET", "/a?b=1");
        assert_eq!((l.method(), l.target()), ("GET", "/a?b=1"));
        let long = format!("/{}", "é".repeat(200));
        let l = Label::new("POST", &long);
        assert!(l.target().len() <= TARGET_MAX && long.starts_with(l.target()));
        let l = Label::new("", "");
        assert_eq!((l.method(), l.target()), ("", ""));
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
        later(
            id,
            &Label::new("GET", "/x"),
            Instant::now(),
            None,
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
