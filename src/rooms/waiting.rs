//! What waits for a room's next message — long-polls, made in the server's layer
//! (`Rooms::long_poll`) — kept with the history, so that a look at the history and the wait
//! after it are one critical section: no message slips between them.
//!
//! Bounded however callers behave: a waiter that stopped waiting (its client left, its wait
//! passed) is forgotten at the next message of its room, or when the waiters of every room
//! have doubled since the last look, whichever comes first — amortized constant work per wait.

use std::collections::HashMap;
use std::sync::Arc;

/// A room's messages with their ids, oldest first.
pub(crate) type Messages = Vec<(u64, Arc<str>)>;

/// The waiters one message answers, once the history's lock is let go.
pub(crate) struct Woken {
    pub(crate) waiters: Vec<Box<dyn Waiter>>,
    pub(crate) id: u64,
    pub(crate) text: Arc<str>,
}

impl Woken {
    pub(crate) fn answer(self) {
        let message = [(self.id, self.text)];
        for waiter in self.waiters {
            if waiter.is_waiting() {
                waiter.answer(&message);
            }
        }
    }
}

/// One wait for a room's next message.
pub(crate) trait Waiter: Send {
    /// Whether it still wants the message (a long-poll whose client left, or whose wait
    /// passed, does not).
    fn is_waiting(&self) -> bool;
    /// The messages it waited for, oldest first: those newer than what it asked after when
    /// the room had some, else the room's next one.
    fn answer(self: Box<Self>, messages: &[(u64, Arc<str>)]);
}

/// Waits at or below this are never looked through for the bound.
const LEAST_LOOK: usize = 64;

/// The waiters of every room.
#[derive(Default)]
pub(crate) struct Waiting {
    rooms: HashMap<Arc<str>, Vec<Box<dyn Waiter>>>,
    /// Waiters held, in every room.
    held: usize,
    /// What `held` may reach before the stale ones are looked for.
    look_at: usize,
}

impl Waiting {
    /// `waiter` waits for `room`'s next message.
    pub(crate) fn add(&mut self, room: &str, waiter: Box<dyn Waiter>) {
        if self.held >= self.look_at.max(LEAST_LOOK) {
            self.forget_stale();
        }
        match self.rooms.get_mut(room) {
            Some(list) => list.push(waiter),
            None => {
                self.rooms.insert(Arc::from(room), vec![waiter]);
            }
        }
        self.held += 1;
    }

    /// The waiters of `room`, which its new message answers (the stale among them too: they
    /// find no one to answer).
    pub(crate) fn take(&mut self, room: &str) -> Vec<Box<dyn Waiter>> {
        if self.held == 0 {
            return Vec::new(); // what every message finds where nothing long-polls
        }
        let list = self.rooms.remove(room).unwrap_or_default();
        self.held -= list.len();
        list
    }

    /// Forgets the waiters that stopped waiting; the next look comes when as many again wait.
    fn forget_stale(&mut self) {
        self.rooms.retain(|_, list| {
            list.retain(|w| w.is_waiting());
            !list.is_empty()
        });
        self.held = self.rooms.values().map(Vec::len).sum();
        self.look_at = self.held.saturating_mul(2);
    }

    /// Waiters held (for tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A waiter that waits while its flag says so and records what it was answered.
    struct Probe {
        waiting: Arc<AtomicBool>,
        got: Arc<Mutex<Vec<u64>>>,
    }

    impl Waiter for Probe {
        fn is_waiting(&self) -> bool {
            self.waiting.load(Ordering::Relaxed)
        }
        fn answer(self: Box<Self>, messages: &[(u64, Arc<str>)]) {
            self.got
                .lock()
                .unwrap()
                .extend(messages.iter().map(|m| m.0));
        }
    }

    #[test]
    fn a_rooms_waiters_are_taken_together_and_stale_ones_never_pile_up() {
        let mut waiting = Waiting::default();
        let got = Arc::new(Mutex::new(Vec::new()));
        let live = Arc::new(AtomicBool::new(true));
        let gone = Arc::new(AtomicBool::new(false));
        let probe = |flag: &Arc<AtomicBool>| {
            Box::new(Probe {
                waiting: Arc::clone(flag),
                got: Arc::clone(&got),
            })
        };
        waiting.add("a", probe(&live));
        waiting.add("a", probe(&live));
        waiting.add("b", probe(&live));
        for w in waiting.take("a") {
            w.answer(&[(7, Arc::from("x"))]);
        }
        assert_eq!(*got.lock().unwrap(), [7, 7]);
        assert_eq!(waiting.held(), 1);
        // 100 000 waits that stop waiting, each in a room of its own, none ever posted to:
        // what is held stays within twice what still waits (and the least look).
        for i in 0..100_000 {
            waiting.add(&format!("r{i}"), probe(&gone));
            assert!(waiting.held() <= 2 * LEAST_LOOK + 1, "{}", waiting.held());
        }
        assert!(waiting.take("b").len() == 1, "a live waiter is kept");
    }
}
