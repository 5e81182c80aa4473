//! One worker: a thread with its own `mio::Poll`, slab of strands, timer wheel and scratch buffer.

use std::io;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::conn_id::{WAKER, listener_of, split_token};
use crate::flags::Flags;
use crate::remote::{AHEAD_EVERY, To, WorkerShared};
use crate::sends::{self, Done, Sends};
use crate::trim::{self, Trim};
use crate::wheel::{Clock, Link, Links, Wheel};
use crate::{Config, ConnId, Io, Remote, Service, Strand, Then, Wake};

type Msg<S> = <<S as Service>::Strand as Strand>::Msg;

/// A slab entry: the strand and what the reactor keeps beside it. Nothing here owns heap memory
/// besides what the strand itself holds.
pub(crate) struct Entry<T> {
    strand: T,
    stream: TcpStream,
    generation: u32,
    link: Link,
    flags: Flags,
    /// Liveness: [`HEARD`](crate::io::HEARD) and the count of silent sweeps (see
    /// [`Io::silent_sweeps`]).
    quiet: u8,
}

/// Entries a worker's batch vectors (messages, fan-out ids, strands to resume) keep between
/// turns; what a burst grew beyond it is freed once the burst has been handled, so a worker
/// after a crowd holds what it held before (a few KiB).
const KEEP_AFTER_BURST: usize = 256;

fn shrink_after_burst<T>(v: &mut Vec<T>) {
    if v.capacity() > KEEP_AFTER_BURST {
        *v = Vec::with_capacity(KEEP_AFTER_BURST / 4);
    }
}

/// Slab capacity (entries) above which an emptied slab is shrunk (a few KiB is kept for the
/// next connections; what a crowd grew goes back).
const SHRINK_ABOVE: usize = 64;

/// Size in bytes of the slab entry the reactor keeps per connection for strands of type `T`
/// (the strand plus 24 bytes: socket, generation, timer links and flags, before padding;
/// the slab adds its own tag).
///
/// ```
/// struct Tiny;
/// # impl reactor::Strand for Tiny {
/// #     type Msg = ();
/// #     fn resume(&mut self, _: &mut reactor::Io<'_, ()>, _: reactor::Wake) -> reactor::Then { reactor::Then::Close }
/// #     fn drain(&mut self, _: &mut reactor::Io<'_, ()>) -> reactor::Then { reactor::Then::Close }
/// #     fn message(&mut self, _: &mut reactor::Io<'_, ()>, _: ()) -> reactor::Then { reactor::Then::Close }
/// #     fn held_bytes(&self) -> usize { 0 }
/// # }
/// // 24 bytes in release builds; debug builds of mio add a registration check to every socket.
/// assert!(reactor::entry_size::<Tiny>() <= 40);
/// ```
pub fn entry_size<T: Strand>() -> usize {
    std::mem::size_of::<slab_entry::SlabEntry<T>>()
}

mod slab_entry {
    /// The slab's own entry, around ours: the same shape as `slab`'s (a vacant entry holds the
    /// next free key), so the same layout.
    #[allow(dead_code)]
    pub(super) enum SlabEntry<T> {
        Vacant(usize),
        Occupied(super::Entry<T>),
    }
}

impl<T> Links for Slab<Entry<T>> {
    fn link(&mut self, key: u32) -> &mut Link {
        // Invariant: a key is unlinked from the wheel before its entry leaves the slab.
        &mut self[key as usize].link
    }
}

pub(crate) struct Worker<S: Service> {
    index: u32,
    poll: Poll,
    /// One listening socket per address the server listens on (none once draining); a
    /// connection's strand is made knowing which accepted it.
    listeners: Vec<TcpListener>,
    service: S,
    slab: Slab<Entry<S::Strand>>,
    wheel: Wheel,
    clock: Clock,
    /// The last deadline converted to a tick, and its tick: strands parked in one turn mostly
    /// give the same deadline (the turn's `now` plus the same timeout), converted once.
    last_due: Option<(Instant, u32)>,
    scratch: Box<[u8]>,
    remote: Remote<Msg<S>>,
    config: Config,
    limit: usize,
    next_generation: u32,
    now: Instant,
    /// Accepting pauses until then after running out of descriptors.
    accept_paused_until: Option<Instant>,
    /// The batch limit was hit: accept again on the next turn.
    accept_more: bool,
    /// The connection limit was hit: accept again once a connection closes.
    at_limit: bool,
    draining: bool,
    drain_until: Option<Instant>,
    /// Strands to resume because readiness they want was already recorded: (key, generation).
    again: Vec<(u32, u32)>,
    again_spare: Vec<(u32, u32)>,
    expired: Vec<u32>,
    inbox_spare: Vec<(To, Msg<S>)>,
    /// What a fan-out took that was sent ahead (kept between uses).
    ahead_spare: Vec<(To, Msg<S>)>,
    /// Ids a worker message fans out to (kept between batches, shrunk after a burst).
    fan_ids: Vec<ConnId>,
    /// The streams of one connection a fan-out reaches, handed over together.
    fan_streams: Vec<u32>,
    /// The worker's io_uring, where it has one: shared frames sent in a pass through many
    /// connections are gathered there and handed to the kernel together.
    sends: Option<Sends>,
    /// In such a pass: [`Io::send_shared`] may gather.
    gathering: bool,
    /// What the kernel answered for gathered sends (kept between uses).
    sends_done: Vec<Done>,
    /// The message being delivered came alone in the worker's batch: nothing more reaches
    /// any connection this turn ([`Io::alone_in_turn`]).
    alone: bool,
    parked: usize,
    held: usize,
    /// When free memory goes back to the system.
    trim: Trim,
    accepted: u64,
    accept_errors: u64,
    out_of_descriptors: u64,
    dropped: u64,
    panics: u64,
}

/// How one listener's batch of accepts ended.
enum Batch {
    /// The listener has no connection waiting.
    Drained,
    /// The batch is done with more perhaps waiting: accept again next turn.
    Full,
    /// Accepting stops this turn (the connection limit, out of descriptors, no listener).
    Stop,
}

impl<S: Service> Worker<S> {
    pub(crate) fn new(
        index: usize,
        poll: Poll,
        listeners: Vec<TcpListener>,
        service: S,
        remote: Remote<Msg<S>>,
        config: Config,
    ) -> Worker<S> {
        let now = Instant::now();
        let clock = Clock::new(now);
        trim::share_one_arena();
        Worker {
            index: index as u32,
            poll,
            listeners,
            service,
            slab: Slab::new(),
            wheel: Wheel::new(clock.tick(now)),
            clock,
            last_due: None,
            scratch: vec![0; config.scratch_size].into_boxed_slice(),
            remote,
            limit: config.per_worker_limit(),
            config,
            next_generation: 0,
            now,
            accept_paused_until: None,
            accept_more: false,
            at_limit: false,
            draining: false,
            drain_until: None,
            again: Vec::new(),
            again_spare: Vec::new(),
            expired: Vec::new(),
            inbox_spare: Vec::new(),
            ahead_spare: Vec::new(),
            fan_ids: Vec::new(),
            fan_streams: Vec::new(),
            // Set up on the worker's own thread, in `run`.
            sends: None,
            gathering: false,
            sends_done: Vec::new(),
            alone: false,
            parked: 0,
            held: 0,
            trim: Trim::default(),
            accepted: 0,
            accept_errors: 0,
            out_of_descriptors: 0,
            dropped: 0,
            panics: 0,
        }
    }

    fn shared(&self) -> &WorkerShared<Msg<S>> {
        &self.remote.shared.workers[self.index as usize]
    }

    /// The loop: runs until shutdown has drained every strand (or the drain deadline passed).
    pub(crate) fn run(mut self) {
        let mut events = Events::with_capacity(self.config.events_capacity);
        // The ring belongs to the thread that sets it up (the kernel's work for it is queued
        // to that thread, interrupting its blocking calls): so it is made here, not by the
        // thread that starts the server.
        if self.config.io_uring {
            self.sends = Sends::start();
        }
        loop {
            let timeout = self.timeout();
            if let Err(e) = self.poll.poll(&mut events, timeout)
                && e.kind() != io::ErrorKind::Interrupted
            {
                // Never spin on a failing poll.
                std::thread::sleep(Duration::from_millis(10));
            }
            self.now = Instant::now();
            let mut listener_ready = false;
            let mut woken = false;
            for event in events.iter() {
                match event.token() {
                    WAKER => woken = true,
                    token if listener_of(token).is_some() => listener_ready = true,
                    token => self.ready(token, event),
                }
            }
            if woken {
                self.take_inbox();
            }
            if !self.draining && self.remote.shared.shutdown.load(SeqCst) {
                self.start_drain();
            }
            let retry_due = self.accept_paused_until.is_some_and(|t| self.now >= t);
            if listener_ready || self.accept_more || retry_due {
                self.accept();
            }
            self.expire_timers();
            self.resume_again();
            self.trim.end_of_turn(self.now, self.held);
            self.publish();
            if self.draining {
                if self.slab.is_empty() {
                    break;
                }
                if self.drain_until.is_some_and(|t| Instant::now() >= t) {
                    self.close_all();
                    break;
                }
            }
        }
        self.shared().running.store(false, SeqCst);
        self.close_all();
        // Messages that arrived too late are dropped.
        let late = std::mem::take(&mut *self.shared().inbox());
        self.dropped += late.len() as u64;
        self.publish();
    }

    /// How long the next poll may sleep.
    fn timeout(&self) -> Option<Duration> {
        if !self.again.is_empty() || self.accept_more {
            return Some(Duration::ZERO);
        }
        // The wheel's current tick is the one `self.now` falls in (timers expire every turn).
        let mut at: Option<Instant> = self
            .wheel
            .next_in()
            .map(|ticks| self.now + self.clock.until(self.now, ticks));
        for t in [self.accept_paused_until, self.drain_until, self.trim.due()]
            .into_iter()
            .flatten()
        {
            at = Some(at.map_or(t, |a| a.min(t)));
        }
        at.map(|t| t.saturating_duration_since(Instant::now()))
    }

    /// A readiness event for a connection.
    fn ready(&mut self, token: Token, event: &mio::event::Event) {
        let (key, generation) = split_token(token);
        let Some(entry) = self.slab.get_mut(key as usize) else {
            return;
        };
        if entry.generation != generation {
            return; // stale: the key belongs to a newer connection now
        }
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            entry.flags.set(Flags::READ_READY);
        }
        if event.is_read_closed() || event.is_error() {
            entry.flags.set(Flags::READ_CLOSED);
        }
        if event.is_writable() || event.is_write_closed() || event.is_error() {
            entry.flags.set(Flags::WRITE_READY);
        }
        if let Some(wake) = entry.flags.wanted() {
            self.call(key, |strand, io| strand.resume(io, wake));
        }
    }

    /// Resumes strands whose wanted readiness was already recorded when they parked.
    fn resume_again(&mut self) {
        if self.again.is_empty() {
            return;
        }
        let mut batch = std::mem::replace(&mut self.again, std::mem::take(&mut self.again_spare));
        // A fan-out's recipients write here: a reply sent ahead meanwhile does not wait for
        // them all. Their shared frames go to the kernel together where the worker has a ring.
        self.gathering = self.sends.is_some() && batch.len() >= sends::GATHER_FROM;
        let mut calls = 0;
        for &(key, generation) in &batch {
            self.one_more_call(&mut calls);
            self.flush_sends_if_full();
            let Some(entry) = self.slab.get_mut(key as usize) else {
                continue;
            };
            if entry.generation != generation {
                continue;
            }
            entry.flags.clear(Flags::AGAIN);
            if let Some(wake) = entry.flags.wanted() {
                self.call(key, |strand, io| strand.resume(io, wake));
            }
        }
        self.gathering = false;
        self.flush_sends();
        batch.clear();
        shrink_after_burst(&mut batch);
        self.again_spare = batch;
    }

    /// In a pass that gathers sends: hands them over once the ring holds a submission's worth,
    /// so that the next connection's send finds room.
    fn flush_sends_if_full(&mut self) {
        if self.gathering && self.sends.as_ref().is_some_and(Sends::is_full) {
            self.flush_sends();
        }
    }

    /// Hands the gathered sends to the kernel and settles what it answered: each connection
    /// may write again (and is resumed if it waits to); what a socket did not take goes back
    /// to its strand ([`Strand::unsent`](crate::Strand::unsent)).
    fn flush_sends(&mut self) {
        let Some(sends) = self.sends.as_mut() else {
            return;
        };
        sends.submit();
        let mut done = std::mem::take(&mut self.sends_done);
        sends.take(&mut done);
        if sends.broken() {
            self.sends = None;
        }
        // Every connection is free to write again before any strand is called.
        for d in &done {
            let Some(entry) = self.slab.get_mut(d.id.key() as usize) else {
                continue;
            };
            if entry.generation != d.id.generation() {
                continue;
            }
            entry.flags.clear(Flags::IN_FLIGHT);
            if d.whole() {
                // Output queued behind the send waits for this resume.
                if entry.flags.wanted().is_some() && !entry.flags.has(Flags::AGAIN) {
                    entry.flags.set(Flags::AGAIN);
                    self.again.push((d.id.key(), d.id.generation()));
                }
            } else if d.short() {
                entry.flags.clear(Flags::WRITE_READY);
            }
        }
        for d in done.drain(..) {
            if d.whole() || !self.is_current(d.id) {
                continue;
            }
            let from = d.rest_from();
            let frame = d.frame;
            self.call(d.id.key(), |strand, io| strand.unsent(io, frame, from));
        }
        shrink_after_burst(&mut done);
        self.sends_done = done;
    }

    fn expire_timers(&mut self) {
        let tick = self.clock.tick(self.now);
        let mut expired = std::mem::take(&mut self.expired);
        self.wheel.expire(&mut self.slab, tick, &mut expired);
        for &key in &expired {
            self.call(key, |strand, io| strand.resume(io, Wake::Timeout));
        }
        expired.clear();
        shrink_after_burst(&mut expired);
        self.expired = expired;
    }

    /// Delivers the messages other threads queued. What a burst grew is given back afterwards:
    /// the batch vector and the fan-out list keep at most [`KEEP_AFTER_BURST`] entries.
    fn take_inbox(&mut self) {
        let mut batch = std::mem::take(&mut self.inbox_spare);
        // (A message sent ahead as the flag is read may be taken in the order it came.)
        let ahead = self.shared().ahead.swap(false, Acquire);
        std::mem::swap(&mut *self.shared().inbox(), &mut batch);
        if ahead {
            // What was sent ahead first, in its order; then the rest, in theirs.
            self.deliver_ahead(&mut batch);
        }
        self.alone = batch.len() == 1;
        for (to, msg) in batch.drain(..) {
            match to {
                To::Conn(id) | To::Ahead(id) => self.deliver(id, msg),
                To::Worker => {
                    let mut ids = std::mem::take(&mut self.fan_ids);
                    let service = &mut self.service;
                    if catch_unwind(AssertUnwindSafe(|| service.fan_out(&msg, &mut ids))).is_err() {
                        self.panics += 1;
                    }
                    // Each recipient may ask to be resumed at the end of the turn (to write what
                    // it was handed): one allocation for the list, not one per doubling.
                    self.again.reserve(ids.len());
                    if ids.iter().any(|id| id.stream() != 0) {
                        // The streams of one connection side by side, to be handed over in
                        // one call.
                        ids.sort_unstable_by_key(|id| (id.key(), id.generation(), id.stream()));
                    }
                    // Members that write at once (the batch's one message) hand their shared
                    // frames to the kernel together where the worker has a ring.
                    self.gathering =
                        self.alone && self.sends.is_some() && ids.len() >= sends::GATHER_FROM;
                    let mut calls = 0;
                    for group in ids.chunk_by(|a, b| a.connection() == b.connection()) {
                        self.flush_sends_if_full();
                        if group.len() > 1 && group.iter().all(|id| id.stream() != 0) {
                            self.deliver_streams(group, msg.clone());
                            self.one_more_call(&mut calls);
                        } else {
                            for &id in group {
                                self.deliver(id, msg.clone());
                                self.one_more_call(&mut calls);
                            }
                        }
                    }
                    self.gathering = false;
                    self.flush_sends();
                    ids.clear();
                    shrink_after_burst(&mut ids);
                    self.fan_ids = ids;
                }
                To::All => {
                    // Walked key by key, no list of recipients made: a sweep over every
                    // connection (a heartbeat, a liveness sweep) allocates nothing. What
                    // they send of shared frames (pings) goes to the kernel together where
                    // the worker has a ring.
                    self.gathering = self.sends.is_some();
                    let mut calls = 0;
                    for key in 0..self.slab.capacity() {
                        let Some(entry) = self.slab.get(key) else {
                            continue;
                        };
                        let strand = &entry.strand;
                        let wants = catch_unwind(AssertUnwindSafe(|| strand.wants(&msg)));
                        if wants.unwrap_or(false) {
                            let id = ConnId::new(self.index, key as u32, entry.generation);
                            self.deliver(id, msg.clone());
                            self.one_more_call(&mut calls);
                            self.flush_sends_if_full();
                        }
                    }
                    self.gathering = false;
                    self.flush_sends();
                }
            }
        }
        self.alone = false;
        shrink_after_burst(&mut batch);
        self.inbox_spare = batch;
    }

    /// Counts a strand call of a long walk (a fan-out, a sweep, the resumes of a turn); every
    /// [`AHEAD_EVERY`] calls, delivers what was sent ahead meanwhile and yields the core (one
    /// `sched_yield`, which returns at once when no other thread waits for it): with every
    /// core delivering, the thread that is to answer — an async runtime's — runs between two
    /// stretches, not after the whole walk.
    fn one_more_call(&mut self, calls: &mut usize) {
        *calls += 1;
        if calls.is_multiple_of(AHEAD_EVERY) {
            self.take_ahead();
            std::thread::yield_now();
        }
    }

    /// Delivers what was sent ahead since the inbox was last taken (in the middle of a long
    /// fan-out): a reply does not wait for thousands of deliveries to others. One atomic load
    /// when there is none.
    fn take_ahead(&mut self) {
        if !self.shared().ahead.load(Acquire) {
            return;
        }
        let mut ahead = std::mem::take(&mut self.ahead_spare);
        // (What was sent ahead did not come alone in the batch being delivered.)
        let alone = std::mem::replace(&mut self.alone, false);
        {
            let shared = self.shared();
            shared.ahead.store(false, Relaxed);
            let mut inbox = shared.inbox();
            ahead.extend(inbox.extract_if(.., |(to, _)| matches!(to, To::Ahead(_))));
        }
        self.deliver_ahead(&mut ahead);
        self.alone = alone;
        self.ahead_spare = ahead;
    }

    /// Takes what was sent ahead out of `batch`, in its order, and delivers it.
    fn deliver_ahead(&mut self, batch: &mut Vec<(To, Msg<S>)>) {
        for (to, msg) in batch.extract_if(.., |(to, _)| matches!(to, To::Ahead(_))) {
            if let To::Ahead(id) = to {
                self.deliver(id, msg);
            }
        }
    }

    /// Hands `msg` to connection `id` if it is still the one that id named.
    fn deliver(&mut self, id: ConnId, msg: Msg<S>) {
        if self.is_current(id) {
            let alone = self.alone;
            self.call(id.key(), |strand, io| {
                io.addressed = id.stream();
                io.alone = alone;
                strand.message(io, msg)
            });
        } else {
            self.dropped += 1;
        }
    }

    /// Whether `id` names a connection of this worker that is still the one it named.
    fn is_current(&self, id: ConnId) -> bool {
        id.worker() == self.index
            && self
                .slab
                .get(id.key() as usize)
                .is_some_and(|e| e.generation == id.generation())
    }

    /// Hands `msg` to several streams of one connection (`ids`, all of it, sorted) at once.
    fn deliver_streams(&mut self, ids: &[ConnId], msg: Msg<S>) {
        let id = ids[0];
        if !self.is_current(id) {
            self.dropped += ids.len() as u64;
            return;
        }
        let mut streams = std::mem::take(&mut self.fan_streams);
        streams.clear();
        streams.extend(ids.iter().map(|id| id.stream()));
        self.call(id.key(), |strand, io| {
            strand.message_streams(io, &streams, msg)
        });
        shrink_after_burst(&mut streams);
        self.fan_streams = streams;
    }

    /// Accepts until the backlog is empty, the batch or connection limit is reached, or
    /// descriptors run out. Accept errors never stop the worker and never make it spin.
    fn accept(&mut self) {
        self.accept_more = false;
        if self.draining {
            return;
        }
        if let Some(until) = self.accept_paused_until {
            if self.now < until {
                return;
            }
            self.accept_paused_until = None;
        }
        // Each listener up to a batch: one address flooded does not keep the others waiting.
        // A listener that had no edge answers WouldBlock at once.
        let mut more = false;
        for listener in 0..self.listeners.len() {
            match self.accept_batch(listener) {
                Batch::Drained => {}
                Batch::Full => more = true,
                Batch::Stop => return,
            }
        }
        self.accept_more = more;
    }

    /// Accepts from listener `i` until it has nothing more or the batch is done.
    fn accept_batch(&mut self, i: usize) -> Batch {
        for _ in 0..self.config.accept_batch {
            if self.slab.len() >= self.limit {
                // New connections wait in the backlog until one of ours closes.
                self.at_limit = true;
                return Batch::Stop;
            }
            let Some(listener) = self.listeners.get(i) else {
                return Batch::Stop;
            };
            match listener.accept() {
                Ok((stream, peer)) => self.open(i, stream, peer),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Batch::Drained,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.accept_errors += 1;
                    if !skippable(&e) {
                        // EMFILE, ENFILE, ENOBUFS, ENOMEM or unknown: pause, retry on a timer.
                        self.out_of_descriptors += 1;
                        self.accept_paused_until = Some(self.now + self.config.accept_retry);
                        return Batch::Stop;
                    }
                }
            }
        }
        Batch::Full
    }

    fn open(&mut self, listener: usize, stream: TcpStream, peer: SocketAddr) {
        let mut stream = stream;
        if self.config.nodelay {
            let _ = stream.set_nodelay(true);
        }
        let key = self.slab.vacant_key() as u32;
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        let id = ConnId::new(self.index, key, generation);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if self
            .poll
            .registry()
            .register(&mut stream, id.token(), interest)
            .is_err()
        {
            return; // dropping the stream closes it
        }
        let service = &mut self.service;
        let opened = catch_unwind(AssertUnwindSafe(|| {
            service.open_on(listener, &stream, peer, id)
        }));
        let strand = match opened {
            Ok(strand) => strand,
            Err(_) => {
                self.panics += 1;
                return;
            }
        };
        let capacity = self.slab.capacity();
        self.slab.insert(Entry {
            strand,
            stream,
            generation,
            link: Link::new(),
            // Nothing is known yet: let the first read find out.
            flags: Flags::READ_READY | Flags::WRITE_READY,
            quiet: 0,
        });
        if self.slab.capacity() != capacity {
            self.trim
                .slab_grew(capacity * std::mem::size_of::<slab_entry::SlabEntry<S::Strand>>());
        }
        self.accepted += 1;
        self.call(key, |strand, io| strand.resume(io, Wake::Start));
    }

    /// Runs one strand method under `catch_unwind` and applies the `Then` it returns.
    fn call<F>(&mut self, key: u32, f: F)
    where
        F: FnOnce(&mut S::Strand, &mut Io<'_, Msg<S>>) -> Then,
    {
        let Some(mut entry) = self.slab.get_mut(key as usize) else {
            return;
        };
        if entry.flags.has(Flags::IN_FLIGHT) {
            // Its gathered send is answered before the strand runs again (which clears the
            // flag; cleared here too, in case the ring went away with it).
            self.flush_sends();
            entry = match self.slab.get_mut(key as usize) {
                Some(entry) => entry,
                None => return,
            };
            entry.flags.clear(Flags::IN_FLIGHT);
        }
        let before = entry.strand.held_bytes();
        let id = ConnId::new(self.index, key, entry.generation);
        let result = {
            let mut io = Io {
                stream: &mut entry.stream,
                scratch: &mut self.scratch,
                ready: &mut entry.flags,
                quiet: &mut entry.quiet,
                now: self.now,
                id,
                addressed: 0,
                remote: &self.remote,
                timer: &entry.link,
                clock: &self.clock,
                layer: None,
                alone: false,
                sends: match self.gathering {
                    true => self.sends.as_mut(),
                    false => None,
                },
            };
            let strand = &mut entry.strand;
            catch_unwind(AssertUnwindSafe(|| f(strand, &mut io)))
        };
        match result {
            Ok(next) => self.apply(key, next, before),
            Err(_) => {
                self.panics += 1;
                self.close(key, before);
            }
        }
    }

    fn apply(&mut self, key: u32, next: Then, before: usize) {
        match next {
            Then::Park {
                read,
                write,
                deadline,
            } => {
                let entry = &mut self.slab[key as usize];
                let after = entry.strand.held_bytes();
                self.held = self.held.saturating_sub(before).saturating_add(after);
                self.trim.held(self.held);
                let was_parked = entry.flags.has(Flags::PARKED);
                let mut flags = entry.flags.only(Flags::TOLD);
                if read {
                    flags.set(Flags::WANT_READ);
                }
                if write {
                    flags.set(Flags::WANT_WRITE);
                } else {
                    flags.set(Flags::PARKED);
                }
                entry.flags = flags;
                match (was_parked, !write) {
                    (false, true) => self.parked += 1,
                    (true, false) => self.parked -= 1,
                    _ => {}
                }
                let generation = entry.generation;
                if flags.wanted().is_some() && !flags.has(Flags::AGAIN) {
                    entry.flags.set(Flags::AGAIN);
                    self.again.push((key, generation));
                }
                match deadline {
                    None => self.wheel.remove(&mut self.slab, key),
                    Some(t) => {
                        let due = match self.last_due {
                            Some((last, due)) if last == t => due,
                            _ => {
                                let due = self.clock.due_tick(t);
                                self.last_due = Some((t, due));
                                due
                            }
                        };
                        self.wheel.set(&mut self.slab, key, due);
                    }
                }
            }
            Then::Close => self.close(key, before),
            Then::Release(handover) => {
                if let Some(mut stream) = self.remove(key, before) {
                    let _ = self.poll.registry().deregister(&mut stream);
                    let stream = std::net::TcpStream::from(stream);
                    // A stream that cannot be made blocking is closed instead of handed over.
                    if stream.set_nonblocking(false).is_ok()
                        && catch_unwind(AssertUnwindSafe(|| handover(stream))).is_err()
                    {
                        self.panics += 1;
                    }
                }
            }
        }
    }

    fn close(&mut self, key: u32, before: usize) {
        // Closing the descriptor removes it from the poll: no deregister call needed.
        drop(self.remove(key, before));
    }

    /// Takes an entry out of the slab, its timer and counters; drops the strand and returns
    /// the socket.
    fn remove(&mut self, key: u32, before: usize) -> Option<TcpStream> {
        let entry = self.slab.get(key as usize)?;
        if entry.flags.has(Flags::IN_FLIGHT)
            && let Some(sends) = self.sends.as_mut()
        {
            // A gathered send names the socket by its descriptor: it goes to the kernel before
            // the descriptor closes (and may be reused). What it answers is settled later, for
            // a connection gone by then.
            sends.submit();
        }
        self.wheel.remove(&mut self.slab, key);
        let Entry {
            mut strand,
            stream,
            flags,
            generation,
            ..
        } = self.slab.remove(key as usize);
        if flags.has(Flags::PARKED) {
            self.parked -= 1;
        }
        let held_now = strand.held_bytes();
        self.trim.held(self.held.saturating_sub(before) + held_now);
        self.held = self.held.saturating_sub(before);
        let id = ConnId::new(self.index, key, generation);
        if catch_unwind(AssertUnwindSafe(move || {
            strand.closed(id);
            drop(strand)
        }))
        .is_err()
        {
            self.panics += 1;
        }
        if self.slab.is_empty() {
            // The last connection closed: what busy times kept goes back.
            let service = &mut self.service;
            if catch_unwind(AssertUnwindSafe(|| service.idle())).is_err() {
                self.panics += 1;
            }
            if self.slab.capacity() > SHRINK_ABOVE {
                self.slab.shrink_to_fit();
            }
            // What was freed goes back to the system too, at the end of this turn (at most once
            // per TRIM_INTERVAL: a client connecting and leaving again and again costs one trim
            // a second).
            self.trim.last_closed();
        }
        if self.at_limit {
            self.at_limit = false;
            self.accept_more = true;
        }
        Some(stream)
    }

    /// Stops accepting and asks every strand to drain.
    fn start_drain(&mut self) {
        self.draining = true;
        self.drain_until = Some(self.now + self.config.drain_deadline);
        self.accept_more = false;
        self.accept_paused_until = None;
        for mut listener in std::mem::take(&mut self.listeners) {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        // Shutdown is the one place that visits every connection.
        for key in 0..self.slab.capacity() {
            if self.slab.contains(key) {
                self.call(key as u32, |strand, io| strand.drain(io));
            }
        }
    }

    fn close_all(&mut self) {
        for key in 0..self.slab.capacity() {
            if let Some(entry) = self.slab.get(key) {
                let before = entry.strand.held_bytes();
                self.close(key as u32, before);
            }
        }
    }

    fn publish(&self) {
        let c = &self.shared().counters;
        c.open.store(self.slab.len(), Relaxed);
        c.parked.store(self.parked, Relaxed);
        c.held_bytes.store(self.held, Relaxed);
        c.accepted.store(self.accepted, Relaxed);
        c.accept_errors.store(self.accept_errors, Relaxed);
        c.out_of_descriptors.store(self.out_of_descriptors, Relaxed);
        c.dropped_messages.store(self.dropped, Relaxed);
        c.panics.store(self.panics, Relaxed);
        if let Some(sends) = &self.sends {
            let (submissions, sent) = sends.figures();
            c.send_submissions.store(submissions, Relaxed);
            c.gathered_sends.store(sent, Relaxed);
        }
        c.io_uring.store(self.sends.is_some(), Relaxed);
    }
}

/// Accept errors that concern one connection only: skip it and go on accepting.
fn skippable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNABORTED | libc::EPROTO | libc::ECONNRESET | libc::EPERM | libc::ETIMEDOUT)
    ) || e.kind() == io::ErrorKind::ConnectionAborted
}
