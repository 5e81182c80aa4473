//! TLS for servers and clients (feature `tls`), on rustls with the `ring` provider.
//!
//! A server given a [`ServerTls`] with [`Server::tls`](crate::http::Server::tls) speaks only
//! HTTPS (and WSS, and SSE over HTTPS) on its port. Its connections run on the same workers,
//! strands, limits, rooms and deferred replies as plain ones: rustls' unbuffered connection is
//! driven on the worker's thread and never touches the socket. Records are read into and
//! sealed in the worker's buffers, so an idle TLS connection holds no record buffer — only
//! rustls' own state (its keys, the negotiated parameters), about 2.3 KB.
//!
//! Clients ([`Client`](crate::http::Client), [`ws::connect`](crate::ws::connect)) speak
//! `https://` and `wss://` with a [`ClientTls`]: the system's roots by default, or a PEM file
//! of roots; the server's name is always checked unless a test opts out.

mod alert;
mod client;
mod config;
mod first_flight;
mod peer_limits;
mod pem;
mod post_handshake;
mod records;
mod server_config;
mod session;
mod strand;
mod traffic;

pub use client::ClientTls;
pub(crate) use client::TlsStream;
pub use config::{HANDSHAKE_TIMEOUT, TlsConfig};
pub(crate) use server_config::Configs;
pub use server_config::ServerTls;
pub(crate) use strand::{TlsCounters, TlsService, TlsShared};
