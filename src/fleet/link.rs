//! A server's rooms joined to the fleet: what [`Rooms`] calls (publish to other instances,
//! a room's local membership began or ended), and the two threads behind it.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{envelope, names, publisher, subscriber, Counters, Fleet};
use crate::ws::{Message, Rooms};

/// A message for other instances: the channel and the envelope.
pub(crate) struct Outgoing {
    pub(crate) channel: Vec<u8>,
    pub(crate) envelope: Vec<u8>,
}

/// Rooms whose local membership began or ended since the subscriber last looked.
#[derive(Default)]
pub(crate) struct Changed(Mutex<HashSet<Arc<str>>>);

impl Changed {
    pub(crate) fn take(&self) -> HashSet<Arc<str>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What [`Rooms`] holds of the fleet. Its calls never wait on Redis.
pub(crate) struct RoomsLink {
    prefix: Arc<str>,
    instance: u64,
    queue: SyncSender<Outgoing>,
    changed: Arc<Changed>,
    counters: Arc<Counters>,
}

impl RoomsLink {
    /// Hands `msg` to the publisher thread for the other instances' members of `room`; drops
    /// it (counted) when the queue is full or the threads have stopped.
    pub(crate) fn publish(&self, room: &str, msg: &Message) {
        let out = Outgoing {
            channel: names::room_channel(&self.prefix, room),
            envelope: envelope::encode(self.instance, msg),
        };
        match self.queue.try_send(out) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                Counters::add(&self.counters.dropped, 1);
            }
        }
    }

    /// `room`'s first local member joined or its last left: the subscriber subscribes or
    /// unsubscribes (it reads the room's membership itself, so the last change wins).
    pub(crate) fn changed(&self, room: &Arc<str>) {
        let mut changed = self.changed.0.lock().unwrap_or_else(|e| e.into_inner());
        changed.insert(Arc::clone(room));
    }
}

/// The fleet threads of a running server; dropping it stops and joins them (each notices
/// within about 100 ms; a connection attempt or a reply in progress ends within 1 s).
pub(crate) struct Running {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Running {
    /// Stops the threads and waits for them, at most [`STOP_WAIT`]: each step of theirs is
    /// bounded (a connection attempt, a whole reply), so they end well within it; a thread
    /// still talking to Redis past it is left to end by itself, never waited on.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let until = std::time::Instant::now() + STOP_WAIT;
        for t in self.threads.drain(..) {
            while !t.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// Longest a stopping server waits for its fleet threads.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

impl Fleet {
    /// Starts the publisher and subscriber threads for `rooms`; the link to give `rooms`.
    pub(crate) fn serve_rooms(&self, rooms: &Rooms) -> io::Result<(RoomsLink, Running)> {
        // Before the threads allocate: see `reactor::share_one_arena`.
        reactor::share_one_arena();
        let (queue, outgoing) = sync_channel(self.queue);
        let changed = Arc::new(Changed::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut running = Running {
            stop: Arc::clone(&stop),
            threads: Vec::with_capacity(2),
        };
        let (fleet, halt) = (self.clone(), Arc::clone(&stop));
        running.threads.push(
            std::thread::Builder::new()
                .name("web-fleet-pub".into())
                .spawn(move || publisher::run(&fleet, &outgoing, &halt))?,
        );
        let (fleet, halt, watched, rooms) = (
            self.clone(),
            Arc::clone(&stop),
            Arc::clone(&changed),
            rooms.clone(),
        );
        running.threads.push(
            std::thread::Builder::new()
                .name("web-fleet-sub".into())
                .spawn(move || subscriber::run(&fleet, &rooms, &watched, &halt))?,
        );
        let link = RoomsLink {
            prefix: Arc::clone(&self.prefix),
            instance: self.instance,
            queue,
            changed,
            counters: self.counters(),
        };
        Ok((link, running))
    }
}
