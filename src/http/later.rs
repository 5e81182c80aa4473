//! What reaches an HTTP connection from other threads: the deferred reply a handler promised
//! ([`Reply`](crate::http::Reply)), inside [`Command::Http`](crate::ws::Command::Http) —
//! an answer, or a streamed body's head and pieces — and the window a streamed body's sender
//! and its connection share ([`Flow`]). Here, under the worker's message, because every
//! connection's strand receives that message; the server makes and reads these.

use crate::http::Header;
use std::num::NonZeroU32;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::Response;

/// A deferred reply on its way to its connection (inside
/// [`Command::Http`](crate::ws::Command::Http)); made by [`Reply`](crate::http::Reply) only.
#[derive(Clone, Debug)]
pub(crate) struct HttpMsg {
    pub(crate) seq: NonZeroU32,
    pub(crate) what: Delivery,
}

/// What a `Reply` (or the `BodySender` it became) delivers.
#[derive(Clone, Debug)]
pub(crate) enum Delivery {
    /// The response (boxed: a message stays small).
    Answer(Box<Response>),
    /// The `Reply` was dropped unanswered: the client gets a 500.
    Dropped,
    /// The head of a streamed reply; its body follows in `Piece`s, then `End` or `Abort`.
    /// (In an `Arc` so that the message stays `Clone`, as every command is; it is sent to one
    /// connection only, so the strand holds the one reference.)
    Stream(Arc<StreamStart>),
    /// A piece of a streamed body.
    Piece(Vec<u8>),
    /// The streamed body is complete, with these trailer fields (none, mostly).
    End(Vec<Header>),
    /// The `BodySender` was dropped before the end: the body is cut (the connection closes).
    Abort,
}

/// Bytes of a streamed body the server holds at most for one response (sent and not yet
/// written to the socket); a [`BodySender`](crate::http::BodySender) past it waits until the client reads.
pub const STREAM_WINDOW: usize = 256 * 1024;

/// The window of one streamed body, shared by its sender and its strand.
pub(crate) struct Flow {
    state: Mutex<FlowState>,
    room: Condvar,
}

struct FlowState {
    /// Bytes sent and not yet written to the socket (nor dropped).
    unwritten: usize,
    /// The strand no longer takes pieces: the client left, the stream ended or was cut.
    closed: bool,
    /// An async sender waiting for room (or for the window to drain): woken as either comes.
    waker: Option<Waker>,
}

impl Flow {
    pub(crate) fn new() -> Arc<Flow> {
        Arc::new(Flow {
            state: Mutex::new(FlowState {
                unwritten: 0,
                closed: false,
                waker: None,
            }),
            room: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, FlowState> {
        // Plain counters: a panic while holding the lock leaves nothing half-changed.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `n` more bytes fit in the window and counts them; `false` once closed.
    pub(crate) fn reserve(&self, n: usize) -> bool {
        let mut state = self.lock();
        while !state.closed && state.unwritten > 0 && state.unwritten + n > STREAM_WINDOW {
            state = self.room.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.closed {
            return false;
        }
        state.unwritten += n;
        true
    }

    /// [`reserve`](Flow::reserve) for an async sender: `Pending` (its waker kept) while the
    /// window is full.
    pub(crate) fn poll_reserve(&self, cx: &mut Context<'_>, n: usize) -> Poll<bool> {
        let mut state = self.lock();
        if state.closed {
            return Poll::Ready(false);
        }
        if state.unwritten > 0 && state.unwritten + n > STREAM_WINDOW {
            state.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        state.unwritten += n;
        Poll::Ready(true)
    }

    /// [`drain`](Flow::drain) for an async sender.
    pub(crate) fn poll_drain(&self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut state = self.lock();
        if state.closed {
            return Poll::Ready(false);
        }
        if state.unwritten > 0 {
            state.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(true)
    }

    /// Waits until everything sent is written; `false` once closed.
    pub(crate) fn drain(&self) -> bool {
        let mut state = self.lock();
        while !state.closed && state.unwritten > 0 {
            state = self.room.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        !state.closed
    }

    /// `n` bytes left the server (written, or dropped).
    pub(crate) fn written(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut state = self.lock();
        state.unwritten = state.unwritten.saturating_sub(n);
        let waker = state.waker.take();
        drop(state);
        self.room.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        let waker = state.waker.take();
        drop(state);
        self.room.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// The strand's hold on a flow: however it goes — the stream ends, the connection closes, the
/// message carrying it is dropped on the way — the sender is told.
pub(crate) struct FlowEnd(pub(crate) Arc<Flow>);

impl Drop for FlowEnd {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A streamed reply on its way to its connection: the head, and the flow it will be fed by.
pub(crate) struct StreamStart {
    pub(crate) head: Response,
    pub(crate) length: Option<u64>,
    pub(crate) flow: FlowEnd,
}

impl std::fmt::Debug for StreamStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamStart")
            .field("status", &self.head.status)
            .field("length", &self.length)
            .finish()
    }
}
