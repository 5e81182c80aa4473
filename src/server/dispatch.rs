//! What the server does with each request it reads, in one place for the reactor's strands and
//! the blocking [`handle_conn`](crate::http::handle_conn): answer the requests buffered on a
//! connection in order — `100 Continue`, refusals, the `serve_n` budget, WebSocket upgrades, the
//! `taken` hook, the handler — rendering every reply through the one renderer, and say where it
//! stopped and why.

use std::os::fd::RawFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::request_reader::{CONTINUE, RequestReader, Step, empty_lines};
use crate::http::fields::has_token;
use crate::http::render::{render, render_in_place, render_open_ended};
use crate::http::{Body, Refusal, ReplyRules, Request, Response, Version};
use crate::live::{Command, LiveConn, Watch};
use crate::sse::SseApp;
use crate::ws::{WsApp, agree, check_upgrade, extensions_of, switching_protocols};

use super::access::{self, AccessKind, DynAccessLog, Label};
use super::deferred::{Deferral, Patience, Wait, answering};
use super::figures::Tally;
use super::replies::ReplyTo;
use super::shared::{LiveRoute, ServerShared};
use super::streamed::{Later, ThreadStream};
use super::taken::{DynTaken, hand_over};

/// What dispatching serves with.
#[derive(Clone, Copy)]
pub(crate) enum App<'a> {
    /// A server's connection: its handler, routes, hooks, budget, figures and remote.
    Server(&'a ServerShared),
    /// `handle_conn`: a handler alone — no hooks, no budget, no figures, no live routes.
    HandlerOnly(&'a dyn Fn(Request) -> Response),
}

impl<'a> App<'a> {
    fn handler(self) -> &'a dyn Fn(Request) -> Response {
        match self {
            App::Server(shared) => &*shared.handler,
            App::HandlerOnly(handler) => handler,
        }
    }

    fn server(self) -> Option<&'a ServerShared> {
        match self {
            App::Server(shared) => Some(shared),
            App::HandlerOnly(_) => None,
        }
    }

    fn taken(self) -> Option<&'a DynTaken> {
        self.server().and_then(|s| s.taken.as_deref())
    }

    fn budget(self) -> Option<&'a AtomicU64> {
        self.server().and_then(|s| s.budget.as_ref())
    }

    /// The server's remote, once it runs.
    fn remote(self) -> Option<&'a reactor::Remote<Command>> {
        self.server().and_then(|s| s.remote.get())
    }

    /// How long `handle_conn` waits for a deferred reply.
    fn reply_timeout(self) -> std::time::Duration {
        self.server()
            .map_or(super::limits::REPLY_TIMEOUT, |s| s.reply_timeout)
    }

    /// Takes one request from the budget: false when it is spent.
    fn spend(&self) -> bool {
        self.budget().is_none_or(|b| {
            b.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        })
    }

    fn budget_spent(&self) -> bool {
        self.budget()
            .is_some_and(|b| b.load(Ordering::Acquire) == 0)
    }

    fn shutting_down(&self) -> bool {
        self.remote().is_some_and(|r| r.is_shutting_down())
    }

    /// The WebSocket route `req` is for: its path, and it asks for WebSocket (a key, or
    /// `Upgrade: websocket`). A request to the route that asks badly is the route's to refuse
    /// (400, RFC 6455 §4.2.1), not the HTTP handler's.
    fn websocket_route(&self, req: &mut Request) -> Option<&'a LiveRoute<dyn WsApp>> {
        let route = self.websocket_path(req)?;
        let asks = !req.header_bytes("sec-websocket-key").is_empty()
            || req
                .headers()
                .any(|h| h.name() == "upgrade" && has_token(h.value(), "websocket"));
        asks.then_some(route)
    }

    /// The WebSocket route at `req`'s path (for an extended CONNECT, which asks for WebSocket
    /// by its `:protocol`).
    fn websocket_path(&self, req: &mut Request) -> Option<&'a LiveRoute<dyn WsApp>> {
        let routes = &self.server()?.websocket;
        routes.iter().find(|r| r.pattern.route(req))
    }

    /// The Server-Sent Events route `req` is for: its path, with `GET` (or `HEAD`).
    fn sse_route(&self, req: &mut Request) -> Option<&'a LiveRoute<dyn SseApp>> {
        let routes = &self.server()?.sse;
        if routes.is_empty() || !(req.method_is("GET") || req.method_is("HEAD")) {
            return None;
        }
        routes.iter().find(|r| r.pattern.route(req))
    }
}

/// The connection the requests came on, as dispatch sees it.
pub(crate) struct Turn<'a> {
    /// Where replies are rendered.
    pub(crate) out: &'a mut Vec<u8>,
    /// Bytes of `out` already written to the socket.
    pub(crate) out_at: usize,
    /// Unwritten output at which answering pauses until the socket takes some (backpressure).
    pub(crate) high_water: usize,
    /// Bodies at least this long are handed back to be written from their own buffer.
    pub(crate) inline_limit: usize,
    pub(crate) now: Instant,
    /// The socket, for the `taken` hook.
    pub(crate) fd: Option<RawFd>,
    /// Who the connection is from, for the requests' [`Request::peer`].
    pub(crate) peer: Option<std::net::SocketAddr>,
    /// Where a deferred reply goes.
    pub(crate) exchange: ReplyTo,
    pub(crate) worker: usize,
}

impl Turn<'_> {
    fn unwritten(&self) -> usize {
        self.out.len() - self.out_at
    }
}

/// An accepted WebSocket upgrade: the connection it becomes, and bytes the client sent after
/// the request.
pub(crate) struct Upgrade {
    pub(crate) conn: Box<dyn LiveConn>,
    pub(crate) early: Vec<u8>,
}

/// Where answering stopped.
pub(crate) enum Stop {
    /// At an incomplete request (or at the end of the input): read more.
    Incomplete,
    /// Output waits for the socket (backpressure, or a `taken` hook must see earlier replies
    /// written first): write, then call again with the input from `used` on.
    Held,
    /// The last reply is queued: close after it (a refusal, `Connection: close`, the budget
    /// spent, shutdown). The rest of the input is dropped.
    Close,
    /// A reply's body is large: write it from its own buffer after the queued head; `keep`
    /// says whether the connection stays open after it.
    Body { body: Body, keep: bool },
    /// The connection was upgraded to WebSocket; the 101 is queued.
    Upgrade(Box<Upgrade>),
    /// The handler deferred its reply: the rest of the input waits for it.
    Deferred(Wait, Patience),
    /// (`handle_conn` only) The handler's deferred reply is streamed: its driver writes it
    /// from the thread's channel, then goes on with the input from `used` on.
    Streamed(Box<Streamed>),
    /// The `taken` hook took the connection.
    Taken,
    /// The `taken` hook failed: close at once, writing nothing more.
    Failed,
}

/// A streamed reply for `handle_conn`, with what its request allows.
pub(crate) struct Streamed {
    pub(crate) stream: ThreadStream,
    pub(crate) rules: ReplyRules,
}

/// What answering the buffered requests came to.
pub(crate) struct Answered {
    /// Bytes of the input used (all of it when the connection is to end).
    pub(crate) used: usize,
    /// Requests completed (served or not).
    pub(crate) completed: usize,
    /// The `serve_n` budget is spent: the server should stop.
    pub(crate) spent: bool,
    pub(crate) stop: Stop,
}

/// Answers every complete request at the start of `buf`, in order, rendering replies into
/// `turn.out`. `reader` holds the parse state of a request begun in an earlier call; it keeps
/// that of an incomplete request left at the end.
pub(crate) fn answer(
    app: &App<'_>,
    reader: &mut RequestReader,
    buf: &[u8],
    turn: &mut Turn<'_>,
) -> Answered {
    let mut tally = Tally::default();
    let done = answer_each(app, reader, buf, turn, &mut tally);
    // Counted once per call, not per request: one atomic add for a whole pipelined batch.
    if let Some(shared) = app.server() {
        shared.figures(turn.worker).add(&tally);
    }
    done
}

/// The loop of [`answer`]; counts the requests the handler answered, and every reply by its
/// status, in `tally`.
fn answer_each(
    app: &App<'_>,
    reader: &mut RequestReader,
    buf: &[u8],
    turn: &mut Turn<'_>,
    tally: &mut Tally,
) -> Answered {
    let mut done = Answered {
        used: 0,
        completed: 0,
        spent: false,
        stop: Stop::Incomplete,
    };
    loop {
        let held =
            turn.unwritten() >= turn.high_water || (app.taken().is_some() && turn.unwritten() > 0);
        if held {
            done.stop = Stop::Held;
            return done;
        }
        let at = done.used;
        if reader.is_fresh() {
            done.used += empty_lines(&buf[at..]);
            if done.used == buf.len() {
                // Every request read is answered: nothing for the parser to look at.
                return done;
            }
        }
        let at = done.used;
        match reader.step(&buf[at..]) {
            Step::More => return done,
            Step::Continue => turn.out.extend_from_slice(CONTINUE),
            Step::Refuse { error, head_only } => {
                let refusal = Refusal::Malformed(error).response();
                let status = refusal.status;
                crate::log::info!(
                    status = status,
                    peer = turn.peer.map_or_else(String::new, |p| p.to_string());
                    "request refused: {error}"
                );
                let before = turn.out.len();
                render(turn.out, refusal, false, head_only, turn.now, usize::MAX);
                let bytes = (turn.out.len() - before) as u64;
                let mut told = Told::unread(app, turn, tally);
                told.now(status, bytes);
                return done.finish(buf, Stop::Close);
            }
            Step::Done {
                request,
                version,
                rules,
                used,
            } => {
                let raw = &buf[at..];
                done.used += used;
                done.completed += 1;
                let early = &buf[done.used..];
                match dispatch(app, request, version, rules, raw, early, turn, tally) {
                    Dispatched::Answered { keep, body, spent } => {
                        tally.served += 1;
                        done.spent |= spent;
                        match (keep, body.is_empty()) {
                            (true, true) => {}
                            (true, false) => return done.finish_at(Stop::Body { body, keep }),
                            (false, true) => return done.finish(buf, Stop::Close),
                            (false, false) => return done.finish(buf, Stop::Body { body, keep }),
                        }
                    }
                    Dispatched::Deferred(wait, patience) => {
                        tally.served += 1;
                        return done.finish_at(Stop::Deferred(wait, patience));
                    }
                    Dispatched::Stop(Stop::Streamed(s)) => {
                        tally.served += 1;
                        return done.finish_at(Stop::Streamed(s));
                    }
                    Dispatched::Stop(stop) => return done.finish(buf, stop),
                }
            }
        }
    }
}

impl Answered {
    /// Stops here, dropping the rest of the input.
    fn finish(mut self, buf: &[u8], stop: Stop) -> Answered {
        self.used = buf.len();
        self.stop = stop;
        self
    }

    /// Stops here, the rest of the input kept for later.
    fn finish_at(mut self, stop: Stop) -> Answered {
        self.stop = stop;
        self
    }
}

/// What one complete request came to.
enum Dispatched {
    /// Answered by the handler.
    Answered { keep: bool, body: Body, spent: bool },
    /// The handler will answer later.
    Deferred(Wait, Patience),
    /// Not answered by the handler: upgraded, taken, failed, or past the budget.
    Stop(Stop),
}

/// Routes one complete request: the budget, a WebSocket route, the `taken` hook, else the
/// handler (timed: see `stall.rs`), whose reply is rendered and counted in `tally`.
#[allow(clippy::too_many_arguments)] // one request's parts, its connection and its count
fn dispatch(
    app: &App<'_>,
    mut request: Request,
    version: Version,
    rules: ReplyRules,
    raw: &[u8],
    early: &[u8],
    turn: &mut Turn<'_>,
    tally: &mut Tally,
) -> Dispatched {
    if !app.spend() {
        // `serve_n`: the budget is spent; this request is not served.
        return Dispatched::Stop(Stop::Close);
    }
    from_peer(app, &mut request, turn.peer);
    let mut told = Told::new(app, &request, turn, tally);
    if let Some(route) = app.websocket_route(&mut request) {
        let stop = upgrade(
            app,
            route,
            &request,
            (version, rules),
            early,
            turn,
            &mut told,
        );
        return Dispatched::Stop(stop);
    }
    if let Some(route) = app.sse_route(&mut request) {
        return Dispatched::Stop(open_stream(app, route, &request, rules, turn, &mut told));
    }
    if let (Some(taken), Some(fd)) = (app.taken(), turn.fd) {
        match hand_over(taken, fd, raw) {
            Some(true) => return Dispatched::Stop(Stop::Taken),
            Some(false) => {}
            // The hook failed (or the socket's mode could not be set back): close at once,
            // never read a socket that may be blocking.
            None => return Dispatched::Stop(Stop::Failed),
        }
    }
    let mut slot = None;
    let (panicked, deferral) = call_handler(
        app,
        request,
        (turn.exchange, turn.worker),
        &mut told,
        &mut slot,
    );
    let spent = app.budget_spent();
    let mut later = None;
    match (deferral, panicked) {
        (None, _) => {}
        // A handler that panicked after deferring is answered 500 now.
        (Some(Deferral::Conn(seq, _)), true) => {
            if let Some(shared) = app.server() {
                shared.replies.close_for(turn.exchange, seq);
            }
        }
        (Some(Deferral::Conn(seq, patience)), false) => {
            told.later(AccessKind::Deferred, 0, 0);
            let wait = Wait {
                seq,
                rules: rules.keeping(!spent),
                poll: patience.is_poll(),
            };
            return Dispatched::Deferred(wait, patience);
        }
        (Some(Deferral::Blocking(rx, patience)), false) => {
            let timeout = match patience {
                Patience::Server => app.reply_timeout(),
                Patience::Poll(wait) => wait,
            };
            later = Some(match rx.recv_timeout(timeout) {
                Ok(Later::Answer(res)) => res,
                Ok(Later::Stream(stream)) => {
                    let rules = rules.keeping(!spent && !app.shutting_down());
                    let stream = Box::new(Streamed { stream, rules });
                    return Dispatched::Stop(Stop::Streamed(stream));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if patience.is_poll() => {
                    super::deferred::nothing_came()
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Refusal::ReplyLate.response(),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    Refusal::ReplyDropped.response()
                }
            });
        }
        (Some(Deferral::Blocking(..)), true) => {}
    }
    let res = match &mut later {
        Some(res) => res,
        None => slot.get_or_insert_with(panic_reply),
    };
    let status = res.status;
    // Read after the handler ran: a shutdown begun meanwhile makes this reply the last.
    let keep = rules.keeping(!spent && !app.shutting_down()).keep_alive;
    let before = turn.out.len();
    let (keep, body) = render_in_place(
        turn.out,
        res,
        keep,
        rules.head_only,
        turn.now,
        turn.inline_limit,
    );
    told.now(status, (turn.out.len() - before + body.len()) as u64);
    Dispatched::Answered { keep, body, spent }
}

/// Where a request on an HTTP/2 stream came from, as dispatch sees it.
pub(crate) struct OnStream {
    pub(crate) now: Instant,
    pub(crate) peer: Option<std::net::SocketAddr>,
    /// [`ReplyTo::Stream`] of the connection.
    pub(crate) exchange: ReplyTo,
    /// The stream's id.
    pub(crate) stream: u32,
    pub(crate) worker: usize,
    /// An extended CONNECT with `:protocol = websocket` (RFC 8441): a WebSocket asked for on
    /// this stream.
    pub(crate) websocket: bool,
}

/// How a reply on an HTTP/2 stream is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// The reply is the stream's whole answer: its end ends the stream.
    Whole,
    /// The head alone: the stream stays open for what a live connection sends on it (an
    /// event stream's events, a WebSocket's frames).
    Open,
}

/// What a request on an HTTP/2 stream came to.
pub(crate) enum StreamAnswer {
    /// Answered: `send` wrote the reply.
    Sent,
    /// The handler will answer later.
    Deferred(Wait, Patience),
    /// A live route accepted the stream (an event stream, a WebSocket by RFC 8441): `send`
    /// wrote the head, and the stream carries this connection from now on.
    Live(Box<dyn LiveConn>),
    /// A WebSocket route asked with HTTP/1.1's upgrade rather than RFC 8441's extended
    /// CONNECT: the stream is reset with HTTP_1_1_REQUIRED, which tells the client to ask
    /// again over HTTP/1.1.
    Http11Required,
    /// Past the `serve_n` budget: not served (the stream is refused).
    NotServed,
}

/// Answers one complete request of an HTTP/2 stream through the same handler, hooks and
/// counts as an HTTP/1.1 request: `send` writes a reply given at once (and says how many
/// bytes it took, for the access log). The `taken` hook is not asked: an HTTP/2 connection
/// carries other streams and cannot be handed over.
pub(crate) fn answer_stream(
    app: &App<'_>,
    mut request: Request,
    rules: ReplyRules,
    on: &OnStream,
    send: &mut dyn FnMut(&mut Response, Framing) -> u64,
) -> StreamAnswer {
    if !app.spend() {
        return StreamAnswer::NotServed;
    }
    from_peer(app, &mut request, on.peer);
    let mut tally = Tally {
        streams: 1,
        ..Tally::default()
    };
    let answer = answer_stream_counted(app, request, rules, on, send, &mut tally);
    if let Some(shared) = app.server() {
        shared.figures(on.worker).add(&tally);
    }
    answer
}

fn answer_stream_counted(
    app: &App<'_>,
    mut request: Request,
    rules: ReplyRules,
    on: &OnStream,
    send: &mut dyn FnMut(&mut Response, Framing) -> u64,
    tally: &mut Tally,
) -> StreamAnswer {
    let mut told = Told::of(app, &request, (on.now, on.peer, on.exchange), tally);
    told.stream = on.stream;
    if on.websocket
        && let Some(route) = app.websocket_path(&mut request)
    {
        return connect_websocket(app, route, &request, send, &mut told);
    }
    if app.websocket_route(&mut request).is_some() {
        return StreamAnswer::Http11Required;
    }
    if let Some(route) = app.sse_route(&mut request) {
        return open_stream_h2(app, route, &request, rules, send, &mut told);
    }
    let mut slot = None;
    let (panicked, deferral) =
        call_handler(app, request, (on.exchange, on.worker), &mut told, &mut slot);
    told.tally.served += 1;
    match (deferral, panicked) {
        (Some(Deferral::Conn(seq, patience)), false) => {
            told.later(AccessKind::Deferred, 0, 0);
            let wait = Wait {
                seq,
                rules,
                poll: patience.is_poll(),
            };
            return StreamAnswer::Deferred(wait, patience);
        }
        (Some(Deferral::Conn(seq, _)), true) => {
            if let Some(shared) = app.server() {
                shared.replies.close_for(on.exchange, seq);
            }
        }
        // (Blocking deferrals are `handle_conn`'s only.)
        _ => {}
    }
    whole_answer(slot.unwrap_or_else(panic_reply), send, &mut told)
}

/// An extended CONNECT for a WebSocket route (RFC 8441 §5): the version's check (426), the
/// extensions agreed, the application's decision; accepted, a 200 opens the stream.
fn connect_websocket(
    app: &App<'_>,
    route: &LiveRoute<dyn WsApp>,
    request: &Request,
    send: &mut dyn FnMut(&mut Response, Framing) -> u64,
    told: &mut Told<'_>,
) -> StreamAnswer {
    let decided = match request.header("sec-websocket-version").trim() {
        "13" => accept_websocket(app, route, request),
        _ => Err(Refusal::WebSocketVersion.response()),
    };
    let decided = decided.map(|(extensions, conn)| {
        let mut head = Response::new(200, "", Vec::new(), "");
        if let Some(extensions) = extensions {
            head.headers.push(crate::http::Header::new(
                "Sec-WebSocket-Extensions",
                &extensions,
            ));
        }
        (head, conn)
    });
    live_answer(decided, AccessKind::WebSocket, send, told)
}

/// A live route's answer on an HTTP/2 stream: accepted, its head opens the stream for the
/// live connection; refused, the refusal is the stream's whole answer.
fn live_answer(
    decided: Result<(Response, Box<dyn LiveConn>), Response>,
    kind: AccessKind,
    send: &mut dyn FnMut(&mut Response, Framing) -> u64,
    told: &mut Told<'_>,
) -> StreamAnswer {
    match decided {
        Ok((mut head, conn)) => {
            let bytes = send(&mut head, Framing::Open);
            told.later(kind, head.status, bytes);
            StreamAnswer::Live(conn)
        }
        Err(refusal) => whole_answer(refusal, send, told),
    }
}

/// `res` as a stream's whole answer, sent and counted.
fn whole_answer(
    mut res: Response,
    send: &mut dyn FnMut(&mut Response, Framing) -> u64,
    told: &mut Told<'_>,
) -> StreamAnswer {
    let status = res.status;
    let bytes = send(&mut res, Framing::Whole);
    told.now(status, bytes);
    StreamAnswer::Sent
}

/// A request for a Server-Sent Events route on an HTTP/2 stream: the application's decision,
/// then the stream's head (a `HEAD` request gets the head alone).
fn open_stream_h2(
    app: &App<'_>,
    route: &LiveRoute<dyn SseApp>,
    request: &Request,
    rules: ReplyRules,
    send: &mut dyn FnMut(&mut Response, Framing) -> u64,
    told: &mut Told<'_>,
) -> StreamAnswer {
    let head = Response::new(200, "text/event-stream", stream_headers(), "");
    match accept_stream(app, route, request) {
        Ok(_) if rules.head_only => whole_answer(head, send, told),
        decided => live_answer(
            decided.map(|conn| (head, conn)),
            AccessKind::EventStream,
            send,
            told,
        ),
    }
}

/// The application's decision on a request for an event stream.
fn accept_stream(
    app: &App<'_>,
    route: &LiveRoute<dyn SseApp>,
    request: &Request,
) -> Result<Box<dyn LiveConn>, Response> {
    match (app.server().map(|s| &s.sse_settings), app.remote()) {
        (Some(settings), Some(remote)) => catch_unwind(AssertUnwindSafe(|| {
            route.app.accept(request, settings, remote)
        }))
        .unwrap_or_else(|_| Err(Refusal::Panicked.response())),
        _ => Err(Refusal::NoEventStreams.response()),
    }
}

/// A request for a WebSocket route: the protocol's checks (400, 426), then the application's
/// decision — all before anything but a refusal is written.
fn upgrade(
    app: &App<'_>,
    route: &LiveRoute<dyn WsApp>,
    request: &Request,
    (version, rules): (Version, ReplyRules),
    early: &[u8],
    turn: &mut Turn<'_>,
    told: &mut Told<'_>,
) -> Stop {
    let decided = check_upgrade(request, version).and_then(|accept| {
        let (response, conn) = accept_websocket(app, route, request)?;
        Ok((accept, response, conn))
    });
    match decided {
        Ok((accept, extensions, conn)) => {
            let head = switching_protocols(&accept, extensions.as_deref());
            told.later(AccessKind::WebSocket, 101, head.len() as u64);
            turn.out.extend_from_slice(&head);
            Stop::Upgrade(Box::new(Upgrade {
                conn,
                early: early.to_vec(),
            }))
        }
        Err(refusal) => refuse(turn, refusal, rules, told),
    }
}

/// The extensions agreed and the application's decision on a WebSocket request that passed
/// the protocol's checks (over HTTP/1.1 an upgrade, over HTTP/2 an extended CONNECT): the
/// `Sec-WebSocket-Extensions` value to answer with, if any, and the connection to become.
fn accept_websocket(
    app: &App<'_>,
    route: &LiveRoute<dyn WsApp>,
    request: &Request,
) -> Result<(Option<String>, Box<dyn LiveConn>), Response> {
    let (Some(settings), Some(remote)) = (app.server().map(|s| &s.ws_settings), app.remote())
    else {
        return Err(Refusal::NoWebSocket.response());
    };
    let (agreed, response) = match &settings.deflate {
        Some(deflate) => agree(&extensions_of(request), deflate).unzip(),
        None => (None, None),
    };
    let conn = catch_unwind(AssertUnwindSafe(|| {
        route.app.accept(request, settings, remote, agreed)
    }))
    .unwrap_or_else(|_| Err(Refusal::Panicked.response()))?;
    Ok((response, conn))
}

/// A request for a Server-Sent Events route: the application's decision, then the stream's
/// head (a `HEAD` request gets the head alone, and the connection closes).
fn open_stream(
    app: &App<'_>,
    route: &LiveRoute<dyn SseApp>,
    request: &Request,
    rules: ReplyRules,
    turn: &mut Turn<'_>,
    told: &mut Told<'_>,
) -> Stop {
    match accept_stream(app, route, request) {
        Ok(conn) => {
            let head = Response::new(200, "text/event-stream", stream_headers(), "");
            let before = turn.out.len();
            render_open_ended(turn.out, &head, turn.now);
            let bytes = (turn.out.len() - before) as u64;
            if rules.head_only {
                told.now(head.status, bytes);
                return Stop::Close;
            }
            told.later(AccessKind::EventStream, head.status, bytes);
            Stop::Upgrade(Box::new(Upgrade {
                conn,
                early: Vec::new(),
            }))
        }
        Err(refusal) => refuse(turn, refusal, rules, told),
    }
}

/// A live route's refusal: rendered whole (its head alone for `HEAD`) and counted, then the
/// connection closes.
fn refuse(turn: &mut Turn<'_>, refusal: Response, rules: ReplyRules, told: &mut Told<'_>) -> Stop {
    let status = refusal.status;
    let before = turn.out.len();
    render(
        turn.out,
        refusal,
        false,
        rules.head_only,
        turn.now,
        usize::MAX,
    );
    told.now(status, (turn.out.len() - before) as u64);
    Stop::Close
}

/// What is counted and logged of one request's answer: its status in the batch's tally and,
/// with an access log, the exchange (now, or once it ends).
struct Told<'t> {
    tally: &'t mut Tally,
    log: Option<&'t DynAccessLog>,
    /// The request's method and target, copied before the handler takes it (for the log and
    /// a stall's report).
    label: Label,
    began: Instant,
    peer: Option<std::net::SocketAddr>,
    exchange: ReplyTo,
    /// The HTTP/2 stream (0 for a connection's one exchange).
    stream: u32,
}

impl<'t> Told<'t> {
    fn new(app: &App<'t>, request: &Request, turn: &Turn<'_>, tally: &'t mut Tally) -> Told<'t> {
        Told::of(app, request, (turn.now, turn.peer, turn.exchange), tally)
    }

    fn of(
        app: &App<'t>,
        request: &Request,
        (now, peer, exchange): (Instant, Option<std::net::SocketAddr>, ReplyTo),
        tally: &'t mut Tally,
    ) -> Told<'t> {
        Told {
            tally,
            log: app.server().and_then(|s| s.access_log.as_deref()),
            label: Label::new(request.method(), request.path()),
            began: now,
            peer,
            exchange,
            stream: 0,
        }
    }

    /// For a request refused before it could be read.
    fn unread(app: &App<'t>, turn: &Turn<'_>, tally: &'t mut Tally) -> Told<'t> {
        Told {
            tally,
            log: app.server().and_then(|s| s.access_log.as_deref()),
            label: Label::new("", ""),
            began: turn.now,
            peer: turn.peer,
            exchange: turn.exchange,
            stream: 0,
        }
    }

    /// The reply is complete in the output: `status`, `bytes` of it.
    fn now(&mut self, status: u16, bytes: u64) {
        self.tally.replied(status);
        if let Some(log) = self.log {
            access::now(
                log,
                Some(&self.label),
                (status, bytes),
                self.began,
                self.peer,
            );
        }
    }

    /// The exchange goes on past the handler (`status` and `bytes` sent so far, 0 for none).
    fn later(&mut self, kind: AccessKind, status: u16, bytes: u64) {
        if status > 0 {
            self.tally.replied(status);
        }
        if let (Some(_), ReplyTo::Conn(id) | ReplyTo::Stream(id)) = (self.log, self.exchange) {
            access::later(
                (id, self.stream),
                &self.label,
                self.began,
                self.peer,
                (kind, status, bytes),
            );
        }
    }
}

/// The header lines of an event stream's head beside its type: never stored by a cache, never
/// held back by a buffering proxy (nginx reads `X-Accel-Buffering`).
fn stream_headers() -> Vec<crate::http::Header> {
    vec![
        crate::http::Header::new("Cache-Control", "no-store"),
        crate::http::Header::new("X-Accel-Buffering", "no"),
    ]
}

/// Calls the handler as the answer to `exchange`, timed from `told.began` by the stall rule
/// (one clock read); whether it panicked, and the reply it deferred. One place for HTTP/1.1's
/// requests and HTTP/2's streams.
fn call_handler(
    app: &App<'_>,
    request: Request,
    (exchange, worker): (ReplyTo, usize),
    told: &mut Told<'_>,
    slot: &mut Option<Response>,
) -> (bool, Option<Deferral>) {
    let watch = Watch::start(told.began);
    told.began = watch.began;
    let called = answering(exchange, || respond(app.handler(), request, slot));
    if let Some(shared) = app.server() {
        watch.stop(&shared.stalls, worker, told.label.as_str());
    }
    called
}

/// Runs the handler on `request`, its reply written into `slot` and used there (not moved out:
/// see [`render_in_place`]); whether it panicked (`slot` is then empty).
fn respond(
    handler: &dyn Fn(Request) -> Response,
    request: Request,
    slot: &mut Option<Response>,
) -> bool {
    catch_unwind(AssertUnwindSafe(|| *slot = Some(handler(request)))).is_err()
}

/// What a request whose handler panicked gets: a 500 that closes.
fn panic_reply() -> Response {
    crate::http::with_header(Refusal::Panicked.response(), "Connection", "close")
}

/// Who sent `request`: its connection's `peer`, and the proxies trusted for it (none unless
/// the peer is one of the server's proxies).
fn from_peer(app: &App, request: &mut Request, peer: Option<std::net::SocketAddr>) {
    if let Some(peer) = peer {
        request.set_peer(peer);
    }
    if let Some(shared) = app.server() {
        request.set_proxies(shared.proxies.hops_for(peer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::text_response;

    #[test]
    fn a_panicking_handler_gets_a_500_that_closes() {
        let mut slot = None;
        assert!(respond(
            &|_req| panic!("boom"),
            Request::default(),
            &mut slot
        ));
        assert!(slot.is_none());
        let res = panic_reply();
        assert_eq!(res.status, 500);
        assert_eq!(res.header("connection"), "close");
        let mut slot = None;
        let handler = |_req| text_response(201, "made");
        assert!(!respond(&handler, Request::default(), &mut slot));
        let res = slot.expect("answered");
        assert_eq!((res.status, &res.body[..]), (201, &b"made"[..]));
    }

    fn handle(req: Request) -> Response {
        text_response(200, req.into_body())
    }

    /// Answers `input` in one call; the output and where it stopped.
    fn run(input: &[u8], inline_limit: usize) -> (String, Answered) {
        let mut out = Vec::new();
        let mut reader = RequestReader::new(Default::default(), 1024);
        let mut turn = Turn {
            out: &mut out,
            out_at: 0,
            high_water: usize::MAX,
            inline_limit,
            now: Instant::now(),
            fd: None,
            peer: None,
            exchange: ReplyTo::Blocking,
            worker: 0,
        };
        let done = answer(&App::HandlerOnly(&handle), &mut reader, input, &mut turn);
        (String::from_utf8_lossy(&out).into_owned(), done)
    }

    #[test]
    fn pipelined_requests_are_answered_in_order_and_an_incomplete_one_waits() {
        let input = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nA\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nBGET / HTT";
        let (out, done) = run(input, usize::MAX);
        assert_eq!(done.completed, 2);
        assert!(matches!(done.stop, Stop::Incomplete));
        assert_eq!(&input[done.used..], b"GET / HTT");
        let bodies: Vec<&str> = out.split("\r\n\r\n").skip(1).map(|b| &b[..1]).collect();
        assert_eq!(bodies, ["A", "B"]);
    }

    #[test]
    fn a_refusal_closes_and_a_refused_head_request_gets_no_body() {
        let (out, done) = run(b"GET / HTTP/1.1\r\n\r\n", usize::MAX);
        assert!(matches!(done.stop, Stop::Close));
        assert!(out.starts_with("HTTP/1.1 400 ") && !out.ends_with("\r\n\r\n"));
        let (out, _) = run(b"HEAD / HTTP/1.1\r\n\r\n", usize::MAX);
        assert!(
            out.starts_with("HTTP/1.1 400 ") && out.ends_with("\r\n\r\n"),
            "{out}"
        );
        assert!(out.contains("Content-Length: "), "{out}");
        let (out, _) = run(
            b"HEAD / HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n",
            usize::MAX,
        );
        assert!(
            out.starts_with("HTTP/1.1 413 ") && out.ends_with("\r\n\r\n"),
            "{out}"
        );
    }

    #[test]
    fn a_large_body_is_handed_back_and_close_drops_the_rest() {
        let (out, done) = run(
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody",
            4,
        );
        assert!(matches!(&done.stop, Stop::Body { body, keep: true } if body == "body"));
        assert!(out.ends_with("\r\n\r\n"));
        let input = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n";
        let (_, done) = run(input, usize::MAX);
        assert!(matches!(done.stop, Stop::Close));
        assert_eq!((done.used, done.completed), (input.len(), 1));
    }
}
