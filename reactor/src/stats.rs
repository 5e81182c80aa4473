//! [`Stats`]: what a running server reports about its connections.

/// Figures of one worker, or (as [`Stats::total`]) of all of them.
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
    /// Open connections whose last [`Then`](crate::Then) was a `Park` without `write`: waiting
    /// for input, a timer or a message, with no output pending.
    pub parked: usize,
    /// Heap bytes held by strands: the sum of their last reported
    /// [`Strand::held_bytes`](crate::Strand::held_bytes).
    pub held_bytes: usize,
    /// Connections accepted since start.
    pub accepted: u64,
    /// Failed `accept` calls since start (`ECONNABORTED`, `EMFILE`, ...).
    pub accept_errors: u64,
    /// Of those, the ones for want of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`): each pauses accepting for the retry interval.
    pub out_of_descriptors: u64,
    /// Messages dropped because their connection had closed or its key was reused.
    pub dropped_messages: u64,
    /// Messages refused because the inbox was full ([`INBOX_LIMIT`](crate::INBOX_LIMIT)).
    pub refused_messages: u64,
    /// Strand calls that panicked (each closed its connection).
    pub panics: u64,
    /// 1 when the worker gathers the sends of a pass through many connections in io_uring
    /// (feature `io-uring`, Linux, where the kernel permits it and
    /// [`Config::io_uring`](crate::Config::io_uring) is on), 0 when it sends each with its own
    /// system call; in [`Stats::total`], how many workers do.
    pub io_uring: usize,
    /// Sends handed to the kernel in io_uring batches ([`Io::send_shared`](crate::Io::send_shared)).
    pub gathered_sends: u64,
    /// The system calls (`io_uring_enter`) that handed them over.
    pub send_submissions: u64,
}

/// The figures of a server: summed over workers in `total`, and per worker in `workers`.
///
/// Each worker keeps running totals as it goes (the held-bytes total is adjusted around every
/// strand call) and publishes them through atomics once per loop turn: reading them never scans
/// connections. Protocol counters (requests served, ...) are kept by the protocol itself; see
/// [`Service`](crate::Service).
///
/// ```no_run
/// # fn demo(handle: &reactor::Handle<()>) {
/// let s = handle.stats();
/// println!("open {} parked {} held {} B", s.total.open, s.total.parked, s.total.held_bytes);
/// for (i, w) in s.workers.iter().enumerate() {
///     println!("worker {i}: accepted {}", w.accepted);
/// }
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Every worker's figures added up.
    pub total: WorkerStats,
    /// The figures per worker, by worker index.
    pub workers: Vec<WorkerStats>,
}

impl Stats {
    pub(crate) fn sum(workers: Vec<WorkerStats>) -> Stats {
        let total = workers.iter().fold(WorkerStats::default(), |mut total, w| {
            total.add(w);
            total
        });
        Stats { total, workers }
    }
}

impl WorkerStats {
    /// Adds `other`'s figures to these.
    fn add(&mut self, other: &WorkerStats) {
        let WorkerStats {
            open,
            parked,
            held_bytes,
            accepted,
            accept_errors,
            out_of_descriptors,
            dropped_messages,
            refused_messages,
            panics,
            io_uring,
            gathered_sends,
            send_submissions,
        } = other;
        self.open += open;
        self.parked += parked;
        self.held_bytes += held_bytes;
        self.accepted += accepted;
        self.accept_errors += accept_errors;
        self.out_of_descriptors += out_of_descriptors;
        self.dropped_messages += dropped_messages;
        self.refused_messages += refused_messages;
        self.panics += panics;
        self.io_uring += io_uring;
        self.gathered_sends += gathered_sends;
        self.send_submissions += send_submissions;
    }
}
