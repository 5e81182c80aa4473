//! Rooms' recent messages: what a member joining later is sent first, what a reader resuming
//! after `Last-Event-ID` or a long-poll missed — with and without a fleet.
//!
//! A message [posted](Rooms::post) to a room gets an id, is kept in the room's history (its
//! last [`History::new`] messages, within a bound on rooms and bytes) and reaches the room's
//! members, all in one critical section that joining with history
//! ([`Ws::join_with_history`](crate::ws::Ws::join_with_history),
//! [`Sse::join_after`](crate::sse::Sse::join_after)) and [`Rooms::since`] take too: a member
//! gets every message exactly once, from the history or from the room, in order.
//!
//! **In a fleet** (`--features redis`) Redis gives the id and the room's one order, the history
//! is also kept in Redis (see `web::fleet`), and each instance keeps its own copy of the rooms
//! it follows, in id order. A member
//! joining a room its instance does not follow is sent the fleet's history merged with this
//! instance's copy — read by the fleet's reader thread, so the worker never waits: the member
//! is counted and sent its history when the read comes back (within
//! `web::fleet::Fleet::timeout`; past it, or while Redis is down, this instance's copy,
//! counted in `FleetStats::local_reads`), so every instance, a restarted one too, serves the
//! same recent messages.

mod ids;
mod recent;

use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use super::Waiter;
use super::waiting::{Messages, Woken};

pub(crate) use ids::from_clock;
#[cfg(feature = "redis")]
pub(crate) use recent::Entry;
pub(crate) use recent::{Line, Recent};

use super::Rooms;
#[cfg(feature = "redis")]
use super::delivery::Delivery;
use super::delivery::Forms;
use super::registry::Seated;

/// Default rooms whose history an instance keeps.
pub const HISTORY_ROOMS: usize = 1_000;
/// Default bytes all of an instance's histories may hold.
pub const HISTORY_BYTES: usize = 8 << 20;
/// Default time a room's history lives in Redis after its last message.
pub const KEEP_FOR: Duration = Duration::from_secs(3600);

/// How much of rooms' recent messages a server keeps ([`Server::history`]).
///
/// Past [`rooms`](History::rooms) rooms or [`bytes`](History::bytes) bytes, the room written
/// to least recently *that has no members here* is forgotten first, so a flood of posts to
/// new, empty rooms costs the rooms people are in nothing.
///
/// ```
/// use web::ws::History;
/// let history = History::new(20).rooms(10_000).bytes(64 << 20);
/// let server = web::http::Server::bind("127.0.0.1:0")?.history(history);
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`Server::history`]: crate::http::Server::history
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct History {
    per_room: usize,
    rooms: usize,
    bytes: usize,
    keep_for: Duration,
}

impl History {
    /// Each room's last `per_room` messages (0: none kept; messages are still posted with
    /// ids), for at most [`HISTORY_ROOMS`] rooms and [`HISTORY_BYTES`] bytes.
    ///
    /// ```
    /// let history = web::ws::History::new(50);
    /// ```
    pub fn new(per_room: usize) -> History {
        History {
            per_room,
            rooms: HISTORY_ROOMS,
            bytes: HISTORY_BYTES,
            keep_for: KEEP_FOR,
        }
    }

    /// Most rooms whose history this instance keeps (at least 1).
    ///
    /// ```
    /// let history = web::ws::History::new(20).rooms(100);
    /// ```
    pub fn rooms(mut self, n: usize) -> History {
        self.rooms = n.max(1);
        self
    }

    /// Most bytes (texts and room names) this instance's histories hold; the room written
    /// last is kept whatever its size.
    ///
    /// ```
    /// let history = web::ws::History::new(20).bytes(1 << 20);
    /// ```
    pub fn bytes(mut self, n: usize) -> History {
        self.bytes = n;
        self
    }

    /// In a fleet: how long a room's history lives in Redis after its last message (default
    /// [`KEEP_FOR`]): Redis holds at most `per_room` messages of each room written to
    /// within that time.
    ///
    /// ```
    /// let history = web::ws::History::new(20).keep_for(std::time::Duration::from_secs(86_400));
    /// ```
    pub fn keep_for(mut self, d: Duration) -> History {
        self.keep_for = d;
        self
    }
}

impl Default for History {
    /// No messages kept.
    fn default() -> History {
        History::new(0)
    }
}

/// Called for every message that reaches a room on this instance; see [`Rooms::watch`].
type Watcher = Arc<dyn Fn(&str, u64, &str) + Send + Sync>;

/// A server's histories and what goes with them, behind the rooms' history lock.
pub(crate) struct Kept {
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // read by the fleet's parts
    settings: History,
    recent: Recent,
    /// Rooms being read from the fleet for joins, and how many joins wait for each (their
    /// joins wait too, so that each gets the fleet's history).
    #[cfg(feature = "redis")]
    filling: std::collections::HashMap<Arc<str>, u32>,
    /// The last id this instance gave itself: alone, one counter for all rooms, never below
    /// the clock (see `ids`); in a fleet, while Redis is away (see `Rooms::post_alone`).
    last_id: u64,
    watcher: Option<Watcher>,
    /// Long-polls waiting for their room's next message.
    waiting: super::waiting::Waiting,
    /// Waiters a message answers, answered once the lock is let go (see [`KeptGuard`]).
    woken: Vec<Woken>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept::new(History::default())
    }
}

impl Kept {
    pub(crate) fn new(settings: History) -> Kept {
        Kept {
            settings,
            recent: Recent::new(settings.per_room, settings.rooms, settings.bytes),
            #[cfg(feature = "redis")]
            filling: std::collections::HashMap::new(),
            last_id: 0,
            watcher: None,
            waiting: Default::default(),
            woken: Vec::new(),
        }
    }

    /// These settings, the watcher and the id counter kept.
    pub(crate) fn with_settings(&mut self, settings: History) -> Kept {
        Kept {
            watcher: self.watcher.take(),
            waiting: std::mem::take(&mut self.waiting),
            last_id: self.last_id,
            ..Kept::new(settings)
        }
    }
}

impl Rooms {
    /// Posts a text message to `room`: gives it the next id, makes its text with `text(id)`,
    /// keeps it in the room's history, and sends it to the room's members — WebSocket members
    /// get the text, Server-Sent Events members an event whose `id` is the message's — and
    /// to what [`watch`](Rooms::watch) set. Returns the id — on a server alone, where it is
    /// known at once; in a fleet `None`: see [`post_then`](Rooms::post_then).
    ///
    /// **Ids and order.** A room's ids increase in the order its messages are posted, so
    /// "after id X" ([`since`](Rooms::since), [`Sse::join_after`](crate::sse::Sse::join_after))
    /// means the same messages whether X is still held or not. On a server alone one counter
    /// serves all rooms (so an id names one message of the whole server, whatever its room),
    /// and it starts from the clock — the milliseconds since 2025 times 2¹¹, one more than the
    /// last after that — so ids keep growing across a restart and a browser resuming with a
    /// `Last-Event-ID` from before it misses nothing posted since. In a fleet each room has its own counter in
    /// Redis, which gives a message its id and its place in the room's one order: every
    /// instance — this one included — delivers the room's messages in that order, when Redis
    /// hands them on, so the same id means the same message everywhere and resuming on another
    /// instance neither repeats nor skips one. Ids there start from the clock (milliseconds
    /// since 2025 times 2¹¹), so they keep growing across restarts even if Redis loses the
    /// counter. `text` then runs on the fleet's publisher thread; while Redis is away a post
    /// is refused (counted in `FleetStats::dropped`): a room's order lives in Redis.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.history(web::ws::History::new(20));
    /// let rooms = server.rooms();
    /// let id = rooms.post("news", |id| format!(r#"{{"id":{id},"text":"hello"}}"#)).unwrap();
    /// let next = rooms.post("news", |id| format!(r#"{{"id":{id},"text":"again"}}"#)).unwrap();
    /// assert!(next > id);
    /// let kept = rooms.since("news", id, || {});
    /// assert_eq!(kept, [(next, format!(r#"{{"id":{next},"text":"again"}}"#).into())]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn post(
        &self,
        room: &str,
        text: impl FnOnce(u64) -> String + Send + 'static,
    ) -> Option<u64> {
        self.post_with(room, text, |_| {})
    }

    /// [`post`](Rooms::post)s, and tells `then` the message's id once it has its place — at
    /// once on a server alone; in a fleet when Redis has published it (`None` if it could not
    /// be posted: Redis away, the fleet's queue full). What an HTTP handler answering with the
    /// id needs in a fleet: a deferred reply, sent from `then`.
    ///
    /// ```
    /// use web::http::{defer, text_response, Server};
    /// let server = Server::bind("127.0.0.1:0")?;
    /// let rooms = server.rooms();
    /// let handle = server.spawn(move |req| {
    ///     let (reply, later) = defer();
    ///     let text = String::from_utf8_lossy(req.body()).into_owned();
    ///     rooms.post_then("news", move |_id| text, move |id| {
    ///         reply.send(match id {
    ///             Some(id) => text_response(201, id.to_string()),
    ///             None => text_response(503, "not posted, try again"),
    ///         });
    ///     });
    ///     later
    /// })?;
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn post_then(
        &self,
        room: &str,
        text: impl FnOnce(u64) -> String + Send + 'static,
        then: impl FnOnce(Option<u64>) + Send + 'static,
    ) {
        self.post_with(room, text, then);
    }

    fn post_with(
        &self,
        room: &str,
        text: impl FnOnce(u64) -> String + Send + 'static,
        then: impl FnOnce(Option<u64>) + Send + 'static,
    ) -> Option<u64> {
        #[cfg(feature = "redis")]
        if let Some(link) = self.fleet_link() {
            let s = self.kept().settings;
            link.post(room, Box::new(text), Box::new(then), s.per_room, s.keep_for);
            return None;
        }
        let id = {
            let mut kept = self.kept();
            let id = next_local(&mut kept);
            let text: Arc<str> = text(id).into();
            self.deliver(&mut kept, room, Line::new(id, text, self.encoding()));
            id
        };
        then(Some(id));
        Some(id)
    }

    /// The messages of `room`'s history after message `after` (0: all), oldest first; when
    /// there are none, calls `or_wait` before the next message can be posted (in the same
    /// critical section: a long-poll registered there misses nothing).
    ///
    /// "After" means of greater ids (a room's ids increase in its order). In a fleet, a room
    /// this instance does not follow is first read from Redis — on the calling thread, within
    /// `web::fleet::Fleet::timeout`, outside the history's critical section (posts never wait
    /// for it). To never wait, look under the [`Follow`](crate::ws::Follow)
    /// [`follow_then`](Rooms::follow_then) hands over (the room is followed: nothing is read);
    /// a caller that waits should hold a `Follow` of the room meanwhile, so that messages
    /// posted on other instances reach it.
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.history(web::ws::History::new(5)).rooms();
    /// let mut waited = false;
    /// assert!(rooms.since("quiet", 0, || waited = true).is_empty());
    /// assert!(waited);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn since(&self, room: &str, after: u64, or_wait: impl FnOnce()) -> Vec<(u64, Arc<str>)> {
        self.since_in(room, after, |_| or_wait())
    }

    fn since_in(
        &self,
        room: &str,
        after: u64,
        or_wait: impl FnOnce(&mut Kept),
    ) -> Vec<(u64, Arc<str>)> {
        #[cfg(feature = "redis")]
        let fleets = self.fleet_history_unless_followed(room);
        #[cfg_attr(not(feature = "redis"), allow(unused_mut))]
        let mut kept = self.kept();
        #[cfg(feature = "redis")]
        if let Some(fleets) = fleets {
            self.merge_fleets(&mut kept, room, fleets);
        }
        let newer: Vec<(u64, Arc<str>)> = kept.recent.after(room, after).map(Line::entry).collect();
        if newer.is_empty() {
            or_wait(&mut kept);
        }
        newer
    }

    /// Follows `room` (see [`Rooms::follow`]) and hands the [`Follow`](crate::ws::Follow) to
    /// `then` once this instance's copy of the room is complete: at once on a server alone or
    /// for a room already followed; in a fleet, once the fleet's reader thread has added the
    /// room's history in Redis to it (or could not, within `web::fleet::Fleet::timeout`). Under
    /// that `Follow`, [`since`](Rooms::since) reads nothing from Redis — what a long-poll's
    /// handler needs so that its worker never waits: defer the reply, look in `then`.
    ///
    /// ```
    /// use web::http::{defer, text_response, Server};
    /// let server = Server::bind("127.0.0.1:0")?.history(web::ws::History::new(20));
    /// let rooms = server.rooms();
    /// let handle = server.spawn(move |_req| {
    ///     let (reply, later) = defer();
    ///     let look = rooms.clone();
    ///     rooms.follow_then("news", move |_follow| {
    ///         let newer = look.since("news", 0, || {});
    ///         reply.send(text_response(200, format!("{} messages", newer.len())));
    ///     });
    ///     later
    /// })?;
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn follow_then(&self, room: &str, then: impl FnOnce(super::Follow) + Send + 'static) {
        #[cfg(feature = "redis")]
        if let Some(link) = self.fleet_link() {
            let mut kept = self.kept();
            if self.needs_fleet_read(&kept, room) {
                let name: Arc<str> = Arc::from(room);
                *kept.filling.entry(Arc::clone(&name)).or_insert(0) += 1;
                let per_room = kept.settings.per_room;
                let follow = self.follow(room);
                drop(kept);
                let (rooms, filled) = (self.clone(), Arc::clone(&name));
                link.history_then(
                    &name,
                    per_room,
                    Box::new(move |fleets| {
                        rooms.fleet_history_came(&filled, fleets);
                        then(follow);
                    }),
                );
                return;
            }
        }
        then(self.follow(room));
    }

    /// The newest message id this instance's copy of `room` holds (`None`: it holds none).
    /// Reads nothing from Redis.
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.history(web::ws::History::new(5)).rooms();
    /// assert_eq!(rooms.last_id("news"), None);
    /// let id = rooms.post("news", |id| format!("{id}"));
    /// assert_eq!(rooms.last_id("news"), id);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn last_id(&self, room: &str) -> Option<u64> {
        self.kept().recent.last(room)
    }

    /// Calls `f(room, id, text)` for every message that reaches a room on this instance
    /// ([`post`](Rooms::post)ed here, or by another instance of a fleet), in the order the
    /// room's members get them, inside the history's critical section: it should be quick
    /// and must not post. Set once, before the server runs; a later call replaces it.
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
    /// rooms.watch(|room, id, _text| { let _ = (room, id); /* wake this room's long-polls */ });
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn watch(&self, f: impl Fn(&str, u64, &str) + Send + Sync + 'static) {
        self.kept().watcher = Some(Arc::new(f));
    }

    /// How many members `room` has on every instance of the fleet: this instance's now, and
    /// the others' as they last reported them (within `web::fleet::BEAT`; an
    /// instance gone without a goodbye stops counting within
    /// `web::fleet::EXPIRY`), as the fleet's reader thread last read them — never waiting:
    /// a figure older than a beat is read again behind this call. Without a fleet, or before
    /// the first read of the room came back (or when Redis did not answer, counted in
    /// `FleetStats::local_reads`), this instance's [`members`](Rooms::members).
    ///
    /// ```
    /// let rooms = web::http::Server::bind("127.0.0.1:0")?.rooms();
    /// assert_eq!(rooms.members_everywhere("lobby"), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn members_everywhere(&self, room: &str) -> usize {
        let here = self.members(room);
        #[cfg(feature = "redis")]
        if let Some(others) = self.fleet_link().and_then(|link| link.others(room)) {
            return here + others;
        }
        here
    }

    /// Joins `seat` to `room` with the room's messages after `after`, handed to `send` first,
    /// in the history's critical section (the one posts take: each message reaches the member
    /// once, from the history or from the room); whether the connection is a member now.
    ///
    /// In a fleet, a room this instance does not follow (or is still filling for another
    /// join) is first read from Redis — on the fleet's reader thread, never here: the
    /// connection is a member at once but counted when the read comes back, and is sent its
    /// history then ([`Delivery::History`]), in the critical
    /// section, so the room's later messages reach it after its history. The room is
    /// followed meanwhile, so what is posted is not missed.
    pub(crate) fn join_recent(
        &self,
        room: &str,
        after: u64,
        seat: &mut super::Seat<'_>,
        send: &mut dyn FnMut(&Line),
    ) -> bool {
        let kept = self.kept();
        #[cfg(feature = "redis")]
        let kept = match self.fleet_link() {
            Some(link) if self.needs_fleet_read(&kept, room) && !seat.joined.contains(room) => {
                return self.join_when_read(link, kept, room, after, seat);
            }
            _ => kept,
        };
        for line in kept.recent.after(room, after) {
            send(line);
        }
        seat.try_join(room)
    }

    /// Keeps message `id` of `room` and sends it to the room's members and the watcher — the
    /// same encodings for both, made once.
    fn deliver(&self, kept: &mut Kept, room: &str, line: Line) {
        let forms = Forms {
            message: Arc::clone(&line.message),
            event: Some(Arc::clone(&line.event)),
        };
        let (id, text) = (line.id, Arc::clone(&line.text));
        kept.recent.record(room, line, |r| self.members(r) > 0);
        self.fan_out(room, || forms);
        if let Some(watch) = &kept.watcher {
            watch(room, id, &text);
        }
        let waiters = kept.waiting.take(room);
        if !waiters.is_empty() {
            kept.woken.push(Woken { waiters, id, text });
        }
    }

    fn kept(&self) -> KeptGuard<'_> {
        // A panic while holding this lock leaves at worst a history without its last line.
        KeptGuard(Some(
            self.kept_lock().lock().unwrap_or_else(|e| e.into_inner()),
        ))
    }

    /// `room`'s messages after `after` (as [`since`](Rooms::since)), or — when it has none —
    /// `waiter` waits for its next message, in the same critical section. When there are
    /// messages the waiter comes back with them, for the caller to answer.
    pub(crate) fn after_or_wait(
        &self,
        room: &str,
        after: u64,
        waiter: Box<dyn Waiter>,
    ) -> Option<(Messages, Box<dyn Waiter>)> {
        let mut waiter = Some(waiter);
        let newer = self.since_in(room, after, |kept| {
            if let Some(waiter) = waiter.take() {
                kept.waiting.add(room, waiter);
            }
        });
        Some((newer, waiter?))
    }

    /// Message `id` of `room` as the fleet ordered it (posted here or on another instance):
    /// delivered if it comes after what this instance's copy holds, kept in its place (and
    /// sent to no one: members have newer messages already) if it is older and missing, else
    /// dropped — so a member gets each message once, in id order.
    #[cfg(feature = "redis")]
    pub(crate) fn receive_posted(&self, room: &str, id: u64, text: &str) {
        let mut kept = self.kept();
        self.take_from_fleet(
            &mut kept,
            room,
            Line::new(id, Arc::from(text), self.encoding()),
        );
    }

    /// Whether a join of `room` needs the fleet's history first: the instance keeps history,
    /// does not follow the room (its copy may be behind), or is filling it for another join.
    #[cfg(feature = "redis")]
    fn needs_fleet_read(&self, kept: &Kept, room: &str) -> bool {
        kept.settings.per_room > 0 && (kept.filling.contains_key(room) || !self.followed(room))
    }

    /// The fleet's half of [`join_recent`](Rooms::join_recent): follows the room, has the
    /// reader read it, and completes the join when it comes ([`Rooms::history_came`]).
    #[cfg(feature = "redis")]
    fn join_when_read(
        &self,
        link: &dyn super::Instances,
        mut kept: KeptGuard<'_>,
        room: &str,
        after: u64,
        seat: &mut super::Seat<'_>,
    ) -> bool {
        let name: Arc<str> = Arc::from(room);
        *kept.filling.entry(Arc::clone(&name)).or_insert(0) += 1;
        let per_room = kept.settings.per_room;
        let follow = self.follow(room);
        drop(kept);
        seat.wait_for_history(Arc::clone(&name));
        let (rooms, id) = (self.clone(), seat.id);
        let room = Arc::clone(&name);
        link.history_then(
            &name,
            per_room,
            Box::new(move |fleets| rooms.history_came(&room, after, fleets, id, follow)),
        );
        true
    }

    /// The fleet's history of `room` came (`None`: not read in time, this instance's copy
    /// stands) for connection `id`, waiting for it: merged into this instance's copy, and —
    /// in the critical section posts take — the connection counted in the room and sent the
    /// lines after `after`. Then the room is no longer followed for it (the member keeps it
    /// followed, or nobody wants it).
    #[cfg(feature = "redis")]
    fn history_came(
        &self,
        room: &Arc<str>,
        after: u64,
        fleets: Option<Vec<Entry>>,
        id: reactor::ConnId,
        follow: super::Follow,
    ) {
        let mut kept = self.kept();
        self.merge_filled(&mut kept, room, fleets);
        let lines: Vec<Line> = kept.recent.after(room, after).cloned().collect();
        let seated = Seated::count(self, room, id);
        // Dropped with the delivery if the connection is gone: the count goes with it.
        let _ = self.to_conn(
            id,
            Delivery::History(Handed::new(HistoryCame { lines, seated })),
        );
        drop(kept);
        drop(follow);
    }

    /// The fleet's history of `room` came for a [`follow_then`](Rooms::follow_then): merged.
    #[cfg(feature = "redis")]
    fn fleet_history_came(&self, room: &str, fleets: Option<Vec<Entry>>) {
        let mut kept = self.kept();
        self.merge_filled(&mut kept, room, fleets);
    }

    /// Adds what the fleet holds of `room` to this instance's copy, and counts one read of it
    /// done.
    #[cfg(feature = "redis")]
    fn merge_filled(&self, kept: &mut Kept, room: &str, fleets: Option<Vec<Entry>>) {
        self.merge_fleets(kept, room, fleets.unwrap_or_default());
        if let Some(n) = kept.filling.get_mut(room) {
            *n -= 1;
            if *n == 0 {
                kept.filling.remove(room);
            }
        }
    }

    /// Adds what the fleet holds of `room` to this instance's copy: each message once, in id
    /// order. A message newer than this instance had reaches it now, so the watcher hears of
    /// it (a long-poll waiting here); members get it with their history.
    #[cfg(feature = "redis")]
    fn merge_fleets(&self, kept: &mut Kept, room: &str, mut fleets: Vec<Entry>) {
        let last = kept.recent.last(room);
        fleets.sort_unstable_by_key(|(id, _)| *id);
        for (line_id, text) in fleets {
            let new = kept.recent.record(
                room,
                Line::new(line_id, Arc::clone(&text), self.encoding()),
                |r| self.members(r) > 0,
            );
            if new
                && last.is_none_or(|last| line_id > last)
                && let Some(watch) = &kept.watcher
            {
                watch(room, line_id, &text);
            }
        }
    }

    /// A post this instance could not hand to Redis (away): delivered to this instance's
    /// members alone, with an id from `floor` (the fleet's clock, see `web::fleet`) or above
    /// the last it gave alone — below every id Redis gives later, whose counters never go below
    /// the clock either; `then` is told the id.
    #[cfg(feature = "redis")]
    pub(crate) fn post_alone(
        &self,
        room: &str,
        floor: u64,
        text: super::Text,
        then: super::OnPosted,
    ) {
        let id = {
            let mut kept = self.kept();
            let id = floor.max(kept.last_id + 1);
            kept.last_id = id;
            let text: Arc<str> = text(id).into();
            self.deliver(&mut kept, room, Line::new(id, text, self.encoding()));
            id
        };
        then(Some(id));
    }

    #[cfg(feature = "redis")]
    fn take_from_fleet(&self, kept: &mut Kept, room: &str, line: Line) {
        if kept.recent.last(room).is_none_or(|last| line.id > last) {
            self.deliver(kept, room, line);
        } else {
            kept.recent.record(room, line, |r| self.members(r) > 0);
        }
    }

    /// `room` is followed from now on (its subscription confirmed): the fleet's history of it,
    /// oldest first, for [`catch_up`](Rooms::catch_up) — read now, handed over later: lines it
    /// holds may have been published after the subscription too, and those arrive through it.
    #[cfg(feature = "redis")]
    pub(crate) fn catch_up_read(&self, room: &str) -> Option<Vec<Entry>> {
        let per_room = self.kept().settings.per_room;
        let link = self.fleet_link().filter(|_| per_room > 0)?;
        let mut fleets = link.history(room, per_room)?;
        fleets.sort_unstable_by_key(|(id, _)| *id);
        Some(fleets)
    }

    /// Delivers what the fleet's history held past this instance's copy (what was posted
    /// between a member's join and the subscription) — called with the lines older than the
    /// first message the subscription brought (those were published before it; the others come
    /// through it, in order), or with all of them when none came for a while.
    #[cfg(feature = "redis")]
    pub(crate) fn catch_up(&self, room: &str, lines: Vec<Entry>) {
        let mut kept = self.kept();
        for (id, text) in lines {
            self.take_from_fleet(&mut kept, room, Line::new(id, text, self.encoding()));
        }
    }

    /// The fleet's history of `room` when this instance does not follow it (its copy may be
    /// behind), read without the history's lock; `None` when followed, not kept, or not read
    /// in time.
    #[cfg(feature = "redis")]
    fn fleet_history_unless_followed(&self, room: &str) -> Option<Vec<Entry>> {
        let per_room = self.kept().settings.per_room;
        let link = self.fleet_link().filter(|_| per_room > 0)?;
        if self.followed(room) {
            return None;
        }
        link.history(room, per_room)
    }
}

/// The next id of a server alone.
/// A room's history for a connection that waited for it (see [`Rooms::join_recent`]): the
/// lines to send, and the connection's place in the room, counted already.
pub(crate) struct HistoryCame {
    pub(crate) lines: Vec<Line>,
    pub(crate) seated: Seated,
}

/// A [`HistoryCame`] inside a worker message, which may be cloned (a message for every
/// connection of a worker is): the one it is for takes it, a clone finds nothing.
#[derive(Clone)]
pub(crate) struct Handed(Arc<std::sync::Mutex<Option<HistoryCame>>>);

impl Handed {
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet's joins
    pub(crate) fn new(came: HistoryCame) -> Handed {
        Handed(Arc::new(std::sync::Mutex::new(Some(came))))
    }

    pub(crate) fn take(&self) -> Option<HistoryCame> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl std::fmt::Debug for Handed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handed")
    }
}

/// The history's lock, held: when it is let go, the long-polls a message answered meanwhile
/// are answered — outside the critical section, which a room of thousands of polls would
/// otherwise hold for as long as their answers take.
pub(crate) struct KeptGuard<'a>(Option<MutexGuard<'a, Kept>>);

impl std::ops::Deref for KeptGuard<'_> {
    type Target = Kept;
    fn deref(&self) -> &Kept {
        self.0
            .as_deref()
            .unwrap_or_else(|| unreachable!("held until dropped"))
    }
}

impl std::ops::DerefMut for KeptGuard<'_> {
    fn deref_mut(&mut self) -> &mut Kept {
        self.0
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("held until dropped"))
    }
}

impl Drop for KeptGuard<'_> {
    fn drop(&mut self) {
        let Some(mut kept) = self.0.take() else {
            return;
        };
        let woken = std::mem::take(&mut kept.woken);
        drop(kept);
        woken.into_iter().for_each(Woken::answer);
    }
}

/// The next id of a server alone: one more than the last, and never below the clock, so that
/// ids keep growing across a restart; the first from a millisecond begun after the server was.
fn next_local(kept: &mut Kept) -> u64 {
    kept.last_id = match kept.last_id {
        0 => ids::first(),
        last => from_clock().max(last.saturating_add(1)),
    };
    kept.last_id
}
