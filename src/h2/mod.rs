//! HTTP/2 (RFC 9113, RFC 7541): a pure codec — frames and their rules, error codes, HPACK —
//! driven by bytes and never touching a socket, like the HTTP/1.1 and WebSocket codecs.
//!
//! The connection that uses it (streams as the state of one strand, flow control, serving
//! through the same handlers) is still to come; until then only the tests and the fuzz
//! target call into this module.

pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod hpack;
