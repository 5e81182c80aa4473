//! WebSocket connections kept inside the reactor: an upgraded HTTP connection becomes a
//! WebSocket strand in the same slab entry, driven by the application's [`WsHandler`] with a
//! state of its own per connection.
//!
//! An idle WebSocket strand holds no heap buffer: the decoder keeps a split frame head inline,
//! and message data and unsent output only while they exist.
//!
//! **Backpressure.** While more than [`WS_HIGH_WATER`] bytes of output wait for the peer, the
//! strand stops reading from it (an echo-like application cannot be made to queue more). Output
//! queued by [`WsSender`](super::WsSender)s, broadcasts and rooms does not stop: when a
//! connection's unsent output passes [`WS_MAX_BACKLOG`] — a peer that does not read — the
//! connection is closed (and the application's `close` callback told 1008), so a slow peer
//! cannot grow server memory without bound. A socket that takes no output for the server's
//! write timeout is closed too.

use std::sync::Arc;
use std::time::Instant;

use reactor::{ConnId, Io, Read, Remote, Then};

use super::app::{Ws, WsHandler};
use super::close::CloseCode;
use super::decoder::{Decoder, Event};
use super::deflate::{Agreed, History, SLOTS, queue_owned, queue_shared, worker_inflater};
use super::frame::{Opcode, Role, write_frame};
use crate::live::{
    Command, DRAIN_LINGER, LiveConn, LiveSettings, Outbox, OutputBudget, Timeouts, Watch,
    drop_unread, linger_until, send_alone, write_out,
};
use crate::rooms::{
    Delivery, Forms, Joined, Joining, Message, Seat, history_back, join_back, leave_all,
};

/// Output waiting for the peer beyond which a WebSocket strand stops reading.
pub const WS_HIGH_WATER: usize = 256 * 1024;

/// What a WebSocket route's connections are made with (the same for every route of a
/// server).
pub(crate) struct WsSettings {
    /// What every live connection is made with.
    pub(crate) live: LiveSettings,
    /// The largest message a peer may send.
    pub(crate) max_message: usize,
    /// permessage-deflate, when the server offers it ([`Server::deflate`]).
    ///
    /// [`Server::deflate`]: crate::http::Server
    pub(crate) deflate: Option<super::Deflate>,
}

/// A WebSocket route's application, whatever its handler type.
pub(crate) trait WsApp: Send + Sync {
    /// The application's decision on an upgrade request (already checked for the protocol):
    /// the connection to become, or the response that refuses it. `deflate`: what the peer
    /// agreed to for permessage-deflate.
    fn accept(
        &self,
        req: &crate::http::Request,
        settings: &Arc<WsSettings>,
        remote: &Remote<Command>,
        deflate: Option<Agreed>,
    ) -> Result<Box<dyn LiveConn>, crate::http::Response>;
}

/// A WebSocket route's application: its handler, and — from the first upgrade on — what every
/// connection of the route shares, so that a connection holds one pointer to all of it (one
/// endpoint per permessage-deflate agreement, so that the agreement costs a connection
/// nothing).
pub(crate) struct Route<H> {
    handler: Arc<H>,
    endpoints: [std::sync::OnceLock<Arc<Endpoint<H>>>; SLOTS],
    /// What a callback that holds its worker is reported as: the route's method and path.
    label: Arc<str>,
}

impl<H> Route<H> {
    /// The application of the route at `path`.
    pub(crate) fn new(handler: H, path: &str) -> Route<H> {
        Route {
            handler: Arc::new(handler),
            endpoints: std::array::from_fn(|_| std::sync::OnceLock::new()),
            label: format!("GET {path} (WebSocket)").into(),
        }
    }
}

/// What the connections of one route with one agreement share: the handler, the server's
/// settings and remote, and how their messages are compressed.
struct Endpoint<H> {
    handler: Arc<H>,
    settings: Arc<WsSettings>,
    remote: Remote<Command>,
    deflate: Option<Agreed>,
    label: Arc<str>,
}

impl<H: WsHandler> WsApp for Route<H> {
    fn accept(
        &self,
        req: &crate::http::Request,
        settings: &Arc<WsSettings>,
        remote: &Remote<Command>,
        deflate: Option<Agreed>,
    ) -> Result<Box<dyn LiveConn>, crate::http::Response> {
        let state = self.handler.accept(req)?;
        // A route belongs to one server: its settings and remote are the same at every upgrade,
        // and its compression settings too (an agreement differs only in what `slot` tells).
        let endpoint = self.endpoints[Agreed::slot(deflate.as_ref())].get_or_init(|| {
            Arc::new(Endpoint {
                handler: Arc::clone(&self.handler),
                settings: Arc::clone(settings),
                remote: remote.clone(),
                deflate,
                label: Arc::clone(&self.label),
            })
        });
        Ok(Box::new(WsStrand::new(Arc::clone(endpoint), state)))
    }
}

/// Whether a parked connection reads from its peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    On,
    /// Stopped while more than [`WS_HIGH_WATER`] bytes wait for the peer (backpressure).
    Paused,
}

/// Where a WebSocket connection is in its closing handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closing {
    /// Open.
    No,
    /// Our close frame is queued (perhaps not yet written).
    Sent,
    /// Our close frame is written; waiting for the peer's until the close wait passes.
    Waiting,
    /// The handshake is done (or the connection is to end): flush, then close TCP.
    Done,
    /// Our side is shut after the last frame; reading and dropping what the peer still sends
    /// until it closes (or the server's linger time), so that closing does not reset the connection before
    /// the peer has read our close frame.
    Lingering,
}

/// A ping frame, no payload.
const PING_FRAME: [u8; 2] = [Opcode::Ping.fin(), 0];

thread_local! {
    /// The ping frame, shared by every connection of the worker.
    static PING: Arc<[u8]> = Arc::from(&PING_FRAME[..]);
}

/// A WebSocket connection in the reactor, with its application's state: idle, three pointers
/// and the state (the decoder, unsent output and the closing handshake live in [`WsBusy`],
/// boxed only while there is something to keep).
pub(crate) struct WsStrand<H: WsHandler> {
    /// The application's side of the connection, `None` once its state was handed back to it
    /// (the connection is ending): moved out whole, so the state is handed back or dropped
    /// exactly once by construction. The `Option` costs nothing (the endpoint pointer is
    /// never null).
    member: Option<Member<H>>,
    /// The rooms this connection is in (left when it ends): one pointer, and no allocation while
    /// in none.
    joined: Joined,
    /// `None` while idle: open, nothing half-read, nothing to write, no timer.
    busy: Option<Box<WsBusy>>,
}

/// The application's side of an open connection: its route's endpoint and its state.
struct Member<H: WsHandler> {
    endpoint: Arc<Endpoint<H>>,
    state: H::State,
}

/// What a WebSocket connection keeps while it is doing something.
struct WsBusy {
    decoder: Decoder,
    /// What the peer is still owed.
    out: Outbox,
    closing: Closing,
    deadline: Option<Instant>,
    timeouts: Timeouts,
    /// The joins this connection queued that have not come back yet.
    joining: Joining,
    /// What the peer's decompressor holds, when our messages keep their context.
    history: History,
}

impl WsBusy {
    fn new(
        max_message: usize,
        timeouts: Timeouts,
        budget: Arc<OutputBudget>,
        deflate: Option<&Agreed>,
    ) -> WsBusy {
        let decoder = match deflate.and_then(|_| worker_inflater()) {
            Some(inflater) => Decoder::with_deflate(Role::Server, max_message, inflater),
            None => Decoder::new(Role::Server, max_message),
        };
        WsBusy {
            decoder,
            out: Outbox::new(budget),
            closing: Closing::No,
            deadline: None,
            timeouts,
            joining: Joining::default(),
            history: History::default(),
        }
    }

    /// Nothing to keep: what [`WsBusy::new`] would make.
    fn is_done(&self) -> bool {
        self.closing == Closing::No
            && self.deadline.is_none()
            && self.joining.is_empty()
            && self.out.pending() == 0
            && self.out.held_bytes() == 0
            && self.decoder.is_idle()
            && self.decoder.held_bytes() == 0
            && self.history.is_empty()
    }
}

/// The busy part of a connection, made when first needed (with its endpoint's limits and
/// agreement; the defaults once the application's side is gone, which never needs them).
fn busy<'b, H>(
    slot: &'b mut Option<Box<WsBusy>>,
    endpoint: Option<&Endpoint<H>>,
) -> &'b mut WsBusy {
    slot.get_or_insert_with(|| {
        let busy = match endpoint {
            Some(e) => {
                let s = &e.settings;
                WsBusy::new(
                    s.max_message,
                    s.live.timeouts,
                    Arc::clone(&s.live.budget),
                    e.deflate.as_ref(),
                )
            }
            None => WsBusy::new(
                crate::ws::MAX_MESSAGE,
                Timeouts::default(),
                OutputBudget::new(usize::MAX),
                None,
            ),
        };
        Box::new(busy)
    })
}

impl<H: WsHandler> WsStrand<H> {
    fn new(endpoint: Arc<Endpoint<H>>, state: H::State) -> WsStrand<H> {
        WsStrand {
            member: Some(Member { endpoint, state }),
            joined: Joined::default(),
            busy: None,
        }
    }

    fn settings(&self) -> Option<&WsSettings> {
        self.member.as_ref().map(|m| &*m.endpoint.settings)
    }

    /// The busy part, made if the connection was idle.
    fn b(&mut self) -> &mut WsBusy {
        let endpoint = self.member.as_ref().map(|m| &*m.endpoint);
        busy(&mut self.busy, endpoint)
    }

    /// At the end of every call: an idle connection gives its busy part back.
    fn settle(&mut self, next: Then) -> Then {
        if self.busy.as_ref().is_some_and(|b| b.is_done()) {
            self.busy = None;
        }
        next
    }

    fn closing(&self) -> Closing {
        self.busy.as_ref().map_or(Closing::No, |b| b.closing)
    }

    /// Runs `f` with the connection as a callback sees it and the application's state; a
    /// close the callback asked for is queued.
    fn with_ws(
        &mut self,
        id: ConnId,
        now: Instant,
        f: impl FnOnce(&H, &mut Ws<'_>, &mut H::State),
    ) {
        let Some(member) = self.member.as_mut() else {
            return; // told already: the application is done with this connection
        };
        let endpoint = &*member.endpoint;
        let busy = busy(&mut self.busy, Some(endpoint));
        let mut close = None;
        {
            let mut ws = Ws {
                out: &mut busy.out,
                deflate: endpoint.deflate.as_ref(),
                history: &mut busy.history,
                close: &mut close,
                remote: &endpoint.remote,
                seat: Seat {
                    id,
                    rooms: &endpoint.settings.live.rooms,
                    joined: &mut self.joined,
                    joining: &mut busy.joining,
                    max_rooms: endpoint.settings.live.max_rooms,
                },
            };
            // Timed: a callback holds its worker as an HTTP handler does.
            let watch = Watch::start(&endpoint.settings.live.stalls, now);
            f(&endpoint.handler, &mut ws, &mut member.state);
            let stalls = &endpoint.settings.live.stalls;
            watch.stop(stalls, id.worker() as usize, || &endpoint.label);
        }
        if let Some(code) = close {
            self.queue_close(code);
        }
    }

    fn pending(&self) -> usize {
        self.busy.as_ref().map_or(0, |b| b.out.pending())
    }

    /// Whether the peer is so far behind that the connection is to be dropped (see
    /// [`Outbox::falls_behind`]).
    fn falls_behind(&self) -> bool {
        self.busy.as_ref().is_some_and(|b| b.out.falls_behind())
    }

    /// Drops a peer that does not read rather than grow without bound: the application is told
    /// 1008 (no close frame: the peer would not read it).
    fn shed(&mut self, id: ConnId) -> Then {
        self.tell(id, Some(CloseCode::POLICY));
        Then::Close
    }

    /// The connection ended: it leaves its rooms, and the application gets its state back
    /// (once).
    fn tell(&mut self, id: ConnId, code: Option<CloseCode>) {
        let Some(Member { endpoint, state }) = self.member.take() else {
            return; // told already
        };
        // The connection is ending: its busy part (and the write timeout the close frame
        // still needs) outlives the application's side.
        let joining = &busy(&mut self.busy, Some(&*endpoint)).joining;
        leave_all(
            &mut self.joined,
            Some(joining),
            &endpoint.settings.live.rooms,
            id,
        );
        endpoint
            .settings
            .live
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        endpoint.handler.close(id, state, code.map(CloseCode::get));
    }

    /// Queues our close frame with `code` (once) and starts the closing handshake.
    fn queue_close(&mut self, code: CloseCode) {
        let busy = self.b();
        if busy.closing == Closing::No {
            busy.out
                .write(|buf| write_frame(buf, Opcode::Close.fin(), &code.payload(), None));
            busy.closing = Closing::Sent;
        }
    }

    /// Pings the peer. An idle connection hands the two bytes straight to the socket (or to
    /// the worker's sweep, which sends them with the other connections' pings: see
    /// [`Io::send_shared`]), so the ping costs its send and nothing else (no busy part, no
    /// allocation); only if the socket does not take them whole are they queued.
    fn ping(&mut self, io: &mut Io<'_, Command>) {
        let sent = match &self.busy {
            None => PING
                .try_with(|ping| io.send_shared(ping, 0))
                .ok()
                .and_then(Result::ok)
                .unwrap_or(0),
            Some(_) => 0,
        };
        if sent < PING_FRAME.len() {
            self.b()
                .out
                .write(|buf| buf.extend_from_slice(&PING_FRAME[sent..]));
        }
    }

    /// Decodes what arrived and acts on every event.
    fn take(&mut self, mut bytes: &[u8], id: ConnId, now: Instant) {
        while !bytes.is_empty() && self.closing() != Closing::Done {
            match self.b().decoder.next(bytes) {
                Err(broken) => {
                    // A broken rule: close with its code, read nothing more.
                    crate::log::info!(close_code = broken.close_code().get(); "WebSocket closed: the peer broke the protocol");
                    self.queue_close(broken.close_code());
                    self.b().closing = Closing::Done;
                    self.tell(id, Some(broken.close_code()));
                    return;
                }
                Ok((used, event)) => {
                    bytes = &bytes[used..];
                    match event {
                        None => {}
                        Some(event) => self.event(event, id, now),
                    }
                    if used == 0 {
                        return;
                    }
                }
            }
        }
    }

    fn event(&mut self, event: Event, id: ConnId, now: Instant) {
        let msg = match event {
            Event::Text(t) => Message::Text(t),
            Event::Binary(b) => Message::Binary(b),
            Event::Ping(payload) => {
                let busy = self.b();
                if busy.closing == Closing::No {
                    busy.out
                        .write(|buf| write_frame(buf, Opcode::Pong.fin(), &payload, None));
                }
                return;
            }
            Event::Pong(_) => return,
            Event::Close(code) => {
                // Answer with the same code (none for none), then close TCP.
                let busy = self.b();
                if busy.closing == Closing::No {
                    let payload = code
                        .as_ref()
                        .map_or_else(Vec::new, |(c, _)| CloseCode::new(*c).payload());
                    busy.out
                        .write(|buf| write_frame(buf, Opcode::Close.fin(), &payload, None));
                }
                busy.closing = Closing::Done;
                self.tell(id, code.map(|(c, _)| CloseCode::new(c)));
                return;
            }
        };
        if self.closing() != Closing::No {
            return; // after our close frame, data is read and dropped (RFC 6455 §1.4)
        }
        self.with_ws(id, now, |handler, ws, state| {
            handler.message(ws, state, msg)
        });
    }

    /// Writes what is pending: `Ok(true)` when all of it went.
    fn flush(&mut self, io: &mut Io<'_, Command>, progressed: &mut bool) -> std::io::Result<bool> {
        let Some(busy) = self.busy.as_mut() else {
            return Ok(true);
        };
        let written = write_out(&mut busy.out, io, progressed, true);
        // What the socket did not take is charged to the server's output budget now.
        busy.out.reconcile();
        written
    }

    fn park(&mut self, now: Instant, progressed: bool, reading: Reading) -> Then {
        let Some(busy) = self.busy.as_mut() else {
            return Then::read();
        };
        let write_timeout = busy.timeouts.write;
        let write = busy.out.pending() > 0;
        if write {
            if progressed || busy.deadline.is_none() {
                busy.deadline = Some(now + write_timeout);
            }
        } else if busy.closing == Closing::Sent {
            // Our close frame went out just now: the peer has the close wait to answer (not
            // what was left of a write deadline).
            busy.closing = Closing::Waiting;
            busy.deadline = Some(now + busy.timeouts.close);
        } else if busy.closing != Closing::Waiting {
            busy.deadline = None;
        }
        Then::Park {
            read: reading == Reading::On,
            write,
            deadline: busy.deadline,
        }
    }

    /// Writes what is pending, then reads what the socket has — if it may have anything: woken
    /// only to write (the output queued by a publish, say), a read would only answer
    /// `WouldBlock`, one system call per recipient saved.
    fn run(&mut self, io: &mut Io<'_, Command>) -> Then {
        let mut progressed = false;
        let id = io.id();
        let now = io.now();
        // Whether the last read drained the socket (see `reactor::Read`).
        let mut drained = false;
        for _ in 0..16 {
            let flushed = self.flush(io, &mut progressed);
            // Checked as output is queued (a history replay at the start, say), not only when
            // more arrives.
            if flushed.is_ok() && self.falls_behind() {
                return self.shed(id);
            }
            match flushed {
                Err(_) => {
                    self.tell(id, None);
                    return Then::Close;
                }
                Ok(true) if self.closing() == Closing::Done => {
                    if io.shutdown_write().is_err() {
                        return Then::Close;
                    }
                    let busy = self.b();
                    busy.closing = Closing::Lingering;
                    busy.deadline = Some(io.now() + busy.timeouts.linger);
                    return self.linger(io);
                }
                Ok(true) if self.closing() == Closing::Lingering => return self.linger(io),
                Ok(true) => {}
                Ok(false) if self.pending() > WS_HIGH_WATER => {
                    return self.park(io.now(), progressed, Reading::Paused);
                }
                Ok(false) => {}
            }
            if drained || !io.read_ready() {
                // Nothing to read (drained, or a wake to write only): one system call saved.
                return self.park(io.now(), progressed, Reading::On);
            }
            match io.read() {
                Read::Data(bytes) => {
                    progressed = true;
                    self.take(bytes, id, now);
                    drained = !io.read_ready();
                }
                Read::WouldBlock => return self.park(io.now(), progressed, Reading::On),
                Read::Closed | Read::Error(_) => {
                    self.tell(id, None);
                    return Then::Close;
                }
            }
        }
        // Let other connections run; resumed next turn.
        self.park(io.now(), progressed, Reading::On)
    }

    /// Reads and drops what the peer still sends, until it closes its side.
    fn linger(&mut self, io: &mut Io<'_, Command>) -> Then {
        if !drop_unread(io) {
            return Then::Close;
        }
        match self.busy.as_ref().and_then(|b| b.deadline) {
            Some(end) => linger_until(io, end),
            None => Then::Close,
        }
    }
}

impl<H: WsHandler> LiveConn for WsStrand<H> {
    fn start(&mut self, io: &mut Io<'_, Command>, out: Vec<u8>, early: &[u8]) -> Then {
        self.b().out.push_own(out);
        let id = io.id();
        if let Some(settings) = self.settings() {
            settings
                .live
                .open
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if settings.live.kernel_liveness
                && let Some(every) = settings.live.ping_interval
            {
                // The kernel probes a silent peer and fails the connection if it is gone
                // (best effort: a failure leaves the connection as it was).
                let _ = io.probe_when_silent(every / 2, 2);
                let _ = io.give_up_unacknowledged_after(every * 2);
            }
        }
        self.with_ws(id, io.now(), |handler, ws, state| handler.open(ws, state));
        if io.remote().is_shutting_down() {
            // Upgraded while the server drains: the drain has passed this connection by.
            self.queue_close(CloseCode::GOING_AWAY);
        }
        if !early.is_empty() {
            self.take(early, id, io.now());
        }
        let next = self.run(io);
        self.settle(next)
    }

    fn resume(&mut self, io: &mut Io<'_, Command>, timeout: bool) -> Then {
        if timeout && self.closing() == Closing::Lingering {
            // Looked at again each tick until the peer has all (see `linger_until`).
            return self.linger(io);
        }
        if timeout {
            // No output taken for the write timeout, or no close reply in time.
            self.tell(io.id(), None);
            return Then::Close;
        }
        let next = self.run(io);
        self.settle(next)
    }

    fn message(&mut self, io: &mut Io<'_, Command>, cmd: Command) -> Then {
        if self.closing() == Closing::Lingering {
            return self.linger(io);
        }
        // Output left from an earlier turn: the peer is behind (its socket may not be resumed
        // until it reads), so what arrives now is charged to the budget at once.
        let behind = self.pending() > 0;
        if self.closing() == Closing::No {
            let deflate = self.member.as_ref().and_then(|m| m.endpoint.deflate);
            match cmd {
                Command::Send(msg) => {
                    let b = self.b();
                    let (opcode, bytes) = match msg {
                        Message::Text(t) => (Opcode::Text, t.into_bytes()),
                        Message::Binary(bytes) => (Opcode::Binary, bytes),
                    };
                    queue_owned(&mut b.out, opcode, bytes, deflate.as_ref(), &mut b.history)
                }
                Command::FanOut { frame, .. }
                | Command::Room(Delivery::Publish {
                    forms: Forms { message: frame, .. },
                    ..
                }) => {
                    // (A compressed connection's frame is its own: queued as usual.)
                    let idle = self.busy.is_none() && deflate.is_none();
                    match send_alone(idle, io, frame) {
                        None => {}
                        Some((frame, 0)) => {
                            let b = self.b();
                            queue_shared(&mut b.out, &frame, deflate.as_ref(), &mut b.history)
                        }
                        Some((frame, sent)) => self.b().out.put_back_shared(frame, sent),
                    }
                }
                Command::Close(code) => self.queue_close(CloseCode::new(code)),
                Command::Sweep | Command::Swept(_) => {
                    let silent = match cmd {
                        Command::Swept(silent) => silent,
                        _ => io.silent_sweeps(),
                    };
                    match silent {
                        0 => {}
                        // Silent for half an interval to an interval: ping.
                        1 => self.ping(io),
                        2 => {} // the ping's answer has half an interval more
                        _ => {
                            // Nothing within an interval of the ping: the peer is gone (no
                            // close frame: no one would read it).
                            self.tell(io.id(), None);
                            return Then::Close;
                        }
                    }
                }
                // For an HTTP connection that has turned WebSocket since, or for event streams.
                Command::Http(_) | Command::Event(_) | Command::Heartbeat => {}
                Command::Room(Delivery::History(came)) => {
                    let b = busy(&mut self.busy, self.member.as_ref().map(|m| &*m.endpoint));
                    let (out, history) = (&mut b.out, &mut b.history);
                    history_back(Some(&mut b.joining), &self.joined, &came, |line| {
                        queue_shared(out, &line.message, deflate.as_ref(), history)
                    });
                }
                Command::Room(Delivery::Join(room)) => {
                    if let Some(member) = &self.member {
                        let joining = self.busy.as_deref_mut().map(|b| &mut b.joining);
                        let rooms = &member.endpoint.settings.live.rooms;
                        join_back(joining, &self.joined, rooms, &room, io.id());
                    }
                }
            }
        }
        if behind {
            self.b().out.reconcile();
        }
        if self.falls_behind() {
            return self.shed(io.id());
        }
        // Written at the end of the worker's turn, with everything else the turn queues for
        // this connection: several publishes in one turn cost one write, not one each.
        let next = self.park(io.now(), false, Reading::On);
        self.settle(next)
    }

    fn drain(&mut self, io: &mut Io<'_, Command>) -> Then {
        // The server stops: the peer's goodbye is waited for briefly (from now on, and where
        // it is waited for already).
        let now = io.now();
        let busy = self.b();
        busy.timeouts = busy.timeouts.now(true);
        if matches!(busy.closing, Closing::Waiting | Closing::Lingering) {
            busy.deadline = busy.deadline.map(|d| d.min(now + DRAIN_LINGER));
        }
        if self.closing() == Closing::Lingering {
            return self.linger(io);
        }
        self.queue_close(CloseCode::GOING_AWAY);
        self.run(io)
    }

    fn unsent(&mut self, io: &mut Io<'_, Command>, frame: Arc<[u8]>, from: usize) -> Then {
        self.b().out.put_back_shared(frame, from);
        let next = self.run(io);
        self.settle(next)
    }

    fn closed(&mut self, id: ConnId) {
        self.tell(id, None);
    }

    fn wants(&self, msg: &Command) -> bool {
        matches!(msg, Command::Sweep | Command::Swept(_))
            && self.member.is_some()
            && self.closing() == Closing::No
    }

    fn held_bytes(&self) -> usize {
        self.joined.held_bytes()
            + self.busy.as_ref().map_or(0, |b| {
                std::mem::size_of::<WsBusy>()
                    + b.history.held_bytes()
                    + b.decoder.held_bytes()
                    + b.out.held_bytes()
                    + b.joining.held_bytes()
            })
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::*;

    struct NoState;
    impl WsHandler for NoState {
        type State = ();
        fn accept(&self, _req: &crate::http::Request) -> Result<(), crate::http::Response> {
            Ok(())
        }
        fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
    }

    /// What an idle WebSocket costs beside its slab entry: one allocation of three pointers
    /// (with a state of zero size), which glibc serves from a 32-byte chunk; fails if a field
    /// makes it grow.
    #[test]
    fn an_idle_websocket_holds_three_pointers_and_its_state() {
        assert_eq!(size_of::<WsStrand<NoState>>(), 24);
        assert_eq!(size_of::<WsStrand<Arc<NoState>>>(), 24);
        // A state of its own is added as it is laid out.
        struct Counter;
        impl WsHandler for Counter {
            type State = u64;
            fn accept(&self, _req: &crate::http::Request) -> Result<u64, crate::http::Response> {
                Ok(0)
            }
            fn message(&self, _ws: &mut Ws<'_>, _state: &mut u64, _msg: Message) {}
        }
        assert_eq!(size_of::<WsStrand<Counter>>(), 32);
    }
}
