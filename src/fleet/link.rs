//! A server's rooms joined to the fleet: what [`Rooms`] calls (publish to other instances,
//! a room's local membership began or ended), and the two threads behind it.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use super::bell::{self, Bell, Ear};
use super::history;
use super::reader::{self, PresenceCache, Wanted};
use super::reads::Reads;
use super::{Counters, Fleet, envelope, names, publisher, subscriber};
use crate::rooms::history::Entry;
use crate::rooms::{Instances, Message, OnPosted, Rooms, Text};

/// What the publisher thread is handed.
pub(crate) enum Outgoing {
    /// A publish for the other instances: the channel and the envelope.
    Publish { channel: Vec<u8>, envelope: Vec<u8> },
    /// A post, whose id and place Redis gives.
    Post(Post),
}

/// A post on its way: dropped before Redis placed it (a full queue, Redis away), it tells its
/// poster `None`.
pub(crate) struct Post {
    pub(crate) room: Box<str>,
    pub(crate) text: Option<Text>,
    /// Its id and text once made (round trip 2).
    pub(crate) made: Option<(u64, String)>,
    pub(crate) then: Option<OnPosted>,
    /// The room's history: its length and its lifetime from this write.
    pub(crate) keep: usize,
    pub(crate) ttl: std::time::Duration,
}

impl Post {
    /// Redis gave the post `id`: its text, made now (and kept, should the post have to reach
    /// this instance alone).
    pub(crate) fn text(&mut self, id: u64) -> String {
        let text = self.text.take().map_or_else(String::new, |text| text(id));
        self.made = Some((id, text.clone()));
        text
    }

    /// Redis published it as `id`: the poster is told.
    pub(crate) fn placed(mut self, id: u64) {
        if let Some(then) = self.then.take() {
            then(Some(id));
        }
    }
}

impl Post {
    /// Redis is away: delivered to this instance's members alone, with an id from the clock —
    /// or the one Redis gave it, if its text was made already.
    pub(crate) fn alone(mut self, rooms: &Rooms) {
        let Some(then) = self.then.take() else {
            return;
        };
        match (self.made.take(), self.text.take()) {
            (Some((id, text)), _) => {
                rooms.post_alone(&self.room, id, Box::new(move |_| text), then)
            }
            (None, Some(text)) => rooms.post_alone(&self.room, history::now_spread(), text, then),
            (None, None) => then(None),
        }
    }
}

impl Drop for Post {
    fn drop(&mut self) {
        if let Some(then) = self.then.take() {
            then(None);
        }
    }
}

/// What the workers and the fleet's threads share: the reads' connections, the presence
/// cache.
pub(crate) struct LinkShared {
    pub(crate) reads: Reads,
    pub(crate) presence: PresenceCache,
}

/// Rooms whose local membership began or ended since the subscriber last looked, and the bell
/// that wakes it for them.
pub(crate) struct Changed {
    rooms: Mutex<HashSet<Arc<str>>>,
    bell: Bell,
}

impl Changed {
    /// An empty set, and the ear the subscriber waits with.
    fn new() -> io::Result<(Changed, Ear)> {
        let (bell, ear) = bell::bell()?;
        let rooms = Mutex::default();
        Ok((Changed { rooms, bell }, ear))
    }

    /// `room` changed; the subscriber is woken for the first change since it last looked.
    fn insert(&self, room: &Arc<str>) {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        if rooms.is_empty() {
            self.bell.ring();
        }
        rooms.insert(Arc::clone(room));
    }

    pub(crate) fn take(&self) -> HashSet<Arc<str>> {
        std::mem::take(&mut *self.rooms.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What [`Rooms`] holds of the fleet. Its calls never wait on Redis.
pub(crate) struct RoomsLink {
    fleet: Fleet,
    queue: SyncSender<Outgoing>,
    /// The reader thread's queue.
    wanted: SyncSender<Wanted>,
    changed: Arc<Changed>,
    shared: Arc<LinkShared>,
}

impl Instances for RoomsLink {
    /// Hands `msg` to the publisher thread for the other instances' members of `room`; drops
    /// it (counted) when the queue is full or the threads have stopped.
    fn publish(&self, room: &str, msg: &Message) {
        self.send(Outgoing::Publish {
            channel: names::room_channel(&self.fleet.prefix, room),
            envelope: envelope::encode(self.fleet.instance, msg),
        });
    }

    /// Hands the post to the publisher thread, which takes its id from Redis, makes its
    /// text and has Redis publish it in the room's order; a post the queue cannot take tells
    /// its poster `None` at once (counted as dropped).
    fn post(&self, room: &str, text: Text, then: OnPosted, keep: usize, ttl: std::time::Duration) {
        self.send(Outgoing::Post(Post {
            room: room.into(),
            text: Some(text),
            made: None,
            then: Some(then),
            keep,
            ttl,
        }));
    }

    /// `room`'s last `n` messages in Redis, oldest first; `None` when Redis did not answer
    /// within the fleet's timeout (counted as a local read). Waits: for the fleet's threads.
    fn history(&self, room: &str, n: usize) -> Option<Vec<Entry>> {
        let key = names::history_key(&self.fleet.prefix, room);
        self.shared
            .reads
            .read(&self.fleet, |conn| history::read(conn, &key, n))
    }

    /// Has the reader thread read `room`'s last `n` messages and hand them to `then` (`None`
    /// when Redis did not answer in time); `then` runs at once with `None` when the reader's
    /// queue is full.
    fn history_then(
        &self,
        room: &Arc<str>,
        n: usize,
        then: Box<dyn FnOnce(Option<Vec<Entry>>) + Send>,
    ) {
        let wanted = Wanted::History {
            room: Arc::clone(room),
            n,
            then,
        };
        if let Err(TrySendError::Full(w) | TrySendError::Disconnected(w)) =
            self.wanted.try_send(wanted)
        {
            Counters::add(&self.fleet.counters.local_reads, 1);
            if let Wanted::History { then, .. } = w {
                then(None);
            }
        }
    }

    /// The members of `room` on the other instances, as last read (see the reader's presence
    /// cache): never waits; a read is queued when the figure is older than a beat. `None`
    /// before the first read came back.
    fn others(&self, room: &str) -> Option<usize> {
        let (others, refresh) = self.shared.presence.get(room, Instant::now());
        if refresh
            && self
                .wanted
                .try_send(Wanted::Presence(Arc::from(room)))
                .is_err()
        {
            self.shared.presence.not_queued(room);
        }
        others
    }

    /// `room`'s first local member joined or its last left: the subscriber subscribes or
    /// unsubscribes (it reads the room's membership itself, so the last change wins).
    fn changed(&self, room: &Arc<str>) {
        self.changed.insert(room);
    }
}

impl RoomsLink {
    /// Queues `out` for the publisher thread; drops it (counted) when the queue is full or
    /// the threads have stopped.
    fn send(&self, out: Outgoing) {
        match self.queue.try_send(out) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                Counters::add(&self.fleet.counters.dropped, 1);
            }
        }
    }
}

/// The fleet threads of a running server; dropping it stops and joins them (each notices
/// within about 100 ms; a connection attempt or a reply in progress ends within 1 s).
pub(crate) struct Running {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Running {
    /// Stops the threads and waits for them, at most [`STOP_WAIT`]: each step of theirs is
    /// bounded (a connection attempt, a whole reply), so they end well within it; a thread
    /// still talking to Redis past it is left to end by itself, never waited on.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let until = std::time::Instant::now() + STOP_WAIT;
        for t in self.threads.drain(..) {
            while !t.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// Reads the reader thread's queue holds at most (past it a join takes this instance's copy
/// at once, a count this instance's own).
const WANTED: usize = 1024;

/// Longest a stopping server waits for its fleet threads.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

impl Fleet {
    /// Starts the publisher and subscriber threads for `rooms`; the link to give `rooms`.
    pub(crate) fn serve_rooms(&self, rooms: &Rooms) -> io::Result<(RoomsLink, Running)> {
        // Before the threads allocate: see `reactor::share_one_arena`.
        reactor::share_one_arena();
        let (queue, outgoing) = sync_channel(self.queue);
        let (changed, ear) = Changed::new()?;
        let changed = Arc::new(changed);
        let shared = Arc::new(LinkShared {
            reads: Reads::default(),
            presence: PresenceCache::default(),
        });
        let (wanted, reads) = sync_channel(WANTED);
        let stop = Arc::new(AtomicBool::new(false));
        let mut running = Running {
            stop: Arc::clone(&stop),
            threads: Vec::with_capacity(3),
        };
        let (fleet, halt, present) = (self.clone(), Arc::clone(&stop), rooms.clone());
        running.threads.push(
            std::thread::Builder::new()
                .name("web-fleet-pub".into())
                .spawn(move || publisher::run(&fleet, &outgoing, &present, &halt))?,
        );
        let (fleet, halt, watched, rooms) = (
            self.clone(),
            Arc::clone(&stop),
            Arc::clone(&changed),
            rooms.clone(),
        );
        running.threads.push(
            std::thread::Builder::new()
                .name("web-fleet-sub".into())
                .spawn(move || subscriber::run(&fleet, &rooms, &watched, &ear, &halt))?,
        );
        let (fleet, halt, read_shared) = (self.clone(), Arc::clone(&stop), Arc::clone(&shared));
        running.threads.push(
            std::thread::Builder::new()
                .name("web-fleet-read".into())
                .spawn(move || reader::run(&fleet, &reads, &read_shared, &halt))?,
        );
        let link = RoomsLink {
            fleet: self.clone(),
            queue,
            wanted,
            changed,
            shared,
        };
        Ok((link, running))
    }
}
