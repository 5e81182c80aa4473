//! TLS alerts by name (RFC 8446 §6, RFC 5246 §7.2): the levels, the descriptions this side
//! reads, and the alerts it sends as their two bytes (level, description) — one table for the
//! record layer's refusals and the first flight's.

/// Alert levels.
pub(crate) const WARNING: u8 = 1;
pub(crate) const FATAL: u8 = 2;

/// Descriptions read from the peer.
pub(crate) const CLOSE: u8 = 0;
pub(crate) const USER_CANCELED: u8 = 90;

/// The alerts this side sends.
pub(crate) const CLOSE_NOTIFY: [u8; 2] = [WARNING, CLOSE];
pub(crate) const NO_RENEGOTIATION: [u8; 2] = [WARNING, 100];
pub(crate) const UNEXPECTED_MESSAGE: [u8; 2] = [FATAL, 10];
pub(crate) const BAD_RECORD_MAC: [u8; 2] = [FATAL, 20];
pub(crate) const RECORD_OVERFLOW: [u8; 2] = [FATAL, 22];
pub(crate) const ILLEGAL_PARAMETER: [u8; 2] = [FATAL, 47];
pub(crate) const DECODE_ERROR: [u8; 2] = [FATAL, 50];
pub(crate) const INTERNAL_ERROR: [u8; 2] = [FATAL, 80];
