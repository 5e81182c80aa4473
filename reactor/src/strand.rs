//! The two traits a protocol implements: [`Strand`] (one connection) and [`Service`]
//! (one per worker, makes strands).

use std::net::SocketAddr;
use std::sync::Arc;

use mio::net::TcpStream;

use crate::{ConnId, Io, Then, Wake};

/// What a protocol does with one connection: a plain value holding the connection's whole
/// state, parked in its worker's slab between resumes.
///
/// Every method runs on the worker thread, must not block, and returns what the strand waits
/// for next. A panic in any of them closes this connection only.
///
/// An idle strand should hold no heap memory: reads land in the worker's scratch buffer
/// ([`Io::read`]) and a strand keeps bytes only while a message is incomplete or a write is
/// pending.
///
/// ```
/// use reactor::{Io, Then, Read, Strand, Wake};
///
/// /// Discards everything it reads; closes after 10 idle seconds.
/// struct Sink;
///
/// impl Strand for Sink {
///     type Msg = ();
///     fn resume(&mut self, io: &mut Io<'_, ()>, wake: Wake) -> Then {
///         if wake == Wake::Timeout {
///             return Then::Close;
///         }
///         loop {
///             match io.read() {
///                 Read::Data(_) => continue,
///                 Read::WouldBlock => {
///                     let idle = io.now() + std::time::Duration::from_secs(10);
///                     return Then::read().until(idle);
///                 }
///                 Read::Closed | Read::Error(_) => return Then::Close,
///             }
///         }
///     }
///     fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then {
///         Then::Close
///     }
///     fn message(&mut self, _io: &mut Io<'_, ()>, _msg: ()) -> Then {
///         Then::read()
///     }
///     fn held_bytes(&self) -> usize {
///         0
///     }
/// }
/// ```
pub trait Strand: Send + 'static {
    /// Messages other threads send to this connection with [`Remote::send`](crate::Remote::send)
    /// (WebSocket sends and broadcasts). Use `()` when unused.
    type Msg: Send + Clone + 'static;

    /// Resume after readiness or timer expiry (`wake` says which). Read through `io` (into the
    /// worker's scratch buffer) until [`Read::WouldBlock`](crate::Read::WouldBlock), write through
    /// `io`, then say what comes next. Readiness is edge-triggered: see [`Wake`].
    fn resume(&mut self, io: &mut Io<'_, Self::Msg>, wake: Wake) -> Then;

    /// The server is shutting down: return [`Then::Close`] at once if idle, otherwise the `Then`
    /// that finishes what is in flight; the reactor keeps resuming the strand as usual and it
    /// closes afterwards. Strands still open when the drain deadline passes are closed.
    fn drain(&mut self, io: &mut Io<'_, Self::Msg>) -> Then;

    /// A message sent to this connection through [`Remote::send`](crate::Remote::send).
    fn message(&mut self, io: &mut Io<'_, Self::Msg>, msg: Self::Msg) -> Then;

    /// The same message for several streams of this connection (a room's publish reaching
    /// many of its streams), in one call: `streams` in increasing order, none 0. By default
    /// each in turn through [`Strand::message`] ([`message_each`]); a strand with streams does
    /// them together.
    fn message_streams(
        &mut self,
        io: &mut Io<'_, Self::Msg>,
        streams: &[u32],
        msg: Self::Msg,
    ) -> Then
    where
        Self: Sized,
    {
        message_each(self, io, streams, msg)
    }

    /// What a send of [`Io::send_shared`] that the worker gathered did not take, once the
    /// kernel answered: the bytes of `frame` from `from` on are owed first, before anything
    /// the strand queued since. Return what comes next, as from [`Strand::resume`] (the socket
    /// is full now, unless it failed: then a write returns the error). Only strands that call
    /// `send_shared` are ever called here; by default the connection closes.
    ///
    /// ```
    /// use std::sync::Arc;
    /// struct Queue(Vec<(Arc<[u8]>, usize)>);
    /// impl Queue {
    ///     fn unsent(&mut self, frame: Arc<[u8]>, from: usize) -> reactor::Then {
    ///         self.0.insert(0, (frame, from)); // first, before what came since
    ///         reactor::Then::write()
    ///     }
    /// }
    /// # let _ = Queue(Vec::new()).unsent(Arc::from(&b"x"[..]), 0);
    /// ```
    fn unsent(&mut self, io: &mut Io<'_, Self::Msg>, frame: Arc<[u8]>, from: usize) -> Then {
        let _ = (io, frame, from);
        Then::Close
    }

    /// Whether a message sent to every connection of the worker
    /// ([`Remote::send_all`](crate::Remote::send_all)) is for this strand; by default, yes.
    /// Must be cheap: the worker asks every strand it has.
    ///
    /// ```
    /// struct Quiet;
    /// impl Quiet {
    ///     fn wants(&self, msg: &u8) -> bool {
    ///         *msg != 0 // a heartbeat (0) is not for this one
    ///     }
    /// }
    /// assert!(!Quiet.wants(&0));
    /// ```
    fn wants(&self, msg: &Self::Msg) -> bool {
        let _ = msg;
        true
    }

    /// The connection leaves the reactor — closed, whoever decided it (the strand's own
    /// [`Then::Close`], the drain deadline, a panic in another method), or handed over by
    /// [`Then::Release`] — and the strand is dropped right after: the one place to tell others
    /// it ended, with its id, which the strand need not keep for this.
    ///
    /// ```
    /// struct Member;
    /// impl Member {
    ///     fn closed(&mut self, id: reactor::ConnId) {
    ///         let _ = id.key(); // leave the rooms this id was in, say
    ///     }
    /// }
    /// # Member.closed(reactor::ConnId::from_parts(0, 0, 0));
    /// ```
    fn closed(&mut self, id: ConnId) {
        let _ = id;
    }

    /// Heap bytes this strand holds now (buffers' capacities); 0 when idle. Read by the reactor
    /// around every call to keep [`WorkerStats::held_bytes`](crate::WorkerStats::held_bytes) as a running sum.
    fn held_bytes(&self) -> usize;
}

/// One per worker: makes the strand of each connection the worker accepts.
///
/// Per-protocol counters (requests served, ...) belong to the protocol: a service can hold an
/// `Arc` of atomics shared with whoever reports them, and pass what a strand needs to it in
/// `open` (a strand is a plain value; a `&'static` or an index costs no heap memory).
///
/// ```
/// use reactor::{ConnId, Io, Then, Service, Strand, Wake};
/// use std::net::SocketAddr;
///
/// struct Closer;
/// impl Strand for Closer {
///     type Msg = ();
///     fn resume(&mut self, _io: &mut Io<'_, ()>, _wake: Wake) -> Then { Then::Close }
///     fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then { Then::Close }
///     fn message(&mut self, _io: &mut Io<'_, ()>, _msg: ()) -> Then { Then::Close }
///     fn held_bytes(&self) -> usize { 0 }
/// }
///
/// struct CloseAll;
/// impl Service for CloseAll {
///     type Strand = Closer;
///     fn open(&mut self, _stream: &mio::net::TcpStream, _peer: SocketAddr, _id: ConnId) -> Closer {
///         Closer
///     }
/// }
/// ```
pub trait Service: Send + 'static {
    /// The strand made for each connection.
    type Strand: Strand;

    /// Makes the strand of a connection just accepted. The reactor then resumes it with
    /// [`Wake::Start`].
    fn open(&mut self, stream: &TcpStream, peer: SocketAddr, id: ConnId) -> Self::Strand;

    /// Makes the strand of a connection accepted by listener `listener` — its place among the
    /// addresses the reactor listens on ([`Reactor::from_listener_sets`](crate::Reactor::from_listener_sets));
    /// 0 when there is one. A service whose listeners differ (one plain, one under TLS) tells
    /// them apart here; by default every listener's connections are [`open`](Self::open)ed alike.
    fn open_on(
        &mut self,
        listener: usize,
        stream: &TcpStream,
        peer: SocketAddr,
        id: ConnId,
    ) -> Self::Strand {
        let _ = listener;
        self.open(stream, peer, id)
    }

    /// A message sent to this worker as a whole ([`Remote::send_worker`](crate::Remote::send_worker)):
    /// push the ids of the connections of this worker it is for; the worker then hands each a
    /// clone through [`Strand::message`] (ids of closed connections are skipped). Runs on the
    /// worker's thread. By default a worker message reaches no one.
    fn fan_out(&mut self, msg: &<Self::Strand as Strand>::Msg, to: &mut Vec<ConnId>) {
        let _ = (msg, to);
    }

    /// The worker's last connection closed: give back what the service keeps for busy times
    /// (buffer pools, caches). The worker then asks the allocator to return free memory to the
    /// system. Runs on the worker's thread. By default nothing is kept.
    fn idle(&mut self) {}
}

/// `msg` to each of `streams` in turn through [`Strand::message`] (with [`Io::addressed`]
/// saying which), stopping at the first answer that is not [`Then::Park`]; the last answer.
pub fn message_each<S: Strand>(
    strand: &mut S,
    io: &mut Io<'_, S::Msg>,
    streams: &[u32],
    msg: S::Msg,
) -> Then {
    let Some((&last, rest)) = streams.split_last() else {
        return strand.message(io, msg);
    };
    for &stream in rest {
        io.addressed = stream;
        let next = strand.message(io, msg.clone());
        if !matches!(next, Then::Park { .. }) {
            return next;
        }
    }
    io.addressed = last;
    strand.message(io, msg)
}
