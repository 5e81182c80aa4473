//! A handler that holds its worker is never silent — an HTTP handler, or a WebSocket or event
//! stream's callback: each call is timed by two reads of the stall clock ([`StallClock`], the
//! CPU's counter where the kernel's clock is that counter); one that held the worker past
//! `Server::stall_threshold` is counted and reported once per method and path through the log.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::stall_clock::StallClock;

/// The default threshold: a handler that holds a worker this long delays every other
/// connection of the worker as long — tens of milliseconds is already felt.
pub const STALL_THRESHOLD: Duration = Duration::from_millis(50);

/// Distinct method-and-path pairs reported per server; stalls past them are counted only.
const REPORTED_MAX: usize = 256;

/// A server's rule for stalls and their count: the threshold, each worker's stalls and the
/// longest (on a cache line of its own), and what was reported already (locked only when a
/// call stalled).
pub(crate) struct Stalls {
    pub(crate) threshold: Duration,
    clock: StallClock,
    /// The threshold in the clock's ticks.
    threshold_ticks: u64,
    workers: Box<[Count]>,
    reported: Mutex<HashSet<Box<str>>>,
}

/// One worker's stalls.
#[derive(Default)]
#[repr(align(64))]
struct Count {
    stalls: AtomicU64,
    /// The longest, in microseconds.
    longest: AtomicU64,
}

impl Stalls {
    pub(crate) fn new(threshold: Duration, workers: usize) -> Stalls {
        Stalls::timed_by(StallClock::get(), threshold, workers)
    }

    fn timed_by(clock: StallClock, threshold: Duration, workers: usize) -> Stalls {
        Stalls {
            threshold,
            clock,
            threshold_ticks: clock.ticks(threshold),
            workers: (0..workers.max(1)).map(|_| Count::default()).collect(),
            reported: Mutex::new(HashSet::new()),
        }
    }

    /// Stalls on every worker, and the longest of any.
    pub(crate) fn totals(&self) -> (u64, Duration) {
        self.workers
            .iter()
            .fold((0, Duration::ZERO), |(n, longest), w| {
                let mine = Duration::from_micros(w.longest.load(Ordering::Relaxed));
                (n + w.stalls.load(Ordering::Relaxed), longest.max(mine))
            })
    }

    /// A call on `worker` held it for `took`.
    fn count(&self, worker: usize, took: Duration) {
        let w = &self.workers[worker % self.workers.len()];
        w.stalls.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        w.longest.fetch_max(micros, Ordering::Relaxed);
    }

    /// Whether `label` is reported for the first time (and is now remembered).
    fn first(&self, label: &str) -> bool {
        let mut seen = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        seen.len() < REPORTED_MAX && !seen.contains(label) && seen.insert(label.into())
    }
}

/// A handler call being timed.
#[derive(Clone, Copy)]
pub(crate) struct Watch {
    /// The stall clock when the call began.
    began: u64,
    /// The worker's latest read of the monotonic clock before the call (its loop turn's).
    turn: Instant,
}

impl Watch {
    /// Starts timing a call by `stalls`' clock; `turn` is the loop turn's clock read.
    #[inline]
    pub(crate) fn start(stalls: &Stalls, turn: Instant) -> Watch {
        Watch {
            began: stalls.clock.read(),
            turn,
        }
    }

    /// The call for `label` (`"GET /path?query"`, `"GET /chat (WebSocket message)"`) on
    /// `worker` returned: reads the stall clock once, and counts and reports a stall (by
    /// method and path, the query left out).
    #[inline]
    pub(crate) fn stop<'l>(self, stalls: &Stalls, worker: usize, label: impl FnOnce() -> &'l str) {
        let ticks = stalls.clock.read().wrapping_sub(self.began);
        if ticks < stalls.threshold_ticks {
            return;
        }
        self.stalled(stalls, worker, ticks, label());
    }

    /// The stall clock counted `ticks` past the threshold: a stall if the monotonic clock
    /// agrees (time since the turn began, at least the call's), counted and reported.
    #[cold]
    #[inline(never)]
    fn stalled(self, stalls: &Stalls, worker: usize, ticks: u64, label: &str) {
        let at_most = self.turn.elapsed();
        if at_most < stalls.threshold {
            return;
        }
        let took = stalls.clock.duration(ticks).min(at_most);
        stalls.count(worker, took);
        let label = label.split_once('?').map_or(label, |(l, _)| l);
        if stalls.first(label) {
            crate::log::warning!(
                request = label,
                took_ms = took.as_millis();
                "a handler held its worker past the stall threshold (every connection of the \
                 worker waited): answer slow work later with `defer`, a `Pool` or async code"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_past_the_threshold_is_counted_and_one_under_it_is_not() {
        let relaxed = Stalls::new(Duration::from_secs(3600), 2);
        Watch::start(&relaxed, Instant::now()).stop(&relaxed, 0, || "GET /fast");
        assert_eq!(relaxed.totals().0, 0);
        let stalls = Stalls::new(Duration::from_millis(1), 2);
        let w = Watch::start(&stalls, Instant::now());
        std::thread::sleep(Duration::from_millis(5));
        w.stop(&stalls, 1, || "GET /slow?secret=1");
        let w = Watch::start(&stalls, Instant::now());
        std::thread::sleep(Duration::from_millis(2));
        w.stop(&stalls, 0, || "GET /slow?other=2");
        let (n, longest) = stalls.totals();
        assert_eq!(n, 2);
        assert!(longest >= Duration::from_micros(4_500), "{longest:?}");
        assert!(
            !stalls.first("GET /slow"),
            "reported once, the query left out"
        );
        assert!(stalls.first("GET /other"));
    }

    #[test]
    fn a_quick_call_late_in_a_long_turn_is_not_a_stall() {
        for clock in [StallClock::get(), StallClock::monotonic()] {
            let stalls = Stalls::timed_by(clock, Duration::from_millis(5), 1);
            let turn = Instant::now();
            std::thread::sleep(Duration::from_millis(10));
            Watch::start(&stalls, turn).stop(&stalls, 0, || "GET /quick");
            assert_eq!(stalls.totals().0, 0, "{clock:?}");
            let w = Watch::start(&stalls, turn);
            std::thread::sleep(Duration::from_millis(6));
            w.stop(&stalls, 0, || "GET /slow");
            assert_eq!(stalls.totals().0, 1, "{clock:?}");
        }
    }
}
