//! Every limit and timeout of a server's connections, with its default, in one place.
//!
//! | setting | default | when exceeded |
//! |---|---|---|
//! | request line + headers | [`MAX_HEAD_BYTES`](crate::http::MAX_HEAD_BYTES) (16 KiB) | 431 (414 when the request line alone is longer) |
//! | header lines | [`MAX_HEADERS`](crate::http::MAX_HEADERS) (100) | 431 |
//! | body | [`MAX_BODY`] (1 MiB) | 413 |
//! | a request arriving whole | [`HEADER_TIMEOUT`] (10 s) | 408, close |
//! | keep-alive idle | [`IDLE_TIMEOUT`] (75 s) | closed quietly |
//! | the socket taking output | [`WRITE_TIMEOUT`] (30 s) | closed |
//! | lingering after the last reply | [`LINGER`] (2 s) | closed |
//! | open connections | [`MAX_CONNECTIONS`] (100 000) | new connections wait in the backlog |
//! | graceful shutdown | [`DRAIN_TIMEOUT`] (10 s) | requests still in flight are closed |
//! | a deferred reply coming | [`REPLY_TIMEOUT`] (60 s) | 503 |
//! | an event stream with nothing to send | [`HEARTBEAT`] (15 s) | a comment line is sent |
//! | a WebSocket peer silent | [`PING_INTERVAL`] (30 s) | pinged; closed when its answer does not come within an interval |
//! | a WebSocket peer answering our close | [`CLOSE_TIMEOUT`](crate::ws::CLOSE_TIMEOUT) (5 s) | closed anyway |
//! | a WebSocket message | [`MAX_MESSAGE`](crate::ws::MAX_MESSAGE) (64 KiB) | close 1009 |
//! | WebSocket output held for all slow peers together | [`MAX_QUEUED_OUTPUT`](crate::ws::MAX_QUEUED_OUTPUT) (256 MiB) | the peers furthest behind closed (1008) |
//!
//! And the fixed limits, which are not settings: each bounds what one peer can make a
//! connection hold, at a size no honest peer comes near, or is a point where the server stops
//! reading so that output cannot pile up.
//!
//! | fixed limit | value | when exceeded | where |
//! |---|---|---|---|
//! | chunk extensions over a whole body | [`MAX_CHUNK_EXTENSIONS`](crate::http::MAX_CHUNK_EXTENSIONS) (16 KiB) | 400 | `http/message/chunked.rs` |
//! | trailer lines | [`MAX_TRAILER_BYTES`](crate::http::MAX_TRAILER_BYTES) (16 KiB) | 400 | `http/message/chunked.rs` |
//! | a body's pace | 1 KiB per header timeout (`MIN_BODY_PROGRESS`) | 408 | `server/exchange.rs` |
//! | HTTP output queued before reading stops | 64 KiB (`HIGH_WATER`) | reading resumes when the socket takes it | `server/http_strand.rs` |
//! | WebSocket output queued before reading stops | [`WS_HIGH_WATER`](crate::ws::WS_HIGH_WATER) (256 KiB) | reading resumes when the peer takes it | `ws/strand.rs` |
//! | WebSocket output owed to one peer | [`WS_MAX_BACKLOG`](crate::ws::WS_MAX_BACKLOG) (16 MiB) | close 1008 | `ws/strand.rs` |
//! | linger while the server stops | 250 ms (`DRAIN_LINGER`) | closed | `server/http_strand.rs` |

use std::time::Duration;

use crate::http::HeadLimits;

/// Default limit on a request body, in bytes (answered with 413).
pub const MAX_BODY: u64 = 1024 * 1024;
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
/// Default interval of the liveness pings of WebSocket peers
/// ([`Server::ping_interval`](crate::http::Server::ping_interval)): a peer from which nothing
/// has arrived for half an interval to an interval is pinged, and closed if nothing arrives
/// within an interval of the ping, so a peer that vanished (a phone out of coverage, a laptop
/// shut, a NAT box that forgot it) is closed 1.5 to 2 intervals after its last byte — 45–60 s.
/// 30 s also keeps NAT mappings and proxies of mobile networks from timing the connection out.
pub const PING_INTERVAL: Duration = Duration::from_secs(30);

/// Limits and timeouts of a server's connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) head: HeadLimits,
    pub(crate) max_body: u64,
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
            header_timeout: HEADER_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            linger: LINGER,
        }
    }
}
