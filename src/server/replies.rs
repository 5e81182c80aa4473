//! The table of deferred replies awaited, per server: to any thread, whether connection (or
//! HTTP/2 stream) `id` still waits for reply `seq` — one atomic load for an HTTP/1.1
//! connection's 8-byte slot — and how a reply reaches the worker that waits for it. What stops
//! the work for a reply no longer wanted (an async task's abort) is kept here too.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use reactor::{ConnId, Remote};

use crate::http::later::HttpMsg;
use crate::live::Command;

/// Slots per chunk of a worker's table (allocated when a connection of that range first
/// defers: 8 KiB).
const CHUNK: usize = 1024;

/// Per server: the remote that reaches the workers, each worker's table of waiting replies,
/// and the figures.
pub(crate) struct Replies {
    pub(crate) remote: OnceLock<Remote<Command>>,
    /// Per worker, per slab key: `seq << 32 | generation` of the reply the connection waits
    /// for, 0 when none, [`many`] for an HTTP/2 connection (whose streams may each wait for
    /// one: they are in `streams`). Written by the worker, read by anyone.
    slots: Box<[WorkerSlots]>,
    /// Per worker: the (slab key, seq) of each reply an HTTP/2 stream waits for.
    streams: Box<[StreamReplies]>,
    /// Replies dropped unanswered (answered 500).
    pub(crate) dropped: AtomicU64,
    /// Replies the server answered itself after [`Server::reply_timeout`](crate::http::Server::reply_timeout).
    pub(crate) timed_out: AtomicU64,
    /// Connections waiting for a reply now.
    pub(crate) waiting: AtomicU64,
    /// What stops the work for a reply once it is no longer wanted (an async task's abort),
    /// by worker, slab key and seq; `cancelling` counts them, so a server with none takes no
    /// lock when a reply closes.
    cancels: Mutex<HashMap<(u32, u32, NonZeroU32), Cancel>>,
    cancelling: AtomicUsize,
}

/// Stops the work that was to answer a reply no longer wanted.
pub(crate) type Cancel = Box<dyn FnOnce() + Send>;

impl Replies {
    /// Tables for `workers` workers of at most `max_connections` connections each.
    pub(crate) fn new(workers: usize, max_connections: usize) -> Arc<Replies> {
        let chunks = max_connections.div_ceil(CHUNK) + 1;
        Arc::new(Replies {
            remote: OnceLock::new(),
            slots: (0..workers)
                .map(|_| (0..chunks).map(|_| OnceLock::new()).collect())
                .collect(),
            streams: (0..workers).map(|_| Mutex::default()).collect(),
            dropped: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            cancels: Mutex::default(),
            cancelling: AtomicUsize::new(0),
        })
    }

    /// `cancel` runs when reply `seq` of `id` is no longer wanted — answered, timed out, its
    /// client gone, the server stopped — or at once if it is not wanted now.
    #[cfg(feature = "tokio")]
    fn on_unwanted(&self, id: ConnId, seq: NonZeroU32, cancel: Cancel) {
        lock(&self.cancels).insert((id.worker(), id.key(), seq), cancel);
        self.cancelling.fetch_add(1, Ordering::AcqRel);
        // Closed meanwhile (on another thread), after its close looked for this: run now.
        if !self.wanted(id, seq) {
            self.cancel(id, seq);
        }
    }

    /// Reply `seq` of `id` is no longer wanted: the work for it stops, if it was told how.
    fn cancel(&self, id: ConnId, seq: NonZeroU32) {
        if self.cancelling.load(Ordering::Acquire) == 0 {
            return;
        }
        let cancel = lock(&self.cancels).remove(&(id.worker(), id.key(), seq));
        if let Some(cancel) = cancel {
            self.cancelling.fetch_sub(1, Ordering::AcqRel);
            cancel();
        }
    }

    /// The slot of `id`, made if `make` and missing; `None` past the table (such a connection's
    /// reply is always taken as wanted).
    fn slot(&self, id: ConnId, make: bool) -> Option<&AtomicU64> {
        let worker = self.slots.get(id.worker() as usize)?;
        let key = id.key() as usize;
        let chunk = worker.get(key / CHUNK)?;
        let chunk = match chunk.get() {
            Some(c) => c,
            None if make => chunk.get_or_init(|| (0..CHUNK).map(|_| AtomicU64::new(0)).collect()),
            None => return None,
        };
        chunk.get(key % CHUNK)
    }

    /// The connection `id` waits for reply `seq` from now on (on its worker).
    pub(crate) fn open(&self, id: ConnId, seq: NonZeroU32) {
        if let Some(slot) = self.slot(id, true) {
            slot.store(pack(id, seq), Ordering::Release);
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection `id` no longer waits for reply `seq` (answered, timed out, or gone).
    pub(crate) fn close(&self, id: ConnId, seq: NonZeroU32) {
        if let Some(slot) = self.slot(id, false) {
            let _ = slot.compare_exchange(pack(id, seq), 0, Ordering::AcqRel, Ordering::Relaxed);
        }
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        self.cancel(id, seq);
    }

    /// A stream of the HTTP/2 connection `id` waits for reply `seq` from now on.
    pub(crate) fn open_stream(&self, id: ConnId, seq: NonZeroU32) {
        if let Some(slot) = self.slot(id, true) {
            slot.store(many(id), Ordering::Release);
        }
        if let Some(set) = self.streams.get(id.worker() as usize) {
            lock(set).insert((id.key(), seq));
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    /// The stream of `id` waiting for reply `seq` no longer does.
    pub(crate) fn close_stream(&self, id: ConnId, seq: NonZeroU32) {
        if let Some(set) = self.streams.get(id.worker() as usize) {
            lock(set).remove(&(id.key(), seq));
        }
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        self.cancel(id, seq);
    }

    /// The HTTP/2 connection `id` is gone (its streams' replies were closed one by one).
    pub(crate) fn forget_streams(&self, id: ConnId) {
        if let Some(slot) = self.slot(id, false) {
            let _ = slot.compare_exchange(many(id), 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// The reply `seq` of exchange `id` — a connection's (stream 0) or one of its HTTP/2
    /// streams' — is no longer waited for.
    pub(crate) fn close_of(&self, id: ConnId, seq: NonZeroU32) {
        match id.stream() {
            0 => self.close(id, seq),
            _ => self.close_stream(id.connection(), seq),
        }
    }

    /// The reply `seq` of `exchange` is no longer waited for.
    pub(crate) fn close_for(&self, exchange: ReplyTo, seq: NonZeroU32) {
        match exchange {
            ReplyTo::Conn(id) => self.close(id, seq),
            ReplyTo::Stream(id) => self.close_stream(id, seq),
            ReplyTo::Blocking => {}
        }
    }

    /// Whether connection `id` (or one of its streams) still waits for reply `seq`.
    pub(crate) fn wanted(&self, id: ConnId, seq: NonZeroU32) -> bool {
        let Some(slot) = self.slot(id, false) else {
            return true;
        };
        match slot.load(Ordering::Acquire) {
            v if v == pack(id, seq) => true,
            v if v == many(id) => self
                .streams
                .get(id.worker() as usize)
                .is_some_and(|set| lock(set).contains(&(id.key(), seq))),
            _ => false,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A set of keys: a panic while holding the lock leaves nothing half-changed.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The slot of an HTTP/2 connection: a seq no reply has (see [`next_seq`]).
fn many(id: ConnId) -> u64 {
    (u64::from(u32::MAX) << 32) | u64::from(id.generation())
}

/// One worker's replies awaited by HTTP/2 streams: (slab key, seq).
type StreamReplies = Mutex<HashSet<(u32, NonZeroU32)>>;

/// One worker's slots, in chunks made as connections of their range first defer.
type WorkerSlots = Box<[OnceLock<Box<[AtomicU64]>>]>;

fn pack(id: ConnId, seq: NonZeroU32) -> u64 {
    (u64::from(seq.get()) << 32) | u64::from(id.generation())
}

/// Where the exchange a worker is answering now sends a deferred reply.
#[derive(Clone, Copy)]
pub(crate) enum ReplyTo {
    /// A connection of a reactor worker.
    Conn(ConnId),
    /// A stream of an HTTP/2 connection of a reactor worker (several may wait at once).
    Stream(ConnId),
    /// `handle_conn` on this thread: it waits for the reply itself.
    Blocking,
}

/// A reply's place in its server's table, kept by what works on its answer (see
/// `Reply::unwanted`).
#[cfg(feature = "tokio")]
pub(crate) struct Unwanted {
    replies: Arc<Replies>,
    id: ConnId,
    seq: NonZeroU32,
}

#[cfg(feature = "tokio")]
impl Unwanted {
    pub(crate) fn new(replies: Arc<Replies>, id: ConnId, seq: NonZeroU32) -> Unwanted {
        Unwanted { replies, id, seq }
    }

    /// `cancel` runs once the reply is no longer wanted (at once if it is not now).
    pub(crate) fn then(self, cancel: Cancel) {
        self.replies.on_unwanted(self.id, self.seq, cancel);
    }
}

/// Hands `msg` to the worker of connection `id`; whether it was queued. Ahead of the room
/// deliveries queued before it (`Remote::send_ahead`): a publisher's reply does not wait for its
/// worker's fan-out to thousands. (Nothing else sent to an HTTP connection or stream must
/// precede a reply: the pieces of a streamed one keep their order, all sent ahead.)
pub(crate) fn deliver(replies: &Replies, id: ConnId, msg: HttpMsg) -> bool {
    replies
        .remote
        .get()
        .is_some_and(|remote| remote.send_ahead(id, Command::Http(msg)))
}
