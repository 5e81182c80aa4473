//! The loop of one resume of an HTTP connection, whatever its version: write what is owed,
//! drop a peer that owes more than its share, let the connection do what it can without
//! reading, read, take what was read — within one turn's bounds — and then park or linger.
//!
//! The order of those steps and the bounds of a turn are written here once; what each step
//! means is the version's own ([`HttpConnection`]): HTTP/1.1 (`http_strand.rs`) answers
//! requests in order and holds back what follows a deferred reply or a large body; HTTP/2
//! (`h2_strand/`) takes frames, steps its live streams and shares the windows among held
//! replies.

use reactor::{Io, Read, Then};

use std::time::Instant;

use crate::live::{Command, DRAIN_LINGER, drop_unread, linger_until};

use super::shared::ServerShared;

/// Reads one resume makes before letting the worker's other connections run.
const READS_PER_TURN: usize = 16;

/// Steps of one resume, at most: each step reads, or does work the connection had left
/// (answers held back, frames kept, live streams' output). Past it the connection yields to
/// the worker's others and is resumed next turn.
const STEPS_PER_TURN: usize = 4 * READS_PER_TURN + 4;

/// What a connection does next, once what could be written was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Go {
    /// Read more.
    Read,
    /// It did work without reading (what that came to is looked at, see
    /// [`HttpConnection::taken`]): round again.
    Again,
    /// Park: for room to write what is owed, and for the peer's bytes if `read`.
    Park { read: bool },
    /// Our side is done: shut it and linger.
    Linger,
}

/// One HTTP connection as the loop drives it: each method is one step's decision.
pub(crate) trait HttpConnection {
    /// What taking read bytes needs of [`Io`] while its scratch buffer is borrowed, and what
    /// taking them came to, until [`HttpConnection::taken`] looks at it.
    type Taking;

    /// Made once per resume.
    fn taking(&mut self, io: &mut Io<'_, Command>) -> Self::Taking;

    /// Writes what is owed; whether all of it is written (`progressed` is set if anything
    /// went).
    fn flush(&mut self, io: &mut Io<'_, Command>, progressed: &mut bool) -> std::io::Result<bool>;

    /// Charges what is owed to the server's output budget and says whether the peer owes more
    /// than its share while the budget is spent (it is then closed).
    fn owes_too_much(&mut self) -> bool;

    /// What to do, now that what could be written was (`flushed`: all of it).
    fn next(
        &mut self,
        io: &mut Io<'_, Command>,
        taking: &mut Self::Taking,
        flushed: bool,
        progressed: &mut bool,
    ) -> Go;

    /// Takes bytes just read.
    fn take(&mut self, taking: &mut Self::Taking, bytes: &[u8]);

    /// After bytes were taken, or work was done without reading: whether the connection
    /// leaves the loop (and how).
    fn taken(&mut self, io: &mut Io<'_, Command>, taking: &mut Self::Taking) -> Option<Then>;

    /// The peer shut its side: whether the connection closes at once (`None`: what is owed
    /// is still written).
    fn peer_closed(&mut self) -> Option<Then>;

    /// The socket holds nothing more to read.
    fn drained(&mut self, io: &mut Io<'_, Command>, progressed: bool) -> Then;

    /// Parks for room to write what is owed, and for the peer's bytes if `read`.
    fn park(&mut self, io: &mut Io<'_, Command>, progressed: bool, read: bool) -> Then;

    /// Shuts our side and lingers, dropping what the peer still sends.
    fn linger(&mut self, io: &mut Io<'_, Command>) -> Then;
}

/// Runs one resume of `conn`.
pub(crate) fn run<C: HttpConnection>(conn: &mut C, io: &mut Io<'_, Command>) -> Then {
    let mut progressed = false;
    let mut reads = 0;
    // Whether the last read drained the socket (see `reactor::Read`).
    let mut drained = false;
    let mut taking = conn.taking(io);
    for _ in 0..STEPS_PER_TURN {
        let flushed = match conn.flush(io, &mut progressed) {
            Err(_) => return Then::Close,
            Ok(flushed) => flushed,
        };
        if conn.owes_too_much() {
            return Then::Close;
        }
        match conn.next(io, &mut taking, flushed, &mut progressed) {
            Go::Read => {}
            Go::Again => match conn.taken(io, &mut taking) {
                Some(then) => return then,
                None => continue,
            },
            Go::Park { read } => return conn.park(io, progressed, read),
            Go::Linger => return conn.linger(io),
        }
        if drained {
            // The last read emptied the socket (a short read proves it): a new arrival
            // raises a new edge, so no read is owed before parking.
            return conn.drained(io, progressed);
        }
        if reads == READS_PER_TURN {
            break;
        }
        reads += 1;
        match io.read() {
            Read::Data(bytes) => {
                progressed = true;
                conn.take(&mut taking, bytes);
                drained = !io.read_ready();
            }
            Read::WouldBlock => return conn.drained(io, progressed),
            Read::Closed => {
                if let Some(then) = conn.peer_closed() {
                    return then;
                }
            }
            Read::Error(e) => {
                crate::log::debug!(error = e; "an HTTP connection's read failed");
                return Then::Close;
            }
        }
        if let Some(then) = conn.taken(io, &mut taking) {
            return then;
        }
    }
    // The turn's share is spent with work or bytes left: marked ready, the connection is
    // resumed next turn, after the worker's others (no event would come for what it holds).
    io.socket().set_read_ready();
    conn.park(io, progressed, true)
}

/// Shuts our side as a connection begins to linger; the linger's end (`None` if the shutdown
/// failed: the connection closes): the server's linger time from now, `DRAIN_LINGER` at most
/// while it stops.
pub(crate) fn begin_linger(io: &mut Io<'_, Command>, shared: &ServerShared) -> Option<Instant> {
    io.shutdown_write().ok()?;
    let linger = match shared.shutting_down() {
        true => shared.limits.linger.min(DRAIN_LINGER),
        false => shared.limits.linger,
    };
    Some(io.now() + linger)
}

/// Lingering until `end`: what the peer still sends is read and dropped until it closes (see
/// `live::linger_until`).
pub(crate) fn linger(io: &mut Io<'_, Command>, end: Instant) -> Then {
    match drop_unread(io) {
        true => linger_until(io, end),
        false => Then::Close,
    }
}
