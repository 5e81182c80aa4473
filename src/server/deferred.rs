//! Deferred replies: a handler answers later, from any thread, through a [`Reply`]; meanwhile
//! its connection is parked and costs its slab entry and one slot of 8 bytes.
//!
//! The handler calls [`defer`] while it runs (the worker has marked the exchange it is
//! answering in a thread-local), returns the placeholder it got, and hands the `Reply` to
//! whatever will answer. The connection's strand keeps only which reply it waits for
//! ([`Wait`]); the worker's slot table says, to any thread, whether that reply is still wanted
//! (its client still there, no timeout answered yet), so [`Reply::is_open`] is one atomic load
//! (the table is `replies.rs`).

use std::cell::{Cell, RefCell};
use std::num::NonZeroU32;
use std::sync::{Arc, mpsc};

use reactor::ConnId;

use crate::http::later::{Delivery, HttpMsg};
use crate::http::{ReplyRules, Response};

#[cfg(feature = "tokio")]
use super::replies::Unwanted;
use super::replies::{Replies, ReplyTo, deliver};
use super::streamed::{BodySender, Later};

/// What a parked connection waits for: the reply to its request `seq`, and how to send it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wait {
    pub(crate) seq: NonZeroU32,
    /// What the request allows its reply.
    pub(crate) rules: ReplyRules,
    /// A long-poll ([`defer_for`]): past its wait, or when the server stops, answered `204`.
    pub(crate) poll: bool,
}

/// How long a deferred reply is waited for, and what answers it past that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Patience {
    /// [`Server::reply_timeout`](crate::http::Server::reply_timeout), then `503`.
    Server,
    /// A long-poll's wait ([`defer_for`]), then `204`; at once when the server stops.
    Poll(std::time::Duration),
}

impl Patience {
    pub(crate) fn is_poll(self) -> bool {
        matches!(self, Patience::Poll(_))
    }
}

/// A long-poll's answer when nothing came: `204 No Content`.
pub(crate) fn nothing_came() -> Response {
    crate::http::text_response(204, "")
}

thread_local! {
    /// The exchange the handler running on this thread answers (set around the call).
    static CURRENT: Cell<Option<ReplyTo>> = const { Cell::new(None) };
    /// The reply `defer` made for it: a sequence number (reactor) or a receiver (blocking).
    static DEFERRED: RefCell<Option<Deferral>> = const { RefCell::new(None) };
    /// The last sequence number handed out on this thread.
    static SEQ: Cell<u32> = const { Cell::new(0) };
}

/// What [`defer`] left for the dispatcher.
pub(crate) enum Deferral {
    Conn(NonZeroU32, Patience),
    Blocking(mpsc::Receiver<Later>, Patience),
}

/// Runs `handler` as the answer to `exchange`; the reply it deferred, if it called [`defer`].
#[inline]
pub(crate) fn answering<T>(
    exchange: ReplyTo,
    handler: impl FnOnce() -> T,
) -> (T, Option<Deferral>) {
    let outer = CURRENT.replace(Some(exchange));
    let outer_deferred = DEFERRED.take();
    let out = handler();
    CURRENT.set(outer);
    let deferred = DEFERRED.replace(outer_deferred);
    (out, deferred)
}

/// Answers the request the calling handler is answering **later**: the returned [`Reply`] is
/// completed exactly once, from any thread, with [`Reply::send`]; the handler returns the
/// placeholder [`Response`] it got alongside (it is not sent). Until the reply comes the
/// connection is parked — no buffer, no thread — and requests pipelined behind it wait their
/// turn.
///
/// A `Reply` dropped unanswered gets the client a `500` (counted in
/// [`ServerStats::replies_dropped`](crate::http::ServerStats::replies_dropped)); one that takes
/// longer than [`Server::reply_timeout`](crate::http::Server::reply_timeout) gets it a `503`
/// ([`ServerStats::replies_timed_out`](crate::http::ServerStats::replies_timed_out)). A client
/// that goes away is visible to the holder: [`Reply::is_open`] turns `false` and `send` returns
/// `false`, so the work can stop. Middleware that wraps the handler sees the placeholder
/// (status 0), not the reply. Under [`handle_conn`](crate::http::handle_conn) the connection's
/// thread waits for the reply; called outside a handler, the reply goes nowhere.
///
/// ```
/// use web::http::{defer, text_response, Server};
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(|req| {
///     if req.path() != "/slow" {
///         return text_response(200, "fast\n");
///     }
///     let (reply, later) = defer();
///     std::thread::spawn(move || {
///         std::thread::sleep(std::time::Duration::from_millis(20)); // a database, say
///         reply.send(text_response(200, "slow\n"));
///     });
///     later
/// })?;
/// let port = handle.local_addr().port();
/// let slow = web::http::get("127.0.0.1", port, "/slow")?;
/// assert_eq!(web::http::response_body(&slow).unwrap(), b"slow\n");
/// # handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn defer() -> (Reply, Response) {
    deferred(Patience::Server)
}

/// [`defer`] for a **long-poll**: a reply that waits for something to happen (the next message
/// of a room, a job done) and has an empty answer when nothing does. Not sent within `wait`,
/// the request is answered `204 No Content` by the server itself — from the connection's own
/// timer: no thread, no list to sweep — and at once when the server stops; the late
/// [`Reply`] is then not wanted ([`Reply::is_open`] turns `false`). Neither counts as a
/// reply timed out. [`Rooms::long_poll`](crate::http::LongPoll::long_poll) is a long-poll on a
/// room made with it.
///
/// ```
/// use std::time::Duration;
/// use web::http::{defer_for, text_response, Server};
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(|_req| {
///     let (reply, later) = defer_for(Duration::from_millis(50));
///     std::mem::forget(reply); // nothing ever happens
///     later
/// })?;
/// let answer = web::http::get("127.0.0.1", handle.local_addr().port(), "/wait")?;
/// assert_eq!(web::http::status_of(&answer), Some(204));
/// # handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn defer_for(wait: std::time::Duration) -> (Reply, Response) {
    deferred(Patience::Poll(wait))
}

fn deferred(patience: Patience) -> (Reply, Response) {
    let placeholder = Response::default();
    let Some(exchange) = CURRENT.get() else {
        return (Reply { to: To::Nowhere }, placeholder);
    };
    // A second `defer` in the same handler replaces the first: that reply goes nowhere.
    let to = match exchange {
        ReplyTo::Conn(id) | ReplyTo::Stream(id) => {
            let replies = super::worker::with(|s| s.map(|s| Arc::clone(&s.replies)));
            let Some(replies) = replies else {
                return (Reply { to: To::Nowhere }, placeholder);
            };
            let seq = next_seq();
            match exchange {
                ReplyTo::Stream(_) => replies.open_stream(id, seq),
                _ => replies.open(id, seq),
            }
            let earlier = DEFERRED.replace(Some(Deferral::Conn(seq, patience)));
            if let Some(Deferral::Conn(earlier, _)) = earlier {
                replies.close_for(exchange, earlier);
            }
            To::Conn { replies, id, seq }
        }
        ReplyTo::Blocking => {
            let (tx, rx) = mpsc::sync_channel(1);
            DEFERRED.set(Some(Deferral::Blocking(rx, patience)));
            To::Thread(tx)
        }
    };
    (Reply { to }, placeholder)
}

/// The next reply's number on this thread: 1 ..= `u32::MAX - 1` (`u32::MAX` marks an HTTP/2
/// connection's slot).
fn next_seq() -> NonZeroU32 {
    let seq = SEQ.get().wrapping_add(1).max(1) % u32::MAX;
    let seq = seq.max(1);
    SEQ.set(seq);
    NonZeroU32::MIN.saturating_add(seq - 1)
}

/// The answer to one deferred request, sent later from any thread; see [`defer`].
///
/// `Send + 'static`, not `Clone`: one request, one reply. Dropping it unanswered answers `500`.
pub struct Reply {
    to: To,
}

enum To {
    Conn {
        replies: Arc<Replies>,
        id: ConnId,
        seq: NonZeroU32,
    },
    Thread(mpsc::SyncSender<Later>),
    Nowhere,
    /// Sent (or given up): nothing more to do when dropped.
    Done,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("open", &self.is_open())
            .finish()
    }
}

impl Reply {
    /// Sends the reply. `false` when it is known not to be wanted any more — the client went
    /// away, or the server already answered it (timeout, shutdown) — so the response was
    /// dropped; `true` when it was queued (a client that leaves meanwhile never gets it).
    ///
    /// ```
    /// fn answer(reply: web::http::Reply) {
    ///     if !reply.send(web::http::text_response(200, "done\n")) {
    ///         // the client has gone: nothing to clean up for it
    ///     }
    /// }
    /// ```
    pub fn send(mut self, res: Response) -> bool {
        match std::mem::replace(&mut self.to, To::Done) {
            To::Conn { replies, id, seq } => {
                if !replies.wanted(id, seq) {
                    return false;
                }
                let what = Delivery::Answer(Box::new(res));
                deliver(&replies, id, HttpMsg { seq, what })
            }
            To::Thread(tx) => tx.send(Later::Answer(res)).is_ok(),
            To::Nowhere | To::Done => false,
        }
    }

    /// Answers with a response whose body follows piece by piece: sends `head` (its status and
    /// headers; its body is ignored) and returns the [`BodySender`] that writes the body. The
    /// length is not announced: the body is sent chunked, or close-delimited to an HTTP/1.0
    /// client (the connection then closes after it). An error when the reply is no longer
    /// wanted (the client left, or the server answered it already).
    ///
    /// ```
    /// use std::io::Write;
    /// fn send_log(reply: web::http::Reply, lines: &[String]) -> std::io::Result<()> {
    ///     let mut body = reply.stream(web::http::text_response(200, ""))?;
    ///     for line in lines {
    ///         writeln!(body, "{line}")?; // waits while the client is far behind
    ///     }
    ///     body.finish()
    /// }
    /// ```
    pub fn stream(self, head: Response) -> std::io::Result<BodySender> {
        self.stream_with(head, None)
    }

    /// [`Reply::stream`] of a body of exactly `length` bytes, announced in `Content-Length`
    /// (the connection can stay open after it even for HTTP/1.0). Writing past `length`, or
    /// finishing short of it, is an `InvalidInput` error and cuts the body.
    ///
    /// ```
    /// use std::io::Write;
    /// fn send_file(reply: web::http::Reply, mut file: std::fs::File) -> std::io::Result<()> {
    ///     let length = file.metadata()?.len();
    ///     let mut body = reply.stream_sized(web::http::text_response(200, ""), length)?;
    ///     std::io::copy(&mut file, &mut body)?;
    ///     body.finish()
    /// }
    /// ```
    pub fn stream_sized(self, head: Response, length: u64) -> std::io::Result<BodySender> {
        self.stream_with(head, Some(length))
    }

    fn stream_with(mut self, head: Response, length: Option<u64>) -> std::io::Result<BodySender> {
        match std::mem::replace(&mut self.to, To::Done) {
            To::Conn { replies, id, seq } => BodySender::to_conn(replies, id, seq, head, length),
            To::Thread(tx) => BodySender::to_thread(tx, head, length),
            To::Nowhere | To::Done => Ok(BodySender::nowhere()),
        }
    }

    /// Whether the reply is still wanted: the client is connected and nothing answered it yet
    /// (one atomic load). Work done for a reply no longer wanted can stop.
    ///
    /// ```
    /// fn keep_working(reply: &web::http::Reply) -> bool {
    ///     reply.is_open()
    /// }
    /// ```
    pub fn is_open(&self) -> bool {
        match &self.to {
            To::Conn { replies, id, seq } => replies.wanted(*id, *seq),
            To::Thread(_) => true,
            To::Nowhere | To::Done => false,
        }
    }

    /// Where this reply is awaited, to say later how to stop the work that answers it
    /// ([`Unwanted::then`]); `None` where nothing closes it but its answer.
    #[cfg(feature = "tokio")]
    pub(crate) fn unwanted(&self) -> Option<Unwanted> {
        match &self.to {
            To::Conn { replies, id, seq } => Some(Unwanted::new(Arc::clone(replies), *id, *seq)),
            To::Thread(_) | To::Nowhere | To::Done => None,
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let To::Conn { replies, id, seq } = &self.to
            && replies.wanted(*id, *seq)
        {
            let what = Delivery::Dropped;
            deliver(replies, *id, HttpMsg { seq: *seq, what });
        }
    }
}
