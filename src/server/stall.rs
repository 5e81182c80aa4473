//! A handler that holds its worker is never silent: each call is timed with one clock read
//! (the start is the latest read the worker already made — its loop turn's, or the end of the
//! handler before), one that held the worker past [`Server::stall_threshold`] is counted in the
//! figures and reported once per method and path through the log.
//!
//! [`Server::stall_threshold`]: super::Server::stall_threshold

use std::cell::Cell;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::access::Label;
use super::figures::Figures;

/// The default threshold: a handler that holds a worker this long delays every other
/// connection of the worker as long — tens of milliseconds is already felt.
pub const STALL_THRESHOLD: Duration = Duration::from_millis(50);

/// Distinct method-and-path pairs reported per server; stalls past them are counted only.
const REPORTED_MAX: usize = 256;

thread_local! {
    /// The latest clock read of this worker's handlers' timing.
    static LAST_READ: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// A server's rule for stalls: its threshold, and what it reported already (locked only when
/// a call stalled).
pub(crate) struct Stalls {
    pub(crate) threshold: Duration,
    reported: Mutex<HashSet<Box<str>>>,
}

impl Stalls {
    pub(crate) fn new(threshold: Duration) -> Stalls {
        Stalls {
            threshold,
            reported: Mutex::new(HashSet::new()),
        }
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
    /// When the call began, as far as the worker's clock reads tell.
    pub(crate) began: Instant,
}

impl Watch {
    /// Starts timing a call; `turn` is the loop turn's clock read.
    pub(crate) fn start(turn: Instant) -> Watch {
        Watch {
            began: LAST_READ.get().map_or(turn, |last| last.max(turn)),
        }
    }

    /// The handler for `label`'s request returned: reads the clock once, and counts and
    /// reports a stall (by method and path, the query left out).
    pub(crate) fn stop(self, stalls: &Stalls, figures: &Figures, label: &Label) {
        let now = Instant::now();
        LAST_READ.set(Some(now));
        let took = now.saturating_duration_since(self.began);
        if took < stalls.threshold {
            return;
        }
        figures.stalled(took);
        let label = label.as_str();
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
        let figures = Figures::default();
        let w = Watch::start(Instant::now());
        let fast = Label::new("GET", "/fast");
        w.stop(&Stalls::new(Duration::from_secs(3600)), &figures, &fast);
        assert_eq!(figures.read().stalls, 0);
        let stalls = Stalls::new(Duration::from_millis(1));
        let w = Watch::start(Instant::now());
        std::thread::sleep(Duration::from_millis(5));
        w.stop(&stalls, &figures, &Label::new("GET", "/slow?secret=1"));
        let read = figures.read();
        assert_eq!(read.stalls, 1);
        assert!(read.longest_stall >= Duration::from_millis(5));
        assert!(!stalls.first("GET /slow"), "reported once");
        assert!(stalls.first("GET /other"));
    }
}
