//! What a Server-Sent Events application writes: its callbacks ([`SseHandler`], with a state
//! of its own per stream), the stream as a callback sees it ([`Sse`]), and a sender usable
//! from any thread ([`SseSender`]).

use std::sync::Arc;

use reactor::{ConnId, Remote};

use crate::http::event_stream::Event;
use crate::http::{Request, Response};
use crate::live::{Command, Outbox};
use crate::rooms::{Message, Rooms, Seat};

/// The callbacks of a Server-Sent Events route served by
/// [`Server::sse`](crate::http::Server::sse): a `GET` to its path becomes a `text/event-stream`
/// that stays open, parked in the reactor like an idle WebSocket (no buffer, no thread, no
/// timer of its own), until the client leaves, the application closes it, or the server stops.
/// Callbacks run on the stream's worker thread and must not block.
///
/// Each stream has a **state** of the application's type, made by [`accept`](Self::accept)
/// from the request (its query, cookies, `Last-Event-ID`) and handed back by
/// [`close`](Self::close).
///
/// ```
/// use web::http::{text_response, Request, Response};
/// use web::sse::{Event, Sse, SseHandler};
///
/// /// Sends what was said in `?room=` since the id the browser last saw, then everything new.
/// struct Feed;
///
/// impl SseHandler for Feed {
///     type State = String;
///
///     fn accept(&self, req: &Request) -> Result<String, Response> {
///         let room = web::http::param(web::http::query_of(req.path()), "room");
///         if room.is_empty() {
///             return Err(text_response(400, "which room?\n"));
///         }
///         let _since = req.header("last-event-id"); // to resume from
///         Ok(room)
///     }
///
///     fn open(&self, sse: &mut Sse<'_>, room: &mut String) {
///         sse.send(&Event::new(format!("welcome to {room}")));
///         sse.join(room); // rooms are shared with WebSocket members
///     }
/// }
/// ```
pub trait SseHandler: Send + Sync + 'static {
    /// What the application keeps per stream (`()` for nothing).
    type State: Send + 'static;

    /// Decides on the request **before anything is written**: `Ok(state)` opens the stream
    /// (`200 text/event-stream`), `Err(response)` answers with that response instead and
    /// closes the connection.
    fn accept(&self, req: &Request) -> Result<Self::State, Response>;

    /// The stream is open (its head is on its way): send what the client missed, join rooms.
    fn open(&self, sse: &mut Sse<'_>, state: &mut Self::State) {
        let _ = (sse, state);
    }

    /// The stream ended — the client left, the application or the server closed it, or the
    /// client fell too far behind — and its state is handed back. The stream has left its
    /// rooms. Called exactly once per opened stream; a panic here drops the state.
    fn close(&self, id: ConnId, state: Self::State) {
        let _ = (id, state);
    }
}

/// A handler shared with the rest of the program is a handler too.
impl<T: SseHandler> SseHandler for Arc<T> {
    type State = T::State;

    fn accept(&self, req: &Request) -> Result<T::State, Response> {
        (**self).accept(req)
    }

    fn open(&self, sse: &mut Sse<'_>, state: &mut T::State) {
        (**self).open(sse, state)
    }

    fn close(&self, id: ConnId, state: T::State) {
        (**self).close(id, state)
    }
}

/// A stream as a callback sees it: events sent here go straight into its output.
///
/// ```
/// use web::sse::{Event, Sse};
/// fn greet(sse: &mut Sse<'_>) {
///     sse.send(&Event::new("hello").event("greeting"));
///     sse.join("lobby");
/// }
/// ```
pub struct Sse<'a> {
    pub(crate) out: &'a mut Outbox,
    pub(crate) close: &'a mut bool,
    /// The server's remote (for [`Sse::sender`]).
    pub(crate) remote: &'a Remote<Command>,
    pub(crate) seat: Seat<'a>,
}

impl Sse<'_> {
    /// Sends an event.
    ///
    /// ```
    /// fn tell(sse: &mut web::sse::Sse<'_>) {
    ///     sse.send(&web::sse::Event::new("3 new messages").id("17"));
    /// }
    /// ```
    pub fn send(&mut self, event: &Event) {
        if !*self.close {
            self.out.write(|buf| event.write(buf));
        }
    }

    /// Ends the stream after what is queued (the browser's `EventSource` reconnects after its
    /// retry delay, unless the page closes it).
    ///
    /// ```
    /// fn done(sse: &mut web::sse::Sse<'_>) {
    ///     sse.close();
    /// }
    /// ```
    pub fn close(&mut self) {
        *self.close = true;
    }

    /// This stream's id.
    ///
    /// ```
    /// fn log(sse: &web::sse::Sse<'_>) -> String {
    ///     format!("{:?}", sse.id())
    /// }
    /// ```
    pub fn id(&self) -> ConnId {
        self.seat.id
    }

    /// A sender for this stream, usable from any thread.
    ///
    /// ```
    /// fn later(sse: &web::sse::Sse<'_>) {
    ///     let sender = sse.sender();
    ///     std::thread::spawn(move || sender.send(&web::sse::Event::new("done")));
    /// }
    /// ```
    pub fn sender(&self) -> SseSender {
        SseSender {
            id: self.seat.id,
            remote: self.remote.clone(),
        }
    }

    /// Joins `room`, as [`Ws::join`](crate::ws::Ws::join) does: the stream receives every
    /// message published there after this call — a [`Rooms::publish`] as a `data` event, a
    /// [`Rooms::publish_event`] as that event — until it leaves or ends.
    ///
    /// ```
    /// fn follow(sse: &mut web::sse::Sse<'_>) {
    ///     sse.join("prices");
    /// }
    /// ```
    pub fn join(&mut self, room: &str) {
        self.seat.try_join(room);
    }

    /// Sends `room`'s recent messages after message `after` (see
    /// [`Server::history`](crate::http::Server::history); 0: all it holds), oldest first, as
    /// events whose `id` is the message's, then joins it: the stream gets every message
    /// [posted](crate::ws::Rooms::post) to the room exactly once. Give it the request's
    /// `Last-Event-ID` and a reconnecting reader gets what it missed (what the history still
    /// holds). Whether the stream is a member now (as [`Sse::try_join`]; `false` sends
    /// nothing).
    ///
    /// ```
    /// fn follow(sse: &mut web::sse::Sse<'_>, last_event_id: u64) {
    ///     sse.join_after("prices", last_event_id);
    /// }
    /// ```
    pub fn join_after(&mut self, room: &str, after: u64) -> bool {
        let out = &mut *self.out;
        // The event the history made once, by reference.
        self.seat
            .join_after(room, after, &mut |line| out.push_shared(&line.event))
    }

    /// Joins `room` and says whether the stream is a member now (`false` when it is already in
    /// [`max_rooms`](crate::http::Server::max_rooms) rooms).
    ///
    /// ```
    /// fn follow(sse: &mut web::sse::Sse<'_>) -> bool {
    ///     sse.try_join("prices")
    /// }
    /// ```
    pub fn try_join(&mut self, room: &str) -> bool {
        self.seat.try_join(room)
    }

    /// Leaves `room` at once (no effect if not a member).
    ///
    /// ```
    /// fn unfollow(sse: &mut web::sse::Sse<'_>) {
    ///     sse.leave("prices");
    /// }
    /// ```
    pub fn leave(&mut self, room: &str) {
        self.seat.leave(room)
    }

    /// The rooms this stream is in.
    ///
    /// ```
    /// fn rooms_of(sse: &web::sse::Sse<'_>) -> Vec<String> {
    ///     sse.joined().map(str::to_owned).collect()
    /// }
    /// ```
    pub fn joined(&self) -> impl Iterator<Item = &str> {
        self.seat.joined()
    }

    /// Publishes to `room` (see [`Rooms::publish`]).
    ///
    /// ```
    /// fn announce(sse: &web::sse::Sse<'_>) {
    ///     sse.publish("lobby", &web::ws::Message::Text("a reader arrived".into()));
    /// }
    /// ```
    pub fn publish(&self, room: &str, msg: &Message) -> usize {
        self.seat.rooms.publish(room, msg)
    }

    /// The server's rooms (presence: [`Rooms::members`]).
    ///
    /// ```
    /// fn readers(sse: &web::sse::Sse<'_>) -> usize {
    ///     sse.rooms().members("lobby")
    /// }
    /// ```
    pub fn rooms(&self) -> &Rooms {
        self.seat.rooms
    }
}

/// Sends to one Server-Sent Events stream from any thread. Cheap to clone. Sends to a stream
/// that has ended are dropped (they return `false` when the stream is known gone or its
/// worker's queue is full).
///
/// ```no_run
/// # fn demo(sender: web::sse::SseSender) {
/// let s = sender.clone();
/// std::thread::spawn(move || s.send(&web::sse::Event::new("from another thread")));
/// sender.close();
/// # }
/// ```
#[derive(Clone)]
pub struct SseSender {
    id: ConnId,
    remote: Remote<Command>,
}

impl std::fmt::Debug for SseSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseSender").field("id", &self.id).finish()
    }
}

impl SseSender {
    /// The stream's id.
    ///
    /// ```
    /// fn key(sender: &web::sse::SseSender) -> web::ws::ConnId {
    ///     sender.id()
    /// }
    /// ```
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// Queues an event (encoded here, once).
    ///
    /// ```
    /// fn notify(sender: &web::sse::SseSender) -> bool {
    ///     sender.send(&web::sse::Event::new("you have mail"))
    /// }
    /// ```
    pub fn send(&self, event: &Event) -> bool {
        self.remote.send(self.id, Command::Event(event.shared()))
    }

    /// Ends the stream after what is queued.
    ///
    /// ```
    /// fn end(sender: &web::sse::SseSender) -> bool {
    ///     sender.close()
    /// }
    /// ```
    pub fn close(&self) -> bool {
        self.remote.send(
            self.id,
            Command::Close(1000), /* the code is WebSocket's; a stream just ends */
        )
    }
}
