//! Rooms (topics): named groups of WebSocket connections that a message can be published to.
//!
//! Each worker keeps its own members of each room (a thread-local on the worker's thread, so
//! fanning out takes no lock); the server keeps, per room, how many members each worker has.
//!
//! **Order.** A member receives exactly the publishes *sent after it joined*: joining counts it
//! at once (so later publishes go to its worker) but enters it in its worker's list through the
//! worker's queue, behind the publishes already sent. A program that keeps a room's history can
//! therefore read the history and join in one critical section (one the publishers take too)
//! and hand each message to a new member exactly once. Leaving takes effect at once. A publish encodes the frame once and sends **one message per worker that has
//! members** (never one per recipient); each worker then hands the same bytes to its own
//! members. A member leaves its rooms when its connection ends, however it ends.
//!
//! **Across instances.** With a `web::fleet::Fleet` (`--features redis`), a
//! publish also reaches the room's members on every other instance (see the module
//! `web::fleet`); [`Rooms::members`] counts this instance's members,
//! [`Rooms::members_everywhere`] every instance's.
//!
//! **History.** With [`Server::history`](crate::http::Server::history), rooms keep their
//! recent messages: see [`Rooms::post`] and the `history` module's notes.
//!
//! Slow members get no special treatment: a published frame is queued like any other output,
//! and a member whose unsent output passes [`WS_MAX_BACKLOG`](crate::ws::WS_MAX_BACKLOG) is
//! closed with 1008 (the strand's backpressure policy).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use reactor::ConnId;

use super::delivery::{Delivery, Encoding, Forms, Workers};
use super::history::{History, Kept};
use super::{Message, local};

/// Default limit on the rooms one WebSocket connection may be in at once
/// ([`Server::max_rooms`](crate::http::Server::max_rooms)).
pub const MAX_ROOMS: usize = 1024;

/// The rooms of one server: publish to a room from any thread, read how many members it has.
/// Cheap to clone (one `Arc`); get it from [`Server::rooms`](crate::http::Server::rooms)
/// before the server starts, and inside WebSocket callbacks from [`Ws`](crate::ws::Ws).
///
/// ```no_run
/// use web::http::{text_response, Server};
/// use web::ws::Message;
/// let server = Server::bind("127.0.0.1:8080")?;
/// let rooms = server.rooms();
/// // An HTTP handler publishing to the WebSocket members of room "news":
/// let handle = server.spawn(move |req| {
///     let reached = rooms.publish("news", &Message::Text(String::from_utf8_lossy(req.body()).into_owned()));
///     text_response(200, format!("{} members on {reached} workers\n", rooms.members("news")))
/// })?;
/// # handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Rooms {
    shared: Arc<RoomsShared>,
}

struct RoomsShared {
    /// How messages are encoded for members.
    encoding: Encoding,
    /// The server's workers, set when it starts.
    workers: OnceLock<Box<dyn Workers>>,
    /// Members per worker of each room that has any.
    counts: Mutex<HashMap<Arc<str>, Count>>,
    /// The other instances, when the server has a fleet.
    #[cfg(feature = "redis")]
    fleet: OnceLock<Box<dyn super::Instances>>,
    /// The rooms' recent messages (see `history`).
    kept: Mutex<Kept>,
}

/// How many [`Follow`]s one room has (changed under the counts' lock only), then how many
/// members each worker has: one allocation, shared by whoever counts.
#[derive(Clone)]
struct Count(Arc<[AtomicUsize]>);

impl Count {
    /// Counts for `workers` workers, carrying over what `before` counted.
    fn new(workers: usize, before: Option<&Count>) -> Count {
        let carried =
            |n: Option<&AtomicUsize>| AtomicUsize::new(n.map_or(0, |n| n.load(Ordering::Acquire)));
        let followers = carried(before.map(Count::followers));
        let per_worker = (0..workers).map(|w| carried(before.and_then(|c| c.per_worker().get(w))));
        Count(std::iter::once(followers).chain(per_worker).collect())
    }

    fn followers(&self) -> &AtomicUsize {
        &self.0[0]
    }

    fn per_worker(&self) -> &[AtomicUsize] {
        &self.0[1..]
    }

    fn total(&self) -> usize {
        self.per_worker()
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .sum()
    }

    /// Neither members nor followers: the room is forgotten.
    fn idle(&self) -> bool {
        self.total() == 0 && self.followers().load(Ordering::Acquire) == 0
    }
}

/// This instance follows a room while this is held: in a fleet it receives the room's
/// messages from the other instances (they reach [`Rooms::watch`] and the room's history)
/// although the room may have no members here — what a long-poll waiting for the room's next
/// message needs. It is not a member: it gets no message itself and is not counted in
/// [`Rooms::members`]. Dropping it stops following (unless members or other `Follow`s
/// remain).
///
/// ```
/// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
/// let follow = rooms.follow("news");
/// assert_eq!(rooms.members("news"), 0);
/// drop(follow);
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "the room is followed only while this is held"]
pub struct Follow {
    rooms: Rooms,
    room: Arc<str>,
}

impl std::fmt::Debug for Follow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow").field("room", &self.room).finish()
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let mut counts = self.rooms.shared.counts();
        if let Some(count) = counts.get(&self.room) {
            let _ = count
                .followers()
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
        self.rooms.forget_if_idle(&mut counts, &self.room);
    }
}

impl std::fmt::Debug for Rooms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rooms = self.shared.counts().len();
        f.debug_struct("Rooms").field("rooms", &rooms).finish()
    }
}

impl RoomsShared {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Count>> {
        // A panic while holding this lock cannot leave the map inconsistent.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Rooms {
    /// A server's rooms, whose messages `encoding` encodes for their members.
    pub(crate) fn new(encoding: Encoding) -> Rooms {
        Rooms {
            shared: Arc::new(RoomsShared {
                encoding,
                workers: OnceLock::new(),
                counts: Mutex::default(),
                #[cfg(feature = "redis")]
                fleet: OnceLock::new(),
                kept: Mutex::default(),
            }),
        }
    }

    /// Connects the registry to its server once the server's workers exist.
    pub(crate) fn attach(&self, workers: Box<dyn Workers>) {
        let _ = self.shared.workers.set(workers);
    }

    /// How this server's messages are encoded for members.
    pub(crate) fn encoding(&self) -> &Encoding {
        &self.shared.encoding
    }

    /// Sends `delivery` to connection `id`; `false` when the server does not run, the
    /// connection is known gone or its worker's queue is full.
    pub(crate) fn to_conn(&self, id: ConnId, delivery: Delivery) -> bool {
        self.shared
            .workers
            .get()
            .is_some_and(|w| w.to_conn(id, delivery))
    }

    /// Joins the registry to the other instances of a fleet.
    #[cfg(feature = "redis")]
    pub(crate) fn attach_fleet(&self, link: Box<dyn super::Instances>) {
        let _ = self.shared.fleet.set(link);
    }

    /// The fleet, when the server has one and runs.
    #[cfg(feature = "redis")]
    pub(crate) fn fleet_link(&self) -> Option<&dyn super::Instances> {
        self.shared.fleet.get().map(|link| &**link)
    }

    /// How much history to keep from now on (what was kept is forgotten; the watcher stays).
    pub(crate) fn keep_history(&self, settings: History) {
        let mut kept = self.kept_lock().lock().unwrap_or_else(|e| e.into_inner());
        *kept = kept.with_settings(settings);
    }

    pub(super) fn kept_lock(&self) -> &Mutex<Kept> {
        &self.shared.kept
    }

    /// Sends `msg` to every member of `room`, on every worker: the frame is encoded once and one
    /// message goes to each worker that has members of the room. Returns how many members it
    /// was queued for: this instance's members of the room at that moment, on the workers that
    /// took the message (0 when the room has no member or the server is not running; a worker
    /// whose queue is full refuses it, see [`INBOX_LIMIT`](reactor::INBOX_LIMIT)). A member
    /// that leaves before its worker delivers the message does not get it; a Server-Sent
    /// Events member is counted but gets no binary message.
    ///
    /// Members receive a room's messages in the order each publisher published them.
    ///
    /// With a `web::fleet::Fleet` the message is also handed (without waiting) to
    /// the thread that publishes it to the other instances, whether or not this instance has
    /// members; the count returned is still this instance's members.
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
    /// // Before the server runs, nothing is reached.
    /// assert_eq!(rooms.publish("news", &web::ws::Message::Text("hi".into())), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn publish(&self, room: &str, msg: &Message) -> usize {
        if self.shared.workers.get().is_none() {
            return 0;
        }
        let reached = self.publish_local(room, msg);
        #[cfg(feature = "redis")]
        if let Some(fleet) = self.shared.fleet.get() {
            fleet.publish(room, msg);
        }
        reached
    }

    /// Publishes a Server-Sent Event to `room`: its SSE members get the whole event (its id and
    /// type included), its WebSocket members its data as a text message; as
    /// [`publish`](Rooms::publish) otherwise (through a fleet, other instances' members get
    /// its data alone).
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
    /// let event = web::sse::Event::new("hello").id("1");
    /// assert_eq!(rooms.publish_event("news", &event), 0); // before the server runs
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn publish_event(&self, room: &str, event: &crate::http::event_stream::Event) -> usize {
        if self.shared.workers.get().is_none() {
            return 0;
        }
        let reached = self.fan_out(room, || self.shared.encoding.event_forms(event));
        #[cfg(feature = "redis")]
        if let Some(fleet) = self.shared.fleet.get() {
            fleet.publish(room, &Message::Text(event.data().to_owned()));
        }
        reached
    }

    /// [`publish`](Rooms::publish) to this instance's members only (what the fleet's
    /// subscriber does with what other instances published).
    pub(crate) fn publish_local(&self, room: &str, msg: &Message) -> usize {
        self.fan_out(room, || self.shared.encoding.forms(msg))
    }

    /// Sends a message's forms (`encode`d once, if the room has members) to the workers with
    /// members of `room`.
    pub(super) fn fan_out(&self, room: &str, encode: impl FnOnce() -> Forms) -> usize {
        let Some(workers) = self.shared.workers.get() else {
            return 0;
        };
        let Some((name, count)) = self
            .shared
            .counts()
            .get_key_value(room)
            .map(|(k, v)| (Arc::clone(k), v.clone()))
        else {
            return 0;
        };
        let forms = encode();
        let mut reached = 0;
        for (w, members) in count.per_worker().iter().enumerate() {
            let members = members.load(Ordering::Acquire);
            if members > 0 {
                let delivery = Delivery::Publish {
                    room: Arc::clone(&name),
                    forms: forms.clone(),
                };
                if workers.to_worker(w, delivery) {
                    reached += members;
                }
            }
        }
        reached
    }

    /// How many connections are members of `room` now (presence), over all workers.
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
    /// assert_eq!(rooms.members("news"), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn members(&self, room: &str) -> usize {
        self.shared.counts().get(room).map_or(0, |c| c.total())
    }

    /// The rooms that have members now, and how many each has.
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
    /// assert!(rooms.list().is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn list(&self) -> Vec<(String, usize)> {
        let mut rooms: Vec<(String, usize)> = self
            .shared
            .counts()
            .iter()
            .map(|(name, c)| (name.to_string(), c.total()))
            .filter(|(_, n)| *n > 0)
            .collect();
        rooms.sort();
        rooms
    }

    /// The rooms that have members or followers now.
    #[cfg(feature = "redis")]
    pub(crate) fn names(&self) -> Vec<Arc<str>> {
        self.shared.counts().keys().cloned().collect()
    }

    /// Whether `room` has members or followers now.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet's concern
    pub(crate) fn followed(&self, room: &str) -> bool {
        self.shared.counts().contains_key(room)
    }

    /// Follows `room` while the [`Follow`] is held (see there).
    pub fn follow(&self, room: &str) -> Follow {
        let mut counts = self.shared.counts();
        let (name, count) = self.entry(&mut counts, room, 0);
        count.followers().fetch_add(1, Ordering::AcqRel);
        Follow {
            rooms: self.clone(),
            room: name,
        }
    }

    /// Counts a member of `room` on `worker` (publishes sent from now on go to that worker);
    /// the room's shared name.
    pub(crate) fn count_in(&self, room: &str, worker: u32) -> Arc<str> {
        let mut counts = self.shared.counts();
        let (name, count) = self.entry(&mut counts, room, worker);
        if let Some(c) = count.per_worker().get(worker as usize) {
            c.fetch_add(1, Ordering::AcqRel);
        }
        name
    }

    /// `room`'s name and counts, made (and, in a fleet, followed) if it had none, with room
    /// for `worker`.
    fn entry(
        &self,
        counts: &mut HashMap<Arc<str>, Count>,
        room: &str,
        worker: u32,
    ) -> (Arc<str>, Count) {
        let known = counts
            .get_key_value(room)
            .map(|(name, count)| (Arc::clone(name), count.clone()));
        if let Some((name, count)) = &known
            && (worker as usize) < count.per_worker().len()
        {
            return (Arc::clone(name), count.clone());
        }
        // New, or made before the server ran (a `Follow`) for fewer workers: made with room for
        // every worker, what was counted carried over.
        let workers = self.shared.workers.get().map_or(1, |w| w.count());
        let slots = workers.max(worker as usize + 1);
        let before = known.as_ref().map(|(_, count)| count);
        let count = Count::new(slots, before);
        let name = known
            .as_ref()
            .map_or_else(|| Arc::from(room), |(name, _)| Arc::clone(name));
        counts.insert(Arc::clone(&name), count.clone());
        #[cfg(feature = "redis")]
        if let (None, Some(fleet)) = (&known, self.shared.fleet.get()) {
            fleet.changed(&name);
        }
        (name, count)
    }

    /// Forgets `room` (and, in a fleet, stops following it) if it has neither members nor
    /// followers.
    fn forget_if_idle(&self, counts: &mut HashMap<Arc<str>, Count>, room: &str) {
        if counts.get(room).is_some_and(|c| c.idle()) {
            let _gone = counts.remove_entry(room);
            #[cfg(feature = "redis")]
            if let (Some(fleet), Some((name, _))) = (self.shared.fleet.get(), &_gone) {
                fleet.changed(name);
            }
        }
    }

    /// Makes `id` (a connection of the calling worker thread) receive what its worker fans out
    /// for `room` from now on.
    pub(crate) fn join_local(&self, room: &Arc<str>, id: ConnId) {
        local::join(room, id);
    }

    /// Takes `id` out of `room`, here and in the counts (`id` must have been counted in).
    pub(crate) fn leave(&self, room: &str, id: ConnId) {
        local::leave(room, id);
        self.uncount(room, id);
    }

    /// `id` no longer counts in `room` (it is in no worker's list of it).
    fn uncount(&self, room: &str, id: ConnId) {
        let mut counts = self.shared.counts();
        if let Some(count) = counts.get(room)
            && let Some(c) = count.per_worker().get(id.worker() as usize)
        {
            let _ = c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
        self.forget_if_idle(&mut counts, room);
    }
}

/// A connection counted in a room by another thread, for its worker to enter in its list
/// ([`Seated::enter`]); dropped unused — the connection gone, or no longer wanting the room —
/// it is uncounted.
pub(crate) struct Seated {
    rooms: Rooms,
    pub(crate) room: Arc<str>,
    id: ConnId,
    entered: bool,
}

impl Seated {
    /// Counts connection `id` in `room` (so the room's messages from now on go to its worker).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet's joins
    pub(crate) fn count(rooms: &Rooms, room: &str, id: ConnId) -> Seated {
        let room = rooms.count_in(room, id.worker());
        Seated {
            rooms: rooms.clone(),
            room,
            id,
            entered: false,
        }
    }

    /// On the connection's worker: entered in the worker's list of the room.
    pub(crate) fn enter(mut self) {
        self.rooms.join_local(&self.room, self.id);
        self.entered = true;
    }
}

impl Drop for Seated {
    fn drop(&mut self) {
        if !self.entered {
            self.rooms.uncount(&self.room, self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(key: u32) -> ConnId {
        ConnId::from_parts(0, key, 0)
    }

    #[test]
    fn counts_follow_joins_and_leaves_and_empty_rooms_go() {
        let rooms = Rooms::new(super::super::PLAIN);
        let x = rooms.count_in("x", 0);
        rooms.join_local(&x, id(1));
        rooms.count_in("x", 0);
        rooms.count_in("y", 0);
        assert_eq!((rooms.members("x"), rooms.members("y")), (2, 1));
        assert_eq!(rooms.list(), [("x".to_owned(), 2), ("y".to_owned(), 1)]);
        rooms.leave("x", id(1));
        rooms.leave("x", id(2));
        rooms.leave("y", id(1));
        assert_eq!(rooms.members("x"), 0);
        assert!(rooms.list().is_empty());
        assert_eq!(rooms.publish("x", &Message::Text("nobody".into())), 0);
    }
}
