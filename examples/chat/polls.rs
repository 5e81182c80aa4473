//! Long-polls waiting for a room's next message: `GET /poll?room=R&after=ID` with nothing newer
//! in the room parks its request (a deferred reply, no thread) until a message is said in R or
//! 25 s pass (204), or the server stops (204 at once). While polls wait for a room, this
//! instance follows it (`web::ws::Follow`): in a fleet, messages said on other instances wake
//! them too.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use web::http::{Reply, Response};
use web::ws::{Follow, Rooms};

/// How long a poll waits for a message.
pub const POLL_WAIT: Duration = Duration::from_secs(25);

/// The polls waiting in one room, and the room followed meanwhile.
struct Waiting {
    polls: Vec<(Instant, Reply)>,
    _follow: Follow,
}

/// The polls waiting, per room.
pub struct Polls {
    rooms: Rooms,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl Polls {
    pub fn new(rooms: Rooms) -> Polls {
        Polls {
            rooms,
            waiting: Mutex::default(),
        }
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parks `reply` until `room`'s next message or `until`.
    pub fn wait(&self, room: &str, reply: Reply, until: Instant) {
        self.waiting()
            .entry(room.to_owned())
            .or_insert_with(|| Waiting {
                polls: Vec::new(),
                _follow: self.rooms.follow(room),
            })
            .polls
            .push((until, reply));
    }

    /// A message was said in `room`: every poll waiting there gets `answer`.
    pub fn wake(&self, room: &str, answer: impl Fn() -> Response) {
        let woken = self.waiting().remove(room);
        for (_, reply) in woken.map(|w| w.polls).unwrap_or_default() {
            reply.send(answer());
        }
    }

    /// Answers the polls past their time (all of them when `stopping`) with `none()`, and
    /// forgets those whose client has left. Returns how many still wait.
    pub fn sweep(&self, now: Instant, stopping: bool, none: impl Fn() -> Response) -> usize {
        let mut due = Vec::new();
        let mut waiting = self.waiting();
        waiting.retain(|_, Waiting { polls, .. }| {
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
        let left = waiting.values().map(|w| w.polls.len()).sum();
        drop(waiting);
        for reply in due {
            if reply.is_open() {
                reply.send(none());
            }
        }
        left
    }
}
