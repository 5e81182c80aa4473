//! What a whole request comes to, on any HTTP version: the `serve_n` budget, the live routes
//! (a WebSocket, an event stream), the protocol's own hand-over (HTTP/1.1's `taken` hook), the
//! handler — timed by the stall rule, its panic caught — and its reply: given at once, deferred
//! (the exchange goes on in `later.rs`), or a live connection the exchange becomes; each
//! counted and logged. A protocol answers through its [`Replier`].

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use crate::http::{Body, Refusal, ReplyRules, Request, Response};
use crate::live::{LiveConn, Watch};
use crate::sse::SseApp;
use crate::ws::{WsApp, agree, extensions_of};

use super::Origin;
use super::app::App;
use super::record::Record;
use crate::server::access::{AccessKind, Label};
use crate::server::deferred::{Deferral, Patience, Wait, answering, nothing_came};
use crate::server::figures::Tally;
use crate::server::replies::ReplyTo;
use crate::server::shared::LiveRoute;
use crate::server::streamed::{Later, ThreadStream};

/// What a request came to.
pub(crate) enum Started {
    /// Answered at once through the replier. `keep`: the connection serves on after it;
    /// `body`: a large body left for an HTTP/1.1 strand to write from the handler's own
    /// buffer (empty otherwise); `spent`: the `serve_n` budget is spent with it.
    Answered { keep: bool, body: Body, spent: bool },
    /// The handler answers later: the exchange waits for this reply (see `later.rs`).
    Deferred(Wait, Patience),
    /// A live route took the exchange, its head sent: the connection (HTTP/1.1) or the stream
    /// (HTTP/2) carries this live connection from now on — a WebSocket, or an event stream.
    Live {
        conn: Box<dyn LiveConn>,
        websocket: bool,
    },
    /// (`handle_conn` only) The deferred reply is streamed from the handler's thread.
    Streamed(Box<Streamed>),
    /// The `taken` hook took the connection.
    Taken,
    /// The `taken` hook failed: close at once, writing nothing more.
    Failed,
    /// A WebSocket asked for with HTTP/1.1's upgrade over HTTP/2: refused with
    /// HTTP_1_1_REQUIRED, which tells the client to ask again over HTTP/1.1.
    Http11Required,
    /// Past the `serve_n` budget: not served.
    NotServed,
}

/// A streamed reply for `handle_conn`, with what its request allows.
pub(crate) struct Streamed {
    pub(crate) stream: ThreadStream,
    pub(crate) rules: ReplyRules,
}

/// Whether a request asks for a WebSocket route, as its protocol asks.
pub(crate) enum AsksWebSocket<'a> {
    No,
    Route(&'a LiveRoute<dyn WsApp>),
    /// In a way this protocol does not serve (HTTP/1.1's upgrade headers over HTTP/2).
    Wrongly,
}

/// How one HTTP version answers a request at once: all [`start`] needs of a strand.
pub(crate) trait Replier {
    /// Sends `res` whole; the bytes it came to, whether the connection serves on, and a large
    /// body left for the strand to write from its own buffer (empty when none is).
    fn whole(&mut self, res: &mut Response, rules: ReplyRules, now: Instant) -> (u64, bool, Body);
    /// Sends an event stream's head, the exchange left open for its events — or ended with it
    /// when `ends` (a `HEAD` request); the bytes.
    fn open_events(&mut self, head: &Response, ends: bool, now: Instant) -> u64;
    /// Which WebSocket route `request` asks for, as this version asks for one.
    fn websocket_route<'a>(&self, app: &App<'a>, request: &mut Request) -> AsksWebSocket<'a>;
    /// This version's checks of a WebSocket request (a refusal: 400, 426); what its opening
    /// head needs (HTTP/1.1's `Sec-WebSocket-Accept`).
    fn check_websocket(&self, request: &Request) -> Result<String, Response>;
    /// Sends a WebSocket's opening head (`accept` as the check said; the extensions agreed):
    /// its status and bytes.
    fn open_websocket(
        &mut self,
        accept: &str,
        extensions: Option<&str>,
        now: Instant,
    ) -> (u16, u64);
    /// Asked before the handler: the connection handed over elsewhere (HTTP/1.1's `taken`
    /// hook), or `None` to go on.
    fn hand_over(&mut self, app: &App<'_>) -> Option<Started>;
}

/// Starts the exchange of a whole `request` (named `label` in the log; the rules its reply
/// keeps to) from `origin`, counting it in `tally`.
pub(crate) fn start(
    app: &App<'_>,
    (mut request, label): (Request, Label<'_>),
    rules: ReplyRules,
    origin: &Origin,
    replier: &mut impl Replier,
    tally: &mut Tally,
) -> Started {
    if !app.spend() {
        return Started::NotServed;
    }
    from_peer(app, &mut request, origin.peer);
    let mut record = Record::of(app, (&request, label), rules, origin, tally);
    match replier.websocket_route(app, &mut request) {
        AsksWebSocket::Route(route) => {
            return websocket(
                app,
                route,
                &request,
                (rules, origin.now),
                replier,
                &mut record,
            );
        }
        AsksWebSocket::Wrongly => return Started::Http11Required,
        AsksWebSocket::No => {}
    }
    if let Some(route) = app.sse_route(&mut request) {
        return events(
            app,
            route,
            &request,
            (rules, origin.now),
            replier,
            &mut record,
        );
    }
    if let Some(handed) = replier.hand_over(app) {
        return handed;
    }
    let mut slot = None;
    let (panicked, deferral) = call_handler(app, request, origin, &mut record, &mut slot);
    record.tally.served += 1;
    let spent = app.budget_spent();
    let mut later = None;
    match (deferral, panicked) {
        (None, _) => {}
        // A handler that panicked after deferring is answered 500 now.
        (Some(Deferral::Conn(seq, _)), true) => {
            if let Some(shared) = app.server() {
                shared.replies.close_for(origin.reply_to, seq);
            }
        }
        (Some(Deferral::Conn(seq, patience)), false) => {
            record.later(AccessKind::Deferred, 0, 0);
            let wait = Wait {
                seq,
                rules: rules.keeping(!spent),
                poll: patience.is_poll(),
            };
            return Started::Deferred(wait, patience);
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
                    return Started::Streamed(Box::new(Streamed { stream, rules }));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if patience.is_poll() => {
                    nothing_came()
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
    let rules = rules.keeping(!spent && !app.shutting_down());
    let (bytes, keep, body) = replier.whole(res, rules, origin.now);
    record.now(status, bytes);
    Started::Answered { keep, body, spent }
}

/// A request for a WebSocket route: the protocol's checks, then the extensions agreed and the
/// application's decision — all before anything but a refusal is sent.
fn websocket(
    app: &App<'_>,
    route: &LiveRoute<dyn WsApp>,
    request: &Request,
    (rules, now): (ReplyRules, Instant),
    replier: &mut impl Replier,
    record: &mut Record<'_>,
) -> Started {
    let decided = replier.check_websocket(request).and_then(|accept| {
        let (extensions, conn) = accept_websocket(app, route, request)?;
        Ok((accept, extensions, conn))
    });
    match decided {
        Ok((accept, extensions, conn)) => {
            let (status, bytes) = replier.open_websocket(&accept, extensions.as_deref(), now);
            record.later(AccessKind::WebSocket, status, bytes);
            Started::Live {
                conn,
                websocket: true,
            }
        }
        Err(refusal) => refuse(refusal, (rules, now), replier, record),
    }
}

/// A request for a Server-Sent Events route: the application's decision, then the stream's
/// head (a `HEAD` request gets the head alone, and its exchange ends there).
fn events(
    app: &App<'_>,
    route: &LiveRoute<dyn SseApp>,
    request: &Request,
    (rules, now): (ReplyRules, Instant),
    replier: &mut impl Replier,
    record: &mut Record<'_>,
) -> Started {
    let conn = match accept_stream(app, route, request) {
        Ok(conn) => conn,
        Err(refusal) => return refuse(refusal, (rules, now), replier, record),
    };
    let head = Response::new(200, "text/event-stream", stream_headers(), "");
    let bytes = replier.open_events(&head, rules.head_only, now);
    if rules.head_only {
        record.now(head.status, bytes);
        let (keep, body, spent) = (false, Body::default(), false);
        return Started::Answered { keep, body, spent };
    }
    record.later(AccessKind::EventStream, head.status, bytes);
    Started::Live {
        conn,
        websocket: false,
    }
}

/// A live route's refusal: sent whole (its head alone for `HEAD`) and counted; an HTTP/1.1
/// connection closes after it.
fn refuse(
    mut refusal: Response,
    (rules, now): (ReplyRules, Instant),
    replier: &mut impl Replier,
    record: &mut Record<'_>,
) -> Started {
    let status = refusal.status;
    let (bytes, _, body) = replier.whole(&mut refusal, rules.keeping(false), now);
    record.now(status, bytes);
    Started::Answered {
        keep: false,
        body,
        spent: false,
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

/// The header lines of an event stream's head beside its type: never stored by a cache, never
/// held back by a buffering proxy (nginx reads `X-Accel-Buffering`).
fn stream_headers() -> Vec<crate::http::Header> {
    vec![
        crate::http::Header::new("Cache-Control", "no-store"),
        crate::http::Header::new("X-Accel-Buffering", "no"),
    ]
}

/// Calls the handler as the answer to the exchange from `origin`, timed by the stall rule;
/// whether it panicked, and the reply it deferred.
fn call_handler(
    app: &App<'_>,
    request: Request,
    origin: &Origin,
    record: &mut Record<'_>,
    slot: &mut Option<Response>,
) -> (bool, Option<Deferral>) {
    let watch = app.server().map(|s| Watch::start(&s.stalls, origin.now));
    let reply_to: ReplyTo = origin.reply_to;
    let called =
        record.handler_runs(|| answering(reply_to, || respond(app.handler(), request, slot)));
    if let (Some(watch), Some(shared)) = (watch, app.server()) {
        watch.stop(&shared.stalls, origin.worker, || record.label.as_str());
    }
    called
}

/// Runs the handler on `request`, its reply written into `slot` and used there (not moved out:
/// a replier renders it in place); whether it panicked (`slot` is then empty).
#[inline]
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
    match (app.server(), peer) {
        (Some(shared), _) => request.set_caller(peer, &shared.proxies),
        (None, Some(peer)) => request.set_peer(peer),
        (None, None) => {}
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
}
