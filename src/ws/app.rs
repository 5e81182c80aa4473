//! What a WebSocket application writes: its callbacks ([`WsHandler`], with a state of its own
//! per connection), the connection as a callback sees it ([`Ws`]), a sender usable from any
//! thread ([`WsSender`]) and [`broadcast`].

use std::sync::Arc;

use reactor::{ConnId, Remote};

use super::frame::Opcode;
use crate::http::{Request, Response};
use crate::live::{Command, Outbox};
use crate::rooms::{Message, Rooms, Seat};

/// The callbacks of a WebSocket application served by
/// [`Server::websocket`](crate::http::Server::websocket). They run on the connection's worker
/// thread and must not block.
///
/// Each connection has a **state** of the application's type, made by [`accept`](Self::accept)
/// from the upgrade request (its path, query, cookies) and handed to every later callback —
/// no map, no lock. A zero-sized state (`()`) costs nothing per connection.
///
/// ```
/// use web::http::{text_response, Request, Response};
/// use web::ws::{Message, Ws, WsHandler};
///
/// /// A chat: members of a room (from `?room=`) hear each other; no name, no entry.
/// struct Chat;
///
/// struct Member {
///     room: String,
///     name: String,
/// }
///
/// impl WsHandler for Chat {
///     type State = Member;
///
///     fn accept(&self, req: &Request) -> Result<Member, Response> {
///         let query = web::http::query_of(req.path());
///         let name = web::http::param(query, "name");
///         if name.is_empty() {
///             return Err(text_response(401, "a name, please\n")); // before any 101
///         }
///         Ok(Member { room: web::http::param(query, "room"), name })
///     }
///
///     fn open(&self, ws: &mut Ws<'_>, me: &mut Member) {
///         ws.join(&me.room);
///     }
///
///     fn message(&self, ws: &mut Ws<'_>, me: &mut Member, msg: Message) {
///         if let Message::Text(text) = msg {
///             ws.publish(&me.room, &Message::Text(format!("{}: {text}", me.name)));
///         }
///     }
///
///     fn close(&self, ws_id: web::ws::ConnId, me: Member, code: Option<u16>) {
///         let _ = (ws_id, me, code); // rooms are left by themselves
///     }
/// }
/// ```
pub trait WsHandler: Send + Sync + 'static {
    /// What the application keeps per connection (`()` for nothing).
    type State: Send + 'static;

    /// Decides on an upgrade request that passed the protocol's checks, **before anything is
    /// written**: `Ok(state)` accepts (the 101 follows), `Err(response)` refuses with that
    /// response (401, 403 for a foreign `Origin`, ...) and closes the connection.
    fn accept(&self, req: &Request) -> Result<Self::State, Response>;

    /// The connection is open (the 101 is on its way): join rooms, greet.
    fn open(&self, ws: &mut Ws<'_>, state: &mut Self::State) {
        let _ = (ws, state);
    }

    /// A whole message arrived.
    fn message(&self, ws: &mut Ws<'_>, state: &mut Self::State, msg: Message);

    /// The connection ended, and its state is handed back. `code` is the close code the peer
    /// sent (or the one the server closed with: 1002, 1007, 1009 for a broken rule, 1008 for a
    /// peer that does not read, 1001 at shutdown); `None` when the peer went away without a
    /// close frame or sent one without a code (or when no answer to our close frame came in
    /// time). The connection has left its rooms. Called exactly once per opened connection,
    /// also after `open` or `message` panicked (with the state as the panic left it); a panic
    /// here drops the state and is contained like the others.
    fn close(&self, id: ConnId, state: Self::State, code: Option<u16>) {
        let _ = (id, state, code);
    }
}

/// A handler shared with the rest of the program (for its state) is a handler too.
impl<T: WsHandler> WsHandler for Arc<T> {
    type State = T::State;

    fn accept(&self, req: &Request) -> Result<T::State, Response> {
        (**self).accept(req)
    }

    fn open(&self, ws: &mut Ws<'_>, state: &mut T::State) {
        (**self).open(ws, state)
    }

    fn message(&self, ws: &mut Ws<'_>, state: &mut T::State, msg: Message) {
        (**self).message(ws, state, msg)
    }

    fn close(&self, id: ConnId, state: T::State, code: Option<u16>) {
        (**self).close(id, state, code)
    }
}

/// A connection as a callback sees it: messages sent here go straight into its output, without
/// a trip through another thread.
///
/// ```
/// use web::ws::{Message, Ws};
/// // Answers a message, and tells the room about it.
/// fn answer(ws: &mut Ws<'_>, text: &str) {
///     ws.send_text(&format!("you said {text}"));
///     ws.publish("lobby", &Message::Text(format!("{:?} spoke", ws.id())));
/// }
/// ```
pub struct Ws<'a> {
    pub(crate) out: &'a mut Outbox,
    /// What the peer agreed to for permessage-deflate (`None`: not in use).
    pub(crate) deflate: Option<&'a super::Agreed>,
    /// The peer's window, when our messages keep their context.
    pub(crate) history: &'a mut super::deflate::History,
    pub(crate) close: &'a mut Option<super::close::CloseCode>,
    /// The server's remote (for [`Ws::sender`]).
    pub(crate) remote: &'a Remote<Command>,
    /// Its rooms.
    pub(crate) seat: Seat<'a>,
}

impl Ws<'_> {
    /// Sends a text message.
    ///
    /// ```
    /// fn greet(ws: &mut web::ws::Ws<'_>) {
    ///     ws.send_text("welcome");
    /// }
    /// ```
    pub fn send_text(&mut self, text: &str) {
        self.frame(Opcode::Text, text.as_bytes());
    }

    /// Sends a binary message.
    ///
    /// ```
    /// fn ping_data(ws: &mut web::ws::Ws<'_>) {
    ///     ws.send_binary(&[1, 2, 3]);
    /// }
    /// ```
    pub fn send_binary(&mut self, body: &[u8]) {
        self.frame(Opcode::Binary, body);
    }

    /// Sends a message (text as text, binary as binary).
    ///
    /// ```
    /// fn echo(ws: &mut web::ws::Ws<'_>, msg: web::ws::Message) {
    ///     ws.send(&msg);
    /// }
    /// ```
    pub fn send(&mut self, msg: &Message) {
        match msg {
            Message::Text(t) => self.send_text(t),
            Message::Binary(b) => self.send_binary(b),
        }
    }

    /// Sends a message, taking it: a large one that goes uncompressed is queued as it is,
    /// without a copy (what an echo or a relay wants).
    ///
    /// ```
    /// fn echo(ws: &mut web::ws::Ws<'_>, msg: web::ws::Message) {
    ///     ws.send_owned(msg);
    /// }
    /// ```
    pub fn send_owned(&mut self, msg: Message) {
        if self.close.is_some() {
            return;
        }
        let (opcode, bytes) = match msg {
            Message::Text(t) => (Opcode::Text, t.into_bytes()),
            Message::Binary(b) => (Opcode::Binary, b),
        };
        super::deflate::queue_owned(self.out, opcode, bytes, self.deflate, self.history);
    }

    /// Closes the connection with `code` (sent in a close frame after what is queued). A code
    /// RFC 6455 §7.4 keeps off the wire (1005, 1006, 1015) or an unassigned one is not sent:
    /// the close frame then carries no code ([`close_payload`](crate::ws::close_payload)).
    ///
    /// ```
    /// fn bye(ws: &mut web::ws::Ws<'_>) {
    ///     ws.close(1000); // a close frame after what is queued
    /// }
    /// ```
    pub fn close(&mut self, code: u16) {
        if self.close.is_none() {
            *self.close = Some(super::close::CloseCode::new(code));
        }
    }

    /// This connection's id.
    ///
    /// ```
    /// fn log(ws: &web::ws::Ws<'_>) -> String {
    ///     format!("{:?}", ws.id())
    /// }
    /// ```
    pub fn id(&self) -> ConnId {
        self.seat.id
    }

    /// A sender for this connection, usable from any thread.
    ///
    /// ```
    /// fn later(ws: &web::ws::Ws<'_>) {
    ///     let sender = ws.sender();
    ///     std::thread::spawn(move || sender.send_text("done"));
    /// }
    /// ```
    pub fn sender(&self) -> WsSender {
        WsSender {
            id: self.seat.id,
            remote: self.remote.clone(),
        }
    }

    /// Joins `room` (no effect if already a member): it receives every message published there
    /// *after this call* — none sent before, even if not yet delivered — until it leaves or its
    /// connection ends. See the order note of [`Rooms`]. A connection already in
    /// [`max_rooms`](crate::http::Server::max_rooms) rooms ([`MAX_ROOMS`](crate::ws::MAX_ROOMS)
    /// by default) joins no more: [`Ws::try_join`] says whether it did.
    ///
    /// ```
    /// fn enter(ws: &mut web::ws::Ws<'_>) {
    ///     ws.join("lobby");
    /// }
    /// ```
    pub fn join(&mut self, room: &str) {
        self.try_join(room);
    }

    /// Sends `room`'s recent messages (see [`Server::history`](crate::http::Server::history)),
    /// oldest first, as text messages, then joins it: the connection gets every message
    /// [posted](Rooms::post) to the room exactly once, from the history or from the room.
    /// In a fleet, a room without other members on this instance is read from Redis first.
    /// Whether the connection is a member now (as [`Ws::try_join`]; `false` sends nothing).
    ///
    /// ```
    /// fn enter(ws: &mut web::ws::Ws<'_>) {
    ///     ws.join_with_history("lobby");
    /// }
    /// ```
    pub fn join_with_history(&mut self, room: &str) -> bool {
        self.join_after(room, 0)
    }

    /// Sends `room`'s recent messages after message `after` (0: all the history holds),
    /// oldest first, as text messages, then joins it: what a client that reconnects needs to
    /// resume where it left off — give it the id of the last message it saw (a query
    /// parameter, say) and it gets every message [posted](Rooms::post) since, exactly once,
    /// from the history (as far as it still holds them) or from the room; "after" means of
    /// greater ids, whether that id is still held or not, and ids keep growing across
    /// restarts. A client learns a message's id from its text: [`Rooms::post`] makes the text
    /// from the id. Whether the connection is a member now (as [`Ws::try_join`]; `false`
    /// sends nothing).
    ///
    /// ```
    /// fn resume(ws: &mut web::ws::Ws<'_>, last_seen: u64) {
    ///     ws.join_after("lobby", last_seen);
    /// }
    /// ```
    pub fn join_after(&mut self, room: &str, after: u64) -> bool {
        let (out, deflate, history) = (&mut *self.out, self.deflate, &mut *self.history);
        // The frame the history made once, by reference.
        self.seat.join_after(room, after, &mut |line| {
            super::deflate::queue_shared(out, &line.message, deflate, history)
        })
    }

    /// Joins `room` as [`Ws::join`] does and returns whether the connection is a member now:
    /// `false` when it is already in [`max_rooms`](crate::http::Server::max_rooms) rooms and
    /// `room` is not one of them. Joining and leaving cost the same however many rooms the
    /// connection is in.
    ///
    /// ```
    /// fn enter(ws: &mut web::ws::Ws<'_>) {
    ///     if !ws.try_join("lobby") {
    ///         ws.send_text("you are in too many rooms");
    ///     }
    /// }
    /// ```
    pub fn try_join(&mut self, room: &str) -> bool {
        self.seat.try_join(room)
    }

    /// Leaves `room` at once (no effect if not a member).
    ///
    /// ```
    /// fn exit(ws: &mut web::ws::Ws<'_>) {
    ///     ws.leave("lobby");
    /// }
    /// ```
    pub fn leave(&mut self, room: &str) {
        self.seat.leave(room)
    }

    /// The rooms this connection is in.
    ///
    /// ```
    /// fn rooms_of(ws: &web::ws::Ws<'_>) -> Vec<String> {
    ///     ws.joined().map(str::to_owned).collect()
    /// }
    /// ```
    pub fn joined(&self) -> impl Iterator<Item = &str> {
        self.seat.joined()
    }

    /// Publishes to `room` (this connection included, if it is a member); see
    /// [`Rooms::publish`].
    ///
    /// ```
    /// fn announce(ws: &web::ws::Ws<'_>) {
    ///     ws.publish("lobby", &web::ws::Message::Text("someone arrived".into()));
    /// }
    /// ```
    pub fn publish(&self, room: &str, msg: &Message) -> usize {
        self.seat.rooms.publish(room, msg)
    }

    /// The server's rooms (presence: [`Rooms::members`]).
    ///
    /// ```
    /// fn presence(ws: &web::ws::Ws<'_>) -> usize {
    ///     ws.rooms().members("lobby")
    /// }
    /// ```
    pub fn rooms(&self) -> &Rooms {
        self.seat.rooms
    }

    fn frame(&mut self, opcode: Opcode, payload: &[u8]) {
        if self.close.is_none() {
            super::deflate::queue_message(self.out, opcode, payload, self.deflate, self.history);
        }
    }
}

/// Sends to one WebSocket connection from any thread. Cheap to clone. Sends to a connection
/// that has closed are dropped (they return `false` when the connection is known gone or its
/// worker's queue is full).
///
/// ```no_run
/// # fn demo(sender: web::ws::WsSender) {
/// let s = sender.clone();
/// std::thread::spawn(move || {
///     s.send_text("from another thread");
/// });
/// sender.close(1000);
/// # }
/// ```
#[derive(Clone)]
pub struct WsSender {
    id: ConnId,
    remote: Remote<Command>,
}

impl std::fmt::Debug for WsSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsSender").field("id", &self.id).finish()
    }
}

impl WsSender {
    /// The connection's id.
    ///
    /// ```
    /// fn key(sender: &web::ws::WsSender) -> web::ws::ConnId {
    ///     sender.id()
    /// }
    /// ```
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// Queues a text message.
    ///
    /// ```
    /// fn notify(sender: &web::ws::WsSender) -> bool {
    ///     sender.send_text("you have mail") // false when the connection is known gone
    /// }
    /// ```
    pub fn send_text(&self, text: impl Into<String>) -> bool {
        self.remote
            .send(self.id, Command::Send(Message::Text(text.into())))
    }

    /// Queues a binary message.
    ///
    /// ```
    /// fn push(sender: &web::ws::WsSender) -> bool {
    ///     sender.send_binary(vec![0u8; 4])
    /// }
    /// ```
    pub fn send_binary(&self, body: impl Into<Vec<u8>>) -> bool {
        self.remote
            .send(self.id, Command::Send(Message::Binary(body.into())))
    }

    /// Closes the connection with `code`: as [`Ws::close`] (a code that may not be sent is left
    /// out of the close frame).
    ///
    /// ```
    /// fn kick(sender: &web::ws::WsSender) -> bool {
    ///     sender.close(1008)
    /// }
    /// ```
    pub fn close(&self, code: u16) -> bool {
        self.remote.send(self.id, Command::Close(code))
    }
}

/// Sends `msg` to every connection of `to`: the frame is encoded once, and each worker gets
/// **one** message listing its recipients (not one message per recipient). Returns how many
/// recipients it was queued for. For groups that change, [`Rooms`] keep the lists for you.
///
/// ```no_run
/// # fn members() -> Vec<web::ws::WsSender> { Vec::new() }
/// let members: Vec<web::ws::WsSender> = members();
/// web::ws::broadcast(&members, &web::ws::Message::Text("hello, all".into()));
/// ```
pub fn broadcast(to: &[WsSender], msg: &Message) -> usize {
    let frame = super::frame::encode(msg);
    let mut queued = 0;
    let mut rest = to;
    while let Some(first) = rest.first() {
        // Senders of one server share its remote: one list per worker of that server.
        let same = rest
            .iter()
            .take_while(|s| s.remote.same_server(&first.remote))
            .count();
        for worker in 0..first.remote.workers() {
            let ids: Arc<[ConnId]> = rest[..same]
                .iter()
                .map(|s| s.id)
                .filter(|id| id.worker() as usize == worker)
                .collect();
            if ids.is_empty() {
                continue;
            }
            let count = ids.len();
            let cmd = Command::FanOut {
                ids,
                frame: Arc::clone(&frame),
            };
            if first.remote.send_worker(worker, cmd) {
                queued += count;
            }
        }
        rest = &rest[same..];
    }
    queued
}
