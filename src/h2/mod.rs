//! HTTP/2 (RFC 9113, RFC 7541): a pure codec — frames and their rules, error codes, HPACK, a
//! request's header list and its rules, and one connection's state (preface, settings,
//! streams, flow control, bounds) — driven by bytes and never touching a socket, like the
//! HTTP/1.1 and WebSocket codecs.
//!
//! The strand that serves it (streams as the state of one slab entry, through the same
//! handlers) is still to come; until then only the tests and the fuzz targets call into this
//! module.

pub(crate) mod conn;
pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod headers;
pub(crate) mod hpack;
