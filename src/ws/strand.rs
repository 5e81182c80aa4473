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

use std::net::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reactor::{ConnId, Io, Next, Read, Remote};

use super::app::{Message, Ws, WsCommand, WsHandler};
use super::close::{GOING_AWAY, POLICY};
use super::decoder::{Decoder, Event};
use super::frame::{write_frame, Role, OP_BINARY, OP_CLOSE, OP_PONG, OP_TEXT};
use super::outbox::Outbox;
use super::rooms::{Joined, Rooms};

/// Output waiting for the peer beyond which a WebSocket strand stops reading.
///
/// ```
/// assert_eq!(web::ws::WS_HIGH_WATER, 256 * 1024);
/// ```
pub const WS_HIGH_WATER: usize = 256 * 1024;
/// Unsent output beyond which a connection is closed as a peer that does not read.
///
/// ```
/// assert_eq!(web::ws::WS_MAX_BACKLOG, 16 * 1024 * 1024);
/// ```
pub const WS_MAX_BACKLOG: usize = 16 * 1024 * 1024;
/// How long after sending its close frame the server waits for the peer's before closing.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A WebSocket connection as the server's slab entry holds it, whatever its application:
/// [`WsStrand`] for each handler type, behind one pointer.
pub(crate) trait WsConn: Send {
    /// Opens: the application's `open`, then the bytes that came with the upgrade request.
    /// `out` is what the connection still owes the peer (the 101 among it).
    fn start(&mut self, io: &mut Io<'_, WsCommand>, out: Vec<u8>, early: &[u8]) -> Next;
    fn resume(&mut self, io: &mut Io<'_, WsCommand>, timeout: bool) -> Next;
    fn message(&mut self, io: &mut Io<'_, WsCommand>, cmd: WsCommand) -> Next;
    fn drain(&mut self, io: &mut Io<'_, WsCommand>) -> Next;
    fn held_bytes(&self) -> usize;
}

/// What a route needs to turn an accepted upgrade into a connection (the same for every
/// route of a server).
pub(crate) struct WsSettings {
    pub(crate) max_message: usize,
    pub(crate) write_timeout: Duration,
    pub(crate) rooms: Rooms,
    /// Open WebSocket connections of the server.
    pub(crate) open: Arc<std::sync::atomic::AtomicUsize>,
}

/// A WebSocket route's application, whatever its handler type.
pub(crate) trait WsApp: Send + Sync {
    /// The application's decision on an upgrade request (already checked for the protocol):
    /// the connection to become, or the response that refuses it.
    fn accept(
        &self,
        req: &crate::http::Request,
        settings: &Arc<WsSettings>,
        remote: &Remote<WsCommand>,
    ) -> Result<Box<dyn WsConn>, crate::http::Response>;
}

impl<H: WsHandler> WsApp for Arc<H> {
    fn accept(
        &self,
        req: &crate::http::Request,
        settings: &Arc<WsSettings>,
        remote: &Remote<WsCommand>,
    ) -> Result<Box<dyn WsConn>, crate::http::Response> {
        let state = self.as_ref().accept(req)?;
        Ok(Box::new(WsStrand::new(
            Arc::clone(self),
            state,
            settings,
            remote.clone(),
        )))
    }
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
    /// until it closes (or [`LINGER`]), so that closing does not reset the connection before
    /// the peer has read our close frame.
    Lingering,
}

/// How long a closed WebSocket connection waits for its peer to close its side.
const LINGER: Duration = Duration::from_secs(2);

/// A WebSocket connection in the reactor, with its application's state.
pub(crate) struct WsStrand<H: WsHandler> {
    handler: Arc<H>,
    /// The application's state; taken when it is handed back in `close`.
    state: Option<H::State>,
    decoder: Decoder,
    /// What the peer is still owed.
    out: Outbox,
    closing: Closing,
    deadline: Option<Instant>,
    remote: Remote<WsCommand>,
    /// The server's settings (write timeout, rooms), shared by its connections.
    settings: Arc<WsSettings>,
    /// The rooms this connection is in (left when it ends, see `Drop`): one pointer, and no
    /// allocation while in none.
    joined: Joined,
    /// This connection's id, once started (`ConnId::NONE` before).
    id: ConnId,
}

/// The id a strand has before it starts.
const NOT_STARTED: ConnId = ConnId::from_parts(u32::MAX, u32::MAX, u32::MAX);

impl<H: WsHandler> WsStrand<H> {
    fn new(
        handler: Arc<H>,
        state: H::State,
        settings: &Arc<WsSettings>,
        remote: Remote<WsCommand>,
    ) -> WsStrand<H> {
        WsStrand {
            handler,
            state: Some(state),
            decoder: Decoder::new(Role::Server, settings.max_message),
            out: Outbox::default(),
            closing: Closing::No,
            deadline: None,
            remote,
            settings: Arc::clone(settings),
            joined: Joined::default(),
            id: NOT_STARTED,
        }
    }

    /// Runs `f` with the connection as a callback sees it and the application's state; a
    /// close the callback asked for is queued.
    fn with_ws(&mut self, id: ConnId, f: impl FnOnce(&H, &mut Ws<'_>, &mut H::State)) {
        let Some(state) = self.state.as_mut() else {
            return; // told already: the application is done with this connection
        };
        let mut close = None;
        {
            let mut ws = Ws {
                out: &mut self.out,
                close: &mut close,
                id,
                remote: &self.remote,
                rooms: &self.settings.rooms,
                joined: &mut self.joined,
            };
            f(&self.handler, &mut ws, state);
        }
        if let Some(code) = close {
            self.queue_close(code);
        }
    }

    fn pending(&self) -> usize {
        self.out.pending()
    }

    /// The connection ended: it leaves its rooms, and the application gets its state back
    /// (once).
    fn tell(&mut self, id: ConnId, code: Option<u16>) {
        self.leave_rooms(id);
        if let Some(state) = self.state.take() {
            self.handler.close(id, state, code);
        }
    }

    fn leave_rooms(&mut self, id: ConnId) {
        for room in self.joined.take() {
            self.settings.rooms.leave(&room, id);
        }
    }

    /// Queues our close frame with `code` (once) and starts the closing handshake.
    fn queue_close(&mut self, code: u16) {
        if self.closing == Closing::No {
            write_frame(self.out.own(), 0x80 | OP_CLOSE, &code.to_be_bytes(), None);
            self.closing = Closing::Sent;
        }
    }

    /// Decodes what arrived and acts on every event.
    fn take(&mut self, mut bytes: &[u8], id: ConnId) {
        while !bytes.is_empty() && self.closing != Closing::Done {
            match self.decoder.next(bytes) {
                Err(code) => {
                    // A broken rule: close with its code, read nothing more.
                    self.queue_close(code);
                    self.closing = Closing::Done;
                    self.tell(id, Some(code));
                    return;
                }
                Ok((used, event)) => {
                    bytes = &bytes[used..];
                    match event {
                        None => {}
                        Some(event) => self.event(event, id),
                    }
                    if used == 0 {
                        return;
                    }
                }
            }
        }
    }

    fn event(&mut self, event: Event, id: ConnId) {
        let msg = match event {
            Event::Text(t) => Message::Text(t),
            Event::Binary(b) => Message::Binary(b),
            Event::Ping(payload) => {
                if self.closing == Closing::No {
                    write_frame(self.out.own(), 0x80 | OP_PONG, &payload, None);
                }
                return;
            }
            Event::Pong(_) => return,
            Event::Close(code) => {
                // Answer with the same code (none for none), then close TCP.
                if self.closing == Closing::No {
                    let payload = code.as_ref().map(|(c, _)| c.to_be_bytes());
                    write_frame(
                        self.out.own(),
                        0x80 | OP_CLOSE,
                        payload.as_ref().map_or(&[][..], |p| &p[..]),
                        None,
                    );
                }
                self.closing = Closing::Done;
                self.tell(id, code.map(|(c, _)| c));
                return;
            }
        };
        if self.closing != Closing::No {
            return; // after our close frame, data is read and dropped (RFC 6455 §1.4)
        }
        self.with_ws(id, |handler, ws, state| handler.message(ws, state, msg));
    }

    /// Writes what is pending: `Ok(true)` when all of it went.
    fn flush(
        &mut self,
        io: &mut Io<'_, WsCommand>,
        progressed: &mut bool,
    ) -> std::io::Result<bool> {
        while self.pending() > 0 {
            let n = io.write(self.out.unsent())?;
            if n == 0 {
                return Ok(false);
            }
            *progressed = true;
            self.out.advance(n);
        }
        Ok(true)
    }

    fn park(&mut self, now: Instant, progressed: bool, read: bool) -> Next {
        let write = self.pending() > 0;
        if write {
            if progressed || self.deadline.is_none() {
                self.deadline = Some(now + self.settings.write_timeout);
            }
        } else if self.closing == Closing::Sent {
            // Our close frame went out just now: the peer has the close wait to answer (not
            // what was left of a write deadline).
            self.closing = Closing::Waiting;
            self.deadline = Some(now + CLOSE_WAIT);
        } else if self.closing != Closing::Waiting {
            self.deadline = None;
        }
        Next::Park {
            read,
            write,
            deadline: self.deadline,
        }
    }

    /// Writes what is pending, then reads what the socket has — if it may have anything: woken
    /// only to write (the output queued by a publish, say), a read would only answer
    /// `WouldBlock`, one system call per recipient saved.
    fn run(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        let mut progressed = false;
        let id = io.id();
        let scratch = io.scratch_size();
        // A read shorter than the scratch buffer drained the socket (see `reactor::Read`).
        let mut drained = false;
        for _ in 0..16 {
            match self.flush(io, &mut progressed) {
                Err(_) => {
                    self.tell(id, None);
                    return Next::Close;
                }
                Ok(true) if self.closing == Closing::Done => {
                    if io.stream().shutdown(Shutdown::Write).is_err() {
                        return Next::Close;
                    }
                    self.closing = Closing::Lingering;
                    self.deadline = Some(io.now() + LINGER);
                    return self.linger(io);
                }
                Ok(true) if self.closing == Closing::Lingering => return self.linger(io),
                Ok(true) => {}
                Ok(false) if self.pending() > WS_HIGH_WATER => {
                    return self.park(io.now(), progressed, false)
                }
                Ok(false) => {}
            }
            if drained || !io.read_ready() {
                // Nothing to read (drained, or a wake to write only): one system call saved.
                return self.park(io.now(), progressed, true);
            }
            match io.read() {
                Read::Data(bytes) => {
                    progressed = true;
                    drained = bytes.len() < scratch;
                    self.take(bytes, id);
                }
                Read::WouldBlock => return self.park(io.now(), progressed, true),
                Read::Closed | Read::Error(_) => {
                    self.tell(id, None);
                    return Next::Close;
                }
            }
        }
        // Let other connections run; resumed next turn.
        self.park(io.now(), progressed, true)
    }

    /// Reads and drops what the peer still sends, until it closes its side.
    fn linger(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        for _ in 0..16 {
            match io.read() {
                Read::Data(_) => continue,
                Read::WouldBlock => break,
                Read::Closed | Read::Error(_) => return Next::Close,
            }
        }
        match self.deadline {
            Some(t) => Next::read().until(t),
            None => Next::Close,
        }
    }
}

impl<H: WsHandler> WsConn for WsStrand<H> {
    fn start(&mut self, io: &mut Io<'_, WsCommand>, out: Vec<u8>, early: &[u8]) -> Next {
        self.out = Outbox::with(out);
        let id = io.id();
        self.id = id;
        self.settings
            .open
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.with_ws(id, |handler, ws, state| handler.open(ws, state));
        if io.remote().is_shutting_down() {
            // Upgraded while the server drains: the drain has passed this connection by.
            self.queue_close(GOING_AWAY);
        }
        if !early.is_empty() {
            self.take(early, id);
        }
        self.run(io)
    }

    fn resume(&mut self, io: &mut Io<'_, WsCommand>, timeout: bool) -> Next {
        if timeout {
            // No output taken for the write timeout, or no close reply in time.
            self.tell(io.id(), None);
            return Next::Close;
        }
        self.run(io)
    }

    fn message(&mut self, io: &mut Io<'_, WsCommand>, cmd: WsCommand) -> Next {
        if self.closing == Closing::Lingering {
            return self.linger(io);
        }
        if self.closing == Closing::No {
            match cmd {
                WsCommand::Send(Message::Text(t)) => {
                    write_frame(self.out.own(), 0x80 | OP_TEXT, t.as_bytes(), None)
                }
                WsCommand::Send(Message::Binary(b)) => {
                    write_frame(self.out.own(), 0x80 | OP_BINARY, &b, None)
                }
                WsCommand::Frame(frame)
                | WsCommand::FanOut { frame, .. }
                | WsCommand::Publish { frame, .. } => self.out.push_shared(&frame),
                WsCommand::Close(code) => self.queue_close(code),
                WsCommand::Join(room) => {
                    // Still a member (it may have left since it asked)?
                    if self.joined.contains(&room) {
                        self.settings.rooms.join_local(&room, io.id());
                    }
                }
            }
        }
        if self.pending() > WS_MAX_BACKLOG {
            // A peer that does not read: drop it rather than grow without bound.
            self.tell(io.id(), Some(POLICY));
            return Next::Close;
        }
        // Written at the end of the worker's turn, with everything else the turn queues for
        // this connection: several publishes in one turn cost one write, not one each.
        self.park(io.now(), false, true)
    }

    fn drain(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        if self.closing == Closing::Lingering {
            return self.linger(io);
        }
        self.queue_close(GOING_AWAY);
        self.run(io)
    }

    fn held_bytes(&self) -> usize {
        self.decoder.held_bytes() + self.out.held_bytes() + self.joined.held_bytes()
    }
}

impl<H: WsHandler> Drop for WsStrand<H> {
    /// However the connection ends — closed by the reactor at a drain deadline included — it
    /// leaves its rooms and the application gets its state back.
    fn drop(&mut self) {
        if self.id != NOT_STARTED {
            self.tell(self.id, None);
            self.settings
                .open
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}
