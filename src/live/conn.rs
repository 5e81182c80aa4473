//! A connection the server pushes to — a WebSocket, an event stream — as the server's slab
//! entry holds it, whatever its application: what the reactor asks of it, the server's settings
//! it is made with, and writing its output out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reactor::{ConnId, Io, Read, Then};

use super::budget::OutputBudget;
use super::command::Command;
use super::outbox::{Outbox, WRITE_PIECES};
use crate::rooms::Rooms;

/// Unsent output beyond which a connection is closed as a peer that does not read (a WebSocket with
/// 1008, an event stream at once).
pub const WS_MAX_BACKLOG: usize = 16 * 1024 * 1024;

/// Default time a WebSocket peer has to answer our close frame before the connection is
/// closed anyway ([`Server::close_timeout`](crate::http::Server::close_timeout)): at a graceful
/// stop, the longest a stop waits for peers that do not answer (they are waited for together,
/// not one after another; a stop whose peers all answer returns as soon as they have).
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection the server pushes to, as the server's slab entry holds it, whatever its
/// application: `WsStrand` (WebSocket) or `SseStrand` (Server-Sent Events) for each handler
/// type, behind one pointer.
pub(crate) trait LiveConn: Send {
    /// Opens: the application's `open`, then the bytes that came with the upgrade request.
    /// `out` is what the connection still owes the peer (the 101 among it).
    fn start(&mut self, io: &mut Io<'_, Command>, out: Vec<u8>, early: &[u8]) -> Then;
    fn resume(&mut self, io: &mut Io<'_, Command>, timeout: bool) -> Then;
    fn message(&mut self, io: &mut Io<'_, Command>, cmd: Command) -> Then;
    fn drain(&mut self, io: &mut Io<'_, Command>) -> Then;
    /// What a gathered send of `frame` (see [`write_out`]) did not take, from `from` on: owed
    /// first.
    fn unsent(&mut self, io: &mut Io<'_, Command>, frame: Arc<[u8]>, from: usize) -> Then;
    /// The connection left the reactor: it leaves its rooms and the application gets its state
    /// back, if neither happened yet.
    fn closed(&mut self, id: ConnId);
    fn held_bytes(&self) -> usize;
    /// Whether it only sends (an event stream): what its peer sends is read and dropped, and
    /// the end of what its peer sends — an HTTP/2 request's END_STREAM, which a `GET` has at
    /// once — is not its end (a TCP connection's end still is).
    fn sends_only(&self) -> bool {
        false
    }
    /// Whether a message to every connection of the worker is for this one (see
    /// [`Command::Heartbeat`]).
    fn wants(&self, msg: &Command) -> bool {
        let _ = msg;
        false
    }
}

/// What every live connection of a server is made with (the same for every route).
#[derive(Clone)]
pub(crate) struct LiveSettings {
    /// Most rooms one connection may be in.
    pub(crate) max_rooms: usize,
    /// The output queued for all connections of the server, and its limit.
    pub(crate) budget: Arc<OutputBudget>,
    pub(crate) timeouts: Timeouts,
    pub(crate) rooms: Rooms,
    /// Open WebSocket connections of the server.
    pub(crate) open: Arc<std::sync::atomic::AtomicUsize>,
    /// Open Server-Sent Events streams of the server.
    pub(crate) streams: Arc<std::sync::atomic::AtomicUsize>,
    /// The liveness interval ([`Server::ping_interval`](crate::http::Server::ping_interval)).
    pub(crate) ping_interval: Option<Duration>,
    /// WebSocket peers' liveness is left to the kernel's keep-alive probes, not pings
    /// ([`Server::liveness`](crate::http::Server::liveness)).
    pub(crate) kernel_liveness: bool,
    /// How handler calls that hold their worker are counted (the server's, shared with HTTP).
    pub(crate) stalls: Arc<super::Stalls>,
}

/// Writes what `out` holds until the socket takes no more: `Ok(true)` when all of it went.
///
/// A shared frame owed alone (a room's message to an idle member) may be `gather`ed: sent by
/// the worker with other connections' at the end of its pass ([`Io::send_shared`]); what the
/// socket does not take then comes back through [`LiveConn::unsent`]. A strand about to end
/// its side once all is written does not gather (its end would overtake the send).
pub(crate) fn write_out(
    out: &mut Outbox,
    io: &mut Io<'_, Command>,
    progressed: &mut bool,
    gather: bool,
) -> std::io::Result<bool> {
    while out.pending() > 0 {
        let n = match out.lone_shared() {
            Some((frame, at)) if gather => io.send_shared(frame, at)?,
            _ => {
                let mut slices = [std::io::IoSlice::new(&[]); WRITE_PIECES];
                let pieces = out.unsent(&mut slices);
                match &slices[..pieces] {
                    [one] => io.write(one)?,
                    many => io.write_vectored(many)?,
                }
            }
        };
        if n == 0 {
            return Ok(false);
        }
        *progressed = true;
        out.advance(n);
    }
    Ok(true)
}

/// A shared frame for an idle connection (`idle`: nothing owed, no busy part) when it is the
/// only message of the worker's turn ([`Io::alone_in_turn`]): nothing would join it at the end
/// of the turn, so it goes now (or to the worker's gathered sends), and the connection stays
/// idle — no busy part, no second resume. `None` when it went whole; otherwise the frame and
/// what of it went, for the connection to queue the rest (`Outbox::put_back_shared`) or, when
/// it is not to be sent now, all of it (`Some((frame, 0))`, queued as usual by the caller).
pub(crate) fn send_alone(
    idle: bool,
    io: &mut Io<'_, Command>,
    frame: Arc<[u8]>,
) -> Option<(Arc<[u8]>, usize)> {
    if !idle || !io.alone_in_turn() {
        return Some((frame, 0));
    }
    let sent = io.send_shared(&frame, 0).unwrap_or(0);
    (sent < frame.len()).then_some((frame, sent))
}

/// The server's timeouts a live connection applies, kept in its busy part so that they
/// outlive the application's side (the close frame is written after the application was told).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// How long the socket may take no output.
    pub(crate) write: Duration,
    /// How long the peer has to answer our close frame.
    pub(crate) close: Duration,
    /// How long a closed connection reads and drops what the peer still sends.
    pub(crate) linger: Duration,
}

/// How long a connection waits for its peer's goodbye while the server stops, at most: the
/// answer to our close frame, the peer's end after ours.
pub(crate) const DRAIN_LINGER: Duration = Duration::from_millis(250);

impl Timeouts {
    /// The timeouts that apply now: while the server stops (`stopping`), a peer's goodbye is
    /// waited for `DRAIN_LINGER` at most.
    pub(crate) fn now(self, stopping: bool) -> Timeouts {
        if !stopping {
            return self;
        }
        Timeouts {
            close: self.close.min(DRAIN_LINGER),
            linger: self.linger.min(DRAIN_LINGER),
            ..self
        }
    }
}

/// Reads a turn's worth at most.
const UNREAD_PER_TURN: usize = 16;

/// After our end: reads and drops what the peer still sends, a turn's worth at most (the rest
/// raises readiness again); `false` once it has closed its side or the read failed, when the
/// connection is to close. One rule for every strand that lingers.
pub(crate) fn drop_unread(io: &mut Io<'_, Command>) -> bool {
    for _ in 0..UNREAD_PER_TURN {
        match io.read() {
            Read::Data(_) => continue,
            Read::WouldBlock => return true,
            Read::Closed | Read::Error(_) => return false,
        }
    }
    true
}

/// After our end, with nothing unread: reads (and drops) what the peer still sends until it
/// closes, or until `end`. While the server stops, closed as soon as the peer has acknowledged
/// all the data it was sent (it has it all: closing loses nothing of ours), looked at again
/// each timer tick. (Not otherwise: a peer still sending after our end — a request pipelined
/// behind a close, a client writing past a WebSocket limit — would get a reset that can
/// destroy the last reply unread in its buffer.)
pub(crate) fn linger_until(io: &Io<'_, Command>, end: Instant) -> Then {
    let now = io.now();
    if now >= end {
        return Then::Close;
    }
    if !io.remote().is_shutting_down() {
        return Then::read().until(end);
    }
    if io.all_acknowledged() {
        return Then::Close;
    }
    Then::read().until(end.min(now + reactor::TIMER_TICK))
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            write: crate::http::WRITE_TIMEOUT,
            close: CLOSE_TIMEOUT,
            linger: crate::http::LINGER,
        }
    }
}
