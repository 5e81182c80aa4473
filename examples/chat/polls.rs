//! Long-polls waiting for a room's next message: `GET /poll?room=R&after=ID` with nothing newer
//! in the room parks its request (a deferred reply, no thread) until a message is said in R or
//! 25 s pass (204), or the server stops (204 at once).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use web::http::{Reply, Response};

/// How long a poll waits for a message.
pub const POLL_WAIT: Duration = Duration::from_secs(25);

/// The polls waiting, per room.
#[derive(Default)]
pub struct Polls {
    waiting: Mutex<HashMap<String, Vec<(Instant, Reply)>>>,
}

impl Polls {
    fn waiting(&self) -> MutexGuard<'_, HashMap<String, Vec<(Instant, Reply)>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parks `reply` until `room`'s next message or `until`.
    pub fn wait(&self, room: &str, reply: Reply, until: Instant) {
        self.waiting()
            .entry(room.to_owned())
            .or_default()
            .push((until, reply));
    }

    /// A message was said in `room`: every poll waiting there gets `answer`.
    pub fn wake(&self, room: &str, answer: impl Fn() -> Response) {
        let woken = self.waiting().remove(room).unwrap_or_default();
        for (_, reply) in woken {
            reply.send(answer());
        }
    }

    /// Answers the polls past their time (all of them when `stopping`) with `none()`, and
    /// forgets those whose client has left. Returns how many still wait.
    pub fn sweep(&self, now: Instant, stopping: bool, none: impl Fn() -> Response) -> usize {
        let mut due = Vec::new();
        let mut waiting = self.waiting();
        waiting.retain(|_, polls| {
            let mut i = 0;
            while i < polls.len() {
                if stopping || polls[i].0 <= now || !polls[i].1.is_open() {
                    due.push(polls.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
            !polls.is_empty()
        });
        let left = waiting.values().map(Vec::len).sum();
        drop(waiting);
        for reply in due {
            if reply.is_open() {
                reply.send(none());
            }
        }
        left
    }
}
