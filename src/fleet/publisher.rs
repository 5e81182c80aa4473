//! The publisher thread: `PUBLISH`es what this instance's rooms hand it, in the order handed,
//! a batch of what is waiting per round trip (one pipeline), a posted message with the write to
//! its room's history list. While Redis is unreachable it drops what arrives (counted) instead
//! of keeping it, so no message reaches other instances late. Between batches it keeps the
//! workers' block of message ids filled and writes this instance's presence.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::link::{Outgoing, Shared};
use super::{Counters, Fleet, history, names, presence, resp};
use crate::ws::Rooms;

/// Most messages sent in one round trip.
const BATCH: usize = 256;
/// How often an idle publisher looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// The publisher thread, until `stop`: also keeps the workers' block of message ids filled
/// and writes this instance's presence (`rooms`' counts) every [`presence::BEAT`].
pub(crate) fn run(
    fleet: &Fleet,
    outgoing: &Receiver<Outgoing>,
    shared: &Shared,
    rooms: &Rooms,
    stop: &AtomicBool,
) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    loop {
        let wait = |d| drop_for(outgoing, counters, stop, d);
        let Some(mut con) = fleet.connect_after(&mut failures, 1, wait) else {
            return;
        };
        match serve(fleet, &mut con, outgoing, shared, rooms, stop) {
            Ok(()) => {
                // Stopping: this instance's members no longer count.
                let _ = presence::goodbye(&mut con, &fleet.prefix, fleet.instance);
                return;
            }
            Err(_) => {
                Counters::add(&counters.errors, 1);
                failures = 1;
            }
        }
    }
}

/// Serves one connection until it fails (`Err`; what was being sent is counted as dropped)
/// or the thread is to stop (`Ok`).
fn serve(
    fleet: &Fleet,
    con: &mut resp::Conn,
    outgoing: &Receiver<Outgoing>,
    shared: &Shared,
    rooms: &Rooms,
    stop: &AtomicBool,
) -> io::Result<()> {
    let counters = &fleet.counters;
    let ids_key = names::ids_key(&fleet.prefix);
    let mut next_beat = Instant::now();
    let mut batch = Vec::with_capacity(16);
    loop {
        let low = shared.ids.lock().unwrap_or_else(|e| e.into_inner()).low();
        if low {
            let block = history::take_block(con, &ids_key)?;
            shared
                .ids
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .refill(block);
        }
        if Instant::now() >= next_beat {
            presence::beat(con, &fleet.prefix, fleet.instance, &rooms.list())?;
            next_beat = Instant::now() + presence::BEAT;
        }
        match outgoing.recv_timeout(POLL) {
            Ok(first) => batch.push(first),
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Acquire) => continue,
            Err(_) => return Ok(()),
        }
        while batch.len() < BATCH {
            match outgoing.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let mut pipe = redis::pipe();
        let mut replies = 0;
        for out in &batch {
            if let Some(kept) = &out.history {
                replies += history::append(&mut pipe, &kept.key, &kept.entry, kept.keep, kept.ttl);
            }
            pipe.cmd("PUBLISH").arg(&out.channel).arg(&out.envelope);
            replies += 1;
        }
        let sent = batch.len() as u64;
        batch.clear();
        let published = con
            .query(&pipe.get_packed_pipeline(), replies)
            .is_ok_and(|replies| {
                replies
                    .iter()
                    .all(|r| matches!(r, redis::Value::Int(_) | redis::Value::Okay))
            });
        if published {
            Counters::add(&counters.published, sent);
        } else {
            Counters::add(&counters.dropped, sent);
            return Err(io::Error::other("PUBLISH failed"));
        }
    }
}

/// Drops (and counts) what arrives for `wait`; `false` when the thread should end.
fn drop_for(
    outgoing: &Receiver<Outgoing>,
    counters: &Counters,
    stop: &AtomicBool,
    wait: Duration,
) -> bool {
    let until = Instant::now() + wait;
    loop {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match outgoing.recv_timeout(left.min(POLL)) {
            Ok(_) => Counters::add(&counters.dropped, 1),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}
