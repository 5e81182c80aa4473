//! Worker count, limits and timings of a reactor.

use std::time::Duration;

/// Default maximum number of open connections, all workers together.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100_000;
/// Default capacity of the `mio::Events` buffer of each worker (events handled per poll call).
pub const DEFAULT_EVENTS_CAPACITY: usize = 1024;
/// Default size of the scratch read buffer each worker owns and lends to its strands: 64 KiB.
pub const DEFAULT_SCRATCH_SIZE: usize = 64 * 1024;
/// Default time `shutdown` lets strands finish what is in flight before closing the rest.
pub const DEFAULT_DRAIN_DEADLINE: Duration = Duration::from_secs(10);
/// Default pause of accepting after the process or system ran out of descriptors
/// (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`), as nginx does.
pub const DEFAULT_ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Default number of connections a worker accepts in one loop turn before it serves the
/// connections it already has (the rest are accepted on the next turn).
pub const DEFAULT_ACCEPT_BATCH: usize = 128;
/// Largest accepted `max_connections` per worker: slab keys travel as `u32` in tokens.
///
/// ```
/// let value = reactor::MAX_CONNECTIONS_PER_WORKER;
/// # let _ = value;
/// ```
pub const MAX_CONNECTIONS_PER_WORKER: usize = (u32::MAX - 16) as usize;

/// How a reactor runs: built from [`Config::default`] and adjusted with its builder methods.
///
/// ```
/// use std::time::Duration;
/// let config = reactor::Config::default()
///     .workers(2)
///     .max_connections(10_000)
///     .drain_deadline(Duration::from_secs(5));
/// assert_eq!(config.worker_count(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) workers: usize,
    pub(crate) max_connections: usize,
    pub(crate) nodelay: bool,
    pub(crate) events_capacity: usize,
    pub(crate) scratch_size: usize,
    pub(crate) drain_deadline: Duration,
    pub(crate) accept_retry: Duration,
    pub(crate) accept_batch: usize,
    pub(crate) io_uring: bool,
}

impl Default for Config {
    /// Workers = available cores (1 if unknown), and every other `DEFAULT_*` constant;
    /// `TCP_NODELAY` on.
    fn default() -> Config {
        Config {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            nodelay: true,
            events_capacity: DEFAULT_EVENTS_CAPACITY,
            scratch_size: DEFAULT_SCRATCH_SIZE,
            drain_deadline: DEFAULT_DRAIN_DEADLINE,
            accept_retry: DEFAULT_ACCEPT_RETRY,
            accept_batch: DEFAULT_ACCEPT_BATCH,
            io_uring: true,
        }
    }
}

impl Config {
    /// Number of worker threads (at least 1).
    ///
    /// ```
    /// assert_eq!(reactor::Config::default().workers(0).worker_count(), 1);
    /// ```
    pub fn workers(mut self, n: usize) -> Config {
        self.workers = n.max(1);
        self
    }

    /// Maximum number of open connections, all workers together. Each worker enforces its share
    /// (`max / workers`, rounded up). When a worker reaches its share it stops accepting; new
    /// connections wait in the kernel's backlog until one of its connections closes.
    ///
    /// ```
    /// let config = reactor::Config::default().max_connections(500);
    /// ```
    pub fn max_connections(mut self, n: usize) -> Config {
        self.max_connections = n.max(1);
        self
    }

    /// Set `TCP_NODELAY` on accepted sockets (default `true`).
    ///
    /// ```
    /// let config = reactor::Config::default().nodelay(false);
    /// ```
    pub fn nodelay(mut self, on: bool) -> Config {
        self.nodelay = on;
        self
    }

    /// Capacity of each worker's `mio::Events` buffer (at least 16).
    ///
    /// ```
    /// let config = reactor::Config::default().events_capacity(256);
    /// ```
    pub fn events_capacity(mut self, n: usize) -> Config {
        self.events_capacity = n.max(16);
        self
    }

    /// Size of the scratch read buffer each worker lends to its strands (at least 512 bytes).
    ///
    /// ```
    /// let config = reactor::Config::default().scratch_size(16 * 1024);
    /// ```
    pub fn scratch_size(mut self, n: usize) -> Config {
        self.scratch_size = n.max(512);
        self
    }

    /// How long a graceful shutdown waits for strands to finish before closing the rest.
    ///
    /// ```
    /// let config = reactor::Config::default().drain_deadline(std::time::Duration::from_secs(1));
    /// ```
    pub fn drain_deadline(mut self, d: Duration) -> Config {
        self.drain_deadline = d;
        self
    }

    /// How long accepting pauses after running out of descriptors (`EMFILE`, `ENFILE`, ...).
    ///
    /// ```
    /// let config = reactor::Config::default().accept_retry(std::time::Duration::from_millis(50));
    /// ```
    pub fn accept_retry(mut self, d: Duration) -> Config {
        self.accept_retry = d.max(Duration::from_millis(1));
        self
    }

    /// How many connections a worker accepts per loop turn (at least 1).
    ///
    /// ```
    /// let config = reactor::Config::default().accept_batch(32);
    /// ```
    pub fn accept_batch(mut self, n: usize) -> Config {
        self.accept_batch = n.max(1);
        self
    }

    /// Whether each worker gathers the sends of a pass through many connections (a room's
    /// publish, a liveness sweep) in an io_uring and hands them to the kernel together
    /// (default `true`). Only with the feature `io-uring`, on Linux, where the kernel permits
    /// io_uring (a worker that cannot set one up sends each with its own system call, as
    /// everywhere else; [`WorkerStats::io_uring`](crate::WorkerStats::io_uring) says which).
    ///
    /// ```
    /// let config = reactor::Config::default().io_uring(false);
    /// ```
    pub fn io_uring(mut self, on: bool) -> Config {
        self.io_uring = on;
        self
    }

    /// The number of workers this configuration runs.
    ///
    /// ```
    /// assert!(reactor::Config::default().worker_count() >= 1);
    /// ```
    pub fn worker_count(&self) -> usize {
        self.workers
    }

    /// The share of `max_connections` each worker enforces.
    pub(crate) fn per_worker_limit(&self) -> usize {
        self.max_connections
            .div_ceil(self.workers)
            .min(MAX_CONNECTIONS_PER_WORKER)
    }
}
