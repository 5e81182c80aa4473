//! WebSocket connections kept inside the reactor: an upgraded HTTP connection becomes a
//! WebSocket strand in the same slab entry. The application gives callbacks ([`WsHandler`]);
//! each connection has a cheap, cloneable [`WsSender`] that works from any thread, and
//! [`broadcast`] sends one message to many connections, encoding it once.
//!
//! An idle WebSocket strand holds no heap buffer: the decoder keeps a split frame head inline,
//! and message data and unsent output only while they exist.
//!
//! **Backpressure.** While more than [`WS_HIGH_WATER`] bytes of output wait for the peer, the
//! strand stops reading from it (an echo-like application cannot be made to queue more). Output
//! queued by [`WsSender`]s does not stop: when a connection's unsent output passes
//! [`WS_MAX_BACKLOG`] — a peer that does not read — the connection is closed (and the
//! application's `close` callback told 1008), so a slow peer cannot grow server memory without
//! bound. A socket that takes no output for the server's write timeout is closed too.

use std::net::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reactor::{ConnId, Io, Next, Read, Remote};

use super::close::{GOING_AWAY, POLICY};
use super::decoder::{Decoder, Event};
use super::frame::{write_frame, Role, OP_BINARY, OP_CLOSE, OP_PONG, OP_TEXT};
use crate::http::Request;

/// Output waiting for the peer beyond which a WebSocket strand stops reading.
pub const WS_HIGH_WATER: usize = 256 * 1024;
/// Unsent output beyond which a connection is closed as a peer that does not read.
pub const WS_MAX_BACKLOG: usize = 16 * 1024 * 1024;
/// How long after sending its close frame the server waits for the peer's before closing.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A whole message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
}

/// The callbacks of a WebSocket application served by [`Server::websocket`](crate::http::Server::websocket).
/// They run on the connection's worker thread and must not block.
///
/// ```
/// use web::ws::{Message, Ws, WsHandler};
/// /// Echoes text as text and binary as binary.
/// struct Echo;
/// impl WsHandler for Echo {
///     fn message(&self, ws: &mut Ws<'_>, msg: Message) {
///         ws.send(&msg);
///     }
/// }
/// ```
pub trait WsHandler: Send + Sync + 'static {
    /// A connection opened (its upgrade request is `req`). Keep `ws.sender()` to send to it
    /// later from anywhere.
    fn open(&self, ws: &mut Ws<'_>, req: &Request) {
        let _ = (ws, req);
    }

    /// A whole message arrived.
    fn message(&self, ws: &mut Ws<'_>, msg: Message);

    /// The connection ended, with the close code the peer sent (or the one the server closed
    /// with: 1002, 1007, 1009 for a broken rule, 1008 for a peer that does not read, 1001 at
    /// shutdown); `None` when the peer went away without a close frame or sent one without a
    /// code.
    fn close(&self, id: ConnId, code: Option<u16>) {
        let _ = (id, code);
    }
}

/// A handler shared with the rest of the program (for its state) is a handler too.
impl<T: WsHandler> WsHandler for Arc<T> {
    fn open(&self, ws: &mut Ws<'_>, req: &Request) {
        (**self).open(ws, req)
    }

    fn message(&self, ws: &mut Ws<'_>, msg: Message) {
        (**self).message(ws, msg)
    }

    fn close(&self, id: ConnId, code: Option<u16>) {
        (**self).close(id, code)
    }
}

/// What other threads send to a WebSocket connection (through [`WsSender`]).
#[derive(Clone, Debug)]
pub enum WsCommand {
    /// Send a message.
    Send(Message),
    /// Send an already encoded frame (what [`broadcast`] uses: one encoding for all).
    Frame(Arc<[u8]>),
    /// Close with this code.
    Close(u16),
}

/// A connection as a callback sees it: messages sent here go straight into its output, without
/// a trip through another thread.
pub struct Ws<'a> {
    out: &'a mut Vec<u8>,
    close: &'a mut Option<u16>,
    id: ConnId,
    remote: &'a Remote<WsCommand>,
}

impl Ws<'_> {
    /// Sends a text message.
    pub fn send_text(&mut self, text: &str) {
        self.frame(OP_TEXT, text.as_bytes());
    }

    /// Sends a binary message.
    pub fn send_binary(&mut self, body: &[u8]) {
        self.frame(OP_BINARY, body);
    }

    /// Sends a message (text as text, binary as binary).
    pub fn send(&mut self, msg: &Message) {
        match msg {
            Message::Text(t) => self.send_text(t),
            Message::Binary(b) => self.send_binary(b),
        }
    }

    /// Closes the connection with `code` (sent in a close frame after what is queued).
    pub fn close(&mut self, code: u16) {
        if self.close.is_none() {
            *self.close = Some(code);
        }
    }

    /// This connection's id.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// A sender for this connection, usable from any thread.
    pub fn sender(&self) -> WsSender {
        WsSender {
            id: self.id,
            remote: self.remote.clone(),
        }
    }

    fn frame(&mut self, opcode: u8, payload: &[u8]) {
        if self.close.is_none() {
            write_frame(self.out, 0x80 | opcode, payload, None);
        }
    }
}

/// Sends to one WebSocket connection from any thread. Cheap to clone. Sends to a connection
/// that has closed are dropped (they return `false` when the connection is known gone).
#[derive(Clone)]
pub struct WsSender {
    id: ConnId,
    remote: Remote<WsCommand>,
}

impl std::fmt::Debug for WsSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsSender").field("id", &self.id).finish()
    }
}

impl WsSender {
    /// The connection's id.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// Queues a text message.
    pub fn send_text(&self, text: impl Into<String>) -> bool {
        self.remote
            .send(self.id, WsCommand::Send(Message::Text(text.into())))
    }

    /// Queues a binary message.
    pub fn send_binary(&self, body: impl Into<Vec<u8>>) -> bool {
        self.remote
            .send(self.id, WsCommand::Send(Message::Binary(body.into())))
    }

    /// Closes the connection with `code`.
    pub fn close(&self, code: u16) -> bool {
        self.remote.send(self.id, WsCommand::Close(code))
    }
}

/// Sends `msg` to every connection of `to`, encoding the frame once (each connection gets a
/// reference to the same bytes). Returns how many sends were queued.
///
/// ```no_run
/// # fn room() -> Vec<web::ws::WsSender> { Vec::new() }
/// let members: Vec<web::ws::WsSender> = room();
/// web::ws::broadcast(&members, &web::ws::Message::Text("hello, all".into()));
/// ```
pub fn broadcast(to: &[WsSender], msg: &Message) -> usize {
    let (opcode, payload) = match msg {
        Message::Text(t) => (OP_TEXT, t.as_bytes()),
        Message::Binary(b) => (OP_BINARY, b.as_slice()),
    };
    let mut frame = Vec::with_capacity(payload.len() + 10);
    write_frame(&mut frame, 0x80 | opcode, payload, None);
    let command = WsCommand::Frame(frame.into());
    let mut queued = 0;
    let mut rest = to;
    while let Some(first) = rest.first() {
        // Senders of one server share its remote: queue them together.
        let same = rest
            .iter()
            .take_while(|s| s.remote.same_server(&first.remote))
            .count();
        let ids: Vec<ConnId> = rest[..same].iter().map(|s| s.id).collect();
        queued += first.remote.broadcast(&ids, &command);
        rest = &rest[same..];
    }
    queued
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

/// A WebSocket connection in the reactor.
pub(crate) struct WsStrand {
    handler: Arc<dyn WsHandler>,
    decoder: Decoder,
    out: Vec<u8>,
    out_at: usize,
    closing: Closing,
    /// The code the application was (or will be) told at the end.
    told: bool,
    write_timeout: Duration,
    deadline: Option<Instant>,
    remote: Remote<WsCommand>,
}

impl WsStrand {
    pub(crate) fn new(
        handler: Arc<dyn WsHandler>,
        max_message: usize,
        out: Vec<u8>,
        write_timeout: Duration,
        remote: Remote<WsCommand>,
    ) -> WsStrand {
        WsStrand {
            remote,
            handler,
            decoder: Decoder::new(Role::Server, max_message),
            out,
            out_at: 0,
            closing: Closing::No,
            told: false,
            write_timeout,
            deadline: None,
        }
    }

    /// Heap bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.decoder.held_bytes() + self.out.capacity()
    }

    fn pending(&self) -> usize {
        self.out.len() - self.out_at
    }

    /// Calls the application's `open`, then takes bytes that came with the upgrade request.
    pub(crate) fn start(
        &mut self,
        io: &mut Io<'_, WsCommand>,
        req: &Request,
        early: &[u8],
    ) -> Next {
        let mut close = None;
        {
            let mut ws = Ws {
                out: &mut self.out,
                close: &mut close,
                id: io.id(),
                remote: &self.remote,
            };
            self.handler.open(&mut ws, req);
        }
        if let Some(code) = close {
            self.queue_close(code);
        }
        if io.remote().is_shutting_down() {
            // Upgraded while the server drains: the drain has passed this connection by.
            self.queue_close(GOING_AWAY);
        }
        if !early.is_empty() {
            self.take(early, io.id());
        }
        self.run(io)
    }

    fn tell(&mut self, id: ConnId, code: Option<u16>) {
        if !self.told {
            self.told = true;
            self.handler.close(id, code);
        }
    }

    /// Queues our close frame with `code` (once) and starts the closing handshake.
    fn queue_close(&mut self, code: u16) {
        if self.closing == Closing::No {
            write_frame(&mut self.out, 0x80 | OP_CLOSE, &code.to_be_bytes(), None);
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
                    write_frame(&mut self.out, 0x80 | OP_PONG, &payload, None);
                }
                return;
            }
            Event::Pong(_) => return,
            Event::Close(code) => {
                // Answer with the same code (none for none), then close TCP.
                if self.closing == Closing::No {
                    let payload = code.as_ref().map(|(c, _)| c.to_be_bytes());
                    write_frame(
                        &mut self.out,
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
        let mut close = None;
        {
            let mut ws = Ws {
                out: &mut self.out,
                close: &mut close,
                id,
                remote: &self.remote,
            };
            self.handler.message(&mut ws, msg);
        }
        if let Some(code) = close {
            self.queue_close(code);
        }
    }

    /// Writes what is pending: `Ok(true)` when all of it went.
    fn flush(
        &mut self,
        io: &mut Io<'_, WsCommand>,
        progressed: &mut bool,
    ) -> std::io::Result<bool> {
        while self.out_at < self.out.len() {
            let n = io.write(&self.out[self.out_at..])?;
            if n == 0 {
                return Ok(false);
            }
            *progressed = true;
            self.out_at += n;
        }
        self.out_at = 0;
        if self.out.capacity() > 0 {
            self.out = Vec::new();
        }
        Ok(true)
    }

    fn park(&mut self, now: Instant, progressed: bool, read: bool) -> Next {
        let write = self.pending() > 0;
        if write {
            if progressed || self.deadline.is_none() {
                self.deadline = Some(now + self.write_timeout);
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

    pub(crate) fn run(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
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
            if drained {
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

    pub(crate) fn resume(&mut self, io: &mut Io<'_, WsCommand>, timeout: bool) -> Next {
        if timeout {
            // No output taken for the write timeout, or no close reply in time.
            self.tell(io.id(), None);
            return Next::Close;
        }
        self.run(io)
    }

    pub(crate) fn message(&mut self, io: &mut Io<'_, WsCommand>, cmd: WsCommand) -> Next {
        if self.closing == Closing::Lingering {
            return self.linger(io);
        }
        if self.closing == Closing::No {
            match cmd {
                WsCommand::Send(Message::Text(t)) => {
                    write_frame(&mut self.out, 0x80 | OP_TEXT, t.as_bytes(), None)
                }
                WsCommand::Send(Message::Binary(b)) => {
                    write_frame(&mut self.out, 0x80 | OP_BINARY, &b, None)
                }
                WsCommand::Frame(frame) => self.out.extend_from_slice(&frame),
                WsCommand::Close(code) => self.queue_close(code),
            }
        }
        if self.pending() > WS_MAX_BACKLOG {
            // A peer that does not read: drop it rather than grow without bound.
            self.tell(io.id(), Some(POLICY));
            return Next::Close;
        }
        self.run(io)
    }

    pub(crate) fn drain(&mut self, io: &mut Io<'_, WsCommand>) -> Next {
        if self.closing == Closing::Lingering {
            return self.linger(io);
        }
        self.queue_close(GOING_AWAY);
        self.run(io)
    }
}
