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

use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reactor::{Io, Next, Read};

use crate::http::exchange::RequestReader;
use crate::http::render::render;
use crate::ws::WsCommand;

use super::dispatch::{answer, timeout_reply, Answered, Shared, Stop, Turn, Upgrade};
use super::output::Output;

/// Output queued beyond which a strand stops reading until the socket takes it.
const HIGH_WATER: usize = 64 * 1024;
/// Bodies at least this long are written from the handler's buffer instead of being copied.
const INLINE_BODY: usize = 16 * 1024;
/// Longest linger while the server stops: long enough for a request that crossed our end of
/// stream to arrive and be dropped (rather than reset the client), short enough that a stop
/// with many idle clients is quick.
const DRAIN_LINGER: Duration = Duration::from_millis(250);
/// Reads one resume makes before letting the worker's other connections run.
const READS_PER_TURN: usize = 16;
/// Steps of one resume's loop, at most: each step reads, answers held-back input or returns,
/// so a resume that takes more has stopped making progress (a bug). It is then cut short by a
/// panic that closes this connection only, rather than pinning the worker.
const STEPS_PER_TURN: usize = 4 * READS_PER_TURN + 4;

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
}

/// What the unanswered input waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waits {
    /// More bytes: the input is (the start of) an incomplete request.
    Bytes,
    /// The output to drain: answering stopped with whole requests still in the input
    /// (backpressure, or a `taken` hook that must see earlier replies written first).
    Output,
}

/// What answering needs of `Io` while the scratch buffer is borrowed.
struct Ctx {
    now: Instant,
    fd: RawFd,
    worker: usize,
}

/// What one read and answer came to, for the resume loop.
#[derive(Default)]
struct Outcome {
    completed: usize,
    spent: bool,
    taken: bool,
    failed: bool,
    upgraded: bool,
}

/// One HTTP/1.1 connection: the server it serves, and what it is doing — nothing at all
/// between requests (a keep-alive connection waiting for its next request holds no heap memory
/// and its idle deadline lives in the reactor's timer wheel, see [`Io::deadline`]).
pub(crate) struct HttpStrand {
    shared: Arc<Shared>,
    /// `None` while idle; made on the stack when a request arrives and boxed only if the
    /// connection has to keep something when the resume ends (part of a request, unwritten
    /// output, a closing state).
    busy: Option<Box<Busy>>,
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
    deadline: Option<Instant>,
    /// `deadline` is not known yet: the connection was idle, and its keep-alive deadline is
    /// the one the reactor holds. Read back ([`Io::deadline`]) only if it is kept: a request
    /// that arrives restarts it anyway, so the common path never converts it.
    deadline_in_reactor: bool,
    timer: Timer,
    /// A WebSocket upgrade just accepted: its request and the bytes that came after it.
    upgrade: Option<Box<Upgrade>>,
}

impl HttpStrand {
    pub(crate) fn new(shared: Arc<Shared>) -> HttpStrand {
        HttpStrand { shared, busy: None }
    }

    /// Runs `f` on what the connection is doing — an idle connection's on the stack, boxed
    /// afterwards only if there is something to keep.
    fn with_busy(
        &mut self,
        io: &mut Io<'_, WsCommand>,
        f: impl FnOnce(&mut Busy, &Shared, &mut Io<'_, WsCommand>) -> Next,
    ) -> Next {
        match &mut self.busy {
            Some(busy) => {
                let next = f(busy, &self.shared, io);
                if busy.is_done() {
                    self.busy = None;
                }
                next
            }
            None => {
                let mut busy = Busy::new();
                let next = f(&mut busy, &self.shared, io);
                if !busy.is_done() {
                    self.busy = Some(Box::new(busy));
                }
                next
            }
        }
    }

    pub(crate) fn resume(&mut self, io: &mut Io<'_, WsCommand>, timeout: bool) -> Next {
        self.with_busy(io, |busy, shared, io| busy.resume(shared, io, timeout))
    }

    pub(crate) fn run(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        self.with_busy(io, |busy, shared, io| busy.run(shared, io))
    }

    /// The server is stopping: a request that has arrived (whole or in part) is read and
    /// answered, its reply the last; a connection with nothing unread shuts its side and
    /// lingers briefly (`DRAIN_LINGER`), dropping what crosses it.
    pub(crate) fn drain(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        self.with_busy(io, |busy, shared, io| busy.run(shared, io))
    }

    pub(crate) fn held_bytes(&self) -> usize {
        self.busy
            .as_ref()
            .map_or(0, |b| std::mem::size_of::<Busy>() + b.held_bytes())
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

impl Busy {
    /// An idle connection's (parked until the keep-alive deadline the reactor holds).
    fn new() -> Busy {
        Busy {
            state: State::Serving,
            input: Vec::new(),
            waits: Waits::Bytes,
            reader: None,
            output: Output::default(),
            deadline: None,
            deadline_in_reactor: true,
            timer: Timer::Idle,
            upgrade: None,
        }
    }

    /// Idle again, with nothing to keep: what [`Busy::new`] would make (the deadline apart,
    /// which the reactor keeps).
    fn is_done(&self) -> bool {
        self.is_idle()
            && self.upgrade.is_none()
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
    fn answer(&mut self, shared: &Shared, buf: &[u8], ctx: &Ctx, outcome: &mut Outcome) -> usize {
        if self.held_back() {
            self.waits = Waits::Output;
            return 0;
        }
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
            now: ctx.now,
            fd: Some(ctx.fd),
            worker: ctx.worker,
        };
        let Answered {
            used,
            completed,
            spent,
            stop,
        } = answer(&shared.app(), reader, buf, &mut turn);
        let keep_reader = !reader.is_fresh();
        outcome.completed += completed;
        outcome.spent |= spent;
        self.waits = match stop {
            Stop::Held | Stop::Body { keep: true, .. } => Waits::Output,
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
                outcome.upgraded = true;
            }
            Stop::Taken => outcome.taken = true,
            Stop::Failed => outcome.failed = true,
        }
        used
    }

    /// Takes bytes just read.
    fn take(&mut self, shared: &Shared, bytes: &[u8], ctx: &Ctx, outcome: &mut Outcome) {
        if self.state != State::Serving {
            return; // after the last reply, the rest is dropped
        }
        let was_idle = self.input.is_empty() && self.reader.is_none();
        if self.input.is_empty() {
            let used = self.answer(shared, bytes, ctx, outcome);
            if used < bytes.len() && self.keeps_input(outcome) {
                self.input.extend_from_slice(&bytes[used..]);
            }
        } else {
            self.input.extend_from_slice(bytes);
            self.answer_input(shared, ctx, outcome);
        }
        self.restart_request_timer(shared, was_idle || outcome.completed > 0, ctx.now);
    }

    /// Whether unused input still matters (the connection goes on serving).
    fn keeps_input(&self, outcome: &Outcome) -> bool {
        self.state == State::Serving && !outcome.taken && !outcome.upgraded && !outcome.failed
    }

    /// Answers what `input` holds (after backpressure eased, or with more bytes).
    fn answer_input(&mut self, shared: &Shared, ctx: &Ctx, outcome: &mut Outcome) {
        let mut input = std::mem::take(&mut self.input);
        let used = self.answer(shared, &input, ctx, outcome);
        if used == input.len() || !self.keeps_input(outcome) {
            return; // `input` is dropped: nothing held
        }
        input.drain(..used);
        self.input = input;
    }

    /// A request started, or a body made progress: the request timer (re)starts.
    fn restart_request_timer(&mut self, shared: &Shared, new_request: bool, now: Instant) {
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

    /// Parks, waiting for `read` and/or `write` with the deadline the state calls for.
    fn park(
        &mut self,
        shared: &Shared,
        io: &Io<'_, WsCommand>,
        progressed: bool,
        read: bool,
        write: bool,
    ) -> Next {
        let limits = &shared.limits;
        let now = io.now();
        let (timer, after) = if self.state == State::Lingering && shared.shutting_down() {
            (Timer::Linger, limits.linger.min(DRAIN_LINGER))
        } else if self.state == State::Lingering {
            (Timer::Linger, limits.linger)
        } else if self.output.has_pending() {
            (Timer::Write, limits.write_timeout)
        } else if !self.input.is_empty() || self.reader.is_some() {
            (Timer::Request, limits.header_timeout)
        } else {
            (Timer::Idle, limits.idle_timeout)
        };
        let moved =
            timer != self.timer || (progressed && matches!(timer, Timer::Idle | Timer::Write));
        if !moved && self.deadline_in_reactor {
            self.set_deadline(io.deadline());
        }
        if moved || self.deadline.is_none() {
            self.timer = timer;
            self.set_deadline(Some(now + after));
        }
        Next::Park {
            read,
            write,
            deadline: self.deadline,
        }
    }

    /// The deadline to park with from now on (the reactor's is then no longer the one).
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
        self.deadline_in_reactor = false;
    }

    /// Shuts our side and starts lingering.
    fn linger(&mut self, shared: &Shared, io: &mut Io<'_, WsCommand>) -> Next {
        if self.state != State::Lingering {
            self.state = State::Lingering;
            self.input = Vec::new();
            self.reader = None;
            if io.stream().shutdown(Shutdown::Write).is_err() {
                return Next::Close;
            }
        }
        for _ in 0..READS_PER_TURN {
            match io.read() {
                Read::Data(_) => continue,
                Read::WouldBlock => return self.park(shared, io, false, true, false),
                Read::Closed | Read::Error(_) => return Next::Close,
            }
        }
        self.park(shared, io, false, true, false)
    }

    /// The loop of one resume: write what is pending, answer what is buffered, read more.
    fn run(&mut self, shared: &Shared, io: &mut Io<'_, WsCommand>) -> Next {
        let mut progressed = false;
        let mut reads = 0;
        let mut steps = 0;
        // A read shorter than the scratch buffer drained the socket (see `reactor::Read`).
        let mut drained = false;
        loop {
            match self.output.flush(io, &mut progressed) {
                Err(_) => return Next::Close,
                Ok(true) if self.state != State::Serving => return self.linger(shared, io),
                Ok(true) => {}
                Ok(false) if self.state != State::Serving || self.held_back() => {
                    return self.park(shared, io, progressed, false, true)
                }
                Ok(false) => {}
            }
            let ctx = Ctx {
                now: io.now(),
                fd: io.stream().as_raw_fd(),
                worker: io.id().worker() as usize,
            };
            let mut outcome = Outcome::default();
            steps += 1;
            // A bug, never the peer's doing: the panic closes this connection alone (the
            // reactor catches it and counts it in the stats) instead of pinning the worker.
            assert!(
                steps <= STEPS_PER_TURN,
                "an HTTP strand's resume made no progress in {STEPS_PER_TURN} steps"
            );
            if self.answers_waiting() {
                // Requests held back by backpressure: answer them before reading more.
                self.answer_input(shared, &ctx, &mut outcome);
            } else {
                if drained && self.is_idle() && shared.shutting_down() {
                    // Shutting down, every request read is answered and written, and the
                    // socket holds nothing more: our side is shut, and what the client sends
                    // from now on is read and dropped until it closes (a request crossing our
                    // end of stream is not run, and the client is not reset: it sees the end).
                    return self.linger(shared, io);
                }
                if drained || reads == READS_PER_TURN {
                    // Drained, or let other connections run (resumed next turn).
                    return self.park(shared, io, progressed, true, self.output.has_pending());
                }
                reads += 1;
                let scratch = io.scratch_size();
                match io.read() {
                    Read::Data(bytes) => {
                        progressed = true;
                        drained = bytes.len() < scratch;
                        self.take(shared, bytes, &ctx, &mut outcome);
                    }
                    Read::WouldBlock if self.is_idle() && shared.shutting_down() => {
                        return self.linger(shared, io)
                    }
                    Read::WouldBlock => {
                        return self.park(shared, io, progressed, true, self.output.has_pending())
                    }
                    Read::Closed => {
                        // The client is done sending. A request it left incomplete is dropped;
                        // replies already queued are still written.
                        self.state = State::Closing;
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

    fn timed_out(&mut self, shared: &Shared, io: &mut Io<'_, WsCommand>) -> Next {
        self.set_deadline(None);
        match (self.timer, self.state) {
            (Timer::Request, State::Serving) if !self.output.has_pending() => {
                // The request did not arrive whole in time: 408, then close.
                let head_only = self.reader.as_ref().is_some_and(|r| r.is_head());
                self.input = Vec::new();
                self.reader = None;
                let (out, _) = self.output.buffer();
                render(out, timeout_reply(), false, head_only, io.now(), usize::MAX);
                self.state = State::Closing;
                self.run(shared, io)
            }
            _ => Next::Close,
        }
    }

    fn resume(&mut self, shared: &Shared, io: &mut Io<'_, WsCommand>, timeout: bool) -> Next {
        if timeout {
            return self.timed_out(shared, io);
        }
        if self.state == State::Lingering {
            return self.linger(shared, io);
        }
        self.run(shared, io)
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
