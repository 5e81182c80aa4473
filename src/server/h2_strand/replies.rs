//! Answering an HTTP/2 connection's streams: each whole request's exchange started through
//! HTTP/2's [`Replier`], a reply that comes later stepped through its [`Framer`] (see
//! `server::exchange`), and the replies the windows hold back sent as they open, sharing them
//! round-robin.

use std::time::Instant;

use crate::h2::conn::Conn;
use crate::h2::error::ErrorCode;
use crate::h2::reply::{self, Length};
use crate::http::date::with_date;
use crate::http::later::{FlowEnd, HttpMsg};
use crate::http::render::has_body;
use crate::http::{Body, Header, Refusal, ReplyRules, Request, Response};
use crate::live::Command;
use crate::server::access::LabelCopy;
use crate::server::deferred::{Patience, Wait};
use crate::server::exchange::{
    self, App, AsksWebSocket, Framer, Origin, Phase, Replier, Started, Step,
};
use crate::server::figures::Tally;
use crate::server::replies::ReplyTo;
use crate::server::shared::ServerShared;

use super::live::{self, Live};
use super::request::rules_of;
use super::work::{Awaited, Streamed, Work, exchange_of, reply_held, work_at};
use super::{Ctx, H2Strand, logged};
use reactor::Io;

thread_local! {
    /// Where a reply's head is encoded before it is framed, one per worker.
    static BLOCK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Stream `id`'s work ends before its reply did (the stream reset, the connection gone): a
/// reply it waited for, or was streaming, is no longer wanted.
pub(super) fn abandoned(shared: &ServerShared, id: reactor::ConnId, work: &Work) {
    if let Some((wait, _)) = exchange_of(work) {
        exchange::abandon(shared, id, wait);
    }
}

impl H2Strand {
    /// Answers every stream whose request is whole, in the order they completed.
    pub(super) fn answer_ready(&mut self, shared: &ServerShared, ctx: &mut Ctx) {
        let mut at = 0;
        while at < self.work.len() {
            let stream = self.work[at].0;
            match std::mem::replace(&mut self.work[at].1, Work::Cut(ErrorCode::NoError)) {
                Work::Ready(request) => self.answer(shared, ctx, at, stream, request, false),
                Work::Connect(request) => self.answer(shared, ctx, at, stream, request, true),
                Work::Refused(error, rules) => {
                    self.refuse(shared, ctx, at, Refusal::Malformed(error), rules);
                }
                Work::TooSlow(rules) => self.refuse(shared, ctx, at, Refusal::Timeout, rules),
                Work::Cut(code) => {
                    self.work.remove(at);
                    self.conn.cancel(stream, code, &mut self.out);
                }
                other => self.work[at].1 = other,
            }
            if self.work.get(at).is_some_and(|(id, _)| *id == stream) {
                at += 1;
            }
        }
    }

    /// Answers the stream at `at` with the server's own `refusal`; the rest of its body is not
    /// wanted (a reset, NO_ERROR, lets the peer stop sending it).
    fn refuse(
        &mut self,
        shared: &ServerShared,
        ctx: &Ctx,
        at: usize,
        refusal: Refusal<'_>,
        rules: ReplyRules,
    ) {
        let stream = self.work[at].0;
        let res = refusal.response();
        let status = res.status;
        let held = send_reply(&mut self.conn, &mut self.out, stream, (res, rules), ctx.now).1;
        self.settle(at, stream, held);
        self.conn.cancel(stream, ErrorCode::NoError, &mut self.out);
        shared.figures(ctx.worker()).replied(status);
    }

    /// Answers one request through the server's handler. `connect`: an extended CONNECT for
    /// a WebSocket, and whether its peer ended its side.
    fn answer(
        &mut self,
        shared: &ServerShared,
        ctx: &mut Ctx,
        at: usize,
        stream: u32,
        request: Request,
        connect: bool,
    ) {
        let rules = rules_of(&request);
        let origin = Origin {
            now: ctx.now,
            peer: ctx.peer,
            reply_to: ReplyTo::Stream(ctx.id),
            stream,
            worker: ctx.worker(),
            tls: ctx.tls,
        };
        // A WebSocket's first frames, if its peer sent them with the request.
        let early = match connect {
            true if !request.body().is_empty() => request.body().to_vec(),
            _ => Vec::new(),
        };
        let mut replier = Http2Replier {
            conn: &mut self.conn,
            out: &mut self.out,
            stream,
            connect,
            held: None,
        };
        let mut tally = Tally {
            streams: 1,
            ..Tally::default()
        };
        let app = App::Server(shared);
        let copy = LabelCopy::new(request.method(), request.path());
        let request = (request, copy.label());
        let started = exchange::start(&app, request, rules, &origin, &mut replier, &mut tally);
        let held = replier.held.take();
        if !matches!(started, Started::NotServed) {
            shared.figures(ctx.worker()).add(&tally);
        }
        match started {
            Started::Answered { spent, .. } => {
                ctx.spent |= spent;
                self.settle(at, stream, held);
            }
            Started::Live { conn, .. } => {
                self.work[at].1 = Work::Live(Live::new(conn));
                live::accepted(&mut self.busy, stream, early);
            }
            Started::Deferred(wait, patience) => {
                let until = ctx.now
                    + match patience {
                        Patience::Server => shared.reply_timeout,
                        Patience::Poll(wait) => wait,
                    };
                self.work[at].1 = Work::Waiting(Box::new(Awaited { wait, until }));
            }
            Started::Http11Required => {
                self.work.remove(at);
                self.conn
                    .cancel(stream, ErrorCode::Http11Required, &mut self.out);
            }
            Started::NotServed => {
                self.work.remove(at);
                self.conn
                    .cancel(stream, ErrorCode::RefusedStream, &mut self.out);
                ctx.spent = true;
            }
            // HTTP/1.1's alone (the `taken` hook, `handle_conn`): never of a stream.
            Started::Streamed(_) | Started::Taken | Started::Failed => {
                self.work.remove(at);
                self.conn.cancel(stream, ErrorCode::Internal, &mut self.out);
            }
        }
    }

    /// After a reply was sent on the stream at `at`: what its body left for the windows
    /// stays as its work, else the work is done.
    fn settle(&mut self, at: usize, stream: u32, held: Option<(Body, usize)>) {
        match held {
            Some(held) => self.work[at] = (stream, sending(held, &mut self.replying)),
            None => {
                self.work.remove(at);
            }
        }
    }

    /// Windows opened: replies held back go on, after the live streams had theirs (an event
    /// or a WebSocket message is small and waits on someone; a download is large and waits on
    /// no one), sharing what is open round-robin, a frame each a round, so that no stream
    /// waits for another to finish.
    pub(super) fn send_held(&mut self) {
        if !self.replying {
            return;
        }
        let quantum = self.conn.max_frame();
        // The streams whose replies wait: where each is, what of its streamed pieces it sent
        // this time, whether it is done.
        let mut holders: Vec<(usize, usize, bool)> = (self.work.iter().enumerate())
            .filter(|(_, (_, w))| matches!(w, Work::Sending(_) | Work::Streaming(_)))
            .map(|(at, _)| (at, 0, false))
            .collect();
        loop {
            let mut sent = 0;
            for (at, taken, done) in holders.iter_mut().filter(|h| !h.2) {
                let (stream, work) = &mut self.work[*at];
                sent += match work {
                    Work::Sending(held) => {
                        let (body, from) = &mut **held;
                        let to = body.len().min(*from + quantum);
                        let last = to == body.len();
                        let n = self
                            .conn
                            .send_data(*stream, &body[*from..to], last, &mut self.out);
                        *from += n;
                        *done = *from == body.len();
                        n
                    }
                    Work::Streaming(s) => {
                        let rest = &s.held[*taken..];
                        let to = rest.len().min(quantum);
                        let last = s.ended && to == rest.len();
                        // The last data ends the stream, unless trailers follow it and do.
                        let ends = last && s.trailers.is_empty();
                        let n = self
                            .conn
                            .send_data(*stream, &rest[..to], ends, &mut self.out);
                        if last && !ends && n == to {
                            end_stream(&mut self.conn, &mut self.out, *stream, &s.trailers);
                        }
                        *taken += n;
                        *done = s.ended && *taken == s.held.len();
                        n
                    }
                    _ => 0,
                };
            }
            if sent == 0 {
                break;
            }
        }
        // What streamed pieces sent leaves their buffer at once; finished replies leave the
        // list (the last first, so that the positions hold).
        for &(at, taken, done) in holders.iter().rev() {
            if let Work::Streaming(s) = &mut self.work[at].1 {
                s.held.drain(..taken);
                s.flow.0.written(taken);
            }
            if done {
                self.work.remove(at);
            }
        }
    }

    /// The peer opened no window for the write timeout while replies waited on theirs: those
    /// streams are reset (CANCEL), as a peer that takes nothing of an HTTP/1.1 reply is closed
    /// — the connection's other streams go on. Counted with the peers dropped for falling
    /// behind.
    pub(super) fn windows_timed_out(&mut self, shared: &ServerShared, io: &Io<'_, Command>) {
        let mut at = 0;
        while at < self.work.len() {
            if reply_held(&self.work[at].1) == 0 {
                at += 1;
                continue;
            }
            // (Dropping a streamed reply's window tells its sender the body is not wanted.)
            let (stream, work) = self.work.remove(at);
            abandoned(shared, io.id().with_stream(stream), &work);
            self.conn.cancel(stream, ErrorCode::Cancel, &mut self.out);
            shared.ws_settings.live.budget.dropped_one();
            logged(shared, io.id(), stream);
            crate::log::info!(stream = stream; "an HTTP/2 stream reset: its peer opened no window for the write timeout");
        }
    }

    /// A deferred reply came for one of the streams (or a piece of a streamed one): its
    /// exchange takes it (one that was reset or cut drops it).
    pub(super) fn delivered(
        &mut self,
        shared: &ServerShared,
        io: &mut Io<'_, Command>,
        msg: HttpMsg,
    ) {
        let waits_for = |w: &Work| exchange_of(w).is_some_and(|(wait, _)| wait.seq == msg.seq);
        let Some(&(stream, _)) = self.work.iter().find(|(_, w)| waits_for(w)) else {
            return;
        };
        let now = io.now();
        self.step_exchange(shared, io, stream, |f, ex| {
            exchange::deliver(shared, ex, msg.what, now, f)
        });
    }

    /// The streams whose exchange waits for a reply, or streams one.
    pub(super) fn exchanges(&self) -> Vec<u32> {
        (self.work.iter())
            .filter(|(_, w)| exchange_of(w).is_some())
            .map(|(stream, _)| *stream)
            .collect()
    }

    /// Steps the exchange on `stream` (one that waits for its reply, or streams it) with the
    /// stream as its framer, and keeps what it came to: a streamed reply's next deadline, a
    /// body left for the windows, or the stream's work done.
    pub(super) fn step_exchange(
        &mut self,
        shared: &ServerShared,
        io: &Io<'_, Command>,
        stream: u32,
        step: impl FnOnce(&mut Http2Framer<'_>, (reactor::ConnId, Wait, Phase)) -> Step,
    ) {
        let Some(at) = work_at((&self.work, &self.work_index), stream) else {
            return;
        };
        let Some((wait, phase)) = exchange_of(&self.work[at].1) else {
            return;
        };
        let until = io.now() + shared.reply_timeout;
        let mut framer = Http2Framer {
            conn: &mut self.conn,
            out: &mut self.out,
            stream,
            work: &mut self.work[at].1,
            replying: &mut self.replying,
            wait,
            until,
        };
        match step(&mut framer, (io.id().with_stream(stream), wait, phase)) {
            Step::Unchanged => {}
            Step::Streaming => {
                if let Work::Streaming(s) = &mut self.work[at].1 {
                    s.until = until;
                }
            }
            // What the windows hold back of a complete reply is sent as they open.
            Step::Done { .. } if reply_held(&self.work[at].1) > 0 => {}
            Step::Done { .. } | Step::Cut => {
                self.work.remove(at);
            }
        }
    }
}

/// Sends `res` on `stream`: its head, then as much of its body as the windows allow. The
/// bytes it came to, and the body with the bytes of it sent when some waits.
pub(super) fn send_reply(
    conn: &mut Conn,
    out: &mut Vec<u8>,
    stream: u32,
    (res, rules): (Response, ReplyRules),
    now: Instant,
) -> (u64, Option<(Body, usize)>) {
    let before = out.len();
    let length = Length::Known(res.body.len() as u64);
    let status = BLOCK.with_borrow_mut(|block| {
        block.clear();
        let status = with_date(now, |date| reply::write_head(block, &res, date, length));
        let bodiless = rules.head_only || !has_body(status) || res.body.is_empty();
        conn.send_headers(stream, block, bodiless, out);
        status
    });
    if rules.head_only || !has_body(status) || res.body.is_empty() {
        return ((out.len() - before) as u64, None);
    }
    let body = res.body;
    let sent = conn.send_data(stream, &body, true, out);
    let bytes = (out.len() - before + body.len() - sent) as u64;
    (bytes, (sent < body.len()).then_some((body, sent)))
}

/// Ends `stream`'s side: with a HEADERS frame of `trailers` when there are any, else an empty
/// DATA frame.
fn end_stream(conn: &mut Conn, out: &mut Vec<u8>, stream: u32, trailers: &[Header]) {
    if trailers.is_empty() {
        conn.send_data(stream, &[], true, out);
        return;
    }
    BLOCK.with_borrow_mut(|block| {
        block.clear();
        reply::write_trailers(block, trailers);
        conn.send_headers(stream, block, true, out);
    });
}

/// A reply's body the windows held back (the body, the bytes of it sent), as its stream's work
/// from now on; the connection is told a reply may wait on its windows.
fn sending(held: (Body, usize), replying: &mut bool) -> Work {
    *replying = true;
    Work::Sending(Box::new(held))
}

/// Sends `head` on `stream` (its body of `length`, announced when known; `end`: none follows,
/// the stream's side ends with it); the bytes it came to.
fn send_head(
    conn: &mut Conn,
    out: &mut Vec<u8>,
    stream: u32,
    (head, length, end): (&Response, Length, bool),
    now: Instant,
) -> u64 {
    let before = out.len();
    BLOCK.with_borrow_mut(|block| {
        block.clear();
        with_date(now, |date| reply::write_head(block, head, date, length));
        conn.send_headers(stream, block, end, out);
    });
    (out.len() - before) as u64
}

/// How HTTP/2 answers a request at once: HEADERS and as much DATA as the windows allow on its
/// stream (the rest of a body kept for them); a WebSocket by RFC 8441's extended CONNECT, its
/// stream left open; no hand-over (the connection carries other streams).
struct Http2Replier<'a> {
    conn: &'a mut Conn,
    out: &'a mut Vec<u8>,
    stream: u32,
    /// The request is an extended CONNECT (RFC 8441).
    connect: bool,
    /// What a whole reply's body left for the windows, and the bytes of it sent.
    held: Option<(Body, usize)>,
}

impl Replier for Http2Replier<'_> {
    fn whole(&mut self, res: &mut Response, rules: ReplyRules, now: Instant) -> (u64, bool, Body) {
        let res = (std::mem::take(res), rules);
        let (bytes, held) = send_reply(self.conn, self.out, self.stream, res, now);
        self.held = held;
        (bytes, true, Body::default())
    }

    fn open_events(&mut self, head: &Response, ends: bool, now: Instant) -> u64 {
        let length = match ends {
            true => Length::Known(0),
            false => Length::Open,
        };
        send_head(self.conn, self.out, self.stream, (head, length, ends), now)
    }

    fn websocket_route<'r>(&self, app: &App<'r>, request: &mut Request) -> AsksWebSocket<'r> {
        if self.connect
            && let Some(route) = app.websocket_path(request)
        {
            return AsksWebSocket::Route(route);
        }
        match app.websocket_route(request) {
            Some(_) => AsksWebSocket::Wrongly,
            None => AsksWebSocket::No,
        }
    }

    fn check_websocket(&self, request: &Request) -> Result<String, Response> {
        match request.header("sec-websocket-version").trim() {
            "13" => Ok(String::new()),
            _ => Err(Refusal::WebSocketVersion.response()),
        }
    }

    fn open_websocket(&mut self, _: &str, extensions: Option<&str>, now: Instant) -> (u16, u64) {
        let mut head = Response::new(200, "", Vec::new(), "");
        if let Some(extensions) = extensions {
            let field = crate::http::Header::new("Sec-WebSocket-Extensions", extensions);
            head.headers.push(field);
        }
        let bytes = send_head(
            self.conn,
            self.out,
            self.stream,
            (&head, Length::Open, false),
            now,
        );
        (head.status, bytes)
    }

    fn hand_over(&mut self, _: &App<'_>) -> Option<Started> {
        None
    }
}

/// How HTTP/2 puts a deferred exchange's reply on its stream: HEADERS, then DATA as far as the
/// windows allow (the rest kept as the stream's work), a cut as RST_STREAM INTERNAL_ERROR.
pub(super) struct Http2Framer<'a> {
    conn: &'a mut Conn,
    out: &'a mut Vec<u8>,
    stream: u32,
    work: &'a mut Work,
    /// Set when a reply is left for the windows (see `H2Strand::replying`).
    replying: &'a mut bool,
    wait: Wait,
    /// When a streamed body that sends nothing more is cut.
    until: Instant,
}

impl Framer for Http2Framer<'_> {
    fn reply(&mut self, res: Response, rules: ReplyRules, now: Instant) -> (u64, bool) {
        let (bytes, held) = send_reply(self.conn, self.out, self.stream, (res, rules), now);
        if let Some(held) = held {
            *self.work = sending(held, self.replying);
        }
        (bytes, true)
    }

    fn open(
        &mut self,
        head: &Response,
        (length, body): (Option<u64>, bool),
        _: ReplyRules,
        now: Instant,
    ) -> (u64, bool) {
        let length = length.map_or(Length::Open, Length::Known);
        let head = (head, length, !body);
        (send_head(self.conn, self.out, self.stream, head, now), true)
    }

    fn stream(&mut self, flow: FlowEnd, _: Option<u64>, _: ReplyRules, _: bool) {
        *self.replying = true;
        *self.work = Work::Streaming(Box::new(Streamed {
            wait: self.wait,
            until: self.until,
            held: Vec::new(),
            flow,
            ended: false,
            trailers: Vec::new(),
        }));
    }

    fn piece(&mut self, bytes: Vec<u8>) -> (u64, bool) {
        let Work::Streaming(s) = self.work else {
            return (0, false); // never: the exchange is streaming
        };
        if s.held.is_empty() {
            let n = self.conn.send_data(self.stream, &bytes, false, self.out);
            s.flow.0.written(n);
            s.held.extend_from_slice(&bytes[n..]);
        } else {
            s.held.extend_from_slice(&bytes);
        }
        *self.replying |= !s.held.is_empty();
        (bytes.len() as u64, true)
    }

    fn end(&mut self, trailers: Vec<Header>) -> (u64, bool) {
        let Work::Streaming(s) = self.work else {
            return (0, false); // never: the exchange is streaming
        };
        s.ended = true;
        s.trailers = trailers;
        let before = self.out.len();
        if s.held.is_empty() {
            end_stream(self.conn, self.out, self.stream, &s.trailers);
        }
        ((self.out.len() - before) as u64, true)
    }

    fn cut(&mut self) {
        self.conn.cancel(self.stream, ErrorCode::Internal, self.out);
    }
}
