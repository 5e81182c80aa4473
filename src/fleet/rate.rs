//! Rate-limit counts shared by every instance through Redis, without a worker ever waiting for
//! it.
//!
//! A worker decides at once, on this instance's own count of the caller in the current second
//! plus what the other instances had counted for it as far as this instance last heard
//! ([`Known`]). What it admits it reports to the limiter's **counter thread** (a `try_send`
//! into a bounded queue) and goes on. The thread sends the reports waiting, added up per
//! counter, in one pipeline (`INCRBY` and a 2 s `EXPIRE` per counter, one counter per caller,
//! bucket and wall-clock second); each answer is the fleet's total, and the total less what
//! this instance reported is what the others counted, remembered for the next decision.
//!
//! **Over-admission.** The others' counts reach a decision one round trip late: in a second, a
//! caller spread over `n` instances gets at most its allowance plus what the other instances
//! admitted it within the last round trip — and, in the worst case of a burst that every
//! instance takes in full before any answer returns, `n` times its allowance (as when Redis is
//! unreachable and each instance's own count decides).

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::names::{Bucket, rate_key};
use super::{Counters, Fleet};
use crate::http::RateLimit;
use crate::http::rate_limit::{Kind, SharedCounts, StartsCounts};

/// Reports that may wait for the counter thread; past it they are dropped (counted).
const REPORTS: usize = 4096;
/// Most reports taken into one round trip.
const BATCH: usize = 1024;
/// Seconds a counter lives: its own second, and one more for clocks slightly apart.
const EXPIRY: u64 = 2;

/// One admission to count in the fleet.
struct Report {
    key: Vec<u8>,
    /// The caller and bucket, as [`Known`] files them.
    slot: u64,
    second: u64,
}

/// What the other instances had counted, per caller and bucket, as far as this instance
/// heard: (second, count). Entries of seconds past are dropped as new answers arrive.
#[derive(Default)]
struct Known {
    others: Mutex<HashMap<u64, (u64, u32)>>,
}

impl Known {
    fn others(&self, slot: u64, second: u64) -> u32 {
        let others = self.others.lock().unwrap_or_else(PoisonError::into_inner);
        match others.get(&slot) {
            Some(&(at, n)) if at == second => n,
            _ => 0,
        }
    }
}

/// A rate limiter's way to the shared counts. The counter thread ends when this is dropped.
pub(crate) struct SharedCount {
    reports: SyncSender<Report>,
    known: Arc<Known>,
    /// Connected to Redis.
    up: Arc<AtomicBool>,
    slots: RandomState,
    prefix: Arc<str>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for SharedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCount")
            .field("up", &self.up.load(Ordering::Relaxed))
            .finish()
    }
}

impl SharedCount {
    /// Starts the counter thread of one rate limiter.
    pub(crate) fn start(fleet: &Fleet) -> std::io::Result<SharedCount> {
        // Before the thread allocates: see `reactor::share_one_arena`.
        reactor::share_one_arena();
        let (reports, incoming) = sync_channel(REPORTS);
        let known = Arc::new(Known::default());
        let up = Arc::new(AtomicBool::new(false));
        let (thread_fleet, thread_known, thread_up) =
            (fleet.clone(), Arc::clone(&known), Arc::clone(&up));
        std::thread::Builder::new()
            .name("web-fleet-rate".into())
            .spawn(move || run(&thread_fleet, &incoming, &thread_known, &thread_up))?;
        Ok(SharedCount {
            reports,
            known,
            up,
            slots: RandomState::new(),
            prefix: Arc::clone(&fleet.prefix),
            counters: fleet.counters(),
        })
    }

    /// Decides one request of `caller` in `bucket` in `second`, which this instance's own
    /// count admitted as the `used`-th of the second (`None`: refused): whether it is within
    /// `allowance` counting what the other instances are known to have admitted. Never waits:
    /// an admitted request is reported to the counter thread; while Redis is unreachable this
    /// instance's own count decides (counted as a local decision).
    pub(crate) fn admit(
        &self,
        caller: &str,
        bucket: Bucket,
        allowance: u32,
        second: u64,
        used: Option<u32>,
    ) -> bool {
        if !self.up.load(Ordering::Acquire) {
            Counters::add(&self.counters.local_decisions, 1);
            return used.is_some();
        }
        let Some(used) = used else {
            return false; // over the allowance on this instance alone
        };
        let slot = self.slots.hash_one((caller, bucket as u8));
        if self.known.others(slot, second).saturating_add(used) > allowance {
            return false;
        }
        let report = Report {
            key: rate_key(&self.prefix, second, bucket, caller),
            slot,
            second,
        };
        if self.reports.try_send(report).is_err() {
            // The thread is behind: the fleet does not hear of this one (counted; not said,
            // as it may happen on every request for a while).
            Counters::add(&self.counters.errors, 1);
        }
        true
    }
}

/// Rate limits counted across a fleet (a method of [`RateLimit`] written here, beside the
/// counts in Redis: the limiter is a layer below the fleet). `use web::fleet::LimitAcrossFleet`
/// to call it.
pub trait LimitAcrossFleet {
    /// Counts across every instance of `fleet` (`--features redis`): the same rule — one
    /// wall-clock second per caller, reads and writes in separate buckets, 429 over the
    /// allowance — with the counts kept in Redis, so a caller spread over several instances
    /// gets its allowance once, not once per instance.
    ///
    /// **A worker never waits for Redis.** It decides at once on this instance's own count
    /// plus what the other instances had counted for the caller as far as this instance last
    /// heard; what it admits is reported to the limiter's own thread, which sends the counts
    /// (`INCRBY` and `EXPIRE`, requests of all workers pipelined together) and learns the
    /// fleet's totals from the answers. Requests the limiter does not count (reads under
    /// [`unlimited_reads`](RateLimit::unlimited_reads)) cost nothing more.
    ///
    /// **Over-admission:** the others' counts reach a decision one report late, so a caller
    /// whose requests reach `n` instances in turn gets at most its allowance + `n` − 1 in a
    /// second, and a burst that reaches every instance within one Redis round trip up to `n`
    /// times its allowance.
    ///
    /// **Whole seconds across a fleet.** What Redis counts is each caller's requests per
    /// wall-clock second, so a limiter counted across instances counts whole seconds, also
    /// one made paced ([`smooth`](RateLimit::smooth), [`per_address`](RateLimit::per_address)): the
    /// rule stays one rule, exact as above, and a burst straddling a second boundary can reach
    /// twice the allowance as the whole-second window allows. Pacing is for a limiter counted
    /// on one instance.
    ///
    /// **When Redis does not answer** within [`Fleet::timeout`](Fleet::timeout)
    /// (50 ms by default), or is unreachable, this instance's own count decides (kept all
    /// along): each instance then allows the caller its allowance, so a caller spread over `n`
    /// instances may get up to `n` times it until Redis is back. Such decisions and the errors
    /// are counted (`web::fleet::FleetStats`, and
    /// [`ServerStats`](crate::http::ServerStats) of a server given the same fleet). The
    /// instances' clocks should agree (NTP): each counts in its own current second.
    ///
    /// ```no_run
    /// use web::fleet::{Fleet, LimitAcrossFleet};
    /// use web::http::{text_response, wrap, RateLimit, Server};
    /// let fleet = Fleet::new("redis://127.0.0.1:6379/")?;
    /// // Behind one proxy hop; 5 writes a second per caller across all instances.
    /// let limit = RateLimit::new(5, 100, 1).fleet(&fleet).layer();
    /// let app = wrap(vec![limit], |_req| text_response(201, "posted"));
    /// Server::bind("127.0.0.1:8080")?.fleet(&fleet).run(app)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    fn fleet(self, fleet: &Fleet) -> RateLimit;
}

impl LimitAcrossFleet for RateLimit {
    fn fleet(self, fleet: &Fleet) -> RateLimit {
        self.counted_across(Arc::new(fleet.clone()))
            .paced(crate::http::rate_limit::Pace::Second)
    }
}

impl StartsCounts for Fleet {
    /// Starts a limiter's counter thread; a thread that cannot be started is counted as an
    /// error, and the limiter's count stays local (as when Redis is unreachable).
    fn start(&self) -> Option<Box<dyn SharedCounts>> {
        match SharedCount::start(self) {
            Ok(shared) => Some(Box::new(shared)),
            Err(e) => {
                self.counters
                    .error(&format!("cannot start a rate limit's counter thread: {e}"));
                None
            }
        }
    }
}

impl SharedCounts for SharedCount {
    fn admit(
        &self,
        caller: &str,
        kind: Kind,
        allowance: u32,
        second: u64,
        used: Option<u32>,
    ) -> bool {
        let bucket = match kind {
            Kind::Read => Bucket::Reads,
            Kind::Write => Bucket::Writes,
        };
        SharedCount::admit(self, caller, bucket, allowance, second, used)
    }
}

/// One counter's reports in a batch.
struct Tally {
    slot: u64,
    second: u64,
    n: u32,
}

fn run(fleet: &Fleet, incoming: &Receiver<Report>, known: &Known, up: &AtomicBool) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    // What this instance reported per counter (the fleet's total less this is the others').
    let mut ours: HashMap<Vec<u8>, (u64, u32)> = HashMap::new();
    // Reports arriving during a backoff are dropped: the workers decide locally meanwhile.
    let wait = |d: Duration| {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            if let Err(RecvTimeoutError::Disconnected) = incoming.recv_timeout(left) {
                return false;
            }
        }
    };
    loop {
        let Some(mut con) = fleet.connect_after(&mut failures, 2, wait) else {
            return;
        };
        con.set_timeout(fleet.timeout);
        up.store(true, Ordering::Release);
        loop {
            let mut batch: HashMap<Vec<u8>, Tally> = HashMap::new();
            let first = match incoming.recv() {
                Ok(first) => first,
                Err(_) => return,
            };
            let mut add = |r: Report| {
                batch
                    .entry(r.key)
                    .or_insert(Tally {
                        slot: r.slot,
                        second: r.second,
                        n: 0,
                    })
                    .n += 1;
            };
            add(first);
            for _ in 1..BATCH {
                match incoming.try_recv() {
                    Ok(next) => add(next),
                    Err(_) => break,
                }
            }
            let batch: Vec<(Vec<u8>, Tally)> = batch.into_iter().collect();
            let mut pipe = redis::pipe();
            for (key, tally) in &batch {
                pipe.cmd("INCRBY").arg(key).arg(tally.n);
                pipe.cmd("EXPIRE").arg(key).arg(EXPIRY);
            }
            let replies = con.query(&pipe);
            // Every other reply is an INCRBY's total.
            let totals: Option<Vec<i64>> = replies.ok().and_then(|replies| {
                replies
                    .iter()
                    .step_by(2)
                    .map(|v| match v {
                        redis::Value::Int(n) => Some(*n),
                        _ => None,
                    })
                    .collect()
            });
            match totals {
                Some(totals) if totals.len() == batch.len() => {
                    let newest = batch.iter().map(|(_, t)| t.second).max().unwrap_or(0);
                    ours.retain(|_, (second, _)| *second + 1 >= newest);
                    let mut others = known.others.lock().unwrap_or_else(PoisonError::into_inner);
                    others.retain(|_, (second, _)| *second + 1 >= newest);
                    for ((key, tally), total) in batch.into_iter().zip(totals) {
                        let mine = ours.entry(key).or_insert((tally.second, 0));
                        mine.1 = mine.1.saturating_add(tally.n);
                        let theirs = u32::try_from(total)
                            .unwrap_or(u32::MAX)
                            .saturating_sub(mine.1);
                        others.insert(tally.slot, (tally.second, theirs));
                    }
                }
                _ => {
                    up.store(false, Ordering::Release);
                    counters.error("counting a rate limit in Redis failed");
                    failures = 1;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_limiter_counted_across_a_fleet_counts_whole_seconds() {
        // No Redis is reached: a fleet connects when something starts on it.
        let fleet = Fleet::new("redis://127.0.0.1:1/").unwrap();
        let settings = format!("{:?}", RateLimit::per_address(5, 5).fleet(&fleet));
        assert!(settings.contains("pace: Second"), "{settings}");
        let alone = format!("{:?}", RateLimit::per_address(5, 5));
        assert!(alone.contains("pace: Smooth"), "{alone}");
    }
}
