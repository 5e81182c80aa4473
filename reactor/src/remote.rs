//! [`Remote`]: the cross-thread side of a server — messages to connections, shutdown, stats.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::Release};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::ConnId;
use crate::stats::{Stats, WorkerStats};

/// Per-worker figures, written by the worker once per loop turn, read by anyone.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) open: AtomicUsize,
    pub(crate) parked: AtomicUsize,
    pub(crate) held_bytes: AtomicUsize,
    pub(crate) accepted: AtomicU64,
    pub(crate) accept_errors: AtomicU64,
    pub(crate) out_of_descriptors: AtomicU64,
    pub(crate) dropped_messages: AtomicU64,
    /// Messages refused because the worker's inbox was full (counted by senders).
    pub(crate) refused_messages: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) io_uring: AtomicBool,
    pub(crate) gathered_sends: AtomicU64,
    pub(crate) send_submissions: AtomicU64,
}

/// Messages a worker's inbox holds at most; past it, sends are refused (they return `false` and
/// are counted in [`WorkerStats::refused_messages`]) until the worker has taken what is queued. A
/// worker takes its whole inbox at every wake, so the bound is reached only when senders outrun
/// a busy worker by this much: it caps the memory a burst can queue (about 64 bytes a message
/// for WebSocket commands, so 4 MiB a worker) instead of letting it grow without bound.
///
/// ```
/// assert!(reactor::INBOX_LIMIT >= 1024);
/// ```
pub const INBOX_LIMIT: usize = 1 << 16;

/// Recipients a fan-out hands a message to between two looks for messages sent ahead
/// ([`Remote::send_ahead`]): what one of those waits at most behind a room's publish. The
/// worker also yields its core there, so that a thread waiting for one (the code about to
/// answer, when every core delivers) is not kept waiting for the whole walk.
///
/// ```
/// assert!(reactor::AHEAD_EVERY <= 1024);
/// ```
pub const AHEAD_EVERY: usize = 64;

/// Where a queued message goes.
pub(crate) enum To {
    /// One connection.
    Conn(ConnId),
    /// One connection, before the rest of the batch it is taken in (see
    /// [`Remote::send_ahead`]).
    Ahead(ConnId),
    /// The worker as a whole: its [`Service::fan_out`](crate::Service::fan_out) says to whom.
    Worker,
    /// Every connection of the worker whose strand [`wants`](crate::Strand::wants) it.
    All,
}

/// What other threads share with one worker.
pub(crate) struct WorkerShared<M> {
    /// Messages waiting for the worker; it swaps the vector out when woken.
    pub(crate) inbox: Mutex<Vec<(To, M)>>,
    pub(crate) waker: mio::Waker,
    pub(crate) counters: Counters,
    /// False once the worker's loop has ended.
    pub(crate) running: AtomicBool,
    /// A message was sent ahead since the worker last took them: a long fan-out stops to
    /// deliver it (see [`Remote::send_ahead`]).
    pub(crate) ahead: AtomicBool,
}

pub(crate) struct Shared<M> {
    pub(crate) workers: Box<[WorkerShared<M>]>,
    pub(crate) shutdown: AtomicBool,
}

impl<M> WorkerShared<M> {
    pub(crate) fn inbox(&self) -> MutexGuard<'_, Vec<(To, M)>> {
        // A panic while holding this lock cannot leave the vector inconsistent.
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues what `fill` pushes (at most `room` of them counted by the caller), waking the
    /// worker if its inbox was empty. `false` when the worker has stopped or the inbox is full.
    fn queue(&self, count: usize, fill: impl FnOnce(&mut Vec<(To, M)>)) -> bool {
        if !self.running.load(Relaxed) {
            return false;
        }
        let was_empty = {
            let mut inbox = self.inbox();
            if inbox.len() + count > INBOX_LIMIT {
                drop(inbox);
                self.counters
                    .refused_messages
                    .fetch_add(count as u64, Relaxed);
                return false;
            }
            let was_empty = inbox.is_empty();
            fill(&mut inbox);
            was_empty
        };
        if was_empty {
            let _ = self.waker.wake();
        }
        true
    }
}

/// The server seen from any thread: send messages to connections, start the graceful shutdown,
/// read the figures. `Clone + Send + Sync`; cheap to clone (one `Arc`).
///
/// Each worker has a mutex-guarded inbox and a `mio::Waker`; a send locks one inbox and wakes the
/// worker only when its inbox was empty (the worker empties it whole on each wake).
///
/// ```no_run
/// # fn demo(remote: reactor::Remote<String>, ids: Vec<reactor::ConnId>) {
/// // Broadcast to many connections: one lock and at most one wake per worker.
/// let queued = remote.broadcast(&ids, &"hello".to_string());
/// # let _ = queued;
/// # }
/// ```
pub struct Remote<M> {
    pub(crate) shared: Arc<Shared<M>>,
}

impl<M> Clone for Remote<M> {
    fn clone(&self) -> Remote<M> {
        Remote {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<M> std::fmt::Debug for Remote<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("workers", &self.shared.workers.len())
            .finish()
    }
}

impl<M: Send + 'static> Remote<M> {
    /// Queues `msg` for the connection `id`; its strand receives it through
    /// [`Strand::message`](crate::Strand::message) on its worker thread.
    ///
    /// Returns `false` when the message cannot be queued (no such worker, or the worker has
    /// stopped). A message to a connection that has closed, or whose slab key now belongs to
    /// another connection (a different generation), is dropped by the worker and counted in
    /// [`WorkerStats::dropped_messages`].
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<Vec<u8>>, id: reactor::ConnId) {
    /// if !remote.send(id, b"ping".to_vec()) {
    ///     // the server is gone
    /// }
    /// # }
    /// ```
    pub fn send(&self, id: ConnId, msg: M) -> bool {
        let Some(worker) = self.shared.workers.get(id.worker() as usize) else {
            return false;
        };
        worker.queue(1, |inbox| inbox.push((To::Conn(id), msg)))
    }

    /// Queues `msg` for the connection `id` ahead of what was queued for the worker before it
    /// — a room's fan-out to thousands of connections, say, even one under way: for a message
    /// that answers one connection and should not wait behind deliveries to others (a deferred
    /// reply). A fan-out looks for such messages every [`AHEAD_EVERY`] recipients. Messages
    /// sent ahead keep their order among themselves; one sent
    /// with [`send`](Remote::send) to the same connection before it may arrive after it, so
    /// send ahead only what no such message must precede. Returns as `send` does.
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<Vec<u8>>, id: reactor::ConnId) {
    /// remote.send_ahead(id, b"your answer".to_vec());
    /// # }
    /// ```
    pub fn send_ahead(&self, id: ConnId, msg: M) -> bool {
        let Some(worker) = self.shared.workers.get(id.worker() as usize) else {
            return false;
        };
        let queued = worker.queue(1, |inbox| inbox.push((To::Ahead(id), msg)));
        worker.ahead.store(true, Release);
        queued
    }

    /// Queues `msg` for worker `worker` as a whole: on its thread, the worker asks its
    /// [`Service::fan_out`](crate::Service::fan_out) which of its connections the message is
    /// for and hands each a clone. One message per worker, however many connections it reaches
    /// (what a publish to a room of thousands uses).
    ///
    /// Returns `false` when there is no such worker, it has stopped, or its inbox is full
    /// ([`INBOX_LIMIT`]).
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<std::sync::Arc<[u8]>>) {
    /// for w in 0..remote.workers() {
    ///     remote.send_worker(w, b"news".to_vec().into());
    /// }
    /// # }
    /// ```
    pub fn send_worker(&self, worker: usize, msg: M) -> bool {
        let Some(shared) = self.shared.workers.get(worker) else {
            return false;
        };
        shared.queue(1, |inbox| inbox.push((To::Worker, msg)))
    }

    /// Queues `msg` for every connection of worker `worker` whose strand
    /// [`wants`](crate::Strand::wants) it: the worker walks its connections (no list is kept
    /// for this), so it suits what is sent to everyone now and then — a heartbeat, say.
    ///
    /// Returns `false` when there is no such worker, it has stopped, or its inbox is full.
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<()>) {
    /// for w in 0..remote.workers() {
    ///     remote.send_all(w, ());
    /// }
    /// # }
    /// ```
    pub fn send_all(&self, worker: usize, msg: M) -> bool {
        let Some(shared) = self.shared.workers.get(worker) else {
            return false;
        };
        shared.queue(1, |inbox| inbox.push((To::All, msg)))
    }

    /// Queues a clone of `msg` for every connection in `ids`, taking each worker's lock once and
    /// waking each worker at most once. Returns how many messages were queued (see
    /// [`Remote::send`] for what is dropped later; a worker whose inbox cannot take all of its
    /// share takes none of it).
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<std::sync::Arc<[u8]>>, ids: &[reactor::ConnId]) {
    /// let frame: std::sync::Arc<[u8]> = b"news".to_vec().into();
    /// remote.broadcast(ids, &frame); // clones are Arc bumps
    /// # }
    /// ```
    pub fn broadcast(&self, ids: &[ConnId], msg: &M) -> usize
    where
        M: Clone,
    {
        let mut queued = 0;
        for (w, worker) in self.shared.workers.iter().enumerate() {
            let count = ids.iter().filter(|id| id.worker() as usize == w).count();
            if count == 0 {
                continue;
            }
            let mine = ids.iter().filter(|id| id.worker() as usize == w);
            if worker.queue(count, |inbox| {
                inbox.extend(mine.map(|id| (To::Conn(*id), msg.clone())))
            }) {
                queued += count;
            }
        }
        queued
    }

    /// Whether `other` addresses the same server's workers (so their ids can be sent together).
    ///
    /// ```
    /// # fn demo<M: Send + 'static>(a: &reactor::Remote<M>, b: &reactor::Remote<M>) {
    /// if a.same_server(b) { /* one broadcast for both lists of ids */ }
    /// # }
    /// ```
    pub fn same_server(&self, other: &Remote<M>) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Starts the graceful shutdown and returns at once: workers stop accepting, call
    /// [`Strand::drain`](crate::Strand::drain) on every strand, let them finish until the drain
    /// deadline, close the rest and end. [`Handle::shutdown`](crate::Handle::shutdown) does this
    /// and also waits.
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<()>) {
    /// remote.shutdown();
    /// # }
    /// ```
    pub fn shutdown(&self) {
        self.shared
            .shutdown
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for worker in self.shared.workers.iter() {
            let _ = worker.waker.wake();
        }
    }

    /// Whether [`Remote::shutdown`] was called.
    ///
    /// ```
    /// fn stopping(remote: &reactor::Remote<()>) -> bool {
    ///     remote.is_shutting_down()
    /// }
    /// ```
    pub fn is_shutting_down(&self) -> bool {
        self.shared
            .shutdown
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The number of workers.
    ///
    /// ```
    /// fn each(remote: &reactor::Remote<()>) {
    ///     for w in 0..remote.workers() {
    ///         remote.send_worker(w, ());
    ///     }
    /// }
    /// ```
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    /// The server's figures now (each worker publishes its own once per loop turn).
    ///
    /// ```no_run
    /// # fn demo(remote: &reactor::Remote<()>) {
    /// let stats = remote.stats();
    /// println!("{} open, {} bytes held", stats.total.open, stats.total.held_bytes);
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        let workers: Vec<WorkerStats> = self
            .shared
            .workers
            .iter()
            .map(|w| {
                let c = &w.counters;
                WorkerStats {
                    open: c.open.load(Relaxed),
                    parked: c.parked.load(Relaxed),
                    held_bytes: c.held_bytes.load(Relaxed),
                    accepted: c.accepted.load(Relaxed),
                    accept_errors: c.accept_errors.load(Relaxed),
                    out_of_descriptors: c.out_of_descriptors.load(Relaxed),
                    dropped_messages: c.dropped_messages.load(Relaxed),
                    refused_messages: c.refused_messages.load(Relaxed),
                    panics: c.panics.load(Relaxed),
                    io_uring: usize::from(c.io_uring.load(Relaxed)),
                    gathered_sends: c.gathered_sends.load(Relaxed),
                    send_submissions: c.send_submissions.load(Relaxed),
                }
            })
            .collect();
        Stats::sum(workers)
    }
}
