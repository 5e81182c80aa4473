//! The strand reactor under `web`: one `mio` event loop per worker thread, every connection a
//! *strand* (a resumable state value parked in a slab). This crate knows nothing about HTTP or
//! WebSocket; protocols plug in through its traits.
//!
//! # Shape
//!
//! - A **worker** is one thread with its own `mio::Poll`, a `slab` of strands, a timer wheel and a
//!   scratch read buffer ([`DEFAULT_SCRATCH_SIZE`], shared by all its strands). N workers
//!   ([`Config::workers`]) accept from the same listening address.
//! - A **strand** ([`Strand`]) holds the whole state of one connection. The reactor resumes it on
//!   readiness or timer expiry; it reads and writes through [`Io`] until it would block, then
//!   returns a [`Then`]. The slab entry is the only per-connection memory the reactor keeps
//!   ([`entry_size`]: the strand plus 24 bytes); a parked idle strand should own no heap memory.
//! - **Timers** ([`Then::Park`]'s `deadline`) live in a hashed timing wheel whose lists run
//!   through the slab entries: no allocation, O(1) arm/move/cancel, no scan of all connections.
//! - **Tokens** carry a generation ([`ConnId`]): a stale event or message for a reused slab key
//!   never reaches the new connection.
//! - **Interest** is registered once per connection (readable and writable, edge-triggered) and
//!   never changed: the reactor records readiness and resumes a strand only for what it waits
//!   for, so parking differently from one request to the next costs no system call.
//! - A [`Remote`] reaches the workers from any thread: messages to connections, shutdown, stats.
//!
//! # Example: a line echo
//!
//! ```no_run
//! use reactor::{Config, ConnId, Io, Then, Reactor, Read, Service, Strand, Wake};
//!
//! struct Echo;
//!
//! impl Strand for Echo {
//!     type Msg = ();
//!     fn resume(&mut self, io: &mut Io<'_, ()>, _wake: Wake) -> Then {
//!         loop {
//!             let (read, mut out) = io.read_split();
//!             match read {
//!                 // A toy: a real strand keeps what the socket did not take.
//!                 Read::Data(bytes) => drop(out.write(bytes)),
//!                 Read::WouldBlock => return Then::read(),
//!                 Read::Closed | Read::Error(_) => return Then::Close,
//!             }
//!         }
//!     }
//!     fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then { Then::Close }
//!     fn message(&mut self, _io: &mut Io<'_, ()>, _msg: ()) -> Then { Then::read() }
//!     fn held_bytes(&self) -> usize { 0 }
//! }
//!
//! struct EchoService;
//! impl Service for EchoService {
//!     type Strand = Echo;
//!     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> Echo {
//!         Echo
//!     }
//! }
//!
//! let listener = std::net::TcpListener::bind("127.0.0.1:7000")?;
//! Reactor::new(listener, Config::default(), |_| EchoService)?.run()?;
//! # Ok::<(), std::io::Error>(())
//! ```

#![warn(missing_docs)]

mod config;
mod conn_id;
mod flags;
mod io;
mod listen;
mod remote;
mod sends;
mod server;
mod stats;
mod strand;
mod sys;
mod then;
mod trim;
mod wheel;
mod worker;

pub use config::{
    Config, DEFAULT_ACCEPT_BATCH, DEFAULT_ACCEPT_RETRY, DEFAULT_DRAIN_DEADLINE,
    DEFAULT_EVENTS_CAPACITY, DEFAULT_MAX_CONNECTIONS, DEFAULT_SCRATCH_SIZE,
    MAX_CONNECTIONS_PER_WORKER,
};
pub use conn_id::{ConnId, MAX_LISTENERS};
pub use io::{Io, Output, Read, Received, Socket, SocketLayer};
pub use listen::{LISTEN_BACKLOG, bind_exclusive, bind_reuseport};
pub use remote::{AHEAD_EVERY, INBOX_LIMIT, Remote};
pub use server::{Handle, MsgOf, Reactor};
pub use stats::{Stats, WorkerStats};
pub use strand::{Service, Strand, message_each};
pub use then::{Handover, Then, Wake};
pub use trim::{arena_sharing, share_one_arena};
pub use wheel::TIMER_TICK;
pub use worker::entry_size;
