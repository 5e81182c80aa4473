//! The fleet's figures: what crossed instances, what did not, and why.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One instance's fleet figures since it started; see [`Fleet::stats`](super::Fleet::stats).
///
/// ```
/// let s = web::fleet::Fleet::new("redis://127.0.0.1/")?.stats();
/// println!("{} errors, {} dropped, {} local decisions", s.errors, s.dropped, s.local_decisions);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetStats {
    /// Failures talking to Redis: connections refused or lost, commands failed or timed out
    /// (a rate-limit answer later than [`Fleet::timeout`](super::Fleet::timeout) included),
    /// replies refused as malformed or past the limits, counts the counter thread could not
    /// take (its queue full), envelopes that could not be read.
    pub errors: u64,
    /// Room messages not sent to other instances: the publisher's queue was full, Redis was
    /// unreachable, or the `PUBLISH` failed. Local members got them.
    pub dropped: u64,
    /// Rate-limit decisions taken on this instance's own count because Redis did not answer
    /// (in time, or at all).
    pub local_decisions: u64,
    /// Room messages sent to Redis for other instances.
    pub published: u64,
    /// Room messages received from other instances and handed to local members.
    pub received: u64,
    /// Connections made to Redis (by all of this instance's fleet threads; more than one each
    /// means they reconnected).
    pub connections: u64,
    /// Whether the subscriber thread is connected to Redis now (rooms cross instances).
    pub subscribed: bool,
    /// Reads answered from this instance's own figures because Redis did not answer within
    /// [`Fleet::timeout`](super::Fleet::timeout): a room's history served from this
    /// instance's copy to a member joining, a room's members counted on this instance only.
    pub local_reads: u64,
}

/// The atomics behind [`FleetStats`], shared by the instance's threads and workers.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) errors: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) local_decisions: AtomicU64,
    pub(crate) published: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) subscribed: AtomicBool,
    pub(crate) local_reads: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// A failure talking to Redis: counted, and said as a `warn` event (each failure is
    /// followed by a backoff, so a Redis that is down is not said more than a few times a
    /// second).
    pub(crate) fn error(&self, what: &str) {
        Counters::add(&self.errors, 1);
        crate::log::warning!(; "fleet: {what}");
    }

    pub(crate) fn stats(&self) -> FleetStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        FleetStats {
            errors: get(&self.errors),
            dropped: get(&self.dropped),
            local_decisions: get(&self.local_decisions),
            published: get(&self.published),
            received: get(&self.received),
            connections: get(&self.connections),
            subscribed: self.subscribed.load(Ordering::Relaxed),
            local_reads: get(&self.local_reads),
        }
    }
}
