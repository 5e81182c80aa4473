//! The subscriber thread: one subscription per room that has members on this instance, and
//! what other instances publish there handed to the workers' fan-out (its own echo dropped).
//!
//! It looks at the rooms whose local membership changed every [`POLL`] (between two waits
//! for a message), so a room's first member is subscribed within about 100 ms of joining;
//! messages other instances publish before then do not reach it. On every (re)connection it
//! subscribes to all rooms that have local members.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::link::Changed;
use super::{envelope, names, pause, Counters, Fleet, IO_TIMEOUT};
use crate::ws::Rooms;

/// Longest wait for a message before looking at membership changes and the stop flag.
const POLL: Duration = Duration::from_millis(100);

pub(crate) fn run(fleet: &Fleet, rooms: &Rooms, changed: &Changed, stop: &AtomicBool) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    while !stop.load(Ordering::Acquire) {
        let Some(mut con) = fleet.connect_after(&mut failures, 3, |d| !pause(stop, d)) else {
            return;
        };
        failures = 0;
        let ended = session(fleet, rooms, changed, stop, &mut con);
        counters.subscribed.store(false, Ordering::Relaxed);
        if ended.is_err() {
            Counters::add(&counters.errors, 1);
            failures = 1;
        }
    }
}

/// Serves one connection until it fails (`Err`) or the thread is stopped (`Ok`).
fn session(
    fleet: &Fleet,
    rooms: &Rooms,
    changed: &Changed,
    stop: &AtomicBool,
    con: &mut redis::Connection,
) -> redis::RedisResult<()> {
    let counters = &fleet.counters;
    let mut pubsub = con.as_pubsub();
    let mut subscribed: HashSet<Arc<str>> = HashSet::new();
    // Everything with local members now, and whatever changes meanwhile.
    let mut pending: HashSet<Arc<str>> = rooms.names().into_iter().collect();
    let mut first = true;
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        pending.extend(changed.take());
        let looked = !pending.is_empty();
        if looked {
            pubsub.set_read_timeout(Some(IO_TIMEOUT))?;
            for room in pending.drain() {
                let wanted = rooms.members(&room) > 0;
                if wanted && !subscribed.contains(&room) {
                    pubsub.subscribe(names::room_channel(&fleet.prefix, &room))?;
                    subscribed.insert(room);
                } else if !wanted && subscribed.remove(&room) {
                    pubsub.unsubscribe(names::room_channel(&fleet.prefix, &room))?;
                }
            }
        }
        if first || looked {
            pubsub.set_read_timeout(Some(POLL))?;
            counters.subscribed.store(true, Ordering::Relaxed);
            first = false;
        }
        let msg = match pubsub.get_message() {
            Ok(msg) => msg,
            Err(e) if e.is_timeout() => continue,
            Err(e) => return Err(e),
        };
        let channel: Vec<u8> = msg.get_channel().unwrap_or_default();
        let Some(room) = names::room_of(&fleet.prefix, &channel) else {
            continue;
        };
        match envelope::decode(msg.get_payload_bytes()) {
            Ok((from, _)) if from == fleet.instance => {}
            Ok((_, message)) => {
                rooms.publish_local(room, &message);
                Counters::add(&counters.received, 1);
            }
            Err(_) => Counters::add(&counters.errors, 1),
        }
    }
}
