//! HTTPS and WSS (`--features tls`): the server, our records, their properties.
//!
//! One test binary for the area (each file a module), so the suite links a few binaries
//! instead of one per file.

#[path = "../wire/mod.rs"]
mod wire;

mod tls_properties;
mod tls_records;
mod tls_server;
mod two_listeners;
