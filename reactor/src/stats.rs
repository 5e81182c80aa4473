//! [`Stats`]: what a running server reports about its connections.

/// Figures of one worker (see [`Stats`] for what each means).
///
/// ```
/// fn busiest(stats: &reactor::Stats) -> Option<usize> {
///     (0..stats.workers.len()).max_by_key(|&w| stats.workers[w].open)
/// }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Open connections.
    pub open: usize,
    /// Open connections parked without pending output.
    pub parked: usize,
    /// Sum of [`Strand::held_bytes`](crate::Strand::held_bytes) over open strands.
    pub held_bytes: usize,
    /// Connections accepted since start.
    pub accepted: u64,
    /// Failed `accept` calls since start (`ECONNABORTED`, `EMFILE`, ...).
    pub accept_errors: u64,
    /// Of those, the ones for want of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`): each pauses accepting for the retry interval.
    pub out_of_descriptors: u64,
    /// Messages dropped because their connection had closed.
    pub dropped_messages: u64,
    /// Messages refused because the inbox was full ([`INBOX_LIMIT`](crate::INBOX_LIMIT)).
    pub refused_messages: u64,
    /// Strand calls that panicked (each closed its connection).
    pub panics: u64,
}

/// The figures of a server, summed over workers, with the per-worker figures in `workers`.
///
/// Each worker keeps running totals as it goes (the held-bytes total is adjusted around every
/// strand call) and publishes them through atomics once per loop turn: reading them never scans
/// connections. Protocol counters (requests served, ...) are kept by the protocol itself; see
/// [`Service`](crate::Service).
///
/// ```no_run
/// # fn demo(handle: &reactor::Handle<()>) {
/// let s = handle.stats();
/// println!("open {} parked {} held {} B", s.open, s.parked, s.held_bytes);
/// for (i, w) in s.workers.iter().enumerate() {
///     println!("worker {i}: accepted {}", w.accepted);
/// }
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Open connections.
    pub open: usize,
    /// Open connections whose last [`Next`](crate::Next) was a `Park` without `write`: waiting
    /// for input, a timer or a message, with no output pending.
    pub parked: usize,
    /// Heap bytes held by strands: the sum of their last reported
    /// [`Strand::held_bytes`](crate::Strand::held_bytes).
    pub held_bytes: usize,
    /// Connections accepted since start.
    pub accepted: u64,
    /// Failed `accept` calls since start.
    pub accept_errors: u64,
    /// Of those, the ones for want of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`): each pauses accepting for the retry interval.
    pub out_of_descriptors: u64,
    /// Messages dropped because their connection had closed or its key was reused.
    pub dropped_messages: u64,
    /// Messages refused because a worker's inbox was full ([`INBOX_LIMIT`](crate::INBOX_LIMIT)).
    pub refused_messages: u64,
    /// Strand calls that panicked.
    pub panics: u64,
    /// The same figures per worker, by worker index.
    pub workers: Vec<WorkerStats>,
}

impl Stats {
    pub(crate) fn sum(workers: Vec<WorkerStats>) -> Stats {
        let mut s = Stats::default();
        for w in &workers {
            s.open += w.open;
            s.parked += w.parked;
            s.held_bytes += w.held_bytes;
            s.accepted += w.accepted;
            s.accept_errors += w.accept_errors;
            s.out_of_descriptors += w.out_of_descriptors;
            s.dropped_messages += w.dropped_messages;
            s.refused_messages += w.refused_messages;
            s.panics += w.panics;
        }
        s.workers = workers;
        s
    }
}
