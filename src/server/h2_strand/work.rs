//! What each stream of an HTTP/2 connection waits for on this side ([`Work`]), kept in one list
//! in stream order, and what that work holds.

use std::time::Instant;

use crate::h2::error::ErrorCode;
use crate::h2::stream_index::StreamIndex;
use crate::http::later::FlowEnd;
use crate::http::message::pool::push_thrifty;
use crate::http::{Body, Header, ParseError, ReplyRules, Request};
use crate::server::deferred::Wait;
use crate::server::exchange::Phase;

use super::live::Live;

/// A new stream's work, at the end of the list: the list stays in stream order (a peer opens
/// streams in increasing order, RFC 9113 §5.1.1, which the codec enforces), and its index
/// knows where.
pub(super) fn push_work(
    (work, index): (&mut Vec<(u32, Work)>, &mut StreamIndex),
    stream: u32,
    new: Work,
) {
    debug_assert!(work.last().is_none_or(|(id, _)| *id < stream));
    push_thrifty(work, (stream, new));
    index.pushed(work, |(id, _)| *id);
}

/// Where stream `stream`'s work is (see `StreamIndex`: a removal from the list needs no
/// word to the index, whose guesses are checked).
pub(super) fn work_at((work, index): (&[(u32, Work)], &StreamIndex), stream: u32) -> Option<usize> {
    index.find(work, stream, |(id, _)| *id)
}

/// What one stream waits for on this side.
pub(super) enum Work {
    /// Its request's body is arriving.
    Receiving(Request),
    /// Its request is whole: to be answered, in the order requests completed.
    Ready(Request),
    /// An extended CONNECT for a WebSocket (RFC 8441): answered at once, its stream left open
    /// for the WebSocket's frames (what came on it so far in the request's body).
    Connect(Request),
    /// A live connection on the stream: an event stream, or a WebSocket.
    Live(Live),
    /// Answered by the server before its handler (431, 413).
    Refused(ParseError, ReplyRules),
    /// Its body did not keep its pace: answered 408 by the server.
    TooSlow(ReplyRules),
    /// To be reset with this code, unanswered.
    Cut(ErrorCode),
    /// Its deferred reply, answered by the server at `until` (503, or 204 for a long-poll).
    Waiting(Box<Awaited>),
    /// The rest of its reply's body, held back by the windows.
    Sending(Box<(Body, usize)>),
    /// A streamed reply (boxed: a stream's work stays small for the many that are idle).
    Streaming(Box<Streamed>),
}

/// A deferred reply a stream waits for, and when the server answers it instead (boxed: a
/// stream's work stays small for the many that are idle).
pub(super) struct Awaited {
    pub(super) wait: Wait,
    pub(super) until: Instant,
}

/// A streamed reply on its stream: pieces the windows held back, the sender's window, whether
/// the end came.
pub(super) struct Streamed {
    pub(super) wait: Wait,
    /// When the body is cut if no piece comes before (the reply timeout from the last one).
    pub(super) until: Instant,
    pub(super) held: Vec<u8>,
    pub(super) flow: FlowEnd,
    pub(super) ended: bool,
    /// Trailer fields to end the stream with, once `held` is sent (none, mostly).
    pub(super) trailers: Vec<Header>,
}

/// The exchange on a stream whose reply comes later, while it does (see `exchange`): the
/// reply it waits for and where that reply is.
pub(super) fn exchange_of(work: &Work) -> Option<(Wait, Phase)> {
    match work {
        Work::Waiting(a) => Some((a.wait, Phase::Awaited)),
        Work::Streaming(s) if !s.ended => Some((s.wait, Phase::Streaming)),
        _ => None,
    }
}

/// When the server steps in on a stream's exchange: its reply not come, or its streamed body
/// quiet, by then.
pub(super) fn due_of(work: &Work) -> Option<Instant> {
    match work {
        Work::Waiting(a) => Some(a.until),
        Work::Streaming(s) if !s.ended => Some(s.until),
        _ => None,
    }
}

/// What a stream's work holds.
pub(super) fn work_held(work: &Work) -> usize {
    match work {
        Work::Receiving(r) | Work::Ready(r) | Work::Connect(r) => r.held_bytes(),
        Work::Live(live) => live.held_bytes(),
        Work::Sending(held) => held.0.len() - held.1,
        Work::Streaming(s) => s.held.capacity(),
        Work::Refused(..) | Work::TooSlow(_) | Work::Cut(_) | Work::Waiting(_) => 0,
    }
}

/// Bytes of a stream's reply held back by the windows.
pub(super) fn reply_held(work: &Work) -> usize {
    match work {
        Work::Sending(held) => held.0.len() - held.1,
        Work::Streaming(s) => s.held.len(),
        _ => 0,
    }
}
