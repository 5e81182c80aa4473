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

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use reactor::{ConnId, Remote};

use super::app::{Message, WsCommand};
use super::frame::{OP_BINARY, OP_TEXT, write_frame};
use super::history::{History, Kept};

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
#[derive(Clone, Default)]
pub struct Rooms {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// The server's remote, set when it starts.
    remote: OnceLock<Remote<WsCommand>>,
    /// Members per worker of each room that has any.
    counts: Mutex<HashMap<Arc<str>, Arc<Count>>>,
    /// The other instances, when the server has a fleet.
    #[cfg(feature = "redis")]
    fleet: OnceLock<Box<dyn super::Instances>>,
    /// The rooms' recent messages (see `history`).
    kept: Mutex<Kept>,
}

/// How many members of one room each worker has, and how many [`Follow`]s it has.
struct Count {
    per_worker: Box<[AtomicUsize]>,
    /// Changed under the counts' lock only.
    followers: AtomicUsize,
}

impl Count {
    fn total(&self) -> usize {
        self.per_worker
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .sum()
    }

    /// Neither members nor followers: the room is forgotten.
    fn idle(&self) -> bool {
        self.total() == 0 && self.followers.load(Ordering::Acquire) == 0
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
                .followers
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

impl Shared {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<Count>>> {
        // A panic while holding this lock cannot leave the map inconsistent.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Rooms {
    /// Connects the registry to its server once the server's workers exist.
    pub(crate) fn attach(&self, remote: Remote<WsCommand>) {
        let _ = self.shared.remote.set(remote);
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
        if self.shared.remote.get().is_none() {
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
        if self.shared.remote.get().is_none() {
            return 0;
        }
        let msg = Message::Text(event.data().to_owned());
        let reached = self.fan_out(room, || (encode(&msg), Some(event.shared())));
        #[cfg(feature = "redis")]
        if let Some(fleet) = self.shared.fleet.get() {
            fleet.publish(room, &msg);
        }
        reached
    }

    /// [`publish`](Rooms::publish) to this instance's members only (what the fleet's
    /// subscriber does with what other instances published).
    pub(crate) fn publish_local(&self, room: &str, msg: &Message) -> usize {
        self.fan_out(room, || {
            let event = match msg {
                Message::Text(text) => Some(crate::http::event_stream::data_event(text)),
                Message::Binary(_) => None,
            };
            (encode(msg), event)
        })
    }

    /// Sends a frame and an event (`encode`d once, if the room has members) to the workers
    /// with members of `room`.
    pub(super) fn fan_out(
        &self,
        room: &str,
        encode: impl FnOnce() -> (Arc<[u8]>, Option<Arc<[u8]>>),
    ) -> usize {
        let Some(remote) = self.shared.remote.get() else {
            return 0;
        };
        let Some((name, count)) = self
            .shared
            .counts()
            .get_key_value(room)
            .map(|(k, v)| (Arc::clone(k), Arc::clone(v)))
        else {
            return 0;
        };
        let (frame, event) = encode();
        let mut reached = 0;
        for (w, members) in count.per_worker.iter().enumerate() {
            let members = members.load(Ordering::Acquire);
            if members > 0 {
                let cmd = WsCommand::Publish {
                    room: Arc::clone(&name),
                    frame: Arc::clone(&frame),
                    event: event.clone(),
                };
                if remote.send_worker(w, cmd) {
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
        count.followers.fetch_add(1, Ordering::AcqRel);
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
        if let Some(c) = count.per_worker.get(worker as usize) {
            c.fetch_add(1, Ordering::AcqRel);
        }
        name
    }

    /// `room`'s name and counts, made (and, in a fleet, followed) if it had none, with room
    /// for `worker`.
    fn entry(
        &self,
        counts: &mut HashMap<Arc<str>, Arc<Count>>,
        room: &str,
        worker: u32,
    ) -> (Arc<str>, Arc<Count>) {
        let known = counts
            .get_key_value(room)
            .map(|(name, count)| (Arc::clone(name), Arc::clone(count)));
        if let Some((name, count)) = &known
            && (worker as usize) < count.per_worker.len()
        {
            return (Arc::clone(name), Arc::clone(count));
        }
        // New, or made before the server ran (a `Follow`) for fewer workers: made with room for
        // every worker, what was counted carried over.
        let workers = self.shared.remote.get().map_or(1, |r| r.workers());
        let slots = workers.max(worker as usize + 1);
        let before = known.as_ref().map(|(_, count)| &**count);
        let count = Arc::new(Count {
            per_worker: (0..slots)
                .map(|w| {
                    let n = before.and_then(|c| c.per_worker.get(w));
                    AtomicUsize::new(n.map_or(0, |n| n.load(Ordering::Acquire)))
                })
                .collect(),
            followers: AtomicUsize::new(before.map_or(0, |c| c.followers.load(Ordering::Acquire))),
        });
        let name = known
            .as_ref()
            .map_or_else(|| Arc::from(room), |(name, _)| Arc::clone(name));
        counts.insert(Arc::clone(&name), Arc::clone(&count));
        #[cfg(feature = "redis")]
        if let (None, Some(fleet)) = (&known, self.shared.fleet.get()) {
            fleet.changed(&name);
        }
        (name, count)
    }

    /// Forgets `room` (and, in a fleet, stops following it) if it has neither members nor
    /// followers.
    fn forget_if_idle(&self, counts: &mut HashMap<Arc<str>, Arc<Count>>, room: &str) {
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
        LOCAL.with(|local| local.borrow_mut().join(room, id));
    }

    /// Takes `id` out of `room`, here and in the counts (`id` must have been counted in).
    pub(crate) fn leave(&self, room: &str, id: ConnId) {
        // During a worker thread's teardown the thread-local may be gone: nothing to fan out to.
        let _ = LOCAL.try_with(|local| local.borrow_mut().leave(room, id));
        self.uncount(room, id);
    }

    /// `id` no longer counts in `room` (it is in no worker's list of it).
    fn uncount(&self, room: &str, id: ConnId) {
        let mut counts = self.shared.counts();
        if let Some(count) = counts.get(room)
            && let Some(c) = count.per_worker.get(id.worker() as usize)
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

/// A message's frame, encoded once for every recipient.
pub(crate) fn encode(msg: &Message) -> Arc<[u8]> {
    match msg {
        Message::Text(t) => encode_frame(OP_TEXT, t.as_bytes()),
        Message::Binary(b) => encode_frame(OP_BINARY, b),
    }
}

/// A text message's frame, encoded once for every recipient.
pub(crate) fn encode_text(text: &str) -> Arc<[u8]> {
    encode_frame(OP_TEXT, text.as_bytes())
}

fn encode_frame(opcode: u8, payload: &[u8]) -> Arc<[u8]> {
    let mut frame = Vec::with_capacity(payload.len() + 10);
    write_frame(&mut frame, 0x80 | opcode, payload, None);
    frame.into()
}

/// The ids of this worker's members of `room` (what a publish fans out to).
/// The worker has no connection left: its tables of rooms and of shared room lists give their
/// memory back.
pub(crate) fn forget_worker_rooms() {
    let _ = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.rooms.is_empty() {
            l.rooms = HashMap::new();
        }
    });
    let _ = LISTS.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.is_empty() {
            *l = HashSet::new();
        }
    });
}

pub(crate) fn local_members(room: &str, to: &mut Vec<ConnId>) {
    LOCAL.with(|local| {
        if let Some(members) = local.borrow().rooms.get(room) {
            to.reserve_exact(members.len());
            to.extend(members.iter().copied());
        }
    });
}

thread_local! {
    /// The members of each room on this worker thread.
    static LOCAL: RefCell<LocalRooms> = RefCell::new(LocalRooms::default());
}

/// One worker's members of each room: a set per room (joining and leaving cost O(1), also when
/// thousands leave at once; a publish walks the set; about 14 to 28 bytes a member).
#[derive(Default)]
struct LocalRooms {
    rooms: HashMap<Arc<str>, HashSet<ConnId>>,
}

impl LocalRooms {
    /// Adds `id`; `false` when it was a member already.
    fn join(&mut self, room: &Arc<str>, id: ConnId) -> bool {
        self.rooms.entry(Arc::clone(room)).or_default().insert(id)
    }

    fn leave(&mut self, room: &str, id: ConnId) -> bool {
        let Some(members) = self.rooms.get_mut(room) else {
            return false;
        };
        if !members.remove(&id) {
            return false;
        }
        if members.is_empty() {
            // The last member left: the room's memory goes back.
            self.rooms.remove(room);
        } else if members.capacity() > 4 * members.len().max(16) {
            // Most left: what they took goes back too.
            members.shrink_to_fit();
        }
        true
    }
}

/// The rooms one connection is in: one pointer, null while in none. A short list (up to
/// [`SHARED_ROOMS`] rooms, in the order joined) is shared by every connection of the worker in
/// the same rooms (a thousand members of one room hold one list between them); a longer one is
/// the connection's own, with an index, so that joining and leaving cost O(1) however many
/// rooms a connection is in. Held by the connection (its strand), to leave its rooms when it
/// ends.
#[derive(Default)]
pub(crate) struct Joined(Option<Arc<RoomList>>);

/// Rooms up to which a connection's list is shared with the others in the same rooms.
const SHARED_ROOMS: usize = 8;

/// A list of rooms: shared (interned) while short; past [`SHARED_ROOMS`], one connection's own
/// with each room's position in `index`.
#[derive(Default)]
struct RoomList {
    rooms: Vec<Arc<str>>,
    /// Empty for a shared list.
    index: HashMap<Arc<str>, usize>,
}

/// A shared list as the table keeps it: found by its rooms.
struct Interned(Arc<RoomList>);

impl PartialEq for Interned {
    fn eq(&self, other: &Interned) -> bool {
        self.0.rooms == other.0.rooms
    }
}

impl Eq for Interned {}

impl std::hash::Hash for Interned {
    fn hash<S: std::hash::Hasher>(&self, state: &mut S) {
        // As the slice hashes, so that a lookup by `[Arc<str>]` finds it.
        self.0.rooms[..].hash(state);
    }
}

impl std::borrow::Borrow<[Arc<str>]> for Interned {
    fn borrow(&self) -> &[Arc<str>] {
        &self.0.rooms
    }
}

thread_local! {
    /// The short room lists of this worker's connections, each kept once.
    static LISTS: RefCell<HashSet<Interned>> = RefCell::new(HashSet::new());
}

/// The shared list equal to `rooms` (made and kept if none is).
fn intern(rooms: Vec<Arc<str>>) -> Arc<RoomList> {
    let found = LISTS.try_with(|lists| lists.borrow().get(&rooms[..]).map(|l| Arc::clone(&l.0)));
    if let Ok(Some(list)) = found {
        return list;
    }
    let list = Arc::new(RoomList {
        rooms,
        index: HashMap::new(),
    });
    let _ = LISTS.try_with(|lists| lists.borrow_mut().insert(Interned(Arc::clone(&list))));
    list
}

/// Lets go of one holder's `list`; the last connection holding a shared list takes it out of
/// the table.
fn release(list: Arc<RoomList>) {
    let _ = LISTS.try_with(|lists| {
        let mut lists = lists.borrow_mut();
        let kept = lists
            .get(&list.rooms[..])
            .is_some_and(|l| Arc::ptr_eq(&l.0, &list));
        // Held by the table and by us alone (every holder lives on this thread).
        if kept && Arc::strong_count(&list) == 2 {
            lists.remove(&list.rooms[..]);
        }
    });
}

impl Joined {
    /// The rooms (in the order joined while they are few).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<str>> {
        self.0.as_deref().into_iter().flat_map(|l| l.rooms.iter())
    }

    /// How many rooms.
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |l| l.rooms.len())
    }

    pub(crate) fn contains(&self, room: &str) -> bool {
        match self.0.as_deref() {
            None => false,
            Some(list) if list.index.is_empty() => list.rooms.iter().any(|r| &**r == room),
            Some(list) => list.index.contains_key(room),
        }
    }

    /// Adds `room` (the caller checked it is not in).
    pub(crate) fn push(&mut self, room: Arc<str>) {
        if let Some(own) = self.own() {
            own.index.insert(Arc::clone(&room), own.rooms.len());
            own.rooms.push(room);
            return;
        }
        let mut rooms: Vec<Arc<str>> = self.iter().cloned().collect();
        rooms.push(room);
        self.set(rooms);
    }

    /// Takes `room` out; `false` when it was not in.
    pub(crate) fn remove(&mut self, room: &str) -> bool {
        if !self.contains(room) {
            return false;
        }
        if let Some(own) = self.own() {
            if let Some(at) = own.index.remove(room) {
                own.rooms.swap_remove(at);
                if let Some(moved) = own.rooms.get(at) {
                    own.index.insert(Arc::clone(moved), at);
                }
            }
            if own.rooms.len() > SHARED_ROOMS {
                return true;
            }
        }
        let rooms: Vec<Arc<str>> = self.iter().filter(|r| &***r != room).cloned().collect();
        self.set(rooms);
        true
    }

    /// Takes every room out.
    pub(crate) fn take(&mut self) -> Vec<Arc<str>> {
        let rooms = self.iter().cloned().collect();
        self.set(Vec::new());
        rooms
    }

    /// The connection's own list, when it is long enough to be one.
    fn own(&mut self) -> Option<&mut RoomList> {
        let list = self.0.as_mut()?;
        if list.index.is_empty() {
            return None;
        }
        Arc::get_mut(list)
    }

    fn set(&mut self, rooms: Vec<Arc<str>>) {
        let new = match rooms.len() {
            0 => None,
            n if n <= SHARED_ROOMS => Some(intern(rooms)),
            _ => {
                let index = rooms
                    .iter()
                    .enumerate()
                    .map(|(at, room)| (Arc::clone(room), at))
                    .collect();
                Some(Arc::new(RoomList { rooms, index }))
            }
        };
        if let Some(old) = std::mem::replace(&mut self.0, new) {
            release(old);
        }
    }

    /// Heap bytes held for the list: none of its own while it is shared (the names are the
    /// registry's); a long list's vector and index.
    pub(crate) fn held_bytes(&self) -> usize {
        match self.0.as_deref() {
            Some(list) if !list.index.is_empty() => {
                list.rooms.capacity() * std::mem::size_of::<Arc<str>>()
                    + list.index.capacity() * std::mem::size_of::<(Arc<str>, usize, u64)>()
            }
            _ => 0,
        }
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        if let Some(list) = self.0.take() {
            release(list);
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
    fn local_rooms_join_leave_and_list_members() {
        let mut local = LocalRooms::default();
        let a: Arc<str> = "a".into();
        assert!(local.join(&a, id(1)));
        assert!(!local.join(&a, id(1)), "already a member");
        assert!(local.join(&a, id(2)));
        assert!(local.join(&a, id(3)));
        assert!(local.leave("a", id(1)));
        assert!(!local.leave("a", id(1)));
        let mut ids = Vec::new();
        LOCAL.with(|l| *l.borrow_mut() = std::mem::take(&mut local));
        local_members("a", &mut ids);
        LOCAL.with(|l| local = std::mem::take(&mut *l.borrow_mut()));
        ids.sort_by_key(|i| i.key());
        assert_eq!(ids, [id(2), id(3)]);
        assert!(local.leave("a", id(2)) && local.leave("a", id(3)));
        assert!(local.rooms.is_empty(), "an empty room is forgotten");
    }

    #[test]
    fn many_leaving_at_once_leave_the_rest_and_give_memory_back() {
        let mut local = LocalRooms::default();
        let r: Arc<str> = "r".into();
        for k in 0..1000 {
            local.join(&r, id(k));
        }
        let grown = local.rooms["r"].capacity();
        for k in (0..1000).filter(|k| k % 50 != 0) {
            assert!(local.leave("r", id(k)));
        }
        let room = &local.rooms["r"];
        let mut left: Vec<u32> = room.iter().map(|i| i.key()).collect();
        left.sort();
        assert_eq!(left, (0..1000).step_by(50).collect::<Vec<u32>>());
        assert!(
            room.capacity() * 4 < grown,
            "{} of {grown} kept",
            room.capacity()
        );
    }

    #[test]
    fn a_connection_s_rooms_join_leave_and_take_in_every_shape() {
        assert_eq!(
            std::mem::size_of::<Joined>(),
            8,
            "one pointer in the strand"
        );
        let mut joined = Joined::default();
        assert!(!joined.remove("a"));
        joined.push("a".into());
        assert!(joined.contains("a") && !joined.contains("b"));
        joined.push("b".into());
        joined.push("c".into());
        let names = |j: &Joined| j.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&joined), ["a", "b", "c"]);
        assert!(joined.remove("b") && !joined.remove("b"));
        assert!(joined.remove("a"));
        assert_eq!(names(&joined), ["c"]);
        assert!(!joined.remove("x"));
        assert!(joined.remove("c"));
        assert!(names(&joined).is_empty());
        joined.push("d".into());
        joined.push("e".into());
        let taken: Vec<String> = joined.take().iter().map(|r| r.to_string()).collect();
        assert_eq!(taken, ["d", "e"]);
        assert!(names(&joined).is_empty());
        assert_eq!(joined.held_bytes(), 0);
    }

    /// Connections in the same rooms share one list, and the last one to let go of a list
    /// takes it out of the worker's table.
    #[test]
    fn a_long_list_is_the_connection_s_own_and_changes_in_place() {
        let mut joined = Joined::default();
        let names: Vec<Arc<str>> = (0..5000).map(|i| format!("room-{i}").into()).collect();
        for (i, name) in names.iter().enumerate() {
            let before = joined.0.as_ref().map(Arc::as_ptr);
            joined.push(Arc::clone(name));
            if i > SHARED_ROOMS {
                // Past the shared size the list is changed where it is: no copy per join.
                assert_eq!(
                    joined.0.as_ref().map(Arc::as_ptr),
                    before,
                    "join {i} copied"
                );
            }
        }
        assert_eq!(joined.len(), 5000);
        assert!(names.iter().all(|n| joined.contains(n)));
        assert!(!joined.contains("room-5000"));
        assert!(joined.held_bytes() > 0);
        // Leave every other room, in place; the index stays right for the rest.
        let before = joined.0.as_ref().map(Arc::as_ptr);
        for name in names.iter().step_by(2) {
            assert!(joined.remove(name));
            assert!(!joined.remove(name));
        }
        assert_eq!(joined.0.as_ref().map(Arc::as_ptr), before, "leaving copied");
        assert_eq!(joined.len(), 2500);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(joined.contains(name), i % 2 == 1, "{name}");
        }
        // Down to the shared size: shared again, with the others in the same rooms.
        let rest: Vec<Arc<str>> = names.iter().skip(1).step_by(2).cloned().collect();
        for name in &rest[SHARED_ROOMS..] {
            assert!(joined.remove(name));
        }
        assert_eq!(joined.len(), SHARED_ROOMS);
        assert_eq!(joined.held_bytes(), 0, "shared again");
        let mut other = Joined::default();
        for name in joined.iter().cloned().collect::<Vec<_>>() {
            other.push(name);
        }
        assert!(Arc::ptr_eq(
            joined.0.as_ref().unwrap(),
            other.0.as_ref().unwrap()
        ));
        let mut sorted: Vec<_> = joined.take();
        sorted.sort();
        let mut want = rest[..SHARED_ROOMS].to_vec();
        want.sort();
        assert_eq!(sorted, want);
    }

    #[test]
    fn connections_in_the_same_rooms_share_one_list_and_the_table_empties() {
        let lists = || LISTS.with(|l| l.borrow().len());
        let before = lists();
        let mut members: Vec<Joined> = (0..1000).map(|_| Joined::default()).collect();
        for j in &mut members {
            j.push("lobby".into());
        }
        assert_eq!(lists(), before + 1, "one list for a thousand members");
        let first = members[0].0.clone();
        assert!(members.iter().all(|j| {
            j.0.as_ref()
                .zip(first.as_ref())
                .is_some_and(|(a, b)| Arc::ptr_eq(a, b))
        }));
        drop(first);
        members[0].push("games".into());
        assert_eq!(lists(), before + 2);
        assert!(members[0].remove("games"));
        assert_eq!(
            lists(),
            before + 1,
            "back to the shared list; the other one is gone"
        );
        for j in &mut members[..500] {
            j.take();
        }
        assert_eq!(lists(), before + 1);
        drop(members);
        assert_eq!(lists(), before, "every list gone with its last holder");
    }

    #[test]
    fn counts_follow_joins_and_leaves_and_empty_rooms_go() {
        let rooms = Rooms::default();
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
