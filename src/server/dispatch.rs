//! HTTP/1.1's requests as they are read from a connection's byte stream, answered in order
//! (pipelining) — `100 Continue`, refusals of what cannot be read, then each whole request's
//! exchange started ([`exchange::start`]) through HTTP/1.1's [`Replier`]: replies rendered
//! into the connection's output — and where answering stopped and why. One place for the
//! reactor's strand and the blocking [`handle_conn`](crate::http::handle_conn).

use std::os::fd::RawFd;
use std::time::Instant;

use super::access::Label;
use super::exchange::{self, App, AsksWebSocket, Origin, Record, Replier, Started, Streamed};
use super::request_reader::{CONTINUE, RequestReader, Step, empty_lines};
use super::taken::hand_over;
use crate::http::render::{render, render_in_place, render_open_ended};
use crate::http::{Body, Refusal, ReplyRules, Request, Response, Version};
use crate::live::LiveConn;
use crate::ws::{check_upgrade, switching_protocols};

use super::deferred::{Patience, Wait};
use super::figures::Tally;

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
    /// The socket, for the `taken` hook.
    pub(crate) fd: Option<RawFd>,
    /// Where the requests come from (stream 0: one exchange at a time).
    pub(crate) origin: Origin,
}

impl Turn<'_> {
    fn unwritten(&self) -> usize {
        self.out.len() - self.out_at
    }
}

/// An accepted WebSocket upgrade, or an event stream: the connection it becomes, and bytes the
/// client sent after the request.
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
    /// The connection became a live one (a WebSocket, its 101 queued; an event stream, its
    /// head queued).
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
        shared.figures(turn.origin.worker).add(&tally);
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
                    peer = turn.origin.peer.map_or_else(String::new, |p| p.to_string());
                    "request refused: {error}"
                );
                let before = turn.out.len();
                render(
                    turn.out,
                    refusal,
                    false,
                    head_only,
                    turn.origin.now,
                    usize::MAX,
                );
                let bytes = (turn.out.len() - before) as u64;
                Record::unread(app, &turn.origin, tally).now(status, bytes);
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
                match dispatch(app, request, (version, rules), (raw, early), turn, tally) {
                    Dispatched::Answered { keep, body, spent } => {
                        done.spent |= spent;
                        match (keep, body.is_empty()) {
                            (true, true) => {}
                            (true, false) => return done.finish_at(Stop::Body { body, keep }),
                            (false, true) => return done.finish(buf, Stop::Close),
                            (false, false) => return done.finish(buf, Stop::Body { body, keep }),
                        }
                    }
                    Dispatched::Deferred(wait, patience) => {
                        return done.finish_at(Stop::Deferred(wait, patience));
                    }
                    Dispatched::Stop(Stop::Streamed(s)) => {
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

/// Starts one complete request's exchange through HTTP/1.1's replier.
fn dispatch(
    app: &App<'_>,
    request: Request,
    (version, rules): (Version, ReplyRules),
    (raw, early): (&[u8], &[u8]),
    turn: &mut Turn<'_>,
    tally: &mut Tally,
) -> Dispatched {
    let origin = turn.origin;
    let label = request_line(&request, raw);
    let mut replier = Http1Replier { turn, version, raw };
    match exchange::start(app, (request, label), rules, &origin, &mut replier, tally) {
        Started::Answered { keep, body, spent } => Dispatched::Answered { keep, body, spent },
        Started::Deferred(wait, patience) => Dispatched::Deferred(wait, patience),
        Started::Live { conn, websocket } => {
            // A WebSocket's first frames may have come with its request; an event stream
            // reads nothing.
            let early = match websocket {
                true => early.to_vec(),
                false => Vec::new(),
            };
            Dispatched::Stop(Stop::Upgrade(Box::new(Upgrade { conn, early })))
        }
        Started::Streamed(streamed) => Dispatched::Stop(Stop::Streamed(streamed)),
        Started::Taken => Dispatched::Stop(Stop::Taken),
        Started::Failed => Dispatched::Stop(Stop::Failed),
        // `serve_n`: the budget is spent; this request is not served. (HTTP/2's refusal
        // never comes of an HTTP/1.1 request.)
        Started::NotServed | Started::Http11Required => Dispatched::Stop(Stop::Close),
    }
}

/// `request`'s method and target where they came: its request line at the start of `raw`
/// (what the parser read it from), which outlives the handler's call.
#[inline]
fn request_line<'r>(request: &Request, raw: &'r [u8]) -> Label<'r> {
    let (line, method_len) = request.request_line();
    let label = Label::new(raw.get(line).unwrap_or_default(), method_len);
    debug_assert_eq!(
        label.as_str().split_once(' ').map(|(m, _)| m),
        Some(request.method())
    );
    label
}

/// How HTTP/1.1 answers a request at once: rendered into the connection's output (a large
/// body handed back to be written from its own buffer); a WebSocket by the upgrade handshake;
/// the socket offered to the `taken` hook before the handler.
struct Http1Replier<'t, 'a> {
    turn: &'t mut Turn<'a>,
    version: Version,
    /// The request's bytes as read, for the `taken` hook.
    raw: &'t [u8],
}

impl Replier for Http1Replier<'_, '_> {
    #[inline]
    fn whole(&mut self, res: &mut Response, rules: ReplyRules, now: Instant) -> (u64, bool, Body) {
        let out = &mut *self.turn.out;
        let before = out.len();
        let inline = self.turn.inline_limit;
        let (keep, body) =
            render_in_place(out, res, rules.keep_alive, rules.head_only, now, inline);
        ((out.len() - before + body.len()) as u64, keep, body)
    }

    #[inline]
    fn open_events(&mut self, head: &Response, _ends: bool, now: Instant) -> u64 {
        let out = &mut *self.turn.out;
        let before = out.len();
        render_open_ended(out, head, now);
        (out.len() - before) as u64
    }

    #[inline]
    fn websocket_route<'r>(&self, app: &App<'r>, request: &mut Request) -> AsksWebSocket<'r> {
        match app.websocket_route(request) {
            Some(route) => AsksWebSocket::Route(route),
            None => AsksWebSocket::No,
        }
    }

    #[inline]
    fn check_websocket(&self, request: &Request) -> Result<String, Response> {
        check_upgrade(request, self.version)
    }

    #[inline]
    fn open_websocket(&mut self, accept: &str, extensions: Option<&str>, _: Instant) -> (u16, u64) {
        let head = switching_protocols(accept, extensions);
        self.turn.out.extend_from_slice(&head);
        (101, head.len() as u64)
    }

    #[inline]
    fn hand_over(&mut self, app: &App<'_>) -> Option<Started> {
        let (Some(taken), Some(fd)) = (app.taken(), self.turn.fd) else {
            return None;
        };
        match hand_over(taken, fd, self.raw) {
            Some(true) => Some(Started::Taken),
            Some(false) => None,
            // The hook failed (or the socket's mode could not be set back): close at once,
            // never read a socket that may be blocking.
            None => Some(Started::Failed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::text_response;
    use crate::server::replies::ReplyTo;

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
            fd: None,
            origin: Origin {
                now: Instant::now(),
                peer: None,
                reply_to: ReplyTo::Blocking,
                stream: 0,
                worker: 0,
                tls: false,
            },
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
