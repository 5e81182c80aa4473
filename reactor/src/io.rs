//! [`Io`]: what a strand touches while it runs — its socket, the worker's scratch buffer,
//! the loop turn's clock, its identity and the worker's [`Remote`].

use std::io::{self, IoSlice, Write as _};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use mio::net::TcpStream;

use crate::flags::Flags;
use crate::sends::Sends;
use crate::sys;
use crate::wheel::{Clock, Link};
use crate::{ConnId, Remote};

/// In an entry's `quiet` byte: something arrived from the peer since the last liveness sweep.
pub(crate) const HEARD: u8 = 0x80;

/// Whether a read shorter than the buffer means the socket was drained. On Linux a TCP read
/// copies until the receive queue is empty or the buffer full, and epoll (edge-triggered) raises
/// a new edge for every arrival after it; so a strand may park on `read` after a short read
/// without the extra read that would answer `WouldBlock`: one system call less per request.
const DRAINED_BY_SHORT_READ: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// What one read from the socket gave.
///
/// `WouldBlock` is a state, not an error: the socket is drained and the strand parks.
///
/// ```
/// use reactor::Read;
/// fn describe(read: &Read<'_>) -> &'static str {
///     match read {
///         Read::Data(_) => "bytes in the scratch buffer",
///         Read::WouldBlock => "nothing more for now",
///         Read::Closed => "peer closed its side",
///         Read::Error(_) => "connection failed",
///     }
/// }
/// assert_eq!(describe(&Read::Closed), "peer closed its side");
/// ```
#[derive(Debug)]
pub enum Read<'a> {
    /// Bytes read into the worker's scratch buffer, never empty. They stay valid until the
    /// next read of any strand of this worker: copy what must survive the resume. When
    /// [`Io::read_ready`] is false after it, the socket is drained (on Linux a read shorter
    /// than the buffer proves it): the strand may park on `read` at once, without reading to
    /// `WouldBlock`.
    Data(&'a [u8]),
    /// Nothing to read until the next readiness.
    WouldBlock,
    /// The peer closed its writing side (end of stream).
    Closed,
    /// The connection failed (reset, ...).
    Error(io::Error),
}

/// Handed to every [`Strand`](crate::Strand) call: read and write the connection without
/// blocking, and reach the clock, the connection's id and the worker's [`Remote`].
///
/// `M` is the strand's message type ([`Strand::Msg`](crate::Strand::Msg)).
///
/// ```
/// use reactor::{Io, Then, Read};
/// // Answer every chunk with "ok\n" (a toy; a real strand keeps unsent bytes).
/// fn pump(io: &mut Io<'_, ()>) -> Then {
///     loop {
///         let (read, mut out) = io.read_split();
///         match read {
///             Read::Data(_bytes) => {
///                 let _ = out.write(b"ok\n");
///             }
///             Read::WouldBlock => return Then::read(),
///             Read::Closed | Read::Error(_) => return Then::Close,
///         }
///     }
/// }
/// ```
pub struct Io<'a, M> {
    pub(crate) stream: &'a mut TcpStream,
    pub(crate) scratch: &'a mut [u8],
    pub(crate) ready: &'a mut Flags,
    /// [`HEARD`], and the liveness sweeps in a row that found the peer silent.
    pub(crate) quiet: &'a mut u8,
    pub(crate) now: Instant,
    pub(crate) id: ConnId,
    /// The stream a message being handed over was sent to (0 otherwise).
    pub(crate) addressed: u32,
    /// The message being handed over came alone in the worker's batch.
    pub(crate) alone: bool,
    pub(crate) remote: &'a Remote<M>,
    /// The connection's timer as the wheel holds it, and the worker's clock to read it.
    pub(crate) timer: &'a Link,
    pub(crate) clock: &'a Clock,
    /// What stands between the socket and the strand (TLS), if anything: reads and writes go
    /// through it.
    pub(crate) layer: Option<&'a mut (dyn SocketLayer + 'a)>,
    /// The worker's gathered sends, while it passes through many connections (see
    /// [`Io::send_shared`]).
    pub(crate) sends: Option<&'a mut Sends>,
}

impl<'a, M> Io<'a, M> {
    /// Reads once into the worker's scratch buffer.
    ///
    /// Mio is edge-triggered: keep reading until [`Read::WouldBlock`] before parking on `read`.
    /// Use [`Io::read_split`] to write while holding the bytes read.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     while let reactor::Read::Data(bytes) = io.read() {
    ///         let _ = bytes.len();
    ///     }
    /// }
    /// ```
    pub fn read(&mut self) -> Read<'_> {
        self.read_split().0
    }

    /// Reads once into the scratch buffer and also returns the connection's [`Output`], so a
    /// strand can answer while it still looks at the bytes it read.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let (read, mut out) = io.read_split();
    ///     if let reactor::Read::Data(bytes) = read {
    ///         let _ = out.write(bytes); // answer while looking at the bytes
    ///     }
    /// }
    /// ```
    pub fn read_split(&mut self) -> (Read<'_>, Output<'_>) {
        let mut socket = Socket {
            stream: self.stream,
            ready: self.ready,
            quiet: self.quiet,
        };
        let received = match self.layer.as_deref_mut() {
            Some(layer) => layer.read(&mut socket, self.scratch),
            None => socket.recv(self.scratch),
        };
        let read = match received {
            Received::Data(n) => Read::Data(&self.scratch[..n.min(self.scratch.len())]),
            Received::WouldBlock => Read::WouldBlock,
            Received::Closed => Read::Closed,
            Received::Error(e) => Read::Error(e),
        };
        let out = Output {
            socket,
            layer: self.layer.as_deref_mut().map(|l| l as &mut dyn SocketLayer),
        };
        (read, out)
    }

    /// This `Io` with `layer` between the socket and the strand: what the strand reads is what
    /// the layer makes of the bytes that arrive, what it writes goes to the layer. A protocol
    /// that wraps the connection (TLS) runs its inner strand with this view.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>, tls: &mut (dyn reactor::SocketLayer + 'static)) {
    ///     let mut inner = io.layered(tls);
    ///     let _ = inner.read(); // plaintext, decrypted by the layer
    /// }
    /// ```
    pub fn layered<'b>(&'b mut self, layer: &'b mut (dyn SocketLayer + 'b)) -> Io<'b, M> {
        Io {
            stream: self.stream,
            scratch: self.scratch,
            ready: self.ready,
            quiet: self.quiet,
            now: self.now,
            id: self.id,
            addressed: self.addressed,
            alone: self.alone,
            remote: self.remote,
            timer: self.timer,
            clock: self.clock,
            layer: Some(layer),
            // What a layer writes is its own bytes: never gathered.
            sends: None,
        }
    }

    /// The view a stream the connection carries (an HTTP/2 stream) is run with: its id is
    /// this connection's with `stream` ([`ConnId::with_stream`]), and what it reads and writes
    /// goes through `layer` — the stream's own bytes, framed by the connection's protocol —
    /// never to the socket directly. Its [`read_ready`](Io::read_ready) is the layer's.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>, stream: &mut dyn reactor::SocketLayer) {
    ///     let mut inner = io.substream(3, stream);
    ///     assert_eq!(inner.id().stream(), 3);
    ///     let _ = inner.read(); // what the stream received
    /// }
    /// ```
    pub fn substream<'b>(
        &'b mut self,
        stream: u32,
        layer: &'b mut (dyn SocketLayer + 'b),
    ) -> Io<'b, M> {
        let mut io = self.layered(layer);
        io.id = io.id.with_stream(stream);
        io.addressed = 0;
        io.alone = false;
        io
    }

    /// The stream of this connection the message being handed to
    /// [`Strand::message`](crate::Strand::message) was sent to ([`ConnId::stream`]): 0 when it
    /// was sent to the connection itself, to all connections, or outside `message`.
    ///
    /// ```
    /// fn demo(io: &reactor::Io<'_, ()>) -> bool {
    ///     io.addressed() == 0 // for the connection, not one of its streams
    /// }
    /// ```
    pub fn addressed(&self) -> u32 {
        self.addressed
    }

    /// Whether the message being handed to [`Strand::message`](crate::Strand::message) came
    /// alone in the worker's batch — no other message reaches any connection of the worker
    /// this turn — so what it brings may be written at once: nothing would join it at the end
    /// of the turn. `false` outside `message`, and whenever other messages came with it.
    ///
    /// ```
    /// fn demo(io: &reactor::Io<'_, ()>) -> bool {
    ///     io.alone_in_turn() // write now rather than park to write at the end of the turn
    /// }
    /// ```
    pub fn alone_in_turn(&self) -> bool {
        self.alone
    }

    /// The socket's own reads and writes, below any layer: for the layer's owner (to send what
    /// the layer holds before resuming the strand).
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let _ = io.socket().send(b"raw bytes, past any layer");
    /// }
    /// ```
    pub fn socket(&mut self) -> Socket<'_> {
        Socket {
            stream: self.stream,
            ready: self.ready,
            quiet: self.quiet,
        }
    }

    /// The application protocol agreed for the connection by the layer under the strand
    /// (TLS's ALPN): `None` on a plain socket, or when none was agreed.
    ///
    /// ```
    /// fn speaks_h2(io: &reactor::Io<'_, ()>) -> bool {
    ///     io.protocol() == Some(&b"h2"[..])
    /// }
    /// ```
    pub fn protocol(&self) -> Option<&[u8]> {
        self.layer.as_deref().and_then(|l| l.protocol())
    }

    /// Whether a layer runs under the strand (TLS, in this workspace): the connection's bytes
    /// are not the socket's.
    ///
    /// ```
    /// fn secure(io: &reactor::Io<'_, ()>) -> bool {
    ///     io.has_layer()
    /// }
    /// ```
    pub fn has_layer(&self) -> bool {
        self.layer.is_some()
    }

    /// Ends our side of the connection (the peer reads end of stream once what was written has
    /// arrived); through the layer, if there is one, so that it can say goodbye in its own
    /// protocol first (a TLS `close_notify`).
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) -> reactor::Then {
    ///     match io.shutdown_write() {
    ///         Ok(()) => reactor::Then::read(), // linger: read until the peer closes too
    ///         Err(_) => reactor::Then::Close,
    ///     }
    /// }
    /// ```
    pub fn shutdown_write(&mut self) -> io::Result<()> {
        if self.ready.has(Flags::IN_FLIGHT)
            && let Some(sends) = self.sends.as_deref_mut()
        {
            // A send of this connection gathered in this call goes before our end.
            sends.submit();
        }
        let mut socket = Socket {
            stream: self.stream,
            ready: self.ready,
            quiet: self.quiet,
        };
        match self.layer.as_deref_mut() {
            Some(layer) => layer.shutdown_write(&mut socket),
            None => socket.stream.shutdown(Shutdown::Write),
        }
    }

    /// One liveness sweep of this connection: how many sweeps in a row, this one included,
    /// found that nothing had arrived from the peer since the sweep before — 0 when something
    /// did. Each read that returns data counts as hearing from the peer; nothing else is kept
    /// per connection (one byte of the reactor's entry, in what was padding) and no timer.
    ///
    /// A strand that pings its peer calls it on each sweep: 1 means "silent for a whole
    /// interval: ping", 2 "the ping got no answer within an interval: the peer is gone".
    ///
    /// ```
    /// fn sweep(io: &mut reactor::Io<'_, ()>) -> &'static str {
    ///     match io.silent_sweeps() {
    ///         0 => "heard from lately",
    ///         1 => "ping it",
    ///         _ => "gone",
    ///     }
    /// }
    /// ```
    pub fn silent_sweeps(&mut self) -> u8 {
        let quiet = *self.quiet;
        *self.quiet = if quiet & HEARD != 0 {
            0
        } else {
            (quiet + 1).min(!HEARD)
        };
        *self.quiet
    }

    /// Whether the peer has acknowledged every byte of data written to this socket (Linux
    /// `SIOCOUTQ` and `TCP_INFO`; always `false` elsewhere); our FIN, once
    /// [`shutdown_write`](Io::shutdown_write) sent it, may still be on its way (the kernel
    /// retransmits it after a close). A connection closed then, with nothing unread, loses
    /// nothing the peer was sent: what a linger checks before it closes early.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) -> reactor::Then {
    ///     if io.all_acknowledged() { reactor::Then::Close } else { reactor::Then::read() }
    /// }
    /// ```
    pub fn all_acknowledged(&self) -> bool {
        crate::sys::all_acknowledged(self.stream)
    }

    /// Whether a read may find something: false once a read found the socket drained and no
    /// readiness edge has come since (a read now would only answer [`Read::WouldBlock`]). A
    /// strand woken to write can skip that read.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     if io.read_ready() {
    ///         let _ = io.read();
    ///     }
    /// }
    /// ```
    pub fn read_ready(&self) -> bool {
        match self.layer.as_deref().and_then(|l| l.read_ready()) {
            Some(ready) => ready,
            None => self.ready.has(Flags::READ_READY),
        }
    }

    /// The connection's [`Output`].
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let _ = io.output().write(b"hello");
    /// }
    /// ```
    pub fn output(&mut self) -> Output<'_> {
        Output {
            socket: Socket {
                stream: self.stream,
                ready: self.ready,
                quiet: self.quiet,
            },
            layer: self.layer.as_deref_mut().map(|l| l as &mut dyn SocketLayer),
        }
    }

    /// Writes what the socket takes now; see [`Output::write`].
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let sent = io.write(b"hello").unwrap_or(0); // fewer: keep the rest, park on write
    ///     let _ = sent;
    /// }
    /// ```
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output().write(buf)
    }

    /// Writes `frame[from..]`, a frame shared with other connections (a room's message), as
    /// [`Io::write`] would. Where the worker gathers the sends of a pass through many
    /// connections (a publish reaching them, a liveness sweep; feature `io-uring`, Linux), it
    /// may instead keep a reference to the frame and hand it to the kernel with the other
    /// connections' sends at the end of the pass (one system call for all), and answer now
    /// that all of it was taken. What the socket then does not take comes back to the strand
    /// through [`Strand::unsent`](crate::Strand::unsent), to be written before anything queued
    /// since; until then every write to this connection takes nothing (as when its socket is
    /// full). A strand that calls this implements `unsent`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// fn demo(io: &mut reactor::Io<'_, ()>, frame: &Arc<[u8]>) {
    ///     let taken = io.send_shared(frame, 0).unwrap_or(0); // fewer: keep the rest, park on write
    ///     let _ = taken;
    /// }
    /// ```
    pub fn send_shared(&mut self, frame: &Arc<[u8]>, from: usize) -> io::Result<usize> {
        let Some(rest) = frame.get(from..) else {
            return Ok(0);
        };
        if self.layer.is_none()
            && !rest.is_empty()
            && self.ready.may_write()
            && let Some(sends) = self.sends.as_deref_mut()
            && sends.queue(self.stream.as_raw_fd(), self.id, frame, from)
        {
            self.ready.set(Flags::IN_FLIGHT);
            return Ok(rest.len());
        }
        self.write(rest)
    }

    /// Writes several buffers in one system call; see [`Output::write_vectored`].
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let parts = [std::io::IoSlice::new(b"head"), std::io::IoSlice::new(b"body")];
    ///     let _ = io.write_vectored(&parts);
    /// }
    /// ```
    pub fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.output().write_vectored(bufs)
    }

    /// The instant this loop turn started: one clock read per turn, shared by all strands.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let deadline = io.now() + std::time::Duration::from_secs(5);
    ///     let _ = deadline;
    /// }
    /// ```
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The deadline this connection is parked with now (`None` when no timer is armed), as the
    /// reactor keeps it: rounded up to the next [`TIMER_TICK`](crate::TIMER_TICK), never
    /// earlier than the one given. A strand that keeps no deadline of its own while idle reads
    /// it back here to park again with the same one.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) -> reactor::Then {
    ///     match io.deadline() {
    ///         Some(t) => reactor::Then::read().until(t),
    ///         None => reactor::Then::read(),
    ///     }
    /// }
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.timer
            .due()
            .map(|due| self.clock.tick_start(self.now, due))
    }

    /// This connection's id.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let id = io.id();
    ///     let _ = (id.worker(), id.key());
    /// }
    /// ```
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// The server's [`Remote`], to address other connections (broadcast) or start shutdown.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let remote = io.remote().clone(); // to address other connections
    ///     let _ = remote;
    /// }
    /// ```
    pub fn remote(&self) -> &Remote<M> {
        self.remote
    }

    /// The raw socket (socket options, peer address, ...). Reads and writes made directly on it
    /// bypass the reactor's readiness bookkeeping: a `WouldBlock` seen there is not recorded,
    /// which costs at most one extra resume.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let peer = io.stream().peer_addr();
    ///     let _ = peer;
    /// }
    /// ```
    pub fn stream(&mut self) -> &mut TcpStream {
        self.stream
    }

    /// Has the kernel fail the connection when data it sent stays unacknowledged for `after`
    /// (`TCP_USER_TIMEOUT`): a peer gone without a word is found within `after` even while
    /// output waits, where keep-alive probes never start. Linux only; elsewhere nothing is
    /// set.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let _ = io.give_up_unacknowledged_after(std::time::Duration::from_secs(60));
    /// }
    /// ```
    pub fn give_up_unacknowledged_after(&mut self, after: std::time::Duration) -> io::Result<()> {
        sys::give_up_unacknowledged_after(self.stream, after)
    }

    /// Has the kernel check the peer while the connection is silent (`SO_KEEPALIVE`), with no
    /// wakeup of the worker: after `silent` without a segment from the peer it sends a probe,
    /// then one every `silent`, and fails the connection (the strand then sees the error)
    /// after `probes` unanswered in a row. A peer's kernel answers probes, so this finds a
    /// peer that vanished (a host gone, a path cut, a NAT mapping lost), not one whose
    /// application hangs. Linux sets the timings (whole seconds, at least one); elsewhere
    /// only `SO_KEEPALIVE` is set, with the system's timings.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let _ = io.probe_when_silent(std::time::Duration::from_secs(15), 2);
    /// }
    /// ```
    pub fn probe_when_silent(
        &mut self,
        silent: std::time::Duration,
        probes: u32,
    ) -> io::Result<()> {
        sys::probe_when_silent(self.stream, silent, probes)
    }

    /// The size of the scratch buffer reads land in.
    ///
    /// ```
    /// fn demo(io: &mut reactor::Io<'_, ()>) {
    ///     let size = io.scratch_size();
    ///     assert!(size >= 512);
    /// }
    /// ```
    pub fn scratch_size(&self) -> usize {
        self.scratch.len()
    }
}

/// What one read of the socket (or a [`SocketLayer`]) gave: the count of bytes now at the front of
/// the buffer read into.
#[derive(Debug)]
pub enum Received {
    /// This many bytes, never 0.
    Data(usize),
    /// Nothing more until the next readiness.
    WouldBlock,
    /// The peer closed its side.
    Closed,
    /// The connection failed.
    Error(io::Error),
}

/// What stands between a connection's socket and its strand — TLS — set with [`Io::layered`].
/// The strand reads and writes through [`Io`] as usual; the layer turns what arrives into what
/// the strand reads and what the strand writes into what is sent, using the [`Socket`] it is
/// handed for the real reads and writes (which keep the reactor's readiness bookkeeping).
///
/// A layer that holds bytes it could not send yet must say so to whoever parks the strand
/// (it wants the socket writable); a layer keeps no buffer of its own while idle.
///
/// ```
/// use std::io::{self, IoSlice};
/// use reactor::{SocketLayer, Received, Socket};
///
/// /// Flips every byte both ways: a toy cipher.
/// struct Flip;
/// impl SocketLayer for Flip {
///     fn read(&mut self, socket: &mut Socket<'_>, into: &mut [u8]) -> Received {
///         let got = socket.recv(into);
///         if let Received::Data(n) = got {
///             into[..n].iter_mut().for_each(|b| *b = !*b);
///         }
///         got
///     }
///     fn write(&mut self, socket: &mut Socket<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
///         let Some(first) = bufs.iter().find(|b| !b.is_empty()) else { return Ok(0) };
///         let flipped: Vec<u8> = first.iter().map(|b| !b).collect();
///         socket.send(&flipped)
///     }
///     fn shutdown_write(&mut self, socket: &mut Socket<'_>) -> io::Result<()> {
///         socket.stream().shutdown(std::net::Shutdown::Write)
///     }
/// }
/// ```
pub trait SocketLayer {
    /// Reads what the peer sent and puts what the strand is to read at the front of `into`,
    /// up to its length. [`Received::WouldBlock`] once the socket is drained (and the layer
    /// holds nothing the strand could read), or when the layer yields to other connections
    /// with the socket marked ready ([`Socket::set_read_ready`]), so that the strand is
    /// resumed on the next turn; `Data` leaves the socket's readiness as [`Socket::recv`] left
    /// it, so that a strand reads again when more may be there.
    fn read(&mut self, socket: &mut Socket<'_>, into: &mut [u8]) -> Received;

    /// Takes what it can of `bufs` (in order) and answers how many bytes it took; 0 (or fewer
    /// than all) when the socket takes no more now, as [`Output::write`].
    fn write(&mut self, socket: &mut Socket<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize>;

    /// Ends our side: the layer's own goodbye, then the socket's write side.
    fn shutdown_write(&mut self, socket: &mut Socket<'_>) -> io::Result<()>;

    /// The application protocol the layer agreed with the peer (TLS's ALPN), if any.
    fn protocol(&self) -> Option<&[u8]> {
        None
    }

    /// Whether a read may find something, when the layer knows better than the socket (a
    /// stream's layer holds what its stream received): `None` leaves it to the socket's
    /// readiness.
    fn read_ready(&self) -> Option<bool> {
        None
    }
}

/// The socket as a [`SocketLayer`] uses it: reads and writes that keep the reactor's readiness
/// bookkeeping (and liveness: a read that returns data counts as hearing from the peer).
///
/// ```
/// fn pass_through(socket: &mut reactor::Socket<'_>, into: &mut [u8]) -> reactor::Received {
///     socket.recv(into)
/// }
/// ```
pub struct Socket<'a> {
    stream: &'a TcpStream,
    ready: &'a mut Flags,
    quiet: &'a mut u8,
}

impl Socket<'_> {
    /// One read into `buf`; see [`Read`] for what a short read means.
    ///
    /// ```
    /// fn demo(socket: &mut reactor::Socket<'_>) {
    ///     let mut buf = [0u8; 512];
    ///     let _ = socket.recv(&mut buf);
    /// }
    /// ```
    pub fn recv(&mut self, buf: &mut [u8]) -> Received {
        loop {
            match sys::recv(self.stream, buf) {
                Ok(0) => return Received::Closed,
                Ok(n) => {
                    *self.quiet |= HEARD;
                    if n < buf.len() && DRAINED_BY_SHORT_READ && !self.ready.has(Flags::READ_CLOSED)
                    {
                        // The read emptied the socket's receive queue: bytes arriving from now
                        // on raise a new readiness edge, so no read is owed before parking.
                        self.ready.clear(Flags::READ_READY);
                    } else {
                        // More may wait behind these bytes, and no edge would announce it.
                        self.ready.set(Flags::READ_READY);
                    }
                    return Received::Data(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready.clear(Flags::READ_READY);
                    return Received::WouldBlock;
                }
                Err(e) => return Received::Error(e),
            }
        }
    }

    /// Whether a read may find something (see [`Io::read_ready`]).
    ///
    /// ```
    /// fn demo(socket: &reactor::Socket<'_>) -> bool {
    ///     socket.read_ready()
    /// }
    /// ```
    pub fn read_ready(&self) -> bool {
        self.ready.has(Flags::READ_READY)
    }

    /// Marks the socket as possibly readable: a layer that stopped short of what it has
    /// buffered asks the strand to read again.
    ///
    /// ```
    /// fn demo(socket: &mut reactor::Socket<'_>) {
    ///     socket.set_read_ready();
    /// }
    /// ```
    pub fn set_read_ready(&mut self) {
        self.ready.set(Flags::READ_READY);
    }

    /// Whether the last send found the socket full and no writable edge came since: a send
    /// now would return `EAGAIN` (the socket is registered for both edges from the start, so
    /// the next one that frees room is never missed). A lagging peer then costs no system
    /// call per message. Also while a send of the worker's gathered sends is unanswered for
    /// it: that send comes first.
    fn write_blocked(&self) -> bool {
        !self.ready.may_write()
    }

    /// Sends what the socket takes now; see [`Output::write`].
    ///
    /// ```
    /// fn demo(socket: &mut reactor::Socket<'_>) {
    ///     let _ = socket.send(b"hello");
    /// }
    /// ```
    pub fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() || self.write_blocked() {
            return Ok(0);
        }
        loop {
            match sys::send(self.stream, buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready.clear(Flags::WRITE_READY);
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends several buffers in one system call (`writev`); see [`Output::write`].
    ///
    /// ```
    /// fn demo(socket: &mut reactor::Socket<'_>) {
    ///     let _ = socket.send_vectored(&[std::io::IoSlice::new(b"hi")]);
    /// }
    /// ```
    pub fn send_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if bufs.iter().all(|b| b.is_empty()) || self.write_blocked() {
            return Ok(0);
        }
        loop {
            match (&*self.stream).write_vectored(bufs) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready.clear(Flags::WRITE_READY);
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The socket itself (options, addresses, `shutdown`).
    ///
    /// ```
    /// fn demo(socket: &reactor::Socket<'_>) {
    ///     let _ = socket.stream().peer_addr();
    /// }
    /// ```
    pub fn stream(&self) -> &TcpStream {
        self.stream
    }
}

/// The writing half of [`Io`], usable while bytes from [`Io::read_split`] are borrowed.
///
/// ```
/// use reactor::{Io, Then};
/// fn flush(io: &mut Io<'_, ()>, pending: &mut Vec<u8>) -> Then {
///     match io.output().write(pending) {
///         Ok(n) => {
///             pending.drain(..n);
///             if pending.is_empty() {
///                 *pending = Vec::new(); // give the memory back: idle strands hold none
///                 Then::read()
///             } else {
///                 Then::write()
///             }
///         }
///         Err(_) => Then::Close,
///     }
/// }
/// ```
pub struct Output<'a> {
    socket: Socket<'a>,
    layer: Option<&'a mut (dyn SocketLayer + 'a)>,
}

impl Output<'_> {
    /// Writes what the socket takes now and returns how many bytes it took. A count short of
    /// `buf.len()` (0 included) means the socket's buffer is full: keep the rest and park on
    /// `write`. `WouldBlock` never comes back as an error; errors are real failures.
    ///
    /// ```
    /// fn demo(mut out: reactor::Output<'_>) {
    ///     let _ = out.write(b"hello");
    /// }
    /// ```
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.layer.as_deref_mut() {
            Some(layer) if !buf.is_empty() => layer.write(&mut self.socket, &[IoSlice::new(buf)]),
            Some(_) => Ok(0),
            None => self.socket.send(buf),
        }
    }

    /// Like [`Output::write`] for several buffers in one system call (`writev`).
    ///
    /// ```
    /// fn demo(mut out: reactor::Output<'_>) {
    ///     let _ = out.write_vectored(&[std::io::IoSlice::new(b"hi")]);
    /// }
    /// ```
    pub fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self.layer.as_deref_mut() {
            Some(layer) if bufs.iter().any(|b| !b.is_empty()) => {
                layer.write(&mut self.socket, bufs)
            }
            Some(_) => Ok(0),
            None => self.socket.send_vectored(bufs),
        }
    }
}
