//! The HTTP/1.1 connection strand: one connection's whole state, parked in the reactor's slab
//! between resumes.
//!
//! Reads land in the worker's scratch buffer and requests that arrive whole are answered
//! straight from it; a strand keeps input only while a request is incomplete and output only
//! while the socket has not taken it, so an idle keep-alive connection holds no heap memory.
//! Replies to every complete request in a read are rendered into one buffer and written
//! together (pipelining). A large body is written from the handler's own buffer, never copied,
//! and while it is pending the strand stops reading (backpressure).

use std::cell::RefCell;
use std::io::IoSlice;
use std::mem::ManuallyDrop;
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reactor::{ConnId, Io, Next, Read, Service, Strand, Wake};

use crate::ws::{upgrade_reply, WsCommand, WsHandler, WsStrand};

use super::date::with_date;
use super::error::ParseError;
use super::exchange::{empty_lines, refusal, render, respond, RequestReader, Step, CONTINUE};
use super::head::HeadLimits;
use super::message::{text_response, Body, Request, Response};
use super::query::path_of;

/// Output queued beyond which a strand stops reading until the socket takes it.
const HIGH_WATER: usize = 64 * 1024;
/// Bodies at least this long are written from the handler's buffer instead of being copied.
const INLINE_BODY: usize = 16 * 1024;
/// Reads one resume makes before letting the worker's other connections run.
const READS_PER_TURN: usize = 16;
/// Output buffers a worker keeps for reuse, and the largest it keeps (so at most 256 KiB per
/// worker stays allocated for them).
const POOL_BUFFERS: usize = 16;
const POOL_BUFFER_MAX: usize = 16 * 1024;

/// A handler as the server stores it.
pub(crate) type DynHandler = dyn Fn(Request) -> Response + Send + Sync;
/// The `taken` hook of `serve_taking`.
pub(crate) type DynTaken = dyn Fn(&TcpStream, &[u8]) -> bool + Send + Sync;

/// Limits and timeouts of a server's connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) head: HeadLimits,
    pub(crate) max_body: u64,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) linger: Duration,
}

/// A counter on its own cache line, so workers do not contend.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct Counter(pub(crate) AtomicU64);

/// What all connections of a server share.
pub(crate) struct Shared {
    pub(crate) handler: Box<DynHandler>,
    pub(crate) taken: Option<Box<DynTaken>>,
    pub(crate) limits: Limits,
    /// For `serve_n`/`accept_n`: requests still to serve.
    pub(crate) budget: Option<AtomicU64>,
    /// Requests answered, per worker.
    pub(crate) served: Box<[Counter]>,
    /// The server's remote, set once the reactor exists: whether it is shutting down.
    pub(crate) remote: std::sync::OnceLock<reactor::Remote<WsCommand>>,
    /// Where WebSocket upgrades are accepted, and by whom.
    pub(crate) websocket: Option<WsRoute>,
}

/// The WebSocket application of a server: the path it serves and its callbacks.
pub(crate) struct WsRoute {
    pub(crate) path: String,
    pub(crate) handler: Arc<dyn WsHandler>,
    pub(crate) max_message: usize,
}

impl Shared {
    /// Takes one request from the budget: false when it is spent.
    fn spend(&self) -> bool {
        self.budget.as_ref().map_or(true, |b| {
            b.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        })
    }

    fn budget_spent(&self) -> bool {
        self.budget
            .as_ref()
            .is_some_and(|b| b.load(Ordering::Acquire) == 0)
    }

    fn shutting_down(&self) -> bool {
        self.remote.get().is_some_and(|r| r.is_shutting_down())
    }
}

/// Makes the strand of each connection a worker accepts.
pub(crate) struct HttpService {
    pub(crate) shared: Arc<Shared>,
}

impl Service for HttpService {
    type Strand = Conn;

    fn open(
        &mut self,
        _stream: &mio::net::TcpStream,
        _peer: std::net::SocketAddr,
        _id: ConnId,
    ) -> Conn {
        Conn::Http(HttpStrand {
            shared: Arc::clone(&self.shared),
            input: Vec::new(),
            reader: None,
            out: Vec::new(),
            out_at: 0,
            body: Body::default(),
            body_at: 0,
            deadline: None,
            timer: Timer::Idle,
            phase: Phase::Open,
            upgrade: None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Serving requests.
    Open,
    /// The last reply is queued: write it, then close.
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
    /// A request has started and must be whole in time (body reads extend it).
    Request,
    /// The socket takes no output.
    Write,
    /// Lingering after the last reply.
    Linger,
}

/// What the strand needs of `Io` while the scratch buffer is borrowed.
struct Ctx {
    now: Instant,
    fd: RawFd,
    worker: usize,
    scratch: usize,
}

/// What answering the buffered requests came to.
#[derive(Default)]
struct Answered {
    /// Requests completed.
    completed: usize,
    /// `taken` took the connection.
    taken: bool,
    /// The connection was upgraded to WebSocket.
    upgraded: bool,
    /// The `serve_n` budget is spent: the server should stop.
    spent: bool,
    /// The connection must close at once.
    failed: bool,
}

/// One HTTP/1.1 connection.
pub(crate) struct HttpStrand {
    shared: Arc<Shared>,
    /// Bytes of an incomplete request (or of requests held back by backpressure).
    input: Vec<u8>,
    /// Parse state of the incomplete request in `input`.
    reader: Option<Box<RequestReader>>,
    /// Rendered replies the socket has not taken, from `out_at` on.
    out: Vec<u8>,
    out_at: usize,
    /// A large body to write after `out`, from `body_at` on.
    body: Body,
    body_at: usize,
    deadline: Option<Instant>,
    timer: Timer,
    phase: Phase,
    /// A WebSocket upgrade just accepted: its request and the bytes that came after it.
    upgrade: Option<Box<Upgrade>>,
}

thread_local! {
    /// Output buffers of finished replies, reused so a busy connection does not allocate one per
    /// request and an idle one holds none.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

impl HttpStrand {
    /// Serving, with nothing to write and no part of a request read.
    fn is_idle(&self) -> bool {
        self.phase == Phase::Open
            && !self.has_output()
            && self.input.is_empty()
            && self.reader.is_none()
    }

    fn has_output(&self) -> bool {
        self.out_at < self.out.len() || self.body_at < self.body.len()
    }

    fn pending(&self) -> usize {
        (self.out.len() - self.out_at) + (self.body.len() - self.body_at)
    }

    /// Writes what is pending: `Ok(true)` when all of it went, `Ok(false)` when the socket is
    /// full. Sets `progressed` when any byte went.
    fn flush(
        &mut self,
        io: &mut Io<'_, WsCommand>,
        progressed: &mut bool,
    ) -> std::io::Result<bool> {
        while self.has_output() {
            let n = if self.body_at == self.body.len() {
                // One buffer: a plain write costs the kernel less than writev.
                io.write(&self.out[self.out_at..])?
            } else {
                io.write_vectored(&[
                    IoSlice::new(&self.out[self.out_at..]),
                    IoSlice::new(&self.body[self.body_at..]),
                ])?
            };
            if n == 0 {
                return Ok(false);
            }
            *progressed = true;
            let from_out = n.min(self.out.len() - self.out_at);
            self.out_at += from_out;
            self.body_at += n - from_out;
        }
        self.release_output();
        Ok(true)
    }

    /// Gives the output buffers back once everything is written.
    fn release_output(&mut self) {
        self.out_at = 0;
        self.body_at = 0;
        self.body = Body::default();
        let mut out = std::mem::take(&mut self.out);
        if out.capacity() > 0 && out.capacity() <= POOL_BUFFER_MAX {
            out.clear();
            POOL.with(|p| {
                let mut pool = p.borrow_mut();
                if pool.len() < POOL_BUFFERS {
                    pool.push(out);
                }
            });
        }
    }

    fn out_buffer(&mut self) -> &mut Vec<u8> {
        if self.out.capacity() == 0 {
            self.out = POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default();
        }
        &mut self.out
    }

    /// Whether a request must wait before it is answered: after the last reply, behind a large
    /// body (backpressure), or — when a `taken` hook may hand the connection over — behind any
    /// reply not yet written.
    fn held_back(&self) -> bool {
        self.phase != Phase::Open
            || self.body_at < self.body.len()
            || self.pending() >= HIGH_WATER
            || (self.shared.taken.is_some() && self.has_output())
    }

    /// Answers every complete request at the start of `buf`; returns the bytes used. The parse
    /// state of an incomplete request left at the end is kept (boxed: a strand between
    /// requests holds none).
    fn answer_all(&mut self, buf: &[u8], ctx: &Ctx, outcome: &mut Answered) -> usize {
        let mut fresh = None;
        let mut saved = self.reader.take();
        let reader = match &mut saved {
            Some(r) => &mut **r,
            None => fresh.insert(RequestReader::new(
                self.shared.limits.head,
                self.shared.limits.max_body,
            )),
        };
        let (used, incomplete) = self.answer_with(reader, buf, ctx, outcome);
        if incomplete {
            self.reader = saved.or_else(|| fresh.map(Box::new));
        }
        used
    }

    /// The loop of [`answer_all`](Self::answer_all): the bytes used, and whether an incomplete
    /// request follows them.
    fn answer_with(
        &mut self,
        reader: &mut RequestReader,
        buf: &[u8],
        ctx: &Ctx,
        outcome: &mut Answered,
    ) -> (usize, bool) {
        let mut at = 0;
        while !self.held_back() {
            if reader.is_fresh() {
                at += empty_lines(&buf[at..]);
            }
            match reader.step(&buf[at..]) {
                Step::More => return (at, at < buf.len()),
                Step::Continue => self.out_buffer().extend_from_slice(CONTINUE),
                Step::Refuse(e) => {
                    self.refuse(e, ctx.now);
                    return (buf.len(), false);
                }
                Step::Done {
                    request,
                    keep_alive,
                    used,
                    ..
                } => {
                    let raw = &buf[at..];
                    at += used;
                    outcome.completed += 1;
                    if !self.shared.spend() {
                        // `serve_n`: the budget is spent; this request is not served.
                        self.phase = Phase::Closing;
                        return (buf.len(), false);
                    }
                    if let Some(ws) = &self.shared.websocket {
                        if request.method() == "GET"
                            && path_of(request.path()) == ws.path
                            && !request.header_bytes("sec-websocket-key").is_empty()
                        {
                            match upgrade_reply(raw) {
                                Ok(reply) => {
                                    self.out_buffer().extend_from_slice(&reply);
                                    self.upgrade = Some(Box::new(Upgrade {
                                        request,
                                        early: buf[at..].to_vec(),
                                    }));
                                    outcome.upgraded = true;
                                }
                                Err(refusal) => {
                                    self.out_buffer().extend_from_slice(&refusal);
                                    self.phase = Phase::Closing;
                                }
                            }
                            return (buf.len(), false);
                        }
                    }
                    if let Some(taken) = &self.shared.taken {
                        match hand_over(taken, ctx.fd, raw) {
                            Some(true) => {
                                outcome.taken = true;
                                return (buf.len(), false);
                            }
                            Some(false) => {}
                            None => {
                                // The hook failed (or the socket's mode could not be set back):
                                // close at once, never read a socket that may be blocking.
                                outcome.failed = true;
                                return (buf.len(), false);
                            }
                        }
                    }
                    let head_only = request.method() == "HEAD";
                    let res = respond(&*self.shared.handler, request);
                    self.shared.served[ctx.worker % self.shared.served.len()]
                        .0
                        .fetch_add(1, Ordering::Relaxed);
                    let spent = self.shared.budget_spent();
                    outcome.spent |= spent;
                    // Read after the handler ran: a shutdown begun meanwhile makes this the last.
                    let keep = keep_alive && !spent && !self.shared.shutting_down();
                    let out = self.out_buffer();
                    let (keep, body) = with_date(ctx.now, |date| {
                        render(out, res, keep, head_only, date, INLINE_BODY)
                    });
                    if !body.is_empty() {
                        self.body = body;
                        self.body_at = 0;
                    }
                    if !keep {
                        // The client or the handler asked to close: what follows is dropped.
                        self.phase = Phase::Closing;
                        return (buf.len(), false);
                    }
                }
            }
        }
        // Held back: keep the parse state of a request begun (say, after its 100 Continue).
        (at, !reader.is_fresh())
    }

    /// Queues the reply to a request that cannot be served, and closes after it.
    fn refuse(&mut self, e: ParseError, now: Instant) {
        self.queue_final(refusal(e), now);
    }

    fn queue_final(&mut self, res: Response, now: Instant) {
        self.reader = None;
        let out = self.out_buffer();
        with_date(now, |date| render(out, res, false, false, date, usize::MAX));
        self.phase = Phase::Closing;
    }

    /// Takes bytes just read.
    fn take(&mut self, bytes: &[u8], ctx: &Ctx, outcome: &mut Answered) {
        if self.phase != Phase::Open {
            return; // after the last reply, the rest is dropped
        }
        let was_idle = self.input.is_empty() && self.reader.is_none();
        if self.input.is_empty() {
            let used = self.answer_all(bytes, ctx, outcome);
            if used < bytes.len()
                && self.phase == Phase::Open
                && !outcome.taken
                && !outcome.upgraded
            {
                self.input.extend_from_slice(&bytes[used..]);
            }
        } else {
            self.input.extend_from_slice(bytes);
            self.answer_input(ctx, outcome);
        }
        self.restart_request_timer(was_idle || outcome.completed > 0, ctx.now);
    }

    /// Answers what `input` holds (after backpressure eased, or with more bytes).
    fn answer_input(&mut self, ctx: &Ctx, outcome: &mut Answered) {
        let mut input = std::mem::take(&mut self.input);
        let used = self.answer_all(&input, ctx, outcome);
        if self.phase != Phase::Open || outcome.taken || outcome.upgraded || used == input.len() {
            return; // `input` is dropped: nothing held
        }
        input.drain(..used);
        self.input = input;
    }

    /// A request started, or a body made progress: the request timer (re)starts.
    fn restart_request_timer(&mut self, new_request: bool, now: Instant) {
        let have = self.input.len();
        let body_progress = self
            .reader
            .as_mut()
            .is_some_and(|r| r.body_progressed(have));
        if !self.input.is_empty() && (new_request || body_progress) {
            self.timer = Timer::Request;
            self.deadline = Some(now + self.shared.limits.header_timeout);
        }
    }

    /// Parks, waiting for `read` and/or `write` with the deadline the state calls for.
    fn park(&mut self, now: Instant, progressed: bool, read: bool, write: bool) -> Next {
        let limits = &self.shared.limits;
        let (timer, after) = if self.phase == Phase::Lingering {
            (Timer::Linger, limits.linger)
        } else if self.has_output() {
            (Timer::Write, limits.write_timeout)
        } else if !self.input.is_empty() || self.reader.is_some() {
            (Timer::Request, limits.header_timeout)
        } else {
            (Timer::Idle, limits.idle_timeout)
        };
        let restart = timer != self.timer
            || self.deadline.is_none()
            || (progressed && matches!(timer, Timer::Idle | Timer::Write));
        if restart {
            self.timer = timer;
            self.deadline = Some(now + after);
        }
        let next = Next::Park {
            read,
            write,
            deadline: None,
        };
        match self.deadline {
            Some(t) => next.until(t),
            None => next,
        }
    }

    /// Shuts our side and starts lingering.
    fn linger(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        if self.phase != Phase::Lingering {
            self.phase = Phase::Lingering;
            self.input = Vec::new();
            self.reader = None;
            if io.stream().shutdown(Shutdown::Write).is_err() {
                return Next::Close;
            }
        }
        for _ in 0..READS_PER_TURN {
            match io.read() {
                Read::Data(_) => continue,
                Read::WouldBlock => return self.park(io.now(), false, true, false),
                Read::Closed | Read::Error(_) => return Next::Close,
            }
        }
        self.park(io.now(), false, true, false)
    }

    /// The loop of one resume: write what is pending, answer what is buffered, read more.
    fn run(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        let mut progressed = false;
        let mut reads = 0;
        // A read shorter than the scratch buffer drained the socket (see `reactor::Read`).
        let mut drained = false;
        loop {
            match self.flush(io, &mut progressed) {
                Err(_) => return Next::Close,
                Ok(true) if self.phase != Phase::Open => return self.linger(io),
                // Shutting down and nothing in flight any more: done.
                Ok(true) if self.is_idle() && self.shared.shutting_down() => return Next::Close,
                Ok(true) => {}
                Ok(false) if self.phase != Phase::Open || self.held_back() => {
                    return self.park(io.now(), progressed, false, true)
                }
                Ok(false) => {}
            }
            let ctx = Ctx {
                now: io.now(),
                fd: io.stream().as_raw_fd(),
                worker: io.id().worker() as usize,
                scratch: io.scratch_size(),
            };
            let mut outcome = Answered::default();
            if !self.input.is_empty() && !self.held_back() && self.reader.is_none() {
                // Requests held back by backpressure: answer them before reading more.
                self.answer_input(&ctx, &mut outcome);
            } else {
                if drained {
                    return self.park(ctx.now, progressed, true, self.has_output());
                }
                if reads == READS_PER_TURN {
                    // Let other connections run; the reactor resumes this one next turn.
                    return self.park(ctx.now, progressed, true, self.has_output());
                }
                reads += 1;
                match io.read() {
                    Read::Data(bytes) => {
                        progressed = true;
                        drained = bytes.len() < ctx.scratch;
                        self.take(bytes, &ctx, &mut outcome);
                    }
                    Read::WouldBlock => {
                        return self.park(ctx.now, progressed, true, self.has_output())
                    }
                    Read::Closed => {
                        // The client is done sending. A request it left incomplete is dropped;
                        // replies already queued are still written.
                        self.phase = Phase::Closing;
                    }
                    Read::Error(_) => return Next::Close,
                }
            }
            if outcome.taken {
                return Next::release(drop);
            }
            if outcome.failed {
                return Next::Close;
            }
            if outcome.upgraded {
                // `Conn` turns this strand into a WebSocket one before anything else runs.
                return Next::sleep();
            }
            if outcome.spent {
                io.remote().shutdown();
            }
        }
    }

    fn timed_out(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        self.deadline = None;
        match (self.timer, self.phase) {
            (Timer::Request, Phase::Open) if !self.has_output() => {
                // The request did not arrive whole in time: 408, then close.
                self.input = Vec::new();
                self.queue_final(text_response(408, "request timeout\n"), io.now());
                self.run(io)
            }
            _ => Next::Close,
        }
    }
}

impl HttpStrand {
    fn resume(&mut self, io: &mut Io<'_, WsCommand>, wake: Wake) -> Next {
        if wake == Wake::Timeout {
            return self.timed_out(io);
        }
        if self.phase == Phase::Lingering {
            return self.linger(io);
        }
        self.run(io)
    }

    fn drain(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        if self.is_idle() {
            return Next::Close;
        }
        // In flight: finish it; its reply is the last (`Shared::shutting_down`).
        self.run(io)
    }

    fn held_bytes(&self) -> usize {
        self.input.capacity()
            + self.out.capacity()
            + self.body.held_bytes()
            + self
                .reader
                .as_ref()
                .map_or(0, |r| std::mem::size_of::<RequestReader>() + r.held_bytes())
    }

    /// After an accepted upgrade: the WebSocket strand this connection becomes, and what to
    /// start it with.
    fn take_upgrade(&mut self, io: &mut Io<'_, WsCommand>) -> Option<(WsStrand, Box<Upgrade>)> {
        let upgrade = self.upgrade.take()?;
        let route = self.shared.websocket.as_ref()?;
        let mut out = std::mem::take(&mut self.out);
        out.drain(..self.out_at);
        let ws = WsStrand::new(
            Arc::clone(&route.handler),
            route.max_message,
            out,
            self.shared.limits.write_timeout,
            io.remote().clone(),
        );
        Some((ws, upgrade))
    }
}

/// An accepted WebSocket upgrade: its request, and bytes the client sent after it.
pub(crate) struct Upgrade {
    request: Request,
    early: Vec<u8>,
}

/// A connection in the reactor: HTTP/1.1 until it upgrades to WebSocket, in the same slab entry.
pub(crate) enum Conn {
    /// Serving HTTP requests.
    Http(HttpStrand),
    /// An upgraded WebSocket connection. Its state is boxed so that HTTP connections — most
    /// connections — keep a small slab entry; a WebSocket connection costs its entry plus this
    /// one fixed-size allocation, and no buffer while idle.
    Ws(Box<WsStrand>),
}

impl Conn {
    /// Runs `step` on the HTTP strand; if it accepted an upgrade, becomes a WebSocket strand and
    /// starts it.
    fn http(
        &mut self,
        io: &mut Io<'_, WsCommand>,
        step: impl FnOnce(&mut HttpStrand, &mut Io<'_, WsCommand>) -> Next,
    ) -> Next {
        let Conn::Http(http) = self else {
            return Next::Close;
        };
        let next = step(http, io);
        match http.take_upgrade(io) {
            Some((ws, upgrade)) => {
                *self = Conn::Ws(Box::new(ws));
                let Conn::Ws(ws) = self else {
                    return Next::Close;
                };
                ws.start(io, &upgrade.request, &upgrade.early)
            }
            None => next,
        }
    }
}

impl Strand for Conn {
    type Msg = WsCommand;

    fn resume(&mut self, io: &mut Io<'_, WsCommand>, wake: Wake) -> Next {
        match self {
            Conn::Http(_) => self.http(io, |h, io| h.resume(io, wake)),
            Conn::Ws(ws) => ws.resume(io, wake == Wake::Timeout),
        }
    }

    fn drain(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        match self {
            Conn::Http(_) => self.http(io, |h, io| h.drain(io)),
            Conn::Ws(ws) => ws.drain(io),
        }
    }

    fn message(&mut self, io: &mut Io<'_, WsCommand>, msg: WsCommand) -> Next {
        match self {
            Conn::Http(_) => self.http(io, |h, io| h.run(io)),
            Conn::Ws(ws) => ws.message(io, msg),
        }
    }

    fn held_bytes(&self) -> usize {
        match self {
            Conn::Http(h) => h.held_bytes(),
            Conn::Ws(ws) => ws.held_bytes(),
        }
    }
}

/// Calls `taken` with the connection in blocking mode, as the caller will own it. Answers
/// whether it took the connection (`None` when the socket could not be switched or the hook
/// panicked: the connection is then closed).
fn hand_over(taken: &DynTaken, fd: RawFd, raw: &[u8]) -> Option<bool> {
    set_nonblocking(fd, false).ok()?;
    // SAFETY: `fd` is this strand's open socket for the whole call; `ManuallyDrop` keeps this
    // borrowed view from closing it. The hook gets a shared reference only (it may `try_clone`).
    let stream = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
    let took = catch_unwind(AssertUnwindSafe(|| taken(&stream, raw)));
    if took.as_ref().is_ok_and(|&t| t) {
        return Some(true);
    }
    // Not taken, or the hook panicked: the socket goes back to non-blocking either way.
    let restored = set_nonblocking(fd, true).is_ok();
    (took.is_ok() && restored).then_some(false)
}

fn set_nonblocking(fd: RawFd, on: bool) -> std::io::Result<()> {
    // SAFETY: fcntl(2) with F_GETFL/F_SETFL takes no pointers; `fd` is an open descriptor.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let flags = if on {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        if libc::fcntl(fd, libc::F_SETFL, flags) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
