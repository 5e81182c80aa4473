//! [`ServerStats`]: what a running server holds now.

#[cfg(doc)]
use super::*;

/// What a running server holds now; see [`Control::stats`] and [`ServerHandle::stats`].
///
/// ```no_run
/// # fn demo(handle: &web::http::ServerHandle) {
/// let s = handle.stats();
/// println!("{} open, {} requests, {} bytes held", s.open_connections, s.requests, s.held_bytes);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Open connections.
    pub open_connections: usize,
    /// Connections accepted since the start.
    pub connections: u64,
    /// Connections parked with nothing to write (idle, or waiting for the rest of a request).
    pub parked: usize,
    /// Requests answered since the start.
    pub requests: u64,
    /// Replies sent since the start, by status class: `[1xx, 2xx, 3xx, 4xx, 5xx]` — the
    /// handler's, deferred and streamed ones (counted as their head goes out), refusals of
    /// malformed or late requests, WebSocket upgrades (101) and event streams opened (200).
    pub responses: [u64; 5],
    /// Handler calls — HTTP handlers, WebSocket and event-stream callbacks — that held their
    /// worker past [`Server::stall_threshold`] (every other connection of the worker waited
    /// meanwhile).
    pub stalls: u64,
    /// The longest of those calls (to the microsecond).
    pub longest_stall: std::time::Duration,
    /// Heap bytes held in connections' buffers now: what idle connections cost beyond their
    /// slab entry (0 when all are idle).
    pub held_bytes: usize,
    /// Open WebSocket connections (upgraded, not yet closed); included in `open_connections`.
    pub websockets: usize,
    /// Open Server-Sent Events streams ([`Server::sse`]); included in `open_connections`.
    pub event_streams: usize,
    /// Open HTTP/2 connections ([`Server::http2`]); included in `open_connections`.
    pub http2_connections: usize,
    /// Requests answered on HTTP/2 streams since the server started; included in `requests`.
    pub http2_streams: u64,
    /// Messages to connections or workers refused because a worker's queue was full.
    pub refused_messages: u64,
    /// Connections the server could not accept for want of file descriptors (or memory:
    /// `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) since it started. Each pauses accepting briefly;
    /// the clients wait in the listen backlog meanwhile. A figure that grows says: raise the
    /// descriptor limit (`ulimit -n`), or lower [`Server::max_connections`] below it.
    pub out_of_descriptors: u64,
    /// WebSocket connections closed (1008) because their peers fell behind: owed more than
    /// [`WS_MAX_BACKLOG`](crate::ws::WS_MAX_BACKLOG), or past their share of
    /// [`Server::max_queued_output`].
    pub lagging_closed: u64,
    /// Memory held now for WebSocket output not yet taken by peers (what
    /// [`Server::max_queued_output`] bounds).
    pub queued_output: usize,
    /// Bytes of HTTP/2 request bodies held now while they arrive (what
    /// [`Server::max_held_bodies`] bounds).
    pub held_bodies: usize,
    /// HTTP/2 request bodies refused or cut (`REFUSED_STREAM`) because the server held all
    /// [`Server::max_held_bodies`] allows.
    pub bodies_refused: u64,
    /// Deferred replies ([`defer`]) awaited now.
    pub replies_waiting: u64,
    /// Deferred replies whose [`Reply`] was dropped unanswered (the client got a 500).
    pub replies_dropped: u64,
    /// Deferred replies that did not come within [`Server::reply_timeout`] (the client got a
    /// 503).
    pub replies_timed_out: u64,
    /// Workers that hand a publish's and a sweep's sends to the kernel through io_uring
    /// ([`Server::io_uring`], feature `io-uring`); 0 when every send is its own system call.
    pub io_uring_workers: usize,
    /// Sends handed to the kernel in io_uring batches since the start.
    pub gathered_sends: u64,
    /// The system calls (`io_uring_enter`) that handed them over.
    pub send_submissions: u64,
    /// Connection steps that panicked (a bug of the library or of a WebSocket handler; each
    /// closed its own connection only). Handler panics answered with 500 are not counted here.
    pub panics: u64,
    /// With a `web::fleet::Fleet` (`--features redis`; 0 otherwise): failures
    /// talking to Redis (connections, commands, replies refused, answers past the timeout); see
    /// `web::fleet::FleetStats` for more figures.
    pub fleet_errors: u64,
    /// With a fleet: room messages delivered on this instance only, not sent to the others
    /// (queue full or Redis unreachable).
    pub fleet_dropped: u64,
    /// With a fleet: rate-limit decisions taken on this instance's own count because Redis
    /// did not answer in time.
    pub fleet_local_decisions: u64,
    /// With a fleet: rooms' histories and member counts answered from this instance's own
    /// because Redis did not answer in time.
    pub fleet_local_reads: u64,
    /// TLS handshakes completed (feature `tls`).
    pub tls_handshakes: u64,
    /// TLS connections closed for bad input: malformed or unexpected records, a failed
    /// handshake, a plain HTTP request on the TLS port (feature `tls`).
    pub tls_failures: u64,
    /// TLS connections closed because the handshake took longer than
    /// `Server::handshake_timeout` (feature `tls`).
    pub tls_timeouts: u64,
}
