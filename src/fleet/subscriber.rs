//! The subscriber thread: one subscription per room that has members (or a
//! [`Follow`](crate::ws::Follow)) on this instance, and
//! what other instances publish there handed to the workers' fan-out (its own echo dropped).
//!
//! It looks at the rooms whose local membership changed every [`POLL`] (between two waits
//! for a message), so a room's first member is subscribed within about 100 ms of joining;
//! messages other instances publish before then do not reach it — except posted messages: when
//! Redis confirms a subscription, the room's history list is read and what this instance's
//! copy lacks is delivered then (`Rooms::catch_up`). On every (re)connection it subscribes to
//! all rooms that have local members.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::envelope::Carried;
use super::link::Changed;
use super::{Counters, Fleet, envelope, names, pause, resp};
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
    con: &mut resp::Conn,
) -> std::io::Result<()> {
    let counters = &fleet.counters;
    let mut subscribed: HashSet<Arc<str>> = HashSet::new();
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
                con.send(&redis::cmd("SUBSCRIBE").arg(channel).get_packed_command())?;
                subscribed.insert(room);
            } else if !wanted && subscribed.remove(&room) {
                con.send(&redis::cmd("UNSUBSCRIBE").arg(channel).get_packed_command())?;
            }
        }
        let Some(reply) = con.reply_within(POLL)? else {
            continue;
        };
        let redis::Value::Array(parts) = reply else {
            Counters::add(&counters.errors, 1);
            continue;
        };
        let (channel, payload) = match parts.as_slice() {
            [
                redis::Value::BulkString(kind),
                redis::Value::BulkString(channel),
                redis::Value::BulkString(payload),
            ] if kind == b"message" => (channel, payload),
            // A subscription's confirmation: from now on the room's messages arrive here.
            [
                redis::Value::BulkString(kind),
                redis::Value::BulkString(channel),
                redis::Value::Int(_),
            ] if kind == b"subscribe" => {
                if let Some(room) = names::room_of(&fleet.prefix, channel) {
                    rooms.catch_up(room);
                }
                continue;
            }
            [redis::Value::BulkString(kind), _, redis::Value::Int(_)] if kind == b"unsubscribe" => {
                continue;
            }
            _ => {
                Counters::add(&counters.errors, 1);
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
                rooms.receive_posted(room, id, &text);
                Counters::add(&counters.received, 1);
            }
            Err(_) => Counters::add(&counters.errors, 1),
        }
    }
}
