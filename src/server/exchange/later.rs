//! An exchange whose reply comes later — deferred ([`defer`](crate::http::defer)), pooled,
//! async or streamed ([`BodySender`](crate::http::BodySender)) — from its handler's return to
//! its reply's last byte: what an answer, a dropped [`Reply`](crate::http::Reply), a streamed
//! head, a piece, the end or a cut does; what the reply timeout does to a reply that has not
//! come and to a streamed body gone quiet; what a stop does to a long-poll; what is counted
//! (the figures, replies dropped and timed out) and logged; and when the reply's slot closes,
//! so that `Reply::is_open` and `BodySender::is_open` say `false` (the reply complete, cut, or
//! its client gone — not before). A protocol writes through its [`Framer`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use reactor::ConnId;

use crate::http::later::{Delivery, FlowEnd, StreamStart};
use crate::http::render::{final_status, has_body};
use crate::http::{Header, Refusal, ReplyRules, Response};

use crate::server::access::{self, AccessKind};
use crate::server::deferred::{Wait, nothing_came};
use crate::server::shared::ServerShared;

/// Where an exchange's reply is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Its handler deferred it, and it has not come.
    Awaited,
    /// Its streamed head went out; pieces follow until the end.
    Streaming,
}

/// What a message or the clock did to an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing: a message its phase does not expect (a second answer to one request), dropped.
    Unchanged,
    /// Its streamed reply goes on (its head, or a piece, went out): the reply timeout runs
    /// again from now.
    Streaming,
    /// Its reply is complete on the connection (an HTTP/2 stream may still hold some of it for
    /// the windows); `keep`: the connection serves on after it.
    Done { keep: bool },
    /// Its reply was cut short ([`Framer::cut`] ran): the client sees it incomplete.
    Cut,
}

/// How one HTTP version puts an exchange's reply on its connection: all the exchange needs of
/// a strand.
pub(crate) trait Framer {
    /// Queues `res` whole (a body the connection cannot take yet is kept for it); the bytes it
    /// came to, and whether the connection serves on after it.
    fn reply(&mut self, res: Response, rules: ReplyRules, now: Instant) -> (u64, bool);
    /// Queues the head of a streamed reply whose body has `length.0` bytes (`None`: not
    /// known), or none at all when `length.1` is false; the bytes, and whether the connection
    /// serves on after the reply.
    fn open(
        &mut self,
        head: &Response,
        length: (Option<u64>, bool),
        rules: ReplyRules,
        now: Instant,
    ) -> (u64, bool);
    /// The streamed body follows the head just opened: the strand keeps its sender's window
    /// (`keep` as `open` said).
    fn stream(&mut self, flow: FlowEnd, length: Option<u64>, rules: ReplyRules, keep: bool);
    /// Queues a piece of the streamed body; the bytes it came to, and `false` when it passes
    /// the length the head announced.
    fn piece(&mut self, piece: Vec<u8>) -> (u64, bool);
    /// Queues the body's end; the bytes it came to, and whether the connection serves on.
    fn end(&mut self, trailers: Vec<Header>) -> (u64, bool);
    /// Ends the reply short of its end (the streamed state dropped, which tells the sender).
    fn cut(&mut self);
}

/// A message for exchange `id` (its connection's id, with its stream over HTTP/2), which waits
/// for reply `wait` in `phase`.
pub(crate) fn deliver(
    shared: &ServerShared,
    (id, wait, phase): (ConnId, Wait, Phase),
    what: Delivery,
    now: Instant,
    framer: &mut impl Framer,
) -> Step {
    match (phase, what) {
        (Phase::Awaited, Delivery::Answer(res)) => answer(shared, (id, wait), *res, now, framer),
        (Phase::Awaited, Delivery::Dropped) => {
            shared.replies.dropped.fetch_add(1, Ordering::Relaxed);
            crate::log::warning!(; "a deferred reply was dropped unanswered: its request got a 500");
            let res = Refusal::ReplyDropped.response();
            answer(shared, (id, wait), res, now, framer)
        }
        (Phase::Awaited, Delivery::Stream(start)) => open(shared, (id, wait), start, now, framer),
        (Phase::Streaming, Delivery::Piece(piece)) => {
            let (bytes, within) = framer.piece(piece);
            sent(shared, id, (None, None, bytes));
            match within {
                true => Step::Streaming,
                false => cut(shared, (id, wait), framer),
            }
        }
        (Phase::Streaming, Delivery::End(trailers)) => {
            let (bytes, keep) = framer.end(trailers);
            sent(shared, id, (None, None, bytes));
            done(shared, (id, wait), keep)
        }
        (Phase::Streaming, Delivery::Abort) => cut(shared, (id, wait), framer),
        // What no sender sends in this phase (a second answer, pieces before their head).
        _ => Step::Unchanged,
    }
}

/// The reply timeout passed for exchange `id`: a long-poll gets its empty answer (`204`), a
/// reply that has not come the server's own `503`, a streamed body with no piece for that long
/// is cut — the last two counted in `replies_timed_out`.
pub(crate) fn expire(
    shared: &ServerShared,
    (id, wait, phase): (ConnId, Wait, Phase),
    now: Instant,
    framer: &mut impl Framer,
) -> Step {
    match phase {
        Phase::Awaited if wait.poll => answer(shared, (id, wait), nothing_came(), now, framer),
        Phase::Awaited => {
            shared.replies.timed_out.fetch_add(1, Ordering::Relaxed);
            crate::log::info!(; "a deferred reply did not come within the reply timeout: 503");
            let res = Refusal::ReplyLate.response();
            answer(shared, (id, wait), res, now, framer)
        }
        Phase::Streaming => {
            shared.replies.timed_out.fetch_add(1, Ordering::Relaxed);
            crate::log::info!(; "a streamed reply sent nothing within the reply timeout: cut");
            cut(shared, (id, wait), framer)
        }
    }
}

/// The server stops: a long-poll still waiting is answered at once (`204`) rather than kept
/// through the drain; any other exchange goes on.
pub(crate) fn stopping(
    shared: &ServerShared,
    (id, wait, phase): (ConnId, Wait, Phase),
    now: Instant,
    framer: &mut impl Framer,
) -> Step {
    match (phase, wait.poll) {
        (Phase::Awaited, true) => answer(shared, (id, wait), nothing_came(), now, framer),
        _ => Step::Unchanged,
    }
}

/// Exchange `id` ends without the rest of its reply (its client closed the connection or
/// reset the stream): the reply is no longer wanted.
pub(crate) fn abandon(shared: &ServerShared, id: ConnId, wait: Wait) {
    shared.replies.close_of(id, wait.seq);
}

/// Sends `res` as the exchange's reply.
fn answer(
    shared: &ServerShared,
    (id, wait): (ConnId, Wait),
    res: Response,
    now: Instant,
    framer: &mut impl Framer,
) -> Step {
    let status = final_status(res.status);
    shared.figures(id.worker() as usize).replied(status);
    let rules = wait.rules.keeping(!shared.shutting_down());
    let (bytes, keep) = framer.reply(res, rules, now);
    sent(shared, id, (Some(status), None, bytes));
    done(shared, (id, wait), keep)
}

/// Sends a streamed reply's head; its body follows unless it has none (a `HEAD` request, a
/// bodiless status), in which case the sender's window is dropped: it is told its body is not
/// wanted.
fn open(
    shared: &ServerShared,
    (id, wait): (ConnId, Wait),
    start: Arc<StreamStart>,
    now: Instant,
    framer: &mut impl Framer,
) -> Step {
    let Some(StreamStart { head, length, flow }) = Arc::into_inner(start) else {
        return cut(shared, (id, wait), framer); // never: one message, one holder
    };
    let status = final_status(head.status);
    shared.figures(id.worker() as usize).replied(status);
    let rules = wait.rules.keeping(!shared.shutting_down());
    let body = !rules.head_only && has_body(status);
    let (bytes, keep) = framer.open(&head, (length, body), rules, now);
    sent(
        shared,
        id,
        (Some(status), Some(AccessKind::Streamed), bytes),
    );
    if !body {
        return done(shared, (id, wait), keep);
    }
    framer.stream(flow, length, rules, keep);
    Step::Streaming
}

fn cut(shared: &ServerShared, (id, wait): (ConnId, Wait), framer: &mut impl Framer) -> Step {
    framer.cut();
    done(shared, (id, wait), false);
    Step::Cut
}

/// The exchange is over: its reply's slot closes and the access log has its record.
fn done(shared: &ServerShared, (id, wait): (ConnId, Wait), keep: bool) -> Step {
    shared.replies.close_of(id, wait.seq);
    if let Some(log) = shared.access_log.as_deref() {
        access::done(log, (id.connection(), id.stream()));
    }
    Step::Done { keep }
}

/// With an access log: more of exchange `id`'s reply went out (its status, its kind, bytes).
fn sent(
    shared: &ServerShared,
    id: ConnId,
    (status, kind, bytes): (Option<u16>, Option<AccessKind>, u64),
) {
    if shared.access_log.is_some() {
        access::sent((id.connection(), id.stream()), status, kind, bytes);
    }
}
