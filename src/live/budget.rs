//! The server-wide budget for WebSocket output queued and not yet taken by peers.
//!
//! What is counted is memory, not bytes owed: a connection's own bytes (the capacity of its
//! buffers), a fixed cost per queued piece, and each shared frame **once per worker** however
//! many of that worker's connections hold it (a thread-local table of the frames the worker's
//! outboxes hold, by address). While the total is past the limit, a connection that is owed
//! more than its fair share (the limit over the connections owing anything) is closed as the
//! next output reaches it — the ones furthest behind go first, and a burst to a large room that
//! every member reads does not reach the limit (its frames are held once).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Default limit on the output queued for all WebSocket connections of a server together
/// ([`Server::max_queued_output`](crate::http::Server::max_queued_output)).
pub const MAX_QUEUED_OUTPUT: usize = 256 * 1024 * 1024;

/// The budget of one server, shared by its connections.
#[derive(Debug)]
pub(crate) struct OutputBudget {
    limit: usize,
    /// Memory held for queued output now.
    used: AtomicUsize,
    /// Connections owing their peer anything now.
    owing: AtomicUsize,
    /// Connections closed for falling behind (their own backlog limit or this budget).
    dropped: AtomicU64,
}

impl OutputBudget {
    pub(crate) fn new(limit: usize) -> Arc<OutputBudget> {
        Arc::new(OutputBudget {
            limit,
            used: AtomicUsize::new(0),
            owing: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        })
    }

    pub(crate) fn charge(&self, bytes: usize) {
        self.used.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn credit(&self, bytes: usize) {
        let _ = self
            .used
            .fetch_update(Relaxed, Relaxed, |u| Some(u.saturating_sub(bytes)));
    }

    /// A connection started (`true`) or stopped owing output.
    pub(crate) fn owing(&self, owes: bool) {
        if owes {
            self.owing.fetch_add(1, Relaxed);
        } else {
            let _ = self
                .owing
                .fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(1)));
        }
    }

    /// Whether a connection owed `pending` bytes is to be dropped: the budget is spent and it
    /// is owed more than its share of it.
    pub(crate) fn sheds(&self, pending: usize) -> bool {
        let used = self.used.load(Relaxed);
        used > self.limit && pending > self.limit / self.owing.load(Relaxed).max(1)
    }

    /// Whether more is held than the limit.
    pub(crate) fn is_spent(&self) -> bool {
        self.used.load(Relaxed) > self.limit
    }

    /// Counts a connection closed for falling behind.
    pub(crate) fn dropped_one(&self) {
        self.dropped.fetch_add(1, Relaxed);
    }

    /// Memory held for queued output now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Relaxed)
    }

    /// Connections closed for falling behind since the start.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// What one connection's own buffers are charged to a budget now, and whether it is counted
/// among those owing output: the one place a connection's part of the budget is kept, whatever
/// the connection (WebSocket, event stream, HTTP reply). Holds the budget only while it is
/// charged, and gives everything back when dropped.
#[derive(Debug, Default)]
pub(crate) struct Charge {
    held: Option<Arc<OutputBudget>>,
    charged: usize,
    owing: bool,
}

impl Charge {
    /// Brings `budget` up to date: the connection holds `cost` bytes for output now, and owes
    /// its peer something (`owing`) or not.
    pub(crate) fn set(&mut self, budget: &Arc<OutputBudget>, cost: usize, owing: bool) {
        if cost == self.charged && owing == self.owing {
            return;
        }
        if cost > self.charged {
            budget.charge(cost - self.charged);
        } else {
            budget.credit(self.charged - cost);
        }
        if owing != self.owing {
            budget.owing(owing);
        }
        self.charged = cost;
        self.owing = owing;
        if cost == 0 && !owing {
            self.held = None;
        } else if self.held.is_none() {
            self.held = Some(Arc::clone(budget));
        }
    }

    /// Whether anything is charged or counted now.
    pub(crate) fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Charges a connection's `cost` (what its output holds, asked only when needed) while it
    /// owes its peer `owed` bytes, and says whether it owes more than its share while the
    /// budget is spent — counted as a peer dropped for falling behind, which the caller closes
    /// or resets. One rule for every HTTP reply, whatever the version; a connection that owes
    /// nothing and holds no charge costs one branch.
    pub(crate) fn owes_too_much(
        &mut self,
        budget: &Arc<OutputBudget>,
        cost: impl FnOnce() -> usize,
        owed: usize,
    ) -> bool {
        if owed == 0 && !self.is_held() {
            return false;
        }
        let cost = cost();
        self.set(budget, cost, owed > 0);
        let sheds = owed > 0 && budget.sheds(cost);
        if sheds {
            budget.dropped_one();
        }
        sheds
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(budget) = self.held.take() {
            self.set(&budget, 0, false);
        }
    }
}

thread_local! {
    /// The shared frames this worker's outboxes hold: address → (length, holders).
    static HELD: RefCell<HashMap<usize, (usize, u32)>> = RefCell::new(HashMap::new());
}

/// The worker has no connection left: its table of held frames gives its memory back.
pub(crate) fn forget_worker_frames() {
    let _ = HELD.try_with(|held| {
        let mut held = held.borrow_mut();
        if held.is_empty() {
            *held = HashMap::new();
        }
    });
}

/// One more of this worker's outboxes holds `frame`: its bytes are charged when it is the
/// first.
pub(crate) fn hold(budget: &OutputBudget, frame: &Arc<[u8]>) {
    let key = frame.as_ptr() as usize;
    let first = HELD
        .try_with(|held| {
            let mut held = held.borrow_mut();
            let entry = held.entry(key).or_insert((frame.len(), 0));
            entry.1 += 1;
            entry.1 == 1
        })
        .unwrap_or(false);
    if first {
        budget.charge(frame.len());
    }
}

/// One of this worker's outboxes let go of `frame`: its bytes are credited when it was the
/// last.
pub(crate) fn release(budget: &OutputBudget, frame: &Arc<[u8]>) {
    let key = frame.as_ptr() as usize;
    let last = HELD
        .try_with(|held| {
            let mut held = held.borrow_mut();
            let Some(entry) = held.get_mut(&key) else {
                return false;
            };
            entry.1 -= 1;
            if entry.1 > 0 {
                return false;
            }
            held.remove(&key);
            if held.is_empty() && held.capacity() > 64 {
                *held = HashMap::new();
            }
            true
        })
        .unwrap_or(false);
    if last {
        budget.credit(frame.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_held_by_many_is_charged_once() {
        let budget = OutputBudget::new(1000);
        let frame: Arc<[u8]> = vec![0u8; 300].into();
        for _ in 0..50 {
            hold(&budget, &frame);
        }
        assert_eq!(budget.used(), 300);
        for _ in 0..49 {
            release(&budget, &frame);
        }
        assert_eq!(budget.used(), 300);
        release(&budget, &frame);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_charge_follows_what_is_held_and_gives_it_back_when_dropped() {
        let budget = OutputBudget::new(1000);
        let mut charge = Charge::default();
        charge.set(&budget, 600, true);
        assert_eq!((budget.used(), budget.owing.load(Relaxed)), (600, 1));
        charge.set(&budget, 200, true);
        assert_eq!((budget.used(), budget.owing.load(Relaxed)), (200, 1));
        charge.set(&budget, 0, false);
        assert_eq!((budget.used(), budget.owing.load(Relaxed)), (0, 0));
        assert!(
            charge.held.is_none(),
            "nothing charged: the budget is not held"
        );
        charge.set(&budget, 300, true);
        drop(charge);
        assert_eq!((budget.used(), budget.owing.load(Relaxed)), (0, 0));
        assert_eq!(Arc::strong_count(&budget), 1);
    }

    #[test]
    fn only_those_past_their_share_are_shed_and_only_over_the_limit() {
        let budget = OutputBudget::new(1000);
        budget.owing(true);
        budget.owing(true);
        budget.charge(900);
        assert!(!budget.sheds(900), "under the limit: nobody");
        budget.charge(200);
        assert!(budget.sheds(600), "past 1000 / 2");
        assert!(!budget.sheds(400));
        budget.credit(1100);
        assert!(!budget.sheds(600));
        assert_eq!(budget.used(), 0);
    }
}
