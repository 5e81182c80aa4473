//! Every limit and timeout of a server's connections with its default, as values the
//! server's parts read (`Limits`) and as the public constants. The table of them all, with
//! what happens past each, is `Server`'s rustdoc (src/server/builder.rs): one table, which the
//! documents point to.

use std::time::Duration;

use crate::http::HeadLimits;

/// Default limit on a request body, in bytes (answered with 413).
pub const MAX_BODY: u64 = 1024 * 1024;
/// Default most bytes of HTTP/2 request bodies the server holds at once, all connections
/// together, while they arrive ([`Server::max_held_bodies`](crate::http::Server::max_held_bodies)).
pub const MAX_HELD_BODIES: usize = 64 * 1024 * 1024;
/// Default time a request has to arrive whole once its first byte came (answered with 408).
/// A body extends it by this much each time another KiB of it arrives.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a keep-alive connection may stay idle between requests (closed quietly).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(75);
/// Default time the socket may take none of a pending reply before the connection is closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default most open connections (more wait in the listen backlog).
pub const MAX_CONNECTIONS: usize = reactor::DEFAULT_MAX_CONNECTIONS;
/// Default time a graceful shutdown waits for requests in flight.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time, after the last reply, the server reads and drops what a client still sends
/// before closing, so the close does not reset the connection before the client has read the
/// reply (a client that writes a large body before reading needs it to see an early 413).
pub const LINGER: Duration = Duration::from_secs(2);

/// Default time a deferred reply may take before the server answers `503` itself
/// ([`Server::reply_timeout`](crate::http::Server::reply_timeout)).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time between the comment lines an idle event stream gets
/// ([`Server::heartbeat`](crate::http::Server::heartbeat)).
pub const HEARTBEAT: Duration = Duration::from_secs(15);
// WebSocket's own setting, read from `web::http` where the specification has it.
pub use crate::ws::PING_INTERVAL;

/// Limits and timeouts of a server's connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) head: HeadLimits,
    pub(crate) max_body: u64,
    pub(crate) max_held_bodies: usize,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) linger: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            head: HeadLimits::default(),
            max_body: MAX_BODY,
            max_held_bodies: MAX_HELD_BODIES,
            header_timeout: HEADER_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            linger: LINGER,
        }
    }
}
