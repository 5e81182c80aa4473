//! The subscriber thread: one subscription per room that has members (or a
//! [`Follow`](crate::ws::Follow)) on this instance, and
//! what other instances publish there handed to the workers' fan-out (its own echo dropped).
//!
//! It looks at the rooms whose local membership changed when a worker rings its bell (a room's
//! first member joined or its last left: see `bell.rs`), and every [`POLL`] anyway, so a room's
//! first member is subscribed within a round trip of joining; messages other instances publish
//! before then do not reach it — except posted messages: when
//! Redis confirms a subscription, the room's history list is read and what this instance's
//! copy lacks is delivered then (`Rooms::catch_up`). On every (re)connection it subscribes to
//! all rooms that have local members.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::bell::Ear;
use super::envelope::Carried;
use super::link::Changed;
use super::listener::{Awaited, Listener, Pushed};
use super::{Counters, Fleet, envelope, names, pause};
use crate::rooms::Rooms;
use crate::rooms::history::Entry;

/// Longest wait for a message before looking at membership changes and the stop flag.
const POLL: Duration = Duration::from_millis(100);

pub(crate) fn run(fleet: &Fleet, rooms: &Rooms, changed: &Changed, ear: &Ear, stop: &AtomicBool) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    while !stop.load(Ordering::Acquire) {
        let Some(con) = fleet.connect_after(&mut failures, 3, |d| !pause(stop, d)) else {
            return;
        };
        failures = 0;
        let ended = session(fleet, rooms, changed, ear, stop, &mut Listener::of(con));
        counters.subscribed.store(false, Ordering::Relaxed);
        if let Err(e) = ended {
            counters.error(&format!("the subscription to Redis ended: {e}"));
            failures = 1;
        }
    }
}

/// Serves one connection (on a cluster, one per shard) until it fails (`Err`) or the thread
/// is stopped (`Ok`).
fn session(
    fleet: &Fleet,
    rooms: &Rooms,
    changed: &Changed,
    ear: &Ear,
    stop: &AtomicBool,
    listener: &mut Listener,
) -> std::io::Result<()> {
    let counters = &fleet.counters;
    let mut subscribed: HashSet<Arc<str>> = HashSet::new();
    // Rooms just subscribed to: the fleet's history read then, handed over once it is known
    // which of it the subscription brings (see `Caught`).
    let mut caught = Caught::default();
    // Everything with local members now, and whatever changes meanwhile.
    let mut pending: HashSet<Arc<str>> = rooms.names().into_iter().collect();
    counters.subscribed.store(true, Ordering::Relaxed);
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        pending.extend(changed.take());
        // (Un)subscriptions are sent without waiting: their confirmations arrive among the
        // messages and are passed over.
        for room in pending.drain() {
            let wanted = rooms.followed(&room);
            let channel = names::room_channel(&fleet.prefix, &room);
            if wanted && !subscribed.contains(&room) {
                listener.subscribe(&room, &channel)?;
                subscribed.insert(room);
            } else if !wanted && subscribed.remove(&room) {
                listener.unsubscribe(&room, &channel)?;
            }
        }
        caught.hand_over_older_than(CATCH_UP_WAIT, rooms);
        let reply = match listener.next(POLL, ear)? {
            Awaited::Reply(reply) => reply,
            // A room's first member joined or its last left: (un)subscribed at once.
            Awaited::Rung => continue,
            Awaited::Quiet => {
                caught.hand_over_older_than(Duration::ZERO, rooms);
                continue;
            }
        };
        let (channel, payload) = match Pushed::of(&reply) {
            Pushed::Message { channel, payload } => (channel, payload),
            // A subscription's confirmation: from now on the room's messages arrive here.
            Pushed::Subscribed { channel } => {
                if let Some(room) = names::room_of(&fleet.prefix, channel)
                    && let Some(lines) = rooms.catch_up_read(room)
                {
                    caught.0.insert(room.to_owned(), (lines, Instant::now()));
                }
                continue;
            }
            // Asked for (the room is no longer followed), or Redis's own: the room's slot
            // moved to another master, where it is subscribed again (and caught up on).
            Pushed::Unsubscribed { channel } => {
                let room = names::room_of(&fleet.prefix, channel);
                if let Some(room) = room.filter(|r| subscribed.contains(*r)) {
                    for again in listener.moved(Some(room))? {
                        subscribed.remove(&again);
                        pending.insert(again);
                    }
                }
                continue;
            }
            Pushed::Moved => {
                counters.error("a Redis Cluster master refused a subscription: its slot moved");
                for again in listener.moved(None)? {
                    subscribed.remove(&again);
                    pending.insert(again);
                }
                continue;
            }
            Pushed::Unknown => {
                counters.error("Redis sent a pushed reply of no known kind");
                continue;
            }
        };
        let Some(room) = names::room_of(&fleet.prefix, channel) else {
            continue;
        };
        match envelope::decode(payload) {
            // Our own publish, delivered here already; a post comes back to its poster too
            // (it is delivered in the room's order, like every other).
            Ok((from, Carried::Message(_))) if from == fleet.instance => {}
            Ok((_, Carried::Message(message))) => {
                rooms.publish_local(room, &message);
                Counters::add(&counters.received, 1);
            }
            Ok((_, Carried::Posted(id, text))) => {
                caught.hand_over_before(room, id, rooms);
                rooms.receive_posted(room, id, &text);
                Counters::add(&counters.received, 1);
            }
            Err(_) => counters.error("a message from another instance could not be read"),
        }
    }
}

/// How long a subscribed room's catch-up waits for the subscription's first message of it.
const CATCH_UP_WAIT: Duration = Duration::from_millis(200);

/// The fleet's history of each room just subscribed to, read at the confirmation. Lines in it
/// may have been published after the subscription (between it and the read): those also come
/// through the subscription, in order. So the catch-up is handed over when the subscription's
/// first message of the room comes — the lines older than it (published before the
/// subscription, missed) — or, when none came within [`CATCH_UP_WAIT`], whole (any of it the
/// subscription still brings is held already, and dropped).
#[derive(Default)]
struct Caught(HashMap<String, (Vec<Entry>, Instant)>);

impl Caught {
    /// A message of `room` with `id` came through the subscription.
    fn hand_over_before(&mut self, room: &str, id: u64, rooms: &Rooms) {
        if let Some((mut lines, _)) = self.0.remove(room) {
            lines.retain(|(line, _)| *line < id);
            rooms.catch_up(room, lines);
        }
    }

    /// Hands over whole the catch-ups read at least `wait` ago.
    fn hand_over_older_than(&mut self, wait: Duration, rooms: &Rooms) {
        if self.0.is_empty() {
            return;
        }
        let now = Instant::now();
        let due: Vec<String> = self
            .0
            .iter()
            .filter(|(_, (_, at))| now.duration_since(*at) >= wait)
            .map(|(room, _)| room.clone())
            .collect();
        for room in due {
            if let Some((lines, _)) = self.0.remove(&room) {
                rooms.catch_up(&room, lines);
            }
        }
    }
}
