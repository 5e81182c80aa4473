//! Request bodies arriving on an HTTP/2 connection's streams, under HTTP/1.1's rules: each
//! must progress — whole within the header timeout of its head, and every KiB more buying
//! another header timeout (past it: 408 on its stream) — and what they hold together is
//! charged to the server's budget for bodies ([`Server::max_held_bodies`]), past which new
//! bodies are refused and the connections holding more than their share are cut.
//!
//! Kept beside the streams' work, for the few streams receiving a body: what they hold in all
//! is a running figure, not a walk over the streams. The deadline of a header block arriving
//! in fragments (whole within the header timeout, or the connection ends) is kept here too:
//! all that a connection receiving nothing holds of this is one empty pointer.
//!
//! [`Server::max_held_bodies`]: crate::http::Server::max_held_bodies

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::h2::stream_index::StreamIndex;
use crate::live::{Charge, OutputBudget};

/// Body bytes that buy a body another header timeout (HTTP/1.1's pace, one KiB).
pub(super) const PACE: u64 = 1024;

/// One body arriving.
#[derive(Debug)]
struct Arriving {
    stream: u32,
    /// When it must have grown by [`PACE`] more.
    due: Instant,
    /// Its length when `due` was set.
    mark: u64,
    /// Its length now.
    len: u64,
    /// It grew since its window was last looked at (it is in `touched`).
    touched: bool,
}

/// The bodies a connection is receiving: nothing at all while none is (boxed while some are,
/// so that a connection receiving none stays small).
#[derive(Debug, Default)]
pub(super) struct Bodies(Option<Box<Arrivals>>);

/// The bodies arriving, while some are (and a header block arriving in fragments).
#[derive(Debug, Default)]
struct Arrivals {
    /// When the header block arriving in fragments must be whole.
    head_due: Option<Instant>,
    /// In stream order (streams open in increasing order), and where each is in it.
    arriving: Vec<Arriving>,
    index: StreamIndex,
    /// What they hold together.
    held: u64,
    /// The bodies that grew since their windows were last looked at.
    touched: Vec<u32>,
    /// `held`, charged to the server's budget for bodies.
    charge: Charge,
}

/// What a body's growth came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Growth {
    /// Kept.
    Kept,
    /// Past what one connection may hold: this stream is refused.
    OverConnection,
    /// The server's budget for bodies is spent and this connection holds more than its share:
    /// this stream is cut.
    OverServer,
}

impl Bodies {
    /// Whether a header block is arriving in fragments (`now`: since when, if it was not
    /// already): its deadline is set, or cleared once it is whole.
    pub(super) fn head_arriving(&mut self, arriving: bool, now: Instant, timeout: Duration) {
        match (arriving, self.0.as_deref_mut()) {
            (true, Some(a)) => {
                a.head_due.get_or_insert(now + timeout);
            }
            (true, None) => {
                let a = self.0.get_or_insert_with(Box::default);
                a.head_due = Some(now + timeout);
            }
            (false, Some(a)) => {
                a.head_due = None;
                if a.arriving.is_empty() {
                    self.0 = None;
                }
            }
            (false, None) => {}
        }
    }

    /// When the header block arriving in fragments must be whole.
    pub(super) fn head_due(&self) -> Option<Instant> {
        self.0.as_deref().and_then(|a| a.head_due)
    }

    /// Stream `stream` opened with a body to come.
    pub(super) fn opened(&mut self, stream: u32, now: Instant, timeout: Duration) {
        self.0
            .get_or_insert_with(Box::default)
            .opened(stream, now, timeout);
    }

    /// Whether a new body may start: the server's budget is not spent.
    pub(super) fn may_open(budget: &OutputBudget) -> bool {
        !budget.is_spent()
    }

    /// `added` bytes more of `stream`'s body came: kept if the connection (`cap`) and the
    /// server (`budget`) allow it.
    pub(super) fn grow(
        &mut self,
        stream: u32,
        added: u64,
        rules: (u64, &Arc<OutputBudget>),
        pace: (Instant, Duration),
    ) -> Growth {
        match self.0.as_deref_mut() {
            Some(a) => a.grow(stream, added, rules, pace),
            None => Growth::Kept, // never: a body grows only on a stream that opened with one
        }
    }

    /// `stream`'s body is no longer held here (whole, refused, reset, or the connection gone).
    pub(super) fn ended(&mut self, stream: u32, budget: &Arc<OutputBudget>) {
        if let Some(a) = self.0.as_deref_mut() {
            a.ended(stream, budget);
            if a.arriving.is_empty() && a.head_due.is_none() {
                self.0 = None; // its charge given back
            }
        }
    }

    /// When the first body must have progressed, or the header block be whole.
    pub(super) fn next_due(&self) -> Option<Instant> {
        let a = self.0.as_deref()?;
        [a.next_due(), a.head_due].into_iter().flatten().min()
    }

    /// The streams whose body did not progress in time.
    pub(super) fn late(&self, now: Instant) -> Vec<u32> {
        self.0.as_deref().map_or_else(Vec::new, |a| a.late(now))
    }

    /// Bytes of the bodies held.
    #[cfg(test)]
    pub(super) fn held(&self) -> u64 {
        self.0.as_deref().map_or(0, |a| a.held)
    }

    /// The next body that grew since its window was looked at: its stream and length so far
    /// (each once, however many frames it took).
    pub(super) fn next_grown(&mut self) -> Option<(u32, u64)> {
        self.0.as_deref_mut().and_then(Arrivals::next_grown)
    }

    /// Heap bytes of this list (the bodies themselves are their requests').
    pub(super) fn held_bytes(&self) -> usize {
        self.0
            .as_deref()
            .map_or(0, |a| std::mem::size_of::<Arrivals>() + a.held_bytes())
    }
}

impl Arrivals {
    /// Stream `stream` opened with a body to come.
    fn opened(&mut self, stream: u32, now: Instant, timeout: Duration) {
        debug_assert!(self.arriving.last().is_none_or(|a| a.stream < stream));
        self.arriving.push(Arriving {
            stream,
            due: now + timeout,
            mark: 0,
            len: 0,
            touched: false,
        });
        self.index.pushed(&self.arriving, |a| a.stream);
    }

    /// `added` bytes more of `stream`'s body came: kept if the connection (`cap`) and the
    /// server (`budget`) allow it.
    fn grow(
        &mut self,
        stream: u32,
        added: u64,
        (cap, budget): (u64, &Arc<OutputBudget>),
        (now, timeout): (Instant, Duration),
    ) -> Growth {
        let Some(at) = self.at(stream) else {
            return Growth::Kept; // never: a body grows only on a stream that opened with one
        };
        if self.held.saturating_add(added) > cap {
            return Growth::OverConnection;
        }
        let held = self.held + added;
        self.charge.set(budget, held as usize, held > 0);
        if added > 0 && budget.sheds(held as usize) {
            self.charge.set(budget, self.held as usize, self.held > 0);
            budget.dropped_one();
            return Growth::OverServer;
        }
        let a = &mut self.arriving[at];
        a.len += added;
        if !a.touched {
            a.touched = true;
            self.touched.push(stream);
        }
        if a.len - a.mark >= PACE {
            a.mark = a.len;
            a.due = now + timeout;
        }
        self.held = held;
        Growth::Kept
    }

    /// `stream`'s body is no longer held here (whole, refused, reset, or the connection gone).
    fn ended(&mut self, stream: u32, budget: &Arc<OutputBudget>) {
        let Some(at) = self.at(stream) else {
            return;
        };
        let gone = self.arriving.remove(at);
        self.index.removed(self.arriving.len());
        self.held -= gone.len;
        self.charge.set(budget, self.held as usize, self.held > 0);
    }

    /// When the first body must have progressed.
    fn next_due(&self) -> Option<Instant> {
        self.arriving.iter().map(|a| a.due).min()
    }

    /// The streams whose body did not progress in time.
    fn late(&self, now: Instant) -> Vec<u32> {
        self.arriving
            .iter()
            .filter(|a| a.due <= now)
            .map(|a| a.stream)
            .collect()
    }

    /// The next body that grew since its window was looked at: its stream and length so far
    /// (each once, however many frames it took).
    fn next_grown(&mut self) -> Option<(u32, u64)> {
        while let Some(stream) = self.touched.pop() {
            if let Some(a) = self.find(stream) {
                a.touched = false;
                return Some((stream, a.len));
            }
        }
        None
    }

    /// Heap bytes of this list (the bodies themselves are their requests').
    fn held_bytes(&self) -> usize {
        self.arriving.capacity() * std::mem::size_of::<Arriving>()
            + self.touched.capacity() * std::mem::size_of::<u32>()
            + self.index.held_bytes()
    }

    fn find(&mut self, stream: u32) -> Option<&mut Arriving> {
        let at = self.at(stream)?;
        Some(&mut self.arriving[at])
    }

    /// Where `stream`'s body is in `arriving`.
    fn at(&self, stream: u32) -> Option<usize> {
        self.index.find(&self.arriving, stream, |a| a.stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    #[test]
    fn a_body_buys_time_a_kib_at_a_time_and_its_bytes_are_counted_once() {
        let budget = OutputBudget::new(1 << 20);
        let t0 = Instant::now();
        let mut b = Bodies::default();
        b.opened(1, t0, T);
        b.opened(3, t0, T);
        assert_eq!(b.next_due(), Some(t0 + T));
        let later = t0 + Duration::from_secs(5);
        assert_eq!(b.grow(1, 1000, (10_000, &budget), (later, T)), Growth::Kept);
        assert_eq!(b.next_due(), Some(t0 + T), "under a KiB buys nothing");
        assert_eq!(b.grow(1, 24, (10_000, &budget), (later, T)), Growth::Kept);
        assert_eq!(b.late(t0 + T), vec![3], "1 KiB bought stream 1 more time");
        assert_eq!((b.held(), budget.used()), (1024, 1024));
        assert_eq!(
            b.grow(3, 9_000, (10_000, &budget), (later, T)),
            Growth::OverConnection
        );
        b.ended(1, &budget);
        b.ended(3, &budget);
        assert_eq!((b.held(), budget.used()), (0, 0));
        assert!(b.late(t0 + 2 * T).is_empty());
        assert_eq!(b.held_bytes(), 0);
    }

    #[test]
    fn past_the_servers_budget_the_connection_over_its_share_is_cut() {
        let budget = OutputBudget::new(4096);
        let now = Instant::now();
        let mut big = Bodies::default();
        let mut small = Bodies::default();
        big.opened(1, now, T);
        small.opened(1, now, T);
        let rules = (1 << 20, &budget);
        assert_eq!(small.grow(1, 100, rules, (now, T)), Growth::Kept);
        assert_eq!(big.grow(1, 3900, rules, (now, T)), Growth::Kept);
        // Past the limit, the connection holding more than its share is refused more.
        assert_eq!(big.grow(1, 200, rules, (now, T)), Growth::OverServer);
        assert_eq!(budget.used(), 4000, "what was refused is not charged");
        // One within its share still grows, and then no new body may start.
        assert_eq!(small.grow(1, 100, rules, (now, T)), Growth::Kept);
        assert!(!Bodies::may_open(&budget));
        big.ended(1, &budget);
        assert!(Bodies::may_open(&budget));
        assert_eq!(budget.used(), 200);
    }
}
