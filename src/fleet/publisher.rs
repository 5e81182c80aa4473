//! The publisher thread: `PUBLISH`es what this instance's rooms hand it, in the order handed,
//! a batch of what is waiting per round trip (one pipeline). While Redis is unreachable it
//! drops what arrives (counted) instead of keeping it, so no message reaches other instances
//! late.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::link::Outgoing;
use super::{Counters, Fleet};

/// Most messages sent in one round trip.
const BATCH: usize = 256;
/// How often an idle publisher looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

pub(crate) fn run(fleet: &Fleet, outgoing: &Receiver<Outgoing>, stop: &AtomicBool) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    loop {
        let wait = |d| drop_for(outgoing, counters, stop, d);
        let Some(mut con) = fleet.connect_after(&mut failures, 1, wait) else {
            return;
        };
        let mut batch = Vec::with_capacity(16);
        loop {
            match outgoing.recv_timeout(POLL) {
                Ok(first) => batch.push(first),
                Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Acquire) => continue,
                Err(_) => return,
            }
            while batch.len() < BATCH {
                match outgoing.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let mut pipe = redis::pipe();
            for out in &batch {
                pipe.cmd("PUBLISH").arg(&out.channel).arg(&out.envelope);
            }
            let sent = batch.len();
            batch.clear();
            let published = con
                .query(&pipe.get_packed_pipeline(), sent)
                .is_ok_and(|replies| replies.iter().all(|r| matches!(r, redis::Value::Int(_))));
            let sent = sent as u64;
            if published {
                Counters::add(&counters.published, sent);
            } else {
                Counters::add(&counters.errors, 1);
                Counters::add(&counters.dropped, sent);
                failures = 1;
                break;
            }
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
