//! Streamed response bodies: a [`BodySender`] (from [`Reply::stream`](super::Reply::stream))
//! writes a body piece by piece from any thread while the connection's strand sends it,
//! framed by [`StreamFraming`].
//!
//! Backpressure is a window shared by the two sides ([`Flow`]): the sender counts each piece
//! it sends, the strand counts it off once the socket has taken it, and a sender past
//! [`STREAM_WINDOW`] bytes not yet written waits. So a body of any size to a reader of any
//! speed holds at most about one window in the server, in flight and in the strand's output.

use crate::http::Header;
use std::io;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::Poll;

use reactor::ConnId;

use crate::http::STREAM_WINDOW;
use crate::http::later::{Delivery, Flow, FlowEnd, HttpMsg, StreamStart};
use crate::http::stream_framing::{PastLength, StreamFraming};

use super::replies::{Replies, deliver};

/// The largest piece one write sends to the connection (a longer write sends this much and
/// says so, as [`io::Write::write`] may).
const PIECE: usize = 64 * 1024;

/// A piece of a streamed body sent to a `handle_conn` thread.
pub(crate) enum ThreadPiece {
    Data(Vec<u8>),
    /// The body is complete, with these trailer fields (a sender dropped without it
    /// disconnects: the body is cut).
    End(Vec<Header>),
}

/// A streamed reply for a `handle_conn` thread: its head, and the pieces that follow (the
/// channel's bound is the backpressure).
pub(crate) struct ThreadStream {
    pub(crate) head: crate::http::Response,
    pub(crate) length: Option<u64>,
    pub(crate) pieces: mpsc::Receiver<ThreadPiece>,
}

/// Pieces a `handle_conn` thread's channel holds.
const THREAD_PIECES: usize = STREAM_WINDOW / PIECE;

/// What a deferred reply to a `handle_conn` thread delivers.
pub(crate) enum Later {
    Answer(crate::http::Response),
    Stream(ThreadStream),
}

/// Where a sender's pieces go.
enum Sink {
    Conn {
        replies: Arc<Replies>,
        id: ConnId,
        seq: NonZeroU32,
        flow: Arc<Flow>,
    },
    Thread(mpsc::SyncSender<ThreadPiece>),
    /// Nowhere (a reply with no client): every write fails.
    Nowhere,
}

/// Writes a streamed response body, from any thread: made by
/// [`Reply::stream`](super::Reply::stream) (length unknown: chunked, or close-delimited for an
/// HTTP/1.0 client) or [`Reply::stream_sized`](super::Reply::stream_sized) (`Content-Length`).
///
/// A [`io::Write`]: each write sends up to 64 KiB and blocks while [`STREAM_WINDOW`] bytes
/// already sent wait for the client to read them, so a producer never runs ahead of a slow
/// reader by more than that. Writes fail with [`io::ErrorKind::BrokenPipe`] once the body is
/// not wanted — the client went away, the request was `HEAD` (the head is sent alone), or the
/// server cut the stream ([`Server::reply_timeout`](crate::http::Server::reply_timeout) passed
/// with no piece, or the server stopped) — so the work can stop.
///
/// Call [`finish`](BodySender::finish) at the end. A sender dropped without it cuts the body:
/// the client sees the connection close before the body's end (no last chunk, or fewer bytes
/// than announced), which it reports as an error — never as a complete body.
///
/// ```
/// use std::io::Write;
/// use web::http::{defer, text_response, Server};
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(|_req| {
///     let (reply, later) = defer();
///     std::thread::spawn(move || -> std::io::Result<()> {
///         let mut body = reply.stream(text_response(200, ""))?;
///         for n in 0..3 {
///             writeln!(body, "line {n}")?;
///         }
///         body.finish()
///     });
///     later
/// })?;
/// let raw = web::http::get("127.0.0.1", handle.local_addr().port(), "/")?;
/// assert_eq!(web::http::response_body(&raw).unwrap(), b"line 0\nline 1\nline 2\n");
/// # handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct BodySender {
    sink: Sink,
    /// Bytes still owed when the length was announced.
    left: Option<u64>,
    finished: bool,
}

impl std::fmt::Debug for BodySender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodySender")
            .field("open", &self.is_open())
            .field("left", &self.left)
            .finish()
    }
}

fn not_wanted() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the response body is no longer wanted (client gone, HEAD, or the stream was cut)",
    )
}

impl BodySender {
    /// Sends the head of a streamed reply to connection `id` (its request `seq`).
    pub(crate) fn to_conn(
        replies: Arc<Replies>,
        id: ConnId,
        seq: NonZeroU32,
        head: crate::http::Response,
        length: Option<u64>,
    ) -> io::Result<BodySender> {
        let flow = Flow::new();
        let start = StreamStart {
            head,
            length,
            flow: FlowEnd(Arc::clone(&flow)),
        };
        let what = Delivery::Stream(Arc::new(start));
        if !replies.wanted(id, seq) || !deliver(&replies, id, HttpMsg { seq, what }) {
            return Err(not_wanted());
        }
        Ok(BodySender {
            sink: Sink::Conn {
                replies,
                id,
                seq,
                flow,
            },
            left: length,
            finished: false,
        })
    }

    /// Sends the head of a streamed reply to a `handle_conn` thread.
    pub(crate) fn to_thread(
        tx: mpsc::SyncSender<Later>,
        head: crate::http::Response,
        length: Option<u64>,
    ) -> io::Result<BodySender> {
        let (pieces_tx, pieces) = mpsc::sync_channel(THREAD_PIECES);
        let stream = ThreadStream {
            head,
            length,
            pieces,
        };
        tx.send(Later::Stream(stream)).map_err(|_| not_wanted())?;
        Ok(BodySender {
            sink: Sink::Thread(pieces_tx),
            left: length,
            finished: false,
        })
    }

    /// A sender whose body goes nowhere (the reply had no client).
    pub(crate) fn nowhere() -> BodySender {
        BodySender {
            sink: Sink::Nowhere,
            left: None,
            finished: true,
        }
    }

    /// Whether the body is still wanted (the client connected, the stream not cut): cheap
    /// enough to ask before producing each piece.
    ///
    /// ```
    /// fn produce(body: &mut web::http::BodySender) {
    ///     while body.is_open() {
    ///         # break;
    ///     }
    /// }
    /// ```
    pub fn is_open(&self) -> bool {
        match &self.sink {
            Sink::Conn {
                replies,
                id,
                seq,
                flow,
            } => replies.wanted(*id, *seq) && !flow.is_closed(),
            Sink::Thread(_) => !self.finished,
            Sink::Nowhere => false,
        }
    }

    /// Ends the body: the last chunk (chunked), or a check that every announced byte was sent
    /// (an `InvalidInput` error otherwise, and the body is cut). Returns once the end is
    /// queued; `flush` first to wait until the client has read everything.
    ///
    /// ```
    /// fn end(body: web::http::BodySender) -> std::io::Result<()> {
    ///     body.finish()
    /// }
    /// ```
    pub fn finish(mut self) -> io::Result<()> {
        self.end(Vec::new())
    }

    /// [`finish`](BodySender::finish), with trailer fields after the body: over HTTP/2 a
    /// last HEADERS frame, over HTTP/1.1 the trailer section of a chunked body. A body of
    /// announced length over HTTP/1.1 (and one to an HTTP/1.0 client) has no trailer section,
    /// and they are dropped; so is a field a recipient needs before the content — framing,
    /// routing, authentication, response controls, the content's type and coding (RFC 9110
    /// §6.5.1) — and a field whose name is not a token.
    ///
    /// ```
    /// use web::http::{BodySender, Header};
    /// fn end(body: BodySender, checksum: &str) -> std::io::Result<()> {
    ///     body.finish_with_trailers(vec![Header::new("X-Checksum", checksum)])
    /// }
    /// ```
    pub fn finish_with_trailers(mut self, trailers: Vec<Header>) -> io::Result<()> {
        self.end(trailers)
    }

    /// Sends all of `bytes`, waiting for room in the window without holding a thread: the
    /// async counterpart of [`write_all`](io::Write::write_all), for any executor. Fails as a
    /// write does once the body is not wanted. (Under the blocking
    /// [`handle_conn`](crate::http::handle_conn) a piece waits for its thread's channel.)
    ///
    /// ```
    /// async fn export(mut body: web::http::BodySender) -> std::io::Result<()> {
    ///     for n in 0..1000 {
    ///         body.send(format!("{n},row\n").as_bytes()).await?;
    ///     }
    ///     body.finish()
    /// }
    /// ```
    pub async fn send(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let n = std::future::poll_fn(|cx| self.poll_send(bytes, |f, n| f.poll_reserve(cx, n)))
                .await?;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Waits, without holding a thread, until the client has read everything sent so far:
    /// the async counterpart of [`flush`](io::Write::flush).
    ///
    /// ```
    /// async fn last(mut body: web::http::BodySender) -> std::io::Result<()> {
    ///     body.send(b"the end").await?;
    ///     body.drained().await?;
    ///     body.finish()
    /// }
    /// ```
    pub async fn drained(&mut self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_drained(cx)).await
    }

    fn poll_drained(&self, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        match &self.sink {
            Sink::Conn { flow, .. } => match flow.poll_drain(cx) {
                Poll::Ready(true) => Poll::Ready(Ok(())),
                Poll::Ready(false) => Poll::Ready(Err(not_wanted())),
                Poll::Pending => Poll::Pending,
            },
            _ => Poll::Ready(Ok(())),
        }
    }

    /// The end of the body, by `finish` or an async writer's shutdown.
    fn end(&mut self, trailers: Vec<Header>) -> io::Result<()> {
        if let Some(left) = self.left.filter(|&left| left > 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the body ended {left} bytes short of its announced length"),
            ));
        }
        self.finished = true;
        let sent = match &self.sink {
            Sink::Conn {
                replies, id, seq, ..
            } => {
                let what = Delivery::End(trailers);
                deliver(replies, *id, HttpMsg { seq: *seq, what })
            }
            Sink::Thread(tx) => tx.send(ThreadPiece::End(trailers)).is_ok(),
            Sink::Nowhere => false,
        };
        if sent { Ok(()) } else { Err(not_wanted()) }
    }

    /// Takes at most a piece of `buf`, or fails when it would pass the announced length.
    fn piece_of<'b>(&self, buf: &'b [u8]) -> io::Result<&'b [u8]> {
        let n = buf.len().min(PIECE);
        match self.left {
            Some(left) if left < n as u64 => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the body passes its announced length ({left} bytes left)"),
            )),
            _ => Ok(&buf[..n]),
        }
    }
}

impl BodySender {
    /// Sends a piece of `buf` once `reserve` finds it room in the window (at once for a
    /// blocking writer, which waits inside `reserve`); how much was sent.
    fn poll_send(
        &mut self,
        buf: &[u8],
        reserve: impl FnOnce(&Flow, usize) -> Poll<bool>,
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if self.finished {
            return Poll::Ready(Err(not_wanted()));
        }
        let piece = match self.piece_of(buf) {
            Ok(piece) => piece,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let sent = match &self.sink {
            Sink::Conn {
                replies,
                id,
                seq,
                flow,
            } => {
                match reserve(flow, piece.len()) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(false) => return Poll::Ready(Err(not_wanted())),
                    Poll::Ready(true) => {}
                }
                let what = Delivery::Piece(piece.to_vec());
                let sent = deliver(replies, *id, HttpMsg { seq: *seq, what });
                if !sent {
                    flow.written(piece.len());
                }
                sent
            }
            Sink::Thread(tx) => tx.send(ThreadPiece::Data(piece.to_vec())).is_ok(),
            Sink::Nowhere => false,
        };
        if !sent {
            return Poll::Ready(Err(not_wanted()));
        }
        if let Some(left) = &mut self.left {
            *left -= piece.len() as u64;
        }
        Poll::Ready(Ok(piece.len()))
    }
}

impl io::Write for BodySender {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.poll_send(buf, |flow, n| Poll::Ready(flow.reserve(n))) {
            Poll::Ready(sent) => sent,
            // Never: the blocking reservation is always ready.
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Waits until the client has read everything written so far (the connection's side; a
    /// `handle_conn` thread writes each piece as it takes it).
    fn flush(&mut self) -> io::Result<()> {
        match &self.sink {
            Sink::Conn { flow, .. } if !flow.drain() => Err(not_wanted()),
            _ => Ok(()),
        }
    }
}

/// With the `tokio` feature: a streamed body is a tokio writer, so `tokio::io::copy` from a
/// file or any reader streams it under the window's backpressure; `shutdown` ends the body
/// as [`finish`](BodySender::finish) does.
#[cfg(feature = "tokio")]
impl tokio::io::AsyncWrite for BodySender {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .poll_send(buf, |flow, n| flow.poll_reserve(cx, n))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_drained(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(Ok(()));
        }
        Poll::Ready(this.end(Vec::new()))
    }
}

impl Drop for BodySender {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Sink::Conn {
            replies, id, seq, ..
        } = &self.sink
            && replies.wanted(*id, *seq)
        {
            let what = Delivery::Abort;
            deliver(replies, *id, HttpMsg { seq: *seq, what });
        }
        // A thread's channel disconnects as the sender drops: it cuts the body there.
    }
}

/// A streamed body being sent by a strand: its framing and what it owes the sender's window.
pub(crate) struct Streaming {
    flow: FlowEnd,
    framing: StreamFraming,
    /// Body bytes put in the output and not yet counted off the window.
    owed: usize,
    /// The connection stays open after the body (as its head said).
    keep: bool,
}

impl Streaming {
    pub(crate) fn new(flow: FlowEnd, framing: StreamFraming, keep: bool) -> Streaming {
        Streaming {
            flow,
            framing,
            owed: 0,
            keep,
        }
    }

    /// Appends `piece`, framed, to `out`; an error when it passes the announced length.
    pub(crate) fn piece(&mut self, out: &mut Vec<u8>, piece: &[u8]) -> Result<(), PastLength> {
        self.framing.piece(out, piece)?;
        self.owed += piece.len();
        Ok(())
    }

    /// Appends the body's end; `false` when it is short of its announced length.
    pub(crate) fn end(&self, out: &mut Vec<u8>, trailers: &[Header]) -> bool {
        self.framing.end(out, trailers)
    }

    /// Whether the connection stays open after this body.
    pub(crate) fn keeps_alive(&self) -> bool {
        self.keep
    }

    /// The output has `pending` bytes left to write: what of the body left with the rest is
    /// counted off the window (the framing's bytes make this err on the side of too little).
    pub(crate) fn written(&mut self, pending: usize) {
        let gone = self.owed.saturating_sub(pending);
        self.owed -= gone;
        self.flow.0.written(gone);
    }
}
