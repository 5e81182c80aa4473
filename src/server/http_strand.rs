//! The HTTP/1.1 connection strand: one connection's whole state, parked in the reactor's slab
//! between resumes.
//!
//! Reads land in the worker's scratch buffer and requests that arrive whole are answered
//! straight from it; a strand keeps input only while a request is incomplete and output only
//! while the socket has not taken it, so an idle keep-alive connection holds no heap memory.
//! Replies to every complete request in a read are rendered into one buffer and written
//! together (pipelining). A large body is written from the handler's own buffer, never copied,
//! and while it is pending the strand stops reading (backpressure). What each request comes to
//! is decided by [`dispatch`](super::dispatch), shared with the blocking `handle_conn`.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use reactor::{Io, Then};

use super::request_reader::RequestReader;
use crate::http::Response;
use crate::http::later::HttpMsg;
use crate::http::render::{render, render_in_place, render_stream_head};
use crate::http::stream_framing::StreamFraming;
use crate::live::{Charge, Command};

use super::access::{self, Came, Protocol};
use super::connection_loop::{self, Go, HttpConnection};
use super::deferred::{Patience, Wait};
use super::dispatch::{Answered, Stop, Turn, Upgrade, answer};
use super::exchange::{self, App, Framer, Origin, Phase, Step};
use super::output::Output;
use super::peer::Peer;
use super::replies::ReplyTo;
use super::shared::ServerShared;
use super::streamed::Streaming;
use crate::http::Refusal;
use crate::http::ReplyRules;
use crate::http::later::FlowEnd;

/// Output queued beyond which a strand stops reading until the socket takes it.
const HIGH_WATER: usize = 64 * 1024;
/// Bodies at least this long are written from the handler's buffer instead of being copied.
const INLINE_BODY: usize = 16 * 1024;

/// Where a connection is. What it waits for (reading, writing) follows from this and from
/// what is buffered: see [`HttpStrand::park`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Serving requests: reading them, answering, writing replies.
    Serving,
    /// The last reply is queued: write it, then linger.
    Closing,
    /// Our side is shut; reading and dropping what the client still sends, so that closing
    /// does not reset the connection before it has read the reply.
    Lingering,
}

/// Which timeout the deadline stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    /// Keep-alive: waiting for a request to start.
    Idle,
    /// A request has started and must be whole in time (body progress extends it).
    Request,
    /// The socket takes no output.
    Write,
    /// Lingering after the last reply.
    Linger,
    /// Waiting for a deferred reply ([`Server::reply_timeout`](crate::http::Server::reply_timeout)).
    Reply,
}

/// What the unanswered input waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waits {
    /// More bytes: the input is (the start of) an incomplete request.
    Bytes,
    /// The output to drain: answering stopped with whole requests still in the input
    /// (backpressure, or a `taken` hook that must see earlier replies written first).
    Output,
    /// The deferred reply to the request before them.
    Reply,
}

/// What answering needs of `Io` while the scratch buffer is borrowed.
struct Ctx {
    now: Instant,
    fd: RawFd,
    id: reactor::ConnId,
    peer: Option<SocketAddr>,
    /// TLS's ALPN chose HTTP/2: the connection speaks nothing else.
    h2_by_alpn: bool,
    /// The connection is TLS.
    tls: bool,
}

/// What taking read bytes needs and came to (see [`HttpConnection::Taking`]).
struct Taking {
    ctx: Ctx,
    outcome: Outcome,
}

/// What one read and answer came to, for the resume loop.
#[derive(Default)]
struct Outcome {
    /// Requests answered.
    completed: usize,
    /// The connection's request budget is spent: our side shuts once the replies are out.
    spent: bool,
    leaves: Leaves,
}

/// Whether the connection leaves this strand after the read (the `Stop`s that end HTTP here).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Leaves {
    /// It stays: more requests, or the end of the replies.
    #[default]
    No,
    /// Upgraded to WebSocket: `ConnStrand` turns the strand into a WebSocket one.
    Upgraded,
    /// The client spoke HTTP/2's preface: `ConnStrand` turns the strand into an HTTP/2 one.
    Http2,
    /// The `taken` hook took the socket.
    Taken,
    /// The `taken` hook failed: closed at once.
    Failed,
}

/// One HTTP/1.1 connection: the server it serves, and what it is doing — nothing at all
/// between requests (a keep-alive connection waiting for its next request holds no heap memory
/// and its idle deadline lives in the reactor's timer wheel, see [`Io::deadline`]).
pub(crate) struct HttpStrand {
    /// Who the connection is from (the server is the worker's: see `worker`).
    peer: Peer,
    /// `None` while idle; made on the stack when a request arrives and boxed only if the
    /// connection has to keep something when the resume ends (part of a request, unwritten
    /// output, a closing state).
    busy: Option<Box<Busy>>,
    /// The deferred reply the connection waits for. Kept here, not in `busy`, so that a
    /// connection parked for its reply with nothing else to do holds no allocation.
    wait: Option<Wait>,
}

/// What a connection keeps while it is doing something.
struct Busy {
    state: State,
    /// Bytes of an incomplete request (or of requests held back by backpressure).
    input: Vec<u8>,
    /// What `input` waits for: more bytes, or the output to drain.
    waits: Waits,
    /// Parse state of the incomplete request in `input` (boxed: a strand between requests
    /// holds none).
    reader: Option<Box<RequestReader>>,
    output: Output,
    deadline: Deadline,
    timer: Timer,
    /// A WebSocket upgrade just accepted: its request and the bytes that came after it.
    upgrade: Option<Box<Upgrade>>,
    /// The deferred reply's body being streamed (its request is still `wait`).
    stream: Option<Streaming>,
    /// The first bytes of a connection that turned out to speak HTTP/2 (its preface first).
    http2: Option<Vec<u8>>,
    /// What the output holds, charged to the server's output budget while the peer has not
    /// taken it all (see [`Busy::owes_too_much`]).
    charge: Charge,
}

/// When a busy connection's wait ends, as far as it knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deadline {
    /// Not known here: the connection was idle, and its keep-alive deadline is the one the
    /// reactor holds. Read back ([`Io::deadline`]) only if it is kept: a request that arrives
    /// restarts it anyway, so the common path never converts it.
    InReactor,
    /// No deadline.
    Never,
    At(Instant),
}

impl HttpStrand {
    pub(crate) fn new(peer: Peer) -> HttpStrand {
        HttpStrand {
            peer,
            busy: None,
            wait: None,
        }
    }

    /// Runs `f` on what the connection is doing — an idle connection's on the stack, boxed
    /// afterwards only if there is something to keep.
    fn with_busy(
        &mut self,
        io: &mut Io<'_, Command>,
        f: impl FnOnce(&mut Busy, &mut Resume<'_>, &mut Io<'_, Command>) -> Then,
    ) -> Then {
        super::worker::with(|shared| {
            let Some(shared) = shared else {
                return Then::Close; // never: the worker installed its server at open
            };
            let conn = Resume {
                shared,
                wait: &mut self.wait,
                peer: &mut self.peer,
            };
            Self::run_busy(&mut self.busy, conn, io, f)
        })
    }

    fn run_busy(
        busy: &mut Option<Box<Busy>>,
        mut conn: Resume<'_>,
        io: &mut Io<'_, Command>,
        f: impl FnOnce(&mut Busy, &mut Resume<'_>, &mut Io<'_, Command>) -> Then,
    ) -> Then {
        match busy {
            Some(b) => {
                let next = f(b, &mut conn, io);
                if b.is_done() {
                    *busy = None;
                }
                next
            }
            None => {
                let mut fresh = Busy::new(conn.wait.is_some());
                let next = f(&mut fresh, &mut conn, io);
                if !fresh.is_done() {
                    *busy = Some(Box::new(fresh));
                }
                next
            }
        }
    }

    pub(crate) fn resume(&mut self, io: &mut Io<'_, Command>, timeout: bool) -> Then {
        self.with_busy(io, |busy, conn, io| busy.resume(conn, io, timeout))
    }

    pub(crate) fn run(&mut self, io: &mut Io<'_, Command>) -> Then {
        self.with_busy(io, |busy, conn, io| busy.run(conn, io))
    }

    /// A deferred reply arrived: sent if it is the one the connection waits for.
    pub(crate) fn message(&mut self, io: &mut Io<'_, Command>, msg: HttpMsg) -> Then {
        self.with_busy(io, |busy, conn, io| busy.delivered(conn, io, msg))
    }

    /// The connection left the reactor: a reply it waited for is no longer wanted.
    pub(crate) fn closed(&mut self, id: reactor::ConnId) {
        if let Some(wait) = self.wait.take() {
            super::worker::with(|shared| {
                if let Some(shared) = shared {
                    exchange::abandon(shared, id, wait);
                }
            });
        }
    }

    /// The server is stopping: a request that has arrived (whole or in part) is read and
    /// answered, its reply the last; a connection with nothing unread shuts its side and
    /// lingers briefly (`DRAIN_LINGER`), dropping what crosses it.
    pub(crate) fn drain(&mut self, io: &mut Io<'_, Command>) -> Then {
        self.with_busy(io, |busy, conn, io| {
            if let Some(wait) = *conn.wait {
                let exchange = (io.id(), wait, busy.phase());
                let step = exchange::stopping(conn.shared, exchange, io.now(), &mut busy.framer());
                busy.stepped(conn, step);
            }
            busy.run(conn, io)
        })
    }

    pub(crate) fn held_bytes(&self) -> usize {
        self.busy
            .as_ref()
            .map_or(0, |b| std::mem::size_of::<Busy>() + b.held_bytes())
    }

    /// After the HTTP/2 preface: the bytes read so far (the preface first), and the peer.
    #[inline]
    pub(crate) fn take_http2(&mut self) -> Option<(Vec<u8>, Peer)> {
        let busy = self.busy.as_mut()?;
        let early = busy.http2.take()?;
        Some((early, self.peer))
    }

    /// After an accepted upgrade: the upgrade, and the output the WebSocket strand inherits
    /// (the 101 and anything before it not yet written).
    #[inline]
    pub(crate) fn take_upgrade(&mut self) -> Option<(Box<Upgrade>, Vec<u8>)> {
        let busy = self.busy.as_mut()?;
        let upgrade = busy.upgrade.take()?;
        Some((upgrade, busy.output.take_unwritten()))
    }
}

/// What a resume of the connection shares beside its busy part: the server, and the reply the
/// connection waits for.
struct Resume<'a> {
    shared: &'a ServerShared,
    wait: &'a mut Option<Wait>,
    peer: &'a mut Peer,
}

impl Busy {
    /// An idle connection's, or one waiting for a deferred reply (parked until the keep-alive
    /// or reply deadline the reactor holds).
    fn new(waiting: bool) -> Busy {
        Busy {
            state: State::Serving,
            input: Vec::new(),
            waits: Waits::Bytes,
            reader: None,
            output: Output::default(),
            deadline: Deadline::InReactor,
            timer: if waiting { Timer::Reply } else { Timer::Idle },
            upgrade: None,
            stream: None,
            http2: None,
            charge: Charge::default(),
        }
    }

    /// Idle again, with nothing to keep: what [`Busy::new`] would make (the deadline apart,
    /// which the reactor keeps).
    fn is_done(&self) -> bool {
        self.is_idle()
            && self.upgrade.is_none()
            && self.http2.is_none()
            && self.stream.is_none()
            && self.output.held_bytes() == 0
            && self.input.capacity() == 0
    }

    /// Serving, with nothing to write and no part of a request read.
    fn is_idle(&self) -> bool {
        self.state == State::Serving
            && !self.output.has_pending()
            && self.input.is_empty()
            && self.reader.is_none()
    }

    /// Whether buffered requests must wait before they are answered: after the last reply, or
    /// behind a large body being written (backpressure; `answer` applies the other rules).
    fn held_back(&self) -> bool {
        self.state != State::Serving
            || self.output.writing_body()
            || self.output.pending() >= HIGH_WATER
            || (self.waits == Waits::Output && self.output.has_pending())
    }

    /// Whether the input holds requests answering stopped at, which may be answered now.
    fn answers_waiting(&self) -> bool {
        self.waits == Waits::Output && !self.input.is_empty() && !self.held_back()
    }

    /// Answers every complete request at the start of `buf`; returns the bytes used.
    fn answer(
        &mut self,
        conn: &mut Resume<'_>,
        buf: &[u8],
        ctx: &Ctx,
        outcome: &mut Outcome,
    ) -> usize {
        if conn.wait.is_some() {
            self.waits = Waits::Reply;
            return 0;
        }
        if self.held_back() {
            self.waits = Waits::Output;
            return 0;
        }
        let shared = conn.shared;
        // The parse state lives on the stack, and is boxed only when a request is left
        // incomplete (a connection between requests holds none).
        let limits = &shared.limits;
        let mut saved = self.reader.take();
        let mut fresh = None;
        let reader: &mut RequestReader = match &mut saved {
            Some(r) => r,
            None => fresh.insert(RequestReader::new(limits.head, limits.max_body)),
        };
        let (out, out_at) = self.output.buffer();
        let mut turn = Turn {
            out,
            out_at,
            high_water: HIGH_WATER,
            inline_limit: INLINE_BODY,
            fd: Some(ctx.fd),
            origin: Origin {
                now: ctx.now,
                peer: ctx.peer,
                reply_to: ReplyTo::Conn(ctx.id),
                stream: 0,
                worker: ctx.id.worker() as usize,
                tls: ctx.tls,
            },
        };
        let Answered {
            used,
            completed,
            spent,
            stop,
        } = answer(&App::Server(shared), reader, buf, &mut turn);
        let keep_reader = !reader.is_fresh();
        outcome.completed += completed;
        outcome.spent |= spent;
        self.waits = match stop {
            Stop::Held | Stop::Body { keep: true, .. } => Waits::Output,
            Stop::Deferred(..) => Waits::Reply,
            _ => Waits::Bytes,
        };
        match stop {
            // Keep the parse state of a request begun (say, after its 100 Continue).
            Stop::Incomplete | Stop::Held => {
                if keep_reader {
                    self.reader = saved.or_else(|| fresh.map(Box::new));
                }
            }
            Stop::Close => self.state = State::Closing,
            Stop::Body { body, keep } => {
                self.output.set_body(body);
                if !keep {
                    self.state = State::Closing;
                } else if keep_reader {
                    self.reader = saved.or_else(|| fresh.map(Box::new));
                }
            }
            Stop::Upgrade(upgrade) => {
                self.upgrade = Some(upgrade);
                outcome.leaves = Leaves::Upgraded;
            }
            Stop::Deferred(wait, patience) => {
                *conn.wait = Some(wait);
                if let Patience::Poll(wait) = patience {
                    // The poll's own wait, which `park` keeps (the timer is already Reply's).
                    self.timer = Timer::Reply;
                    self.set_deadline(Some(ctx.now + wait));
                }
            }
            Stop::Taken => outcome.leaves = Leaves::Taken,
            // (A streamed reply reaches a strand as messages, never as a `Stop`.)
            Stop::Failed | Stop::Streamed(_) => outcome.leaves = Leaves::Failed,
        }
        used
    }

    /// Takes bytes just read.
    fn take(&mut self, conn: &mut Resume<'_>, bytes: &[u8], ctx: &Ctx, outcome: &mut Outcome) {
        if self.state != State::Serving {
            return; // after the last reply, the rest is dropped
        }
        let was_idle = self.input.is_empty() && self.reader.is_none();
        if conn.shared.h2.is_some() && !conn.peer.speaks_http1() {
            // Only a connection's first bytes may be the preface (RFC 9113 §3.3): after an
            // HTTP/1.1 request it is a request line like any other, however it was segmented.
            // Agreed by ALPN, whatever comes is HTTP/2's to judge (a bad preface is its
            // PROTOCOL_ERROR).
            let said = match ctx.h2_by_alpn {
                true => Preface::Whole,
                false => preface(&self.input, bytes),
            };
            match said {
                Preface::Whole => {
                    let mut early = std::mem::take(&mut self.input);
                    early.extend_from_slice(bytes);
                    self.http2 = Some(early);
                    outcome.leaves = Leaves::Http2;
                    return;
                }
                Preface::Begun => {
                    self.input.extend_from_slice(bytes);
                    self.restart_request_timer(conn.shared, was_idle, ctx.now);
                    return;
                }
                Preface::No => conn.peer.spoke_http1(),
            }
        }
        if self.input.is_empty() {
            let used = self.answer(conn, bytes, ctx, outcome);
            if used < bytes.len() && self.keeps_input(outcome) {
                self.input.extend_from_slice(&bytes[used..]);
            }
        } else {
            self.input.extend_from_slice(bytes);
            self.answer_input(conn, ctx, outcome);
        }
        if conn.wait.is_none() {
            // (While a deferred reply is awaited its deadline stands.)
            let new_request = was_idle || outcome.completed > 0;
            self.restart_request_timer(conn.shared, new_request, ctx.now);
        }
    }

    /// Whether unused input still matters (the connection goes on serving).
    fn keeps_input(&self, outcome: &Outcome) -> bool {
        self.state == State::Serving && outcome.leaves == Leaves::No
    }

    /// Answers what `input` holds (after backpressure eased, or with more bytes).
    fn answer_input(&mut self, conn: &mut Resume<'_>, ctx: &Ctx, outcome: &mut Outcome) {
        let mut input = std::mem::take(&mut self.input);
        let used = self.answer(conn, &input, ctx, outcome);
        if used == input.len() || !self.keeps_input(outcome) {
            return; // `input` is dropped: nothing held
        }
        input.drain(..used);
        self.input = input;
    }

    /// A request started, or a body made progress: the request timer (re)starts.
    fn restart_request_timer(&mut self, shared: &ServerShared, new_request: bool, now: Instant) {
        let have = self.input.len();
        let body_progress = self
            .reader
            .as_mut()
            .is_some_and(|r| r.body_progressed(have));
        if !self.input.is_empty() && (new_request || body_progress) {
            self.timer = Timer::Request;
            self.set_deadline(Some(now + shared.limits.header_timeout));
        }
    }

    /// Parks, waiting for room to write what is pending and for the client's bytes if `read`,
    /// with the deadline the state calls for.
    fn park(
        &mut self,
        conn: &Resume<'_>,
        io: &Io<'_, Command>,
        progressed: bool,
        read: bool,
    ) -> Then {
        let shared = conn.shared;
        let limits = &shared.limits;
        let now = io.now();
        let (timer, after) = if self.output.has_pending() {
            (Timer::Write, limits.write_timeout)
        } else if conn.wait.is_some() {
            (Timer::Reply, shared.reply_timeout)
        } else if !self.input.is_empty() || self.reader.is_some() {
            (Timer::Request, limits.header_timeout)
        } else {
            (Timer::Idle, limits.idle_timeout)
        };
        let moved =
            timer != self.timer || (progressed && matches!(timer, Timer::Idle | Timer::Write));
        if !moved && self.deadline == Deadline::InReactor {
            self.set_deadline(io.deadline());
        }
        if moved || !matches!(self.deadline, Deadline::At(_)) {
            self.timer = timer;
            self.set_deadline(Some(now + after));
        }
        Then::Park {
            read,
            write: self.output.has_pending(),
            deadline: match self.deadline {
                Deadline::At(at) => Some(at),
                Deadline::InReactor | Deadline::Never => None,
            },
        }
    }

    /// The deadline to park with from now on (the reactor's is then no longer the one).
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline.map_or(Deadline::Never, Deadline::At);
    }

    /// Charges what the output holds to the server's output budget — only once something stays
    /// unwritten, so a reply written whole never touches it — and says whether the peer owes
    /// more than its share while the budget is spent (counted as a connection dropped for
    /// falling behind): every reply, deferred, long-poll or streamed, counts against the one
    /// budget with WebSocket and event-stream output.
    #[inline]
    fn owes_too_much(&mut self, conn: &Resume<'_>) -> bool {
        let pending = self.output.pending();
        if pending == 0 && !self.charge.is_held() {
            return false; // nothing owed, nothing charged: the common case, inlined
        }
        self.charge_output(conn, pending)
    }

    /// [`Busy::owes_too_much`] with something owed or charged.
    #[cold]
    fn charge_output(&mut self, conn: &Resume<'_>, pending: usize) -> bool {
        let budget = &conn.shared.ws_settings.live.budget;
        // A reply holds its whole buffer until its last byte is written, however much of it
        // the kernel took: its share is weighed on that.
        let cost = || self.output.held_bytes().max(pending);
        let sheds = self.charge.owes_too_much(budget, cost, pending);
        if sheds {
            crate::log::info!(owed_bytes = pending; "an HTTP connection closed: its peer does not take its replies while output is short");
        }
        sheds
    }

    /// Shuts our side and lingers (see `connection_loop::linger`). Inlined: the loop's
    /// `drained` and `next` both reach it, and as a call it costs every request (callgrind).
    #[inline(always)]
    fn linger(&mut self, conn: &Resume<'_>, io: &mut Io<'_, Command>) -> Then {
        let end = match (self.state, self.deadline) {
            (State::Lingering, Deadline::At(end)) => end,
            _ => {
                let Some(end) = connection_loop::begin_linger(io, conn.shared) else {
                    return Then::Close;
                };
                self.state = State::Lingering;
                self.input = Vec::new();
                self.reader = None;
                self.timer = Timer::Linger;
                self.set_deadline(Some(end));
                end
            }
        };
        connection_loop::linger(io, end)
    }

    /// One resume's loop (`connection_loop`), with this connection's decisions.
    fn run(&mut self, conn: &mut Resume<'_>, io: &mut Io<'_, Command>) -> Then {
        connection_loop::run(&mut Http1 { busy: self, conn }, io)
    }

    /// A deferred reply came (or its `Reply` was dropped, or a piece of a streamed reply):
    /// if it is for the request awaited, the exchange takes it (see `exchange`), and once the
    /// reply is complete what was pipelined behind it is answered.
    fn delivered(&mut self, conn: &mut Resume<'_>, io: &mut Io<'_, Command>, msg: HttpMsg) -> Then {
        if let Some(wait) = conn.wait.filter(|w| w.seq == msg.seq) {
            let exchange = (io.id(), wait, self.phase());
            let step = exchange::deliver(
                conn.shared,
                exchange,
                msg.what,
                io.now(),
                &mut self.framer(),
            );
            self.stepped(conn, step);
        } // else a reply already answered otherwise: dropped
        self.run(conn, io)
    }

    /// Where the awaited reply is.
    fn phase(&self) -> Phase {
        match self.stream {
            Some(_) => Phase::Streaming,
            None => Phase::Awaited,
        }
    }

    /// What the exchange writes through: this connection's output and streamed body.
    fn framer(&mut self) -> Http1Framer<'_> {
        Http1Framer {
            output: &mut self.output,
            stream: &mut self.stream,
        }
    }

    /// What the exchange's step means for the connection.
    fn stepped(&mut self, conn: &mut Resume<'_>, step: Step) {
        match step {
            Step::Unchanged => {}
            // A streamed head or piece is progress: the reply timer restarts.
            Step::Streaming => self.set_deadline(None),
            Step::Done { keep } => self.reply_done(conn, keep),
            // What is queued is written, then the connection closes, so the client sees an
            // incomplete body (no last chunk, or short of its length).
            Step::Cut => self.reply_done(conn, false),
        }
    }

    /// The deferred reply is complete in the output: the connection serves what follows it,
    /// or closes after it.
    fn reply_done(&mut self, conn: &mut Resume<'_>, keep: bool) {
        *conn.wait = None;
        if !keep {
            self.state = State::Closing;
        } else if self.waits == Waits::Reply {
            self.waits = Waits::Output;
        }
        // The next request's timer starts from here.
        self.timer = Timer::Idle;
        self.set_deadline(None);
    }

    fn timed_out(&mut self, conn: &mut Resume<'_>, io: &mut Io<'_, Command>) -> Then {
        if let (State::Lingering, Deadline::At(end)) = (self.state, self.deadline)
            && io.now() < end
        {
            // A stop's linger looks again each tick (see `live::linger_until`).
            return self.linger(conn, io);
        }
        self.set_deadline(None);
        match (self.timer, self.state, *conn.wait) {
            (Timer::Reply, State::Serving, Some(wait)) => {
                let exchange = (io.id(), wait, self.phase());
                let step = exchange::expire(conn.shared, exchange, io.now(), &mut self.framer());
                self.stepped(conn, step);
                self.run(conn, io)
            }
            (Timer::Request, State::Serving, None) if !self.output.has_pending() => {
                // The request did not arrive whole in time: 408, then close.
                let head_only = self.reader.as_ref().is_some_and(|r| r.is_head());
                self.input = Vec::new();
                self.reader = None;
                let refusal = Refusal::Timeout.response();
                let status = refusal.status;
                conn.shared.figures(worker_of(io)).replied(status);
                let (out, _) = self.output.buffer();
                let before = out.len();
                render(out, refusal, false, head_only, io.now(), usize::MAX);
                if let Some(log) = conn.shared.access_log.as_deref() {
                    let bytes = (out.len() - before) as u64;
                    let came = Came::peer(conn.peer.get(), Protocol::Http11, io.has_layer());
                    access::now(
                        log,
                        access::Label::default(),
                        (status, bytes),
                        (io.now(), &came, ""),
                    );
                }
                self.state = State::Closing;
                self.run(conn, io)
            }
            _ => Then::Close,
        }
    }

    fn resume(&mut self, conn: &mut Resume<'_>, io: &mut Io<'_, Command>, timeout: bool) -> Then {
        if timeout {
            return self.timed_out(conn, io);
        }
        if self.state == State::Lingering {
            return self.linger(conn, io);
        }
        self.run(conn, io)
    }

    fn held_bytes(&self) -> usize {
        self.input.capacity()
            + self.output.held_bytes()
            + self
                .reader
                .as_ref()
                .map_or(0, |r| std::mem::size_of::<RequestReader>() + r.held_bytes())
    }
}

/// A resume of the connection as the loop drives it. Its steps are inlined into the loop
/// (the hot path of every request: as calls they cost a keep-alive request ~4 % more
/// instructions, `bench/instructions.py`).
struct Http1<'b, 'a> {
    busy: &'b mut Busy,
    conn: &'b mut Resume<'a>,
}

impl HttpConnection for Http1<'_, '_> {
    type Taking = Taking;

    #[inline(always)]
    fn taking(&mut self, io: &mut Io<'_, Command>) -> Taking {
        let ctx = Ctx {
            now: io.now(),
            fd: io.stream().as_raw_fd(),
            id: io.id(),
            peer: self
                .conn
                .peer
                .get()
                .or_else(|| io.stream().peer_addr().ok()),
            h2_by_alpn: io.protocol() == Some(&b"h2"[..]),
            tls: io.has_layer(),
        };
        Taking {
            ctx,
            outcome: Outcome::default(),
        }
    }

    #[inline(always)]
    fn flush(&mut self, io: &mut Io<'_, Command>, progressed: &mut bool) -> std::io::Result<bool> {
        let busy = &mut *self.busy;
        let flushed = busy.output.flush(io, progressed);
        if let Some(stream) = &mut busy.stream {
            stream.written(busy.output.pending());
        }
        flushed
    }

    #[inline(always)]
    fn owes_too_much(&mut self) -> bool {
        self.busy.owes_too_much(self.conn)
    }

    /// After the last reply, linger once it is written; while answers are held back, wait for
    /// room; answer what backpressure held back before reading more; behind a deferred reply,
    /// keep what the client pipelines up to a bound.
    #[inline(always)]
    fn next(
        &mut self,
        _io: &mut Io<'_, Command>,
        taking: &mut Taking,
        flushed: bool,
        _progressed: &mut bool,
    ) -> Go {
        let busy = &mut *self.busy;
        match flushed {
            true if busy.state != State::Serving => return Go::Linger,
            false if busy.state != State::Serving || busy.held_back() => {
                return Go::Park { read: false };
            }
            _ => {}
        }
        if busy.answers_waiting() {
            busy.answer_input(self.conn, &taking.ctx, &mut taking.outcome);
            return Go::Again;
        }
        match self.conn.wait.is_some() && busy.input.len() >= HIGH_WATER {
            true => Go::Park { read: false },
            false => Go::Read,
        }
    }

    #[inline(always)]
    fn take(&mut self, taking: &mut Taking, bytes: &[u8]) {
        self.busy
            .take(self.conn, bytes, &taking.ctx, &mut taking.outcome);
    }

    #[inline(always)]
    fn taken(&mut self, io: &mut Io<'_, Command>, taking: &mut Taking) -> Option<Then> {
        let outcome = std::mem::take(&mut taking.outcome);
        match outcome.leaves {
            Leaves::Taken => return Some(Then::release(drop)),
            Leaves::Failed => return Some(Then::Close),
            // `ConnStrand` turns this strand into a WebSocket or HTTP/2 one before anything
            // else runs.
            Leaves::Upgraded | Leaves::Http2 => return Some(Then::sleep()),
            Leaves::No => {}
        }
        if outcome.spent {
            io.remote().shutdown();
        }
        None
    }

    #[inline(always)]
    fn peer_closed(&mut self) -> Option<Then> {
        if self.conn.wait.is_some() {
            // A client that stops sending while its reply is deferred has gone: the reply is
            // no longer wanted (`closed` tells its holder).
            return Some(Then::Close);
        }
        // The client is done sending. A request it left incomplete is dropped; replies
        // already queued are still written.
        self.busy.state = State::Closing;
        None
    }

    #[inline(always)]
    fn drained(&mut self, io: &mut Io<'_, Command>, progressed: bool) -> Then {
        if self.busy.is_idle() && self.conn.wait.is_none() && self.conn.shared.shutting_down() {
            // Shutting down, every request read is answered and written, and the socket holds
            // nothing more: our side is shut, and what the client sends from now on is read
            // and dropped until it closes (a request crossing our end of stream is not run,
            // and the client is not reset: it sees the end).
            return self.busy.linger(self.conn, io);
        }
        self.park(io, progressed, true)
    }

    #[inline(always)]
    fn park(&mut self, io: &mut Io<'_, Command>, progressed: bool, read: bool) -> Then {
        self.busy.park(self.conn, io, progressed, read)
    }

    #[inline(always)]
    fn linger(&mut self, io: &mut Io<'_, Command>) -> Then {
        self.busy.linger(self.conn, io)
    }
}

/// How HTTP/1.1 puts a deferred exchange's reply on the connection: rendered into its output
/// (a large body written from the handler's own buffer), a streamed body framed by its length
/// or in chunks.
struct Http1Framer<'a> {
    output: &'a mut Output,
    stream: &'a mut Option<Streaming>,
}

impl Framer for Http1Framer<'_> {
    fn reply(&mut self, mut res: Response, rules: ReplyRules, now: Instant) -> (u64, bool) {
        let (out, _) = self.output.buffer();
        let before = out.len();
        let (keep, body) = render_in_place(
            out,
            &mut res,
            rules.keep_alive,
            rules.head_only,
            now,
            INLINE_BODY,
        );
        let bytes = (out.len() - before + body.len()) as u64;
        if !body.is_empty() {
            self.output.set_body(body);
        }
        (bytes, keep)
    }

    fn open(
        &mut self,
        head: &Response,
        (length, _): (Option<u64>, bool),
        rules: ReplyRules,
        now: Instant,
    ) -> (u64, bool) {
        let framing = StreamFraming::choose(length, rules.http10);
        let (out, _) = self.output.buffer();
        let before = out.len();
        let keep = render_stream_head(out, head, rules.keep_alive, framing, now);
        ((out.len() - before) as u64, keep)
    }

    fn stream(&mut self, flow: FlowEnd, length: Option<u64>, rules: ReplyRules, keep: bool) {
        let framing = StreamFraming::choose(length, rules.http10);
        *self.stream = Some(Streaming::new(flow, framing, keep));
    }

    fn piece(&mut self, piece: Vec<u8>) -> (u64, bool) {
        let Some(stream) = self.stream.as_mut() else {
            return (0, false); // never: the exchange is streaming
        };
        self.output.compact();
        let (out, _) = self.output.buffer();
        let before = out.len();
        let within = stream.piece(out, &piece).is_ok();
        ((out.len() - before) as u64, within)
    }

    fn end(&mut self, trailers: Vec<crate::http::Header>) -> (u64, bool) {
        let Some(stream) = self.stream.take() else {
            return (0, false); // never: the exchange is streaming
        };
        let (out, _) = self.output.buffer();
        let before = out.len();
        let keep = stream.end(out, &trailers) && stream.keeps_alive();
        ((out.len() - before) as u64, keep)
    }

    fn cut(&mut self) {
        *self.stream = None;
    }
}

/// The index of the worker `io`'s connection runs on.
fn worker_of(io: &Io<'_, Command>) -> usize {
    io.id().worker() as usize
}

/// Whether a connection's first bytes are HTTP/2's preface (RFC 9113 §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Preface {
    /// All of it: the connection speaks HTTP/2.
    Whole,
    /// Its start: more bytes decide.
    Begun,
    /// Not the preface: HTTP/1.1.
    No,
}

/// What `held` (bytes kept from earlier reads) and then `bytes` are the start of.
fn preface(held: &[u8], bytes: &[u8]) -> Preface {
    let want = crate::h2::conn::PREFACE;
    let (a, rest) = want.split_at(held.len().min(want.len()));
    if held.len() > want.len() || held != a {
        return Preface::No;
    }
    let n = bytes.len().min(rest.len());
    if bytes[..n] != rest[..n] {
        Preface::No
    } else if n == rest.len() {
        Preface::Whole
    } else {
        Preface::Begun
    }
}

#[cfg(test)]
mod tests {
    use super::{Preface, preface};

    #[test]
    fn the_http2_preface_is_told_from_http1_at_any_split() {
        let whole = crate::h2::conn::PREFACE;
        for at in 0..=whole.len() {
            let (held, bytes) = whole.split_at(at);
            assert_eq!(preface(held, bytes), Preface::Whole, "split at {at}");
            if at > 0 && at < whole.len() {
                assert_eq!(preface(&[], &whole[..at]), Preface::Begun, "{at} bytes");
            }
        }
        let mut more = whole.to_vec();
        more.extend_from_slice(b"\0\0\x12\x04");
        assert_eq!(preface(&[], &more), Preface::Whole);
        let table: [(&[u8], &[u8], Preface); 5] = [
            (b"", b"GET / HTTP/1.1\r\n", Preface::No),
            (b"", b"POST / HTTP/1.1\r\n", Preface::No),
            (b"P", b"OST /", Preface::No),
            (b"PRI * HTTP/1.1", b"\r\n", Preface::No),
            (b"GET", b"", Preface::No),
        ];
        for (held, bytes, want) in table {
            assert_eq!(preface(held, bytes), want, "{held:?} {bytes:?}");
        }
    }
}
