//! The HTTP/2 connection strand (RFC 9113): one connection's whole state — the codec's
//! ([`h2::conn::Conn`](crate::h2::conn::Conn)), the bytes of an incomplete frame, what is owed
//! to the socket, and each stream's work — parked in the reactor's slab between resumes.
//!
//! A connection becomes one when its first bytes are the HTTP/2 preface: over plain TCP by
//! prior knowledge (h2c; RFC 9113 deprecates the `Upgrade: h2c` dance, which browsers never
//! used), over TLS when ALPN chose `h2`. Each complete request is one exchange, started and
//! carried by the same rules as an HTTP/1.1 one (`server::exchange`); its reply is
//! HPACK-encoded and sent as far as the windows allow, the rest of its body kept on its stream
//! (charged to the server's output budget) until the peer opens them. Deferred and streamed
//! replies reach their stream as messages, as they reach an HTTP/1.1 connection.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the connection: its steps of the loop (`connection_loop`), reading frames, timers, writing, parking, lingering |
//! | `work.rs` | what each stream waits for on this side, in one list in stream order |
//! | `request.rs` | a stream's request as a handler sees it |
//! | `replies.rs` | answering streams: exchanges started and stepped, held replies sent round-robin |
//! | `bodies.rs` | request bodies arriving: their pace, what they hold, the server's budget |
//! | `live.rs` | live streams: event streams and WebSockets (RFC 8441) on a stream |

use std::time::{Duration, Instant};

use reactor::{Io, Then};

use crate::h2::conn::{Conn, Event, OUTPUT_HIGH, Scratch};
use crate::h2::error::ErrorCode;
use crate::h2::stream_index::StreamIndex;
use crate::http::ParseError;
use crate::http::later::HttpMsg;
use crate::http::message::pool::{POOL_BUFFER_MAX, empty, keep, reuse};
use crate::live::{Charge, Command};

use super::access;
use super::connection_loop::{self, Go, HttpConnection};
use super::exchange;
use super::peer::Peer;
use super::shared::ServerShared;

mod bodies;
mod live;
mod replies;
mod request;
mod work;
use bodies::{Bodies, Growth};
use live::Busy;
use replies::abandoned;
use request::{REPLY_RULES, request_of, rules_of};
use work::{Work, due_of, push_work, reply_held, work_at, work_held};

/// Request bodies one connection may hold at once, in `max_body`s: each stream's body is
/// bounded by `max_body` (413), and all of a connection's together by this many (a stream past
/// it is refused with REFUSED_STREAM, which a client may ask again).
const BODIES: u64 = 4;

/// Where the connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Serving streams.
    Serving,
    /// GOAWAY is queued (an error, an idle connection, the server stopping): write what is
    /// owed, then shut our side.
    Closing,
    /// Our side is shut: what the peer still sends is read and dropped until it closes, or
    /// until this instant (so that closing does not reset a connection whose peer has not
    /// read our GOAWAY yet).
    Lingering(Instant),
}

/// One HTTP/2 connection.
pub(crate) struct H2Strand {
    peer: Peer,
    conn: Conn,
    state: State,
    /// Bytes of an incomplete frame (or frames not taken while output was owed).
    input: Vec<u8>,
    /// What is owed to the socket; `written` of it went.
    out: Vec<u8>,
    written: usize,
    /// Each stream's work, in stream order, and where each stream is in it.
    work: Vec<(u32, Work)>,
    work_index: StreamIndex,
    /// When the connection's wait ends (idle, write, the first deferred reply's, a live
    /// stream's).
    deadline: Option<Instant>,
    /// When the peer must have taken something — output owed to the socket, or a window for
    /// the replies its windows hold back — counted from its last progress (`None` while
    /// nothing waits on it): past it, a connection owed output closes, or else the streams
    /// whose replies wait are reset.
    write_due: Option<Instant>,
    /// When the peer must have acknowledged our SETTINGS (`None` once it did).
    settings_due: Option<Instant>,
    /// Windows opened or output was written since live streams waiting to write were last
    /// resumed.
    wake_writers: bool,
    /// Windows opened since replies held back by them were last given theirs (after the live
    /// streams: see [`H2Strand::send_held`]).
    windows_opened: bool,
    /// What the output holds, charged to the server's output budget while owed.
    charge: Charge,
    /// What live streams with something to do keep (see [`Busy`]); empty while every live
    /// stream is idle.
    busy: Vec<(u32, Busy)>,
    /// The request bodies arriving, their pace and what they hold.
    bodies: Bodies,
    /// What the connection holds (heap and itself), as last measured: kept up to date as one
    /// stream's message changes its part, measured whole after any other resume — so that
    /// the reactor's asking costs nothing, and a room's message to each of many streams costs
    /// each its own part, not a walk over all of them.
    held: usize,
    /// A reply may be held back by the windows (one was since the last walk found none): the
    /// walk that sums them is spared while none can be.
    replying: bool,
}

impl H2Strand {
    /// A connection whose first bytes (`early`, starting with the preface) were read as
    /// HTTP/1.1 until they showed the preface.
    pub(crate) fn new(
        peer: Peer,
        shared: &ServerShared,
        (worker, now): (usize, Instant),
        early: &[u8],
    ) -> H2Strand {
        let conn = Conn::new(shared.h2.unwrap_or_default());
        shared.figures(worker).http2(true);
        let mut out = Vec::new();
        conn.preface(&mut out);
        H2Strand {
            peer,
            conn,
            state: State::Serving,
            input: early.to_vec(),
            out,
            written: 0,
            work: Vec::new(),
            work_index: StreamIndex::default(),
            deadline: None,
            busy: Vec::new(),
            write_due: None,
            settings_due: Some(now + shared.h2_settings_timeout),
            wake_writers: false,
            windows_opened: false,
            charge: Charge::default(),
            bodies: Bodies::default(),
            held: 0,
            replying: false,
        }
    }

    /// Runs `f` with the worker's server.
    fn with_shared(
        &mut self,
        io: &mut Io<'_, Command>,
        f: impl FnOnce(&mut H2Strand, &ServerShared, &mut Io<'_, Command>) -> Then,
    ) -> Then {
        super::worker::with(|shared| match shared {
            Some(shared) => f(self, shared, io),
            None => Then::Close, // never: the worker installed its server at open
        })
    }

    pub(crate) fn resume(&mut self, io: &mut Io<'_, Command>, timeout: bool) -> Then {
        self.with_shared(io, |h, shared, io| {
            if timeout && let Some(next) = h.timed_out(shared, io) {
                return next;
            }
            h.run(shared, io)
        })
    }

    /// The server is stopping: GOAWAY with the last stream taken; the streams in flight are
    /// answered (a long-poll at once, with its empty answer), then the connection closes.
    pub(crate) fn drain(&mut self, io: &mut Io<'_, Command>) -> Then {
        self.with_shared(io, |h, shared, io| {
            h.conn.go_away(&mut h.out);
            h.drain_live(shared, io);
            let now = io.now();
            for stream in h.exchanges() {
                h.step_exchange(shared, io, stream, |f, ex| {
                    exchange::stopping(shared, ex, now, f)
                });
            }
            h.run(shared, io)
        })
    }

    /// A deferred reply (or a piece of a streamed one) for one of the streams.
    pub(crate) fn message(&mut self, io: &mut Io<'_, Command>, msg: HttpMsg) -> Then {
        self.with_shared(io, |h, shared, io| {
            h.delivered(shared, io, msg);
            h.run(shared, io)
        })
    }

    /// A message for live streams of the connection: `streams` (one, or several a room's
    /// publish reaches together), or all that want it (`[0]`: a heartbeat, a liveness sweep).
    /// They frame what they send, which is written; nothing is read (a resume for a message
    /// is not one for reading: what the peer sent raises its own readiness).
    pub(crate) fn command(
        &mut self,
        io: &mut Io<'_, Command>,
        streams: &[u32],
        cmd: Command,
    ) -> Then {
        self.with_shared(io, |h, shared, io| {
            if h.state != State::Serving {
                return h.run(shared, io);
            }
            let fixed = h.held_fixed();
            let mut stepped = None;
            let all = streams == [0];
            if all {
                h.live_to_all(shared, io, cmd);
            } else {
                for &stream in streams {
                    h.live_to_one(shared, io, stream, cmd.clone());
                    let deadline = h.live_deadline(stream);
                    stepped = [stepped, deadline].into_iter().flatten().min();
                }
            }
            let wrote = match h.flush(io) {
                Err(_) => return Then::Close,
                Ok(wrote) => wrote,
            };
            if h.owes_too_much(shared) {
                return Then::Close;
            }
            match all {
                // Every live stream stepped: measured whole, and any of them may have moved
                // its deadline.
                true => stepped = h.measure().live_deadline,
                // The streams' parts were brought up to date; the rest is the fixed part.
                false => h.held = (h.held + h.held_fixed()).saturating_sub(fixed),
            }
            #[cfg(debug_assertions)]
            {
                let kept = h.held;
                h.measure();
                debug_assert_eq!(kept, h.held, "the running figure");
            }
            h.park_after_message(shared, io, wrote, stepped)
        })
    }

    /// The connection left the reactor: the replies its streams waited for are not wanted,
    /// its live streams end.
    pub(crate) fn closed(&mut self, id: reactor::ConnId) {
        super::worker::with(|shared| {
            let Some(shared) = shared else { return };
            for (stream, work) in &mut self.work {
                match work {
                    Work::Live(live) => live::gone(&mut self.busy, live, id.with_stream(*stream)),
                    other => abandoned(shared, id.with_stream(*stream), other),
                }
                logged(shared, id, *stream);
            }
            shared.replies.forget_streams(id);
            shared.figures(id.worker() as usize).http2(false);
            self.busy = Vec::new();
        });
        self.bodies = Bodies::default(); // its charge given back
        self.work.clear();
        self.work_index = StreamIndex::default();
    }

    /// What the connection holds, as last measured (see `held`).
    pub(crate) fn held_bytes(&self) -> usize {
        self.held
    }

    /// Measures what the connection holds, all of it (a walk over its streams), and the
    /// replies held back by the windows.
    fn measure(&mut self) -> Survey {
        let mut survey = Survey {
            first_reply: None,
            only_live: true,
            live_deadline: None,
            replies_held: 0,
        };
        let (mut streams, mut replies) = (0, 0);
        for (_, w) in &self.work {
            streams += work_held(w);
            replies += reply_held(w);
            let due = due_of(w);
            survey.first_reply = [survey.first_reply, due].into_iter().flatten().min();
            survey.only_live &= matches!(w, Work::Live(_));
        }
        let mut busy = 0;
        for (_, b) in &self.busy {
            busy += b.held_bytes();
            let due = [survey.live_deadline, b.deadline]
                .into_iter()
                .flatten()
                .min();
            survey.live_deadline = due;
        }
        self.held = self.held_fixed() + streams + busy;
        survey.replies_held = replies;
        survey
    }

    /// What the connection holds apart from its streams' own parts: itself, the codec, its
    /// buffers and lists.
    fn held_fixed(&self) -> usize {
        std::mem::size_of::<H2Strand>()
            + self.conn.held_bytes()
            + self.input.capacity()
            + self.out.capacity()
            + self.work.capacity() * std::mem::size_of::<(u32, Work)>()
            + self.work_index.held_bytes()
            + self.busy.capacity() * std::mem::size_of::<(u32, Busy)>()
            + self.bodies.held_bytes()
    }

    /// What stream `stream`'s work and live entry hold.
    fn held_by(&self, stream: u32) -> usize {
        let work = work_at((&self.work, &self.work_index), stream)
            .map_or(0, |at| work_held(&self.work[at].1));
        let busy = live::busy_at(&self.busy, stream).map_or(0, |at| self.busy[at].1.held_bytes());
        work + busy
    }

    /// One resume's loop (`connection_loop`), with this connection's decisions.
    fn run(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) -> Then {
        connection_loop::run(&mut H2 { h: self, shared }, io)
    }

    /// Takes frames from `input`: what the peer asked is queued as work and answered; the
    /// bytes used.
    fn take(&mut self, shared: &ServerShared, ctx: &mut Ctx, input: &[u8]) -> usize {
        let max_body = shared.limits.max_body;
        let body_rules = (max_body.saturating_mul(BODIES), &shared.bodies);
        let pace = (ctx.now, shared.limits.header_timeout);
        let mut window_opened = false;
        self.lend_buffers();
        let H2Strand {
            conn,
            out,
            work,
            work_index,
            busy,
            bodies,
            ..
        } = self;
        let used = SCRATCH.with_borrow_mut(|scratch| {
            conn.receive(input, out, scratch, &mut |event| match event {
                Event::Request {
                    stream,
                    head,
                    end_stream,
                } => {
                    let websocket = head.protocol() == b"websocket";
                    let new = match (websocket, end_stream) {
                        (true, _) => Work::Connect(request_of(head)),
                        (false, true) => Work::Ready(request_of(head)),
                        // The server holds all the bodies it may: this one is refused, to be
                        // asked again.
                        (false, false) if !Bodies::may_open(&shared.bodies) => {
                            shared.bodies.dropped_one();
                            Work::Cut(ErrorCode::RefusedStream)
                        }
                        (false, false) => {
                            bodies.opened(stream, pace.0, pace.1);
                            Work::Receiving(request_of(head))
                        }
                    };
                    push_work((work, work_index), stream, new);
                }
                Event::Refuse { stream, status } => {
                    // (The codec refuses one thing before a handler: a header list past the
                    // size advertised, 431.)
                    let _ = status;
                    let refused = Work::Refused(ParseError::HeadTooLarge, REPLY_RULES);
                    push_work((work, work_index), stream, refused);
                }
                Event::Data {
                    stream,
                    data,
                    end_stream,
                } => {
                    let Some(at) = work_at((work, work_index), stream) else {
                        return;
                    };
                    let slot = &mut work[at];
                    match &mut slot.1 {
                        Work::Live(live) => {
                            let end = end_stream && live.reads_to_end();
                            return live::received(busy, stream, data, end);
                        }
                        Work::Connect(request) => {
                            // What a WebSocket's peer sent before the answer: its first frames
                            // (its end, if it came, the codec keeps).
                            if request.body().len() as u64 + data.len() as u64 > max_body {
                                slot.1 = Work::Cut(ErrorCode::EnhanceYourCalm);
                            } else {
                                request.append_body(data);
                            }
                            return;
                        }
                        _ => {}
                    }
                    let Work::Receiving(request) = &mut slot.1 else {
                        return;
                    };
                    if request.body().len() as u64 + data.len() as u64 > max_body {
                        slot.1 = Work::Refused(ParseError::BodyTooLarge, rules_of(request));
                        return bodies.ended(stream, &shared.bodies);
                    }
                    match bodies.grow(stream, data.len() as u64, body_rules, pace) {
                        Growth::Kept => request.append_body(data),
                        // Each body within its limit, but together more than a connection (or
                        // the server) may hold: this one is refused, to be asked again.
                        Growth::OverConnection | Growth::OverServer => {
                            slot.1 = Work::Cut(ErrorCode::RefusedStream);
                            return bodies.ended(stream, &shared.bodies);
                        }
                    }
                    if end_stream {
                        let done = std::mem::take(request);
                        slot.1 = Work::Ready(done);
                        bodies.ended(stream, &shared.bodies);
                    }
                }
                Event::Reset { stream } => {
                    if let Some(at) = work_at((work, work_index), stream) {
                        match work.remove(at).1 {
                            Work::Receiving(_) => bodies.ended(stream, &shared.bodies),
                            Work::Live(mut live) => {
                                live::gone(busy, &mut live, ctx.id.with_stream(stream));
                            }
                            other => abandoned(shared, ctx.id.with_stream(stream), &other),
                        }
                        logged(shared, ctx.id, stream);
                    }
                }
                Event::WindowOpened => window_opened = true,
            })
        });
        self.bodies_windows(max_body);
        let head = self.conn.in_header_block();
        self.bodies
            .head_arriving(head, ctx.now, shared.limits.header_timeout);
        self.answer_ready(shared, ctx);
        if window_opened {
            // Live streams first, then the replies held back (see `send_held`).
            self.wake_writers = true;
            self.windows_opened = true;
        }
        if self.conn.is_closed() {
            self.state = State::Closing;
        }
        used
    }

    /// The windows of the streams whose bodies grew reopen as far as each may still grow
    /// (`max_body`): a peer that keeps to them never sends past the limit.
    fn bodies_windows(&mut self, max_body: u64) {
        while let Some((stream, len)) = self.bodies.next_grown() {
            let room = max_body.saturating_sub(len);
            self.conn.allow(stream, room, &mut self.out);
        }
    }

    /// The deadline passed: deferred replies past theirs are answered by the server, an idle
    /// connection goes away, one whose peer takes nothing closes. `Some` to end the resume.
    fn timed_out(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) -> Option<Then> {
        let now = io.now();
        if self.deadline.is_some_and(|d| now < d) {
            return None;
        }
        let took_nothing = self.write_due.is_some_and(|d| d <= now);
        if took_nothing && self.written < self.out.len() {
            return Some(Then::Close); // the write timeout: the peer takes nothing
        }
        if self.state != State::Serving {
            return Some(Then::Close);
        }
        if self.settings_due.is_some_and(|d| d <= now) {
            self.conn.settings_timed_out(&mut self.out);
            self.state = State::Closing;
            self.deadline = None;
            return None;
        }
        if self.bodies.head_due().is_some_and(|d| d <= now) {
            // A header block not whole in time (a CONTINUATION trickle): nothing else may
            // come on the connection meanwhile, so it ends.
            self.conn.header_timed_out(&mut self.out);
            self.state = State::Closing;
            self.deadline = None;
            return None;
        }
        // The write timeout with nothing owed to the socket: replies wait on windows that
        // never open.
        if took_nothing {
            self.write_due = None;
            self.windows_timed_out(shared, io);
        }
        self.live_timeouts(shared, io);
        let slow_bodies = self.bodies_timed_out(shared, io);
        let late: Vec<u32> = (self.work.iter())
            .filter(|(_, w)| due_of(w).is_some_and(|due| due <= now))
            .map(|(stream, _)| *stream)
            .collect();
        for &stream in &late {
            self.step_exchange(shared, io, stream, |f, ex| {
                exchange::expire(shared, ex, now, f)
            });
        }
        let timed_out = slow_bodies || took_nothing || !late.is_empty();
        if !timed_out && self.work.is_empty() && self.conn.open_streams() == 0 {
            // Idle past the keep-alive timeout.
            self.conn.go_away(&mut self.out);
            self.state = State::Closing;
        }
        self.deadline = None;
        None
    }

    /// Bodies that did not keep their pace get 408 on their stream (then a reset, NO_ERROR:
    /// the rest of the body is not wanted), as HTTP/1.1 answers a request not whole in time.
    fn bodies_timed_out(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) -> bool {
        let late = self.bodies.late(io.now());
        if late.is_empty() {
            return false;
        }
        for stream in late {
            self.bodies.ended(stream, &shared.bodies);
            let Some(at) = work_at((&self.work, &self.work_index), stream) else {
                continue;
            };
            if let Work::Receiving(request) = &self.work[at].1 {
                crate::log::info!(; "an HTTP/2 request body did not keep its pace: 408");
                self.work[at].1 = Work::TooSlow(rules_of(request));
            }
        }
        let mut ctx = Ctx {
            now: io.now(),
            id: io.id(),
            peer: self.peer.get(),
            tls: io.has_layer(),
            spent: false,
        };
        self.answer_ready(shared, &mut ctx);
        true
    }

    /// Takes the worker's spare buffers for what a read may add (replies, work), so that a
    /// connection whose requests come one at a time allocates nothing.
    fn lend_buffers(&mut self) {
        if self.out.capacity() == 0
            && let Some(out) = reuse(&OUT_BUFFERS)
        {
            self.out = out;
        }
        if self.work.capacity() == 0
            && let Some(work) = reuse(&WORK_LISTS)
        {
            self.work = work;
        }
    }

    /// Gives the work list back to the worker's pool once no stream has work.
    fn return_buffers(&mut self) {
        if self.work.is_empty() {
            self.work_index = StreamIndex::default();
        }
        if self.work.is_empty() && self.work.capacity() > 0 {
            let work = std::mem::take(&mut self.work);
            if work.capacity() <= 16 {
                keep(&WORK_LISTS, work);
            }
        }
        if self.input.is_empty() && self.input.capacity() > 0 {
            self.input = Vec::new();
        }
    }

    /// Writes what is owed; whether anything went.
    fn flush(&mut self, io: &mut Io<'_, Command>) -> std::io::Result<bool> {
        let mut wrote = false;
        while self.written < self.out.len() {
            match io.write(&self.out[self.written..]) {
                // The socket is full (a short count, 0 included, is how the reactor says it):
                // the rest waits for it to take more.
                Ok(0) => break,
                Ok(n) => {
                    self.written += n;
                    wrote = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if wrote {
            // Room made: live streams waiting to write may go on.
            self.wake_writers = true;
        }
        if self.written == self.out.len() {
            // All written: the buffer goes back to the worker's pool (an idle connection
            // holds none).
            self.written = 0;
            let mut out = std::mem::take(&mut self.out);
            if out.capacity() <= POOL_BUFFER_MAX {
                out.clear();
                keep(&OUT_BUFFERS, out);
            }
        }
        Ok(wrote)
    }

    /// Charges what is owed and held to the server's output budget (once something stays
    /// unwritten) and says whether this peer owes more than its share while it is spent.
    fn owes_too_much(&mut self, shared: &ServerShared) -> bool {
        let held = match self.replying {
            false => 0,
            true => {
                let held = self.work.iter().map(|(_, w)| reply_held(w)).sum();
                self.replying = held > 0;
                held
            }
        };
        let owed = self.out.len() - self.written + held;
        let budget = &shared.ws_settings.live.budget;
        let cost = || self.out.capacity() + held;
        let sheds = self.charge.owes_too_much(budget, cost, owed);
        if sheds {
            crate::log::info!(owed_bytes = owed; "an HTTP/2 connection closed: its peer does not take its replies while output is short");
        }
        sheds
    }

    /// Parks: reading unless closing or owing too much, writing while owed, until the
    /// nearest deadline.
    fn park(
        &mut self,
        shared: &ServerShared,
        io: &Io<'_, Command>,
        progressed: bool,
        read: bool,
    ) -> Then {
        let now = io.now();
        let owed = self.written < self.out.len();
        let limits = &shared.limits;
        self.return_buffers();
        // One walk over the streams for all a park needs of them.
        let Survey {
            first_reply,
            only_live,
            live_deadline: live,
            replies_held,
        } = self.measure();
        self.arm_write_due(
            owed || replies_held > 0,
            progressed,
            now,
            limits.write_timeout,
        );
        let wait = if let Some(until) = first_reply {
            Some(until)
        } else if self.work.is_empty() {
            match self.deadline {
                Some(d) if !progressed && !owed => Some(d),
                _ => Some(now + limits.idle_timeout),
            }
        } else if only_live {
            // Live streams keep their own deadlines (none while idle).
            None
        } else {
            // Streams being received or sent: each wait is the peer's (its windows, its body).
            Some(now + limits.idle_timeout)
        };
        if self.conn.settings_acked() {
            self.settings_due = None;
        }
        let bodies = self.bodies.next_due();
        let deadline = [self.write_due, wait, live, self.settings_due, bodies]
            .into_iter()
            .flatten()
            .min();
        self.deadline = deadline;
        Then::Park {
            read: read && self.state == State::Serving && !owed_past_high(self),
            write: owed,
            deadline,
        }
    }

    /// The write timeout runs from the peer's last progress while something waits on it
    /// (`waits`: output owed, or replies on the windows).
    fn arm_write_due(&mut self, waits: bool, progressed: bool, now: Instant, timeout: Duration) {
        self.write_due = match (waits, self.write_due) {
            (false, _) => None,
            (true, Some(d)) if !progressed => Some(d),
            (true, _) => Some(now + timeout),
        };
    }

    /// Parks after a message to live streams, walking nothing: the deadline is the one the
    /// connection had, or the stepped stream's if sooner (one that moved later is found
    /// when the earlier deadline comes and every wait is looked at again).
    fn park_after_message(
        &mut self,
        shared: &ServerShared,
        io: &Io<'_, Command>,
        progressed: bool,
        stepped: Option<Instant>,
    ) -> Then {
        let owed = self.written < self.out.len();
        // (Replies held back by the windows are as they were: a live stream's message changes
        // none.)
        let timeout = shared.limits.write_timeout;
        self.arm_write_due(owed || self.replying, progressed, io.now(), timeout);
        let deadline = [self.deadline, stepped, self.write_due]
            .into_iter()
            .flatten()
            .min();
        self.deadline = deadline;
        Then::Park {
            read: self.state == State::Serving && !owed_past_high(self),
            write: owed,
            deadline,
        }
    }

    /// GOAWAY is written: our side is shut, and what the peer still sends is read and dropped
    /// until it closes — briefly, within the server's linger time (`DRAIN_LINGER` while it
    /// stops).
    fn linger(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) -> Then {
        let end = match self.state {
            State::Lingering(end) => end,
            _ => {
                let Some(end) = connection_loop::begin_linger(io, shared) else {
                    return Then::Close;
                };
                self.state = State::Lingering(end);
                self.input = Vec::new();
                self.measure();
                end
            }
        };
        connection_loop::linger(io, end)
    }
}

/// A resume of the connection as the loop drives it (its steps inlined into the loop, as
/// HTTP/1.1's are).
struct H2<'a> {
    h: &'a mut H2Strand,
    shared: &'a ServerShared,
}

impl HttpConnection for H2<'_> {
    type Taking = Ctx;

    #[inline(always)]
    fn taking(&mut self, io: &mut Io<'_, Command>) -> Ctx {
        Ctx {
            now: io.now(),
            id: io.id(),
            peer: self.h.peer.get().or_else(|| io.stream().peer_addr().ok()),
            tls: io.has_layer(),
            spent: false,
        }
    }

    #[inline(always)]
    fn flush(&mut self, io: &mut Io<'_, Command>, progressed: &mut bool) -> std::io::Result<bool> {
        *progressed |= self.h.flush(io)?;
        Ok(self.h.written == self.h.out.len())
    }

    #[inline(always)]
    fn owes_too_much(&mut self) -> bool {
        self.h.owes_too_much(self.shared)
    }

    /// Closing, write what is owed and linger; owing much, wait for room; else the live
    /// streams and the replies held by the windows write first, then frames kept from an
    /// earlier read are taken, then the connection closes if the server stops with nothing
    /// left in flight.
    #[inline(always)]
    fn next(
        &mut self,
        io: &mut Io<'_, Command>,
        ctx: &mut Ctx,
        _flushed: bool,
        progressed: &mut bool,
    ) -> Go {
        let (h, shared) = (&mut *self.h, self.shared);
        let owed = h.out.len() - h.written;
        match h.state {
            State::Serving => {}
            State::Closing if owed > 0 => return Go::Park { read: false },
            State::Closing | State::Lingering(_) => return Go::Linger,
        }
        if owed >= OUTPUT_HIGH {
            return Go::Park { read: false };
        }
        let before = h.out.len();
        h.live_turn(shared, io);
        if std::mem::take(&mut h.windows_opened) {
            h.send_held();
        }
        if h.out.len() > before {
            // Live streams or held replies wrote: out with it before reading more.
            *progressed = true;
            return Go::Again;
        }
        if !h.input.is_empty() && owed < OUTPUT_HIGH / 2 {
            // Frames left while output was owed, or an incomplete one: go on with them.
            let input = std::mem::take(&mut h.input);
            let used = h.take(shared, ctx, &input);
            if used < input.len() && h.state == State::Serving {
                h.input = input[used..].to_vec();
                if used > 0 {
                    return Go::Again;
                }
            }
        }
        if shared.shutting_down() && h.work.is_empty() && owed == 0 {
            h.state = State::Closing;
            return Go::Again;
        }
        Go::Read
    }

    #[inline(always)]
    fn take(&mut self, ctx: &mut Ctx, bytes: &[u8]) {
        let h = &mut *self.h;
        if !h.input.is_empty() {
            // Behind frames kept: taken in order, next round.
            h.input.extend_from_slice(bytes);
            return;
        }
        let used = h.take(self.shared, ctx, bytes);
        if used < bytes.len() && h.state == State::Serving {
            h.input = bytes[used..].to_vec();
        }
    }

    #[inline(always)]
    fn taken(&mut self, io: &mut Io<'_, Command>, ctx: &mut Ctx) -> Option<Then> {
        if std::mem::take(&mut ctx.spent) {
            io.remote().shutdown();
        }
        None
    }

    /// The peer closed its side: nothing more can be asked. What is owed for what it asked is
    /// written (with GOAWAY), then the connection closes; replies still to come are not
    /// waited for.
    #[inline(always)]
    fn peer_closed(&mut self) -> Option<Then> {
        self.h.conn.go_away(&mut self.h.out);
        self.h.state = State::Closing;
        None
    }

    #[inline(always)]
    fn drained(&mut self, io: &mut Io<'_, Command>, progressed: bool) -> Then {
        self.h.park(self.shared, io, progressed, true)
    }

    #[inline(always)]
    fn park(&mut self, io: &mut Io<'_, Command>, progressed: bool, read: bool) -> Then {
        self.h.park(self.shared, io, progressed, read)
    }

    #[inline(always)]
    fn linger(&mut self, io: &mut Io<'_, Command>) -> Then {
        self.h.linger(self.shared, io)
    }
}

/// What a park needs to know of the streams, found in the walk that measures them.
struct Survey {
    /// When the first deferred reply is due.
    first_reply: Option<Instant>,
    /// Every stream with work is a live one (each keeps its own deadline).
    only_live: bool,
    /// The first deadline a live stream keeps.
    live_deadline: Option<Instant>,
    /// Bytes of replies held back by the windows.
    replies_held: usize,
}

/// With an access log: stream `stream`'s exchange is over (logged if it was waiting).
fn logged(shared: &ServerShared, id: reactor::ConnId, stream: u32) {
    if let Some(log) = shared.access_log.as_deref() {
        access::done(log, (id, stream));
    }
}

fn owed_past_high(h: &H2Strand) -> bool {
    h.out.len() - h.written >= OUTPUT_HIGH
}

/// What a resume needs of `Io` while the scratch buffer is borrowed.
struct Ctx {
    now: Instant,
    id: reactor::ConnId,
    peer: Option<std::net::SocketAddr>,
    /// The connection is TLS (h2 by ALPN).
    tls: bool,
    /// The `serve_n` budget is spent: the server is to stop.
    spent: bool,
}

impl Ctx {
    fn worker(&self) -> usize {
        self.id.worker() as usize
    }
}

/// The worker has no connection left: its pooled buffers go.
pub(crate) fn worker_idle() {
    empty(&OUT_BUFFERS);
    empty(&WORK_LISTS);
    crate::h2::conn::worker_idle();
}

thread_local! {
    /// HPACK's scratch for decoding (Huffman strings) and the header list, one per worker.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
    /// Output buffers kept for reuse.
    static OUT_BUFFERS: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Work lists kept for reuse.
    static WORK_LISTS: std::cell::RefCell<Vec<Vec<(u32, Work)>>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests;
