//! The reader thread: every Redis read the rooms want — a room's history for the members
//! joining a room this instance does not follow, the other instances' members of a room — so
//! that no worker waits on Redis. Each read is bounded by [`Fleet::timeout`] (see
//! [`Reads`](super::reads::Reads): after one fails, reads answer "not now" for a second), and
//! what it finds is handed on: a history to the joins waiting for it (`Rooms` completes them),
//! a count to the presence cache.
//!
//! The presence cache answers [`Rooms::members_everywhere`](crate::ws::Rooms::members_everywhere)
//! at once: the other instances' count of a room as last read, refreshed when it is older than
//! [`BEAT`](super::BEAT) (each instance writes its counts once a `BEAT` anyway); a room not
//! asked about for [`FORGET`] is forgotten. Until the first read of a room, its count is this
//! instance's alone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::link::LinkShared;
use super::{Fleet, history, names, presence};
use crate::rooms::history::Entry;

/// How often an idle reader looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// A room's count not asked for this long leaves the cache.
pub(crate) const FORGET: Duration = Duration::from_secs(10);
/// Rooms the cache holds at most (past it, the ones not asked for longest go).
const CACHED_ROOMS: usize = 10_000;

/// A read a room wants.
pub(crate) enum Wanted {
    /// The other instances' members of the room, for the cache.
    Presence(Arc<str>),
    /// The room's last `n` messages, handed to `then` (`None`: not read in time).
    History {
        room: Arc<str>,
        n: usize,
        then: Box<dyn FnOnce(Option<Vec<Entry>>) + Send>,
    },
}

/// The other instances' members of the rooms asked about.
#[derive(Default)]
pub(crate) struct PresenceCache(Mutex<HashMap<Arc<str>, Known>>);

struct Known {
    /// As last read (`None` before the first read came back).
    others: Option<usize>,
    read_at: Option<Instant>,
    asked_at: Instant,
    /// A read of it is queued.
    reading: bool,
}

impl PresenceCache {
    /// The other instances' members of `room` as last read, and whether a fresher read should
    /// be asked for (then counted as asked).
    pub(crate) fn get(&self, room: &str, now: Instant) -> (Option<usize>, bool) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if known.len() >= CACHED_ROOMS && !known.contains_key(room) {
            known.retain(|_, k| now.duration_since(k.asked_at) < FORGET);
        }
        let entry = known.entry(Arc::from(room)).or_insert(Known {
            others: None,
            read_at: None,
            asked_at: now,
            reading: false,
        });
        entry.asked_at = now;
        let stale = entry
            .read_at
            .is_none_or(|at| now.duration_since(at) >= presence::BEAT);
        let refresh = stale && !entry.reading;
        entry.reading |= refresh;
        (entry.others, refresh)
    }

    /// A read of `room` came back (`None`: Redis did not answer in time).
    pub(crate) fn read(&self, room: &str, others: Option<usize>, now: Instant) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = known.get_mut(room) {
            entry.reading = false;
            entry.read_at = Some(now);
            if others.is_some() {
                entry.others = others;
            }
        }
        known.retain(|_, k| now.duration_since(k.asked_at) < FORGET);
    }

    /// A read of `room` could not be queued: asked for again next time.
    pub(crate) fn not_queued(&self, room: &str) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = known.get_mut(room) {
            entry.reading = false;
        }
    }
}

/// The reader thread, until `stop`.
pub(crate) fn run(
    fleet: &Fleet,
    wanted: &Receiver<Wanted>,
    shared: &LinkShared,
    stop: &AtomicBool,
) {
    loop {
        let next = match wanted.recv_timeout(POLL) {
            Ok(next) => next,
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Acquire) => continue,
            Err(_) => return,
        };
        match next {
            Wanted::Presence(room) => {
                let others = shared.reads.read(fleet, |conn| {
                    presence::others(conn, &fleet.prefix, fleet.instance, &room)
                });
                shared.presence.read(&room, others, Instant::now());
            }
            Wanted::History { room, n, then } => {
                let key = names::history_key(&fleet.prefix, &room);
                then(
                    shared
                        .reads
                        .read(fleet, |conn| history::read(conn, &key, n)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_asks_once_per_beat_and_answers_what_was_last_read() {
        let cache = PresenceCache::default();
        let t0 = Instant::now();
        // (seconds from t0, what a read brought back first, the answer, whether to read)
        assert_eq!(cache.get("r", t0), (None, true), "never read: read it");
        assert_eq!(cache.get("r", t0), (None, false), "a read is queued");
        cache.read("r", Some(7), t0 + Duration::from_millis(10));
        assert_eq!(
            cache.get("r", t0 + Duration::from_millis(500)),
            (Some(7), false)
        );
        let later = t0 + Duration::from_millis(1100);
        assert_eq!(cache.get("r", later), (Some(7), true), "older than a beat");
        cache.read("r", None, later);
        assert_eq!(
            cache.get("r", later),
            (Some(7), false),
            "a failed read keeps the last"
        );
        cache.not_queued("r");
        let again = later + presence::BEAT;
        assert_eq!(cache.get("r", again), (Some(7), true));
        // Not asked for a while: forgotten when another read lands.
        cache.read("other", Some(1), again + FORGET);
        assert!(cache.0.lock().unwrap().is_empty());
    }
}
