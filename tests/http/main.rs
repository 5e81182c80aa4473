//! The HTTP/1.1 codecs and what sits on them outside the server: the clients, handle_conn,
//! middleware and the rate limiter, with the parsers' property tests.
//!
//! One test binary for the area (each file a module), so the suite links a few binaries
//! instead of one per file.

#[path = "../wire/mod.rs"]
mod wire;

mod client;
mod client_requests;
mod connection_properties;
mod handle_conn;
#[cfg(feature = "json")]
mod json;
mod middleware;
mod parser_properties;
mod rate_limit;
mod routes;
