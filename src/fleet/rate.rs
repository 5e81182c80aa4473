//! Rate-limit counts kept in Redis, shared by every instance: one counter per (caller,
//! bucket, wall-clock second), `INCR`ed and given a 2 s expiry in one `MULTI … EXEC`
//! transaction, so concurrent instances never lose a count and old seconds go away by
//! themselves.
//!
//! A worker hands its count to the fleet's **counter thread** and waits for the answer at
//! most [`Fleet::timeout`](super::Fleet::timeout). The thread sends what is waiting in one
//! pipeline (one round trip for a batch of requests from all workers). Where Redis cannot
//! answer in time — unreachable, the queue full, a round trip already longer than the
//! timeout — the worker does not wait (or stops waiting) and the local count decides.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::names::{rate_key, Bucket};
use super::{Counters, Fleet};

/// Counts that may wait for the counter thread.
const ASKS: usize = 1024;
/// Most counts sent in one round trip.
const BATCH: usize = 128;
/// Seconds a counter lives: its own second, and one more for clocks slightly apart.
const EXPIRY: u64 = 2;

/// One count: the key, the allowance, and where the answer goes.
struct Ask {
    key: Vec<u8>,
    allowance: u32,
    reply: SyncSender<bool>,
}

/// What the workers see of the counter thread.
struct State {
    /// Connected to Redis.
    up: AtomicBool,
    /// Milliseconds after `base` (plus one) when the round trip in progress began; 0: none.
    busy_since: AtomicU64,
    base: Instant,
}

impl State {
    fn millis(&self) -> u64 {
        self.base.elapsed().as_millis() as u64 + 1
    }
}

/// A rate limiter's way to the shared counts. The counter thread ends when this is dropped.
pub(crate) struct SharedCount {
    asks: SyncSender<Ask>,
    state: Arc<State>,
    prefix: Arc<str>,
    timeout: Duration,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for SharedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCount")
            .field("up", &self.state.up.load(Ordering::Relaxed))
            .finish()
    }
}

impl SharedCount {
    /// Starts the counter thread of one rate limiter.
    pub(crate) fn start(fleet: &Fleet) -> std::io::Result<SharedCount> {
        let (asks, incoming) = sync_channel(ASKS);
        let state = Arc::new(State {
            up: AtomicBool::new(false),
            busy_since: AtomicU64::new(0),
            base: Instant::now(),
        });
        let (thread_fleet, thread_state) = (fleet.clone(), Arc::clone(&state));
        std::thread::Builder::new()
            .name("web-fleet-rate".into())
            .spawn(move || run(&thread_fleet, &incoming, &thread_state))?;
        Ok(SharedCount {
            asks,
            state,
            prefix: Arc::clone(&fleet.prefix),
            timeout: fleet.timeout,
            counters: fleet.counters(),
        })
    }

    /// Counts one request of `caller` in `bucket` in `second` across the fleet: whether it is
    /// within `allowance`; `None` when Redis did not answer in time (the caller decides on its
    /// local count; counted).
    pub(crate) fn admit(
        &self,
        caller: &str,
        bucket: Bucket,
        allowance: u32,
        second: u64,
    ) -> Option<bool> {
        let answer = self.ask(caller, bucket, allowance, second);
        if answer.is_none() {
            Counters::add(&self.counters.local_decisions, 1);
        }
        answer
    }

    fn ask(&self, caller: &str, bucket: Bucket, allowance: u32, second: u64) -> Option<bool> {
        if !self.state.up.load(Ordering::Acquire) {
            return None;
        }
        let since = self.state.busy_since.load(Ordering::Acquire);
        let timeout = self.timeout.as_millis() as u64;
        if since != 0 && self.state.millis().saturating_sub(since) > timeout {
            // Redis is slow: the round trip in progress already took longer than we would wait.
            return None;
        }
        let (reply, answer) = sync_channel(1);
        let ask = Ask {
            key: rate_key(&self.prefix, second, bucket, caller),
            allowance,
            reply,
        };
        if self.asks.try_send(ask).is_err() {
            Counters::add(&self.counters.errors, 1);
            return None;
        }
        match answer.recv_timeout(self.timeout) {
            Ok(admitted) => Some(admitted),
            Err(RecvTimeoutError::Timeout) => {
                Counters::add(&self.counters.errors, 1);
                None
            }
            // The round trip failed (counted by the thread).
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }
}

fn run(fleet: &Fleet, incoming: &Receiver<Ask>, state: &State) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    // Asks arriving during a backoff (sent before the workers saw `up` fall) are dropped:
    // their workers decide locally at once. The thread ends when its limiter is dropped.
    let wait = |d: Duration| {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            if let Err(RecvTimeoutError::Disconnected) = incoming.recv_timeout(left) {
                return false;
            }
        }
    };
    loop {
        let Some(mut con) = fleet.connect_after(&mut failures, 2, wait) else {
            return;
        };
        state.up.store(true, Ordering::Release);
        let mut batch: Vec<Ask> = Vec::with_capacity(16);
        loop {
            match incoming.recv() {
                Ok(first) => batch.push(first),
                Err(_) => return,
            }
            while batch.len() < BATCH {
                match incoming.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            for ask in &batch {
                pipe.cmd("INCR").arg(&ask.key);
                pipe.cmd("EXPIRE").arg(&ask.key).arg(EXPIRY).ignore();
            }
            state.busy_since.store(state.millis(), Ordering::Release);
            let counts: redis::RedisResult<Vec<i64>> = pipe.query(&mut con);
            state.busy_since.store(0, Ordering::Release);
            match counts {
                Ok(counts) if counts.len() == batch.len() => {
                    for (ask, count) in batch.drain(..).zip(counts) {
                        let _ = ask.reply.try_send(count <= i64::from(ask.allowance));
                    }
                }
                _ => {
                    // Dropping the batch tells its workers at once.
                    batch.clear();
                    state.up.store(false, Ordering::Release);
                    Counters::add(&counters.errors, 1);
                    failures = 1;
                    break;
                }
            }
        }
    }
}
