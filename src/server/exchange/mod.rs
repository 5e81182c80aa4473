//! One exchange — a request and its reply — on any HTTP version, its rules written once:
//!
//! | file | concern |
//! |---|---|
//! | `start.rs` | what a whole request comes to: budget, live routes, hand-over, handler, reply at once or deferred ([`start`], through a protocol's [`Replier`]) |
//! | `later.rs` | a reply that comes later, deferred or streamed, to its last byte ([`deliver`], [`expire`], [`stopping`], [`abandon`], through a protocol's [`Framer`]) |
//! | `record.rs` | what is counted and logged of an exchange as it starts |
//! | `app.rs` | what an exchange is served with, and the routes a request may be for |
//!
//! The strands keep what is theirs: reading and framing, flow control, parking, and where
//! they store each exchange. HTTP/1.1 runs one exchange at a time, in the order the requests
//! came (`dispatch.rs` reads them from the byte stream and starts each); HTTP/2 one per stream
//! (`h2_strand/`). The design, and how an HTTP/2 client role or HTTP/3 would plug in, is in
//! docs/DESIGN.md, "One exchange".

use std::net::SocketAddr;
use std::time::Instant;

use super::replies::ReplyTo;

mod app;
mod later;
mod record;
mod start;

pub(crate) use app::App;
pub(crate) use later::{Framer, Phase, Step, abandon, deliver, expire, stopping};
pub(crate) use record::Record;
pub(crate) use start::{AsksWebSocket, Replier, Started, Streamed, start};

/// Where a request came from, as its exchange sees it.
#[derive(Clone, Copy)]
pub(crate) struct Origin {
    pub(crate) now: Instant,
    /// Who the connection is from, for the request's [`Request::peer`](crate::http::Request::peer).
    pub(crate) peer: Option<SocketAddr>,
    /// Where a deferred reply goes.
    pub(crate) reply_to: ReplyTo,
    /// The HTTP/2 stream (0 for an HTTP/1.1 connection's one exchange at a time).
    pub(crate) stream: u32,
    pub(crate) worker: usize,
    /// The connection is TLS.
    pub(crate) tls: bool,
}
