//! The server over real sockets: connections, keep-alive, limits, timeouts, bodies, deferred and
//! streamed replies, backpressure, the output budget, the serving functions.
//!
//! One test binary for the area (each file a module), so the suite links a few binaries
//! instead of one per file.

#[path = "../wire/mod.rs"]
mod wire;

mod access_log;
#[cfg(feature = "tokio")]
mod async_answers;
mod observability;
mod output_owed;
mod serve_n;
mod serve_taking;
mod server_backpressure;
mod server_bodies;
mod server_connections;
mod server_deferred;
mod server_idle_to_busy;
mod server_keepalive;
mod server_lifecycle;
mod server_limits;
mod server_progress;
mod server_streamed;
mod server_timeouts;
