//! Each worker's own counts of what it answered — requests, replies by status class —
//! on a cache line of its own so workers never contend, summed when the figures are read.

use std::sync::atomic::{AtomicU64, Ordering};

/// One worker's counts.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct Figures {
    /// Requests the handler (or a route) answered.
    served: AtomicU64,
    /// Replies sent, by status class: 1xx (upgrades) to 5xx.
    classes: [AtomicU64; 5],
    /// HTTP/2 connections begun and ended.
    http2_opened: AtomicU64,
    http2_closed: AtomicU64,
    /// Requests answered on HTTP/2 streams.
    http2_streams: AtomicU64,
}

/// What one call of dispatch answered, counted on the stack and added to the worker's
/// [`Figures`] once per call: one batch of pipelined requests costs one atomic add per class
/// it used, not one per request.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) served: u64,
    pub(crate) classes: [u64; 5],
    /// Of `served`, those on HTTP/2 streams.
    pub(crate) streams: u64,
}

impl Tally {
    /// A reply with `status` was rendered.
    pub(crate) fn replied(&mut self, status: u16) {
        if let Some(class) = class_of(status) {
            self.classes[class] += 1;
        }
    }
}

/// The index of `status`'s class (1xx → 0 … 5xx → 4); `None` outside 100..=599.
fn class_of(status: u16) -> Option<usize> {
    match status {
        100..=599 => Some(usize::from(status / 100 - 1)),
        _ => None,
    }
}

/// A worker's figures as read: every worker's summed by [`Totals::add`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) served: u64,
    pub(crate) classes: [u64; 5],
    pub(crate) http2_open: u64,
    pub(crate) http2_streams: u64,
}

impl Figures {
    /// Adds what one call of dispatch answered.
    pub(crate) fn add(&self, tally: &Tally) {
        if tally.served > 0 {
            self.served.fetch_add(tally.served, Ordering::Relaxed);
        }
        if tally.streams > 0 {
            self.http2_streams
                .fetch_add(tally.streams, Ordering::Relaxed);
        }
        for (count, &n) in self.classes.iter().zip(&tally.classes) {
            if n > 0 {
                count.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// One reply rendered outside dispatch (a deferred one, a timeout's).
    pub(crate) fn replied(&self, status: u16) {
        if let Some(class) = class_of(status) {
            self.classes[class].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An HTTP/2 connection began (`true`) or ended.
    pub(crate) fn http2(&self, began: bool) {
        let count = if began {
            &self.http2_opened
        } else {
            &self.http2_closed
        };
        count.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> Totals {
        // (Ended read first: a connection ending between the two loads is never counted
        // below zero.)
        let closed = self.http2_closed.load(Ordering::Relaxed);
        Totals {
            served: self.served.load(Ordering::Relaxed),
            classes: std::array::from_fn(|i| self.classes[i].load(Ordering::Relaxed)),
            http2_open: self
                .http2_opened
                .load(Ordering::Relaxed)
                .saturating_sub(closed),
            http2_streams: self.http2_streams.load(Ordering::Relaxed),
        }
    }
}

impl Totals {
    /// Every worker's figures together.
    pub(crate) fn sum(workers: &[Figures]) -> Totals {
        workers.iter().fold(Totals::default(), |mut all, worker| {
            let one = worker.read();
            all.served += one.served;
            all.http2_open += one.http2_open;
            all.http2_streams += one.http2_streams;
            for (a, b) in all.classes.iter_mut().zip(one.classes) {
                *a += b;
            }
            all
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_fall_in_their_class_and_others_in_none() {
        for (status, class) in [
            (100, Some(0)),
            (101, Some(0)),
            (200, Some(1)),
            (204, Some(1)),
            (304, Some(2)),
            (404, Some(3)),
            (499, Some(3)),
            (500, Some(4)),
            (599, Some(4)),
            (0, None),
            (99, None),
            (600, None),
            (u16::MAX, None),
        ] {
            assert_eq!(class_of(status), class, "{status}");
        }
    }

    #[test]
    fn workers_sum() {
        let workers: [Figures; 2] = Default::default();
        let mut tally = Tally {
            served: 3,
            ..Tally::default()
        };
        tally.replied(200);
        tally.replied(200);
        tally.replied(404);
        workers[0].add(&tally);
        workers[1].replied(503);
        let all = Totals::sum(&workers);
        assert_eq!(all.served, 3);
        assert_eq!(all.classes, [0, 2, 0, 1, 1]);
    }
}
