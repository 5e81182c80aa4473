//! Serving: the [`Server`] builder, the specification's serving functions, and what runs them —
//! the connection strands in the reactor and the blocking `handle_conn`.
//!
//! This module is the top layer, the composition root: `http`'s messages and codecs know
//! nothing of WebSocket, `ws` and `sse` build on them, and only the server knows them all (a
//! connection starts as HTTP and may become WebSocket or an event stream). `web::http`
//! re-exports the serving names of the specification from here.
//!
//! | file | concern |
//! |---|---|
//! | `builder/` | the `Server` builder: where connections come from, every setting; `start.rs`, starting a built server (its workers, fleet and ticks, run or spawned) |
//! | `handle.rs` | `ServerHandle`: a running server's address, figures and stop |
//! | `stats.rs` | `ServerStats`: what a running server holds now |
//! | `serving.rs` | the specification's serving functions (`serve`, `serve_n`, ...) |
//! | `limits.rs` | every limit and timeout, with its default |
//! | `request_reader.rs` | reading HTTP/1.1 requests from bytes, for both drivers |
//! | `exchange/` | one exchange on any HTTP version, its rules written once: what a whole request comes to (`start.rs`), a reply that comes later (`later.rs`); what each protocol gives it (`Replier`, `Framer`) |
//! | `shared.rs` | `ServerShared`: what all connections of a server share (handler, hooks, limits, routes, settings, figures, budgets, remote) |
//! | `dispatch.rs` | HTTP/1.1's requests read from a byte stream and answered in order (pipelining), each started as an exchange; both drivers |
//! | `http_strand.rs` | an HTTP connection in the reactor: its state, reads, writes, timers |
//! | `h2_strand/` | an HTTP/2 connection in the reactor: its streams' work, reads, writes, timers (its files in its own table) |
//! | `output.rs` | a connection's unwritten replies and large bodies |
//! | `conn.rs` | the slab entry: HTTP until upgraded to WebSocket |
//! | `taken.rs` | handing a connection to the `taken` hook as a blocking socket |
//! | `blocking.rs` | `handle_conn`, the blocking driver |
//! | `deferred.rs` | deferred replies: `defer`, `Reply`, what a parked exchange waits for |
//! | `replies.rs` | the table of replies awaited, per worker: whether a reply is still wanted, its delivery |
//! | `ticks.rs` | what is done on a schedule for all connections: the event streams' heartbeat, the WebSockets' liveness sweep |
//! | `asynchronous.rs` | answering from async code on the application's tokio runtime (feature `tokio`) |
//! | `pool.rs` | `Pool`: threads for blocking work, answering through deferred replies |
//! | `streamed.rs` | streamed bodies: `BodySender`, the window it shares with its strand |
//! | `access.rs` | the access log: each exchange's real outcome, handed to the hook once it ends |
//! | `figures.rs` | each worker's counts: requests, replies by status class, stalls |
//! | `metrics.rs` | the figures in Prometheus' text format |

mod access;
#[cfg(feature = "tokio")]
mod asynchronous;
mod blocking;
mod builder;
pub(crate) mod conn;
mod connection_loop;
mod control;
mod deferred;
mod dispatch;
mod encoding;
mod exchange;
mod features;
mod figures;
mod h2_strand;
mod handle;
mod http_strand;
mod limits;
mod long_poll;
mod metrics;
mod output;
mod peer;
mod pool;
mod replies;
mod request_reader;
mod serving;
mod shared;
mod signals;
mod stats;
mod streamed;
mod taken;
mod ticks;
mod worker;

pub use access::{Access, AccessKind, Protocol};
#[cfg(feature = "tokio")]
pub use asynchronous::answer_async;
#[cfg(feature = "tower")]
pub(crate) use asynchronous::{poll_first, spawn_reply};
pub use blocking::handle_conn;
pub use control::Control;
pub use deferred::{Reply, defer, defer_for};
pub use limits::{
    DRAIN_TIMEOUT, HEADER_TIMEOUT, HEARTBEAT, IDLE_TIMEOUT, LINGER, MAX_BODY, MAX_CONNECTIONS,
    MAX_HELD_BODIES, PING_INTERVAL, REPLY_TIMEOUT, WRITE_TIMEOUT,
};
pub use long_poll::LongPoll;
pub use pool::Pool;
pub use streamed::BodySender;

pub use crate::live::STALL_THRESHOLD;
pub use builder::Server;
pub use handle::ServerHandle;
pub use serving::{accept_forever, accept_n, serve, serve_at, serve_n, serve_taking};
pub use stats::ServerStats;
