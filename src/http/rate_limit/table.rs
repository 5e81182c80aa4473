//! The count itself: a table of callers per second split into [`SHARDS`] parts, each behind
//! its own lock, with one overflow bucket shared by callers who find their part full.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{Kind, RateLimit};

/// Parts of the caller table, each behind its own lock.
pub(crate) const SHARDS: usize = 64;

/// How a caller's allowance comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Whole wall-clock seconds, the same for every caller (the specification's window): a
    /// caller's counts start again each second.
    Second,
    /// The generic cell rate algorithm (GCRA): each request admitted pushes the caller's
    /// *theoretical arrival time* 1/allowance of a second on; a request is admitted while
    /// that time is less than one second ahead of now. So a caller idle for a second may send
    /// its whole allowance at once, and from then on one request per 1/allowance of a second —
    /// never twice the allowance across a boundary.
    Smooth,
}

const SECOND_NS: u64 = 1_000_000_000;

/// A moment as the limiter counts: nanoseconds since the Unix epoch on its clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Now {
    pub(crate) nanos: u64,
}

impl Now {
    pub(crate) fn second(self) -> u64 {
        self.nanos / SECOND_NS
    }
}

/// What one caller used: per kind, a count in the current second ([`Pace::Second`]) or the
/// theoretical arrival time in nanoseconds ([`Pace::Smooth`]).
#[derive(Clone, Copy, Debug, Default)]
struct Used {
    writes: u64,
    reads: u64,
}

impl Used {
    /// Counts one request of `kind` if it is within `allowance`: how much of the allowance
    /// the caller holds with it (its count this second; paced: the requests its arrival time
    /// stands ahead of now), or `None`.
    fn take(&mut self, kind: Kind, allowance: u32, pace: Pace, now: Now) -> Option<u32> {
        let used = self.of(kind);
        match pace {
            Pace::Second => {
                if *used >= u64::from(allowance) {
                    return None;
                }
                *used += 1;
                u32::try_from(*used).ok()
            }
            Pace::Smooth => {
                let step = spacing(allowance)?;
                let arrival = (*used).max(now.nanos);
                // Admitted while its arrival time is less than a second ahead: `allowance`
                // in a burst from rest, then one per `step`.
                let ahead = arrival - now.nanos;
                if ahead > step.saturating_mul(u64::from(allowance) - 1) {
                    return None;
                }
                *used = arrival.saturating_add(step);
                u32::try_from((ahead + step).div_ceil(step)).ok()
            }
        }
    }

    /// Takes back one request of `kind` counted by [`Used::take`].
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    fn give_back(&mut self, kind: Kind, allowance: u32, pace: Pace) {
        let step = match pace {
            Pace::Second => 1,
            Pace::Smooth => spacing(allowance).unwrap_or(0),
        };
        let used = self.of(kind);
        *used = used.saturating_sub(step);
    }

    /// Whether a paced caller's allowance is whole again at `now` (it can be forgotten).
    fn rested(&self, now: Now) -> bool {
        self.writes <= now.nanos && self.reads <= now.nanos
    }

    fn of(&mut self, kind: Kind) -> &mut u64 {
        match kind {
            Kind::Read => &mut self.reads,
            Kind::Write => &mut self.writes,
        }
    }
}

/// Nanoseconds between two requests of a paced caller at `allowance` a second (`None`:
/// allowance 0, nothing is admitted).
fn spacing(allowance: u32) -> Option<u64> {
    (allowance > 0).then(|| (SECOND_NS / u64::from(allowance)).max(1))
}

/// Whether state stamped `window` belongs to an earlier second than `now`, restamping it if so.
///
/// A request whose clock was read just before another worker started the next second (`now` one
/// less than `window`) counts in the newer second rather than restarting it. A clock stepped back
/// further (an NTP correction) starts a new second, so the table is never stuck in the future.
fn roll(window: &mut u64, now: u64) -> bool {
    if now == *window || now.wrapping_add(1) == *window {
        return false;
    }
    *window = now;
    true
}

/// Callers are told apart by a 64-bit SipHash of their name under a key random per limiter, so
/// the table holds no names and needs no allocation per caller; two callers whose names hash
/// alike (about one chance in 10^9 per second at 100 000 callers) share a bucket. This hasher
/// hands that hash to the map as it is.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One part of the caller table.
#[derive(Default)]
struct Table {
    /// The second the counts are for ([`Pace::Second`]).
    window: u64,
    /// Paced: no caller kept rests before this (nanoseconds): a full table is not swept again
    /// until then.
    next_sweep: u64,
    callers: HashMap<u64, Used, BuildHasherDefault<Prehashed>>,
}

impl Table {
    /// Forgets the paced callers whose allowance is whole again; notes when the next could be.
    fn sweep(&mut self, now: Now) {
        if now.nanos < self.next_sweep {
            return;
        }
        self.callers.retain(|_, used| !used.rested(now));
        self.next_sweep = self
            .callers
            .values()
            .map(|u| u.writes.max(u.reads))
            .min()
            .unwrap_or(0);
    }
}

/// A shard on its own cache lines, so workers locking neighbouring shards do not slow each other.
#[derive(Default)]
#[repr(align(128))]
struct Shard(Mutex<Table>);

/// The shared state of one rate-limiting layer.
pub(super) struct Limiter {
    pub(super) writes: Option<u32>,
    pub(super) reads: Option<u32>,
    pace: Pace,
    /// Callers per shard per second.
    per_shard: usize,
    names: RandomState,
    shards: Box<[Shard]>,
    /// The bucket of callers who found their shard full: (second, counts).
    overflow: Mutex<(u64, Used)>,
}

impl Limiter {
    pub(super) fn new(settings: &RateLimit) -> Limiter {
        Limiter {
            writes: settings.writes,
            reads: settings.reads,
            pace: settings.pace,
            per_shard: settings.max_callers.div_ceil(SHARDS),
            names: RandomState::new(),
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            overflow: Mutex::new((0, Used::default())),
        }
    }

    /// The allowance of `kind`; `None`: not limited.
    pub(super) fn allowance(&self, kind: Kind) -> Option<u32> {
        match kind {
            Kind::Read => self.reads,
            Kind::Write => self.writes,
        }
    }

    /// Counts a request of `kind` from `caller` in second `now`; whether it is admitted.
    #[cfg(test)]
    fn admit(&self, caller: &str, kind: Kind, now: u64) -> bool {
        let now = Now {
            nanos: now * SECOND_NS,
        };
        self.admit_counted(caller, kind, now).is_some()
    }

    /// Counts a request of `kind` from `caller` at `now`: when it is admitted, how much of the
    /// allowance of its kind the caller holds with it (see [`Used::take`]; 0 for a kind not
    /// limited).
    pub(super) fn admit_counted(&self, caller: &str, kind: Kind, now: Now) -> Option<u32> {
        let Some(allowance) = self.allowance(kind) else {
            return Some(0);
        };
        self.with_used(caller, now, |used| {
            used.take(kind, allowance, self.pace, now)
        })
    }

    /// Takes back a request counted by [`Limiter::admit_counted`] (the fleet refused it).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(super) fn refund(&self, caller: &str, kind: Kind, now: Now) {
        let allowance = self.allowance(kind).unwrap_or(0);
        self.with_used(caller, now, |used| {
            used.give_back(kind, allowance, self.pace)
        });
    }

    /// Runs `f` on what `caller` used (its own bucket, or the overflow).
    fn with_used<T>(&self, caller: &str, now: Now, f: impl FnOnce(&mut Used) -> T) -> T {
        let hash = self.names.hash_one(caller);
        // Bits 32..38 pick the shard; the map uses the low bits (bucket) and the top 7 (tag), so
        // within a shard they still differ.
        let shard = (hash >> 32) as usize % SHARDS;
        let mut table = lock(&self.shards[shard].0);
        let second = now.second();
        if self.pace == Pace::Second && roll(&mut table.window, second) {
            table.callers.clear();
        }
        if let Some(used) = table.callers.get_mut(&hash) {
            return f(used);
        }
        if self.pace == Pace::Smooth && table.callers.len() >= self.per_shard {
            table.sweep(now);
        }
        if table.callers.len() < self.per_shard {
            return f(table.callers.entry(hash).or_default());
        }
        drop(table);
        let mut overflow = lock(&self.overflow);
        let (window, used) = &mut *overflow;
        if self.pace == Pace::Second && roll(window, second) {
            *used = Used::default();
        }
        f(used)
    }

    /// Callers kept in the table, whatever their second (for tests).
    #[cfg(test)]
    fn callers_kept(&self) -> usize {
        self.shards.iter().map(|s| lock(&s.0).callers.len()).sum()
    }

    /// Callers counted now in second `now`, overflow excluded (for tests).
    #[cfg(test)]
    fn callers(&self, now: u64) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let t = lock(&s.0);
                if t.window == now { t.callers.len() } else { 0 }
            })
            .sum()
    }
}

/// The lock, also after a panic elsewhere while it was held (the counts stay meaningful: each
/// change is one increment or one clear).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// (caller, kind, second, admitted)
    type Step = (&'static str, Kind, u64, bool);

    #[test]
    fn each_caller_gets_its_allowance_per_second_in_separate_buckets() {
        use Kind::{Read as R, Write as W};
        #[rustfmt::skip]
        let cases: &[(RateLimit, &[Step])] = &[
            // The specification's example (writes 1, reads 100).
            (RateLimit::new(1, 100, 0), &[("anyone", R, 5, true), ("anyone", W, 5, true), ("anyone", W, 5, false)]),
            // Reads and writes do not share a bucket.
            (RateLimit::new(1, 2, 1), &[
                ("a", R, 5, true), ("a", R, 5, true), ("a", R, 5, false),
                ("a", W, 5, true), ("a", W, 5, false), ("a", R, 5, false),
            ]),
            // Callers do not share a bucket.
            (RateLimit::new(1, 1, 1), &[("a", W, 5, true), ("b", W, 5, true), ("a", W, 5, false), ("b", W, 5, false)]),
            // A new second starts afresh: the burst across a boundary reaches twice the allowance.
            (RateLimit::new(2, 0, 1), &[
                ("a", W, 5, true), ("a", W, 5, true), ("a", W, 5, false),
                ("a", W, 6, true), ("a", W, 6, true), ("a", W, 6, false),
                ("a", W, 9, true),
            ]),
            // A clock read just before another worker started the next second counts in that second.
            (RateLimit::new(1, 1, 1), &[("a", W, 6, true), ("a", W, 5, false), ("a", W, 6, false), ("a", W, 7, true)]),
            // A clock stepped back further starts a new second.
            (RateLimit::new(1, 1, 1), &[("a", W, 100, true), ("a", W, 100, false), ("a", W, 40, true), ("a", W, 40, false)]),
            // Allowance 0 refuses everything of its kind.
            (RateLimit::new(0, 1, 1), &[("a", W, 5, false), ("a", R, 5, true)]),
            // rate_limit(n): writes only, reads never limited.
            (RateLimit::writes_only(1), &[
                ("anyone", R, 5, true), ("anyone", R, 5, true), ("anyone", R, 5, true),
                ("anyone", W, 5, true), ("anyone", W, 5, false), ("anyone", R, 5, true),
            ]),
        ];
        for (settings, steps) in cases {
            let limiter = Limiter::new(settings);
            for (i, &(caller, kind, now, want)) in steps.iter().enumerate() {
                assert_eq!(
                    limiter.admit(caller, kind, now),
                    want,
                    "{settings:?} step {i}"
                );
            }
        }
    }

    #[test]
    fn a_paced_caller_bursts_its_allowance_from_rest_then_gets_one_per_spacing() {
        use Kind::{Read as R, Write as W};
        // (caller, kind, milliseconds, admitted)
        type Paced = (&'static str, Kind, u64, bool);
        #[rustfmt::skip]
        let cases: &[(RateLimit, &[Paced])] = &[
            // 4 a second: 4 at once, then one every 250 ms.
            (RateLimit::new(4, 0, 1).smooth(), &[
                ("a", W, 1000, true), ("a", W, 1000, true), ("a", W, 1000, true), ("a", W, 1000, true),
                ("a", W, 1000, false), ("a", W, 1249, false), ("a", W, 1250, true), ("a", W, 1250, false),
                ("a", W, 1500, true), ("a", W, 1500, false), ("a", W, 1749, false), ("a", W, 1750, true),
                // Rested a whole second: the whole burst again, never more.
                ("a", W, 3000, true), ("a", W, 3000, true), ("a", W, 3000, true), ("a", W, 3000, true),
                ("a", W, 3000, false),
            ]),
            // No double allowance across a second boundary: the whole-second window gave 2 + 2
            // around 1 999/2 000 ms; paced, the next comes 500 ms after the burst.
            (RateLimit::new(2, 0, 1).smooth(), &[
                ("a", W, 1999, true), ("a", W, 1999, true), ("a", W, 2000, false), ("a", W, 2001, false),
                ("a", W, 2499, true), ("a", W, 2499, false),
            ]),
            // Callers and kinds are paced apart.
            (RateLimit::new(1, 1, 1).smooth(), &[
                ("a", W, 10, true), ("a", W, 10, false), ("b", W, 10, true), ("a", R, 10, true),
                ("a", R, 500, false), ("a", W, 1010, true),
            ]),
            // Allowance 0 refuses everything of its kind; a huge one never overflows.
            (RateLimit::new(0, u32::MAX, 1).smooth(), &[("a", W, 5, false), ("a", R, 5, true), ("a", R, 5, true)]),
        ];
        for (settings, steps) in cases {
            let limiter = Limiter::new(settings);
            for (i, &(caller, kind, ms, want)) in steps.iter().enumerate() {
                let now = Now {
                    nanos: ms * 1_000_000,
                };
                let got = limiter.admit_counted(caller, kind, now).is_some();
                assert_eq!(got, want, "{settings:?} step {i}");
            }
        }
    }

    #[test]
    fn paced_callers_at_rest_are_forgotten_so_a_full_table_takes_new_ones() {
        let limiter = Limiter::new(&RateLimit::new(1, 1, 1).smooth().max_callers(SHARDS * 4));
        let at = |s: u64| Now {
            nanos: s * SECOND_NS,
        };
        for i in 0..10_000 {
            limiter.admit_counted(&format!("old-{i}"), Kind::Write, at(7));
        }
        let full = limiter.callers_kept();
        assert!(full <= SHARDS * 4, "{full}");
        // Within their second the table is full: a newcomer shares the overflow bucket, spent.
        assert!(limiter.admit_counted("new", Kind::Write, at(7)).is_none());
        // A second later every old caller is at rest: newcomers get buckets of their own (8 of
        // them: five in one shard of four places, one chance in 300 000, would share).
        for i in 0..8 {
            let name = format!("new-{i}");
            assert!(limiter.admit_counted(&name, Kind::Write, at(8)).is_some());
            assert!(limiter.admit_counted(&name, Kind::Write, at(8)).is_none());
        }
        assert!(limiter.callers_kept() <= SHARDS * 4);
    }

    #[test]
    fn past_the_cap_new_callers_share_one_overflow_bucket() {
        let limiter = Limiter::new(&RateLimit::new(2, 2, 1).max_callers(SHARDS));
        // One caller per shard at most is counted on its own; fill the table.
        let names: Vec<String> = (0..10_000)
            .map(|i| format!("10.0.{}.{}", i / 256, i % 256))
            .collect();
        let mut admitted = 0;
        for name in &names {
            for _ in 0..3 {
                admitted += usize::from(limiter.admit(name, Kind::Write, 7));
            }
        }
        let tracked = limiter.callers(7);
        assert_eq!(tracked, SHARDS, "every shard is full");
        // Tracked callers got their 2 each; all the others together got one allowance, 2.
        assert_eq!(admitted, tracked * 2 + 2);
        // The overflow bucket is spent for the whole second, also for new names ...
        assert!(!limiter.admit("192.168.0.1", Kind::Write, 7));
        // ... while callers already in the table keep their own bucket (reads untouched).
        assert!(limiter.admit(&names[0], Kind::Read, 7));
        // The next second empties the table and the overflow bucket.
        assert!(limiter.admit("192.168.0.1", Kind::Write, 8));
        assert_eq!(limiter.callers(8), 1);
    }

    #[test]
    fn the_cap_bounds_the_table_whatever_names_arrive() {
        let limiter = Limiter::new(&RateLimit::new(1, 1, 1).max_callers(1000));
        for i in 0..50_000u32 {
            limiter.admit(&format!("caller-{i}"), Kind::Read, 3);
        }
        let per_shard = 1000usize.div_ceil(SHARDS);
        assert!(limiter.callers(3) <= per_shard * SHARDS);
        assert!(
            limiter.callers(3) >= 1000 * 9 / 10,
            "{}",
            limiter.callers(3)
        );
    }

    #[test]
    fn roll_restamps_only_for_a_later_second_or_a_clock_stepped_far_back() {
        let cases = [
            (5, 5, false, 5),
            (5, 6, true, 6),
            (5, 4, false, 5),
            (5, 3, true, 3),
            (0, 1_700_000_000, true, 1_700_000_000),
            (u64::MAX, 0, true, 0),
        ];
        for (window, now, rolled, after) in cases {
            let mut w = window;
            assert_eq!((roll(&mut w, now), w), (rolled, after), "{window} {now}");
        }
    }
}
