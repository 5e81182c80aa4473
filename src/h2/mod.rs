//! HTTP/2 (RFC 9113, RFC 7541): its settings (config.rs: `Http2Config`), and a pure codec — frames and their rules, error codes, HPACK, a
//! request's header list and its rules, and one connection's state (preface, settings,
//! streams, flow control, bounds) — driven by bytes and never touching a socket, like the
//! HTTP/1.1 and WebSocket codecs.
//!
//! The server's HTTP/2 strand (`server/h2_strand.rs`) drives it; a reply's head is encoded by
//! `reply.rs`.

pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod headers;
pub(crate) mod hpack;
pub(crate) mod reply;
pub(crate) mod stream_index;
