//! Reads from Redis on a caller's thread — a room's history when a member joins a room this
//! instance was not following, a room's members on every instance — each within one deadline of
//! [`Fleet::timeout`](super::Fleet::timeout), a connection made for it included.
//!
//! A few connections are kept for reuse. A read that fails or times out drops its connection
//! and counts an error; for [`RETRY`] after it every read is answered "not now" at once, so a
//! down or slow Redis costs a worker one timeout per `RETRY`, not one per read. A caller
//! answered "not now" uses this instance's own figures (counted as a local read).

use std::io;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::servers::Session;
use super::{Counters, Fleet};

/// How long reads are answered "not now" after one failed.
pub(crate) const RETRY: Duration = Duration::from_secs(1);
/// Connections kept for reuse.
const KEEP: usize = 4;

/// The kept connections and when reads may be tried again.
#[derive(Default)]
pub(crate) struct Reads {
    idle: Mutex<Vec<Session>>,
    paused_until: Mutex<Option<Instant>>,
}

impl Reads {
    /// `read` on a connection to Redis, within the fleet's timeout; `None` (counted as a
    /// local read) when Redis did not answer in time, now or within the last [`RETRY`].
    pub(crate) fn read<T>(
        &self,
        fleet: &Fleet,
        mut read: impl FnMut(&mut Session) -> io::Result<T>,
    ) -> Option<T> {
        let counters = &fleet.counters;
        // One deadline for the whole read, a connection made for it included.
        let deadline = Instant::now() + fleet.timeout;
        let paused = *self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if paused.is_some_and(|until| Instant::now() < until) {
            Counters::add(&counters.local_reads, 1);
            return None;
        }
        let kept = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let open = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            fleet
                .servers
                .connect(left)
                .inspect(|_| Counters::add(&counters.connections, 1))
        };
        let within = |mut conn: Session, read: &mut dyn FnMut(&mut Session) -> io::Result<T>| {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            conn.set_timeout(left);
            read(&mut conn).map(|v| (v, conn))
        };
        let got = match kept {
            // A kept connection Redis has closed (it restarted, say) fails at once: the kept
            // ones go, and the read is made once more on a new connection, within the deadline.
            Some(conn) => match within(conn, &mut read) {
                Err(e) if e.kind() != io::ErrorKind::TimedOut => {
                    self.idle
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clear();
                    open().and_then(|conn| within(conn, &mut read))
                }
                got => got,
            },
            None => open().and_then(|conn| within(conn, &mut read)),
        };
        match got {
            Ok((value, conn)) => {
                let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                if idle.len() < KEEP {
                    idle.push(conn);
                }
                Some(value)
            }
            Err(e) => {
                counters.error(&format!("a read from Redis failed, answered locally: {e}"));
                Counters::add(&counters.local_reads, 1);
                *self
                    .paused_until
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + RETRY);
                None
            }
        }
    }
}
