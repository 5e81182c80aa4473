//! Several instances of one server behaving as one, through Redis (`--features redis`): rooms
//! whose members sit on different instances, and rate limits counted across all of them.
//!
//! Make a [`Fleet`] with the Redis URL, give it to the server ([`Server::fleet`]) for rooms
//! and to the rate limiter ([`RateLimit::fleet`]) for shared counts:
//!
//! ```no_run
//! use web::fleet::{Fleet, LimitAcrossFleet};
//! use web::http::{text_response, wrap, RateLimit, Server};
//! let fleet = Fleet::new("redis://127.0.0.1:6379/")?;
//! let server = Server::bind("127.0.0.1:8080")?.fleet(&fleet);
//! let limit = RateLimit::new(5, 100, 1).fleet(&fleet).layer();
//! server.run(wrap(vec![limit], |_req| text_response(200, "one of many")))?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! **Rooms.** [`Rooms::publish`](crate::ws::Rooms::publish) delivers to this instance's
//! members at once, as without a fleet, and hands the message to a **publisher thread** (a
//! bounded queue, [`Fleet::queue`]) that `PUBLISH`es it on the room's channel
//! (`{prefix:room}:room`) in an envelope naming this instance. A **subscriber thread**
//! holds one subscription per room that has members here (`SUBSCRIBE` when the first local
//! member joins, `UNSUBSCRIBE` when the last leaves) and hands what other instances published
//! to the workers' fan-out; it drops its own instance's echo. So every member gets each
//! message exactly once, in the order each publisher published. A worker never waits on
//! Redis: publishing is a `try_send` into the queue, and a full queue drops the message for
//! other instances (counted in [`ServerStats::fleet_dropped`](crate::http::ServerStats)).
//!
//! **Posts: one order per room.** A message posted with
//! [`Rooms::post`](crate::ws::Rooms::post) gets its id from Redis and its place in the room's
//! one order there (two round trips of the publisher thread; a script publishes a room's posts
//! in id order and appends them to its history list), and every instance — the poster
//! included — delivers it when its subscription receives it: the same messages in the same
//! order everywhere, with ids that increase in it, so resuming after an id on any instance
//! neither repeats nor skips one. What that costs a post, and what happens while Redis is
//! away (posts reach this instance's members alone, with ids from its clock below every later
//! one), is in `docs/GUIDE.md`. A member joining a room its instance does not follow yet reads
//! the room's list first, and the subscription catches up on what was posted between the two
//! (see `web::ws::History`). The publisher thread also writes this instance's members per room
//! every [`BEAT`], expiring after [`EXPIRY`];
//! [`Rooms::members_everywhere`](crate::ws::Rooms::members_everywhere) adds them as a **reader
//! thread** last read them (a cache refreshed once a beat). That thread does every read the
//! rooms want — a joining room's history, a count — so **no worker waits on Redis** for a
//! join or a count: the join completes, its history following when Redis answers. Each read
//! is bounded by [`Fleet::timeout`]; after one fails, reads answer from this instance's own
//! figures for 1 s without trying (counted in [`FleetStats::local_reads`]). A long-poll looks
//! under [`Rooms::follow_then`](crate::ws::Rooms::follow_then), which has the reader fill the
//! room's copy first; only [`Rooms::since`](crate::ws::Rooms::since) called on a room this
//! instance does not follow reads on its caller's thread, bounded the same way and outside
//! the history's lock.
//!
//! **Rate limits.** See [`RateLimit::fleet`]: a worker decides at once on this instance's
//! count and what the others had counted as last heard, and never waits on Redis; the
//! limiter's counter thread reports what was admitted (`INCRBY`, pipelined) and gives Redis
//! [`Fleet::timeout`] (50 ms by default) for each answer, past which it counts Redis as down
//! (the local count decides) until it has reconnected.
//!
//! **A broken or hostile Redis** cannot make an instance hold memory or a thread: every reply
//! is framed before it is decoded and must arrive whole within a time limit and 16 MiB, a
//! length or count past the limits fails before anything is allocated for it, and the
//! connection is then dropped and made again (counted).
//!
//! **When Redis is unreachable or slow** each instance goes on serving its own clients: local
//! room delivery continues, messages for other instances are dropped (not queued, so none
//! arrives late), histories and member counts are this instance's own, rate limits fall back to this instance's own count (a caller spread over
//! `n` instances may then get up to `n` times its allowance), and every failure is counted in
//! [`ServerStats`](crate::http::ServerStats). Each thread reconnects with a backoff doubling
//! from 100 ms to 2 s; once Redis is back, rooms cross instances again within about 2 s.
//! Nothing panics.
//!
//! **On a Redis Cluster** ([`Fleet::cluster`], or a `redis+cluster://` URL; Redis 7 or later)
//! every thread sends each command to the master of its key's slot, as the cluster's map says
//! (read from any node it knows, every node the map names remembered), following `MOVED`, `ASK`
//! and `TRYAGAIN`. A room's keys and its channel carry the room in a hash tag, so its scripts
//! and its one order live on one master; pub/sub is sharded (`SPUBLISH`, `SSUBSCRIBE`: one
//! subscribing connection per master needed). A master's failover is, for the fleet, Redis away
//! for the rooms of its slots until the replica is promoted; a slot's migration is followed
//! without a post Redis placed being lost. See `docs/GUIDE.md` ("On a Redis Cluster").
//!
//! [`Server::fleet`]: crate::http::Server::fleet
//! [`RateLimit::fleet`]: LimitAcrossFleet::fleet

mod backoff;
mod bell;
mod cluster;
mod counters;
mod envelope;
mod history;
mod link;
mod listener;
mod names;
mod presence;
mod publisher;
pub(crate) mod rate;
mod reader;
mod reads;
mod resp;
mod servers;
mod subscriber;

use std::hash::BuildHasher;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub(crate) use counters::Counters;
pub use counters::FleetStats;
pub(crate) use link::Running;
pub use presence::{BEAT, EXPIRY};
pub use rate::LimitAcrossFleet;

/// Default time the rate limit's counter thread gives Redis for the answer to one batch of
/// counts, and a worker's read of a room's history or members is given.
pub const TIMEOUT: Duration = Duration::from_millis(50);

/// Default room messages waiting for the publisher thread; past it they are dropped.
pub const QUEUE: usize = 4096;

/// Default prefix of every channel and key the fleet uses in Redis.
pub const PREFIX: &str = "web";

/// Longest wait for a connection to Redis, and for a whole reply on the fleet's own threads
/// (a worker never waits on Redis).
const IO_TIMEOUT: Duration = Duration::from_secs(1);

/// One instance's way into a fleet: the Redis server the instances share, and the settings.
/// Cheap to clone; clones are the same instance (one id, one set of figures).
///
/// Making it connects to nothing: the threads that talk to Redis start with the server
/// ([`Server::fleet`](crate::http::Server::fleet)) and with the rate limiter
/// ([`LimitAcrossFleet::fleet`]), and keep trying while Redis is
/// unreachable.
///
/// ```
/// use std::time::Duration;
/// let fleet = web::fleet::Fleet::new("redis://127.0.0.1:6379/")?
///     .timeout(Duration::from_millis(20))
///     .queue(1024)
///     .prefix("chat");
/// assert_eq!(fleet.stats().errors, 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Fleet {
    servers: Arc<servers::Servers>,
    prefix: Arc<str>,
    timeout: Duration,
    queue: usize,
    instance: u64,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("redis", &self.servers.describe())
            .field("prefix", &self.prefix)
            .field("instance", &format_args!("{:016x}", self.instance))
            .finish()
    }
}

impl Fleet {
    /// A fleet on the Redis server at `url` (`redis://HOST:PORT/`, optionally with a database
    /// number, user and password: `redis://:secret@10.0.0.5:6379/2`; `redis+unix:///path`), or
    /// on a Redis Cluster named by some of its nodes:
    /// `redis+cluster://HOST:PORT,HOST:PORT/` (see [`Fleet::cluster`]). An unreadable URL is
    /// an [`io::ErrorKind::InvalidInput`] error; an unreachable server is not an error here
    /// (see the module's notes).
    ///
    /// ```
    /// assert!(web::fleet::Fleet::new("redis://127.0.0.1:6379/").is_ok());
    /// assert!(web::fleet::Fleet::new("redis+cluster://127.0.0.1:7000,127.0.0.1:7001/").is_ok());
    /// let bad = web::fleet::Fleet::new("http://127.0.0.1/").unwrap_err();
    /// assert_eq!(bad.kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    pub fn new(url: &str) -> io::Result<Fleet> {
        servers::Servers::parse(url).map(Fleet::on)
    }

    /// A fleet on the Redis Cluster that `nodes` belong to (`redis://HOST:PORT/` each, a
    /// password included where the cluster wants one; one reachable node is enough, more keep
    /// the fleet starting while some are down). Redis 7 or later: a room's messages go through
    /// sharded pub/sub. How a cluster is used, and what a failover costs, is in the module's
    /// notes.
    ///
    /// ```
    /// let fleet = web::fleet::Fleet::cluster(&["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"])?;
    /// assert!(web::fleet::Fleet::cluster(&[]).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cluster(nodes: &[&str]) -> io::Result<Fleet> {
        servers::Servers::cluster(nodes).map(Fleet::on)
    }

    fn on(servers: servers::Servers) -> Fleet {
        Fleet {
            servers: Arc::new(servers),
            prefix: PREFIX.into(),
            timeout: TIMEOUT,
            queue: QUEUE,
            instance: new_instance_id(),
            counters: Arc::default(),
        }
    }

    /// How long the rate limit's counter thread gives Redis for the answer to one batch of
    /// counts (default [`TIMEOUT`]); past it Redis counts as down (an error), the connection is
    /// made again, and meanwhile each instance's own count decides. Workers never wait for
    /// Redis, whatever this is.
    ///
    /// ```
    /// let fleet = web::fleet::Fleet::new("redis://127.0.0.1/")?.timeout(std::time::Duration::from_millis(10));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn timeout(mut self, d: Duration) -> Fleet {
        self.timeout = d;
        self
    }

    /// Room messages that may wait for the publisher thread (default [`QUEUE`], at least 1);
    /// past it they are delivered on this instance only and counted as dropped.
    ///
    /// ```
    /// let fleet = web::fleet::Fleet::new("redis://127.0.0.1/")?.queue(100);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn queue(mut self, n: usize) -> Fleet {
        self.queue = n.max(1);
        self
    }

    /// The prefix of the fleet's channels and keys (default [`PREFIX`]): fleets of different
    /// applications sharing one Redis server keep apart by taking different prefixes.
    ///
    /// ```
    /// let fleet = web::fleet::Fleet::new("redis://127.0.0.1/")?.prefix("shop");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn prefix(mut self, prefix: &str) -> Fleet {
        self.prefix = prefix.into();
        self
    }

    /// This instance's id, random per [`Fleet::new`]: what its envelopes carry.
    ///
    /// ```
    /// let a = web::fleet::Fleet::new("redis://127.0.0.1/")?;
    /// let b = web::fleet::Fleet::new("redis://127.0.0.1/")?;
    /// assert_ne!(a.instance(), b.instance());
    /// assert_eq!(a.instance(), a.clone().instance());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// This instance's fleet figures (also in [`ServerStats`](crate::http::ServerStats) of a
    /// server given this fleet).
    ///
    /// ```
    /// let fleet = web::fleet::Fleet::new("redis://127.0.0.1/")?;
    /// let s = fleet.stats();
    /// assert_eq!((s.published, s.received, s.dropped), (0, 0, 0));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> FleetStats {
        self.counters.stats()
    }

    pub(crate) fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// A connection to Redis for one of the fleet's threads (`salt` tells the threads' jitter
    /// apart), after `failures` failed attempts in a row: before each attempt the thread
    /// waits out the backoff with `wait`, which returns `false` when the thread should end
    /// (then `None`). Attempts and failures are counted; `failures` is left as it stands.
    fn connect_after(
        &self,
        failures: &mut u32,
        salt: u64,
        mut wait: impl FnMut(Duration) -> bool,
    ) -> Option<servers::Session> {
        loop {
            if *failures > 0 {
                let jitter = self.instance.rotate_left(*failures) ^ salt;
                if !wait(backoff::delay(*failures, jitter)) {
                    return None;
                }
            }
            match self.connect() {
                Ok(con) => {
                    Counters::add(&self.counters.connections, 1);
                    return Some(con);
                }
                Err(e) => {
                    self.counters
                        .error(&format!("cannot connect to Redis: {e}"));
                    *failures = failures.saturating_add(1);
                }
            }
        }
    }

    /// A connection to Redis with the fleet threads' limits (see [`resp`]).
    fn connect(&self) -> io::Result<servers::Session> {
        self.servers.connect(IO_TIMEOUT)
    }
}

/// Reads `data` as Redis's replies and each as every reader of the fleet would take it: a
/// cluster's map (every slot's owner asked), a redirection, a pushed message and its room.
/// Never a panic; a slot's owner in a map is one of the map's masters.
#[cfg(fuzzing)]
pub(crate) fn fuzz_replies(data: &[u8]) {
    for reply in resp::replies(data) {
        if let Ok(map) = cluster::Map::parse(&reply) {
            let masters = map.masters();
            for slot in (0..16_384).step_by(97) {
                if let Some(owner) = map.owner(slot) {
                    assert!(masters.contains(owner), "{owner:?} is no master of the map");
                }
            }
        }
        let _ = cluster::Redirect::of(&reply);
        if let listener::Pushed::Message { channel, .. }
        | listener::Pushed::Subscribed { channel }
        | listener::Pushed::Unsubscribed { channel } = listener::Pushed::of(&reply)
        {
            let _ = names::room_of(PREFIX, channel);
        }
    }
}

/// A random id for this instance (std's hasher keys come from the OS's random source).
fn new_instance_id() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one((
        std::process::id(),
        Instant::now(),
        std::thread::current().id(),
    ))
}

/// Sleeps `d`, waking early when `stop` is set; whether it was.
fn pause(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    loop {
        if stop.load(Ordering::Acquire) {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
