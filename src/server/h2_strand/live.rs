//! Live connections on HTTP/2 streams: an event stream, or a WebSocket opened by RFC 8441's
//! extended CONNECT, carried by one stream each — many on one connection.
//!
//! Each is the same [`LiveConn`] an HTTP/1.1 connection becomes (the same handlers, rooms,
//! history, budgets, pings, close handshake), run with a view of the connection
//! ([`Io::substream`]) whose reads are what its stream received and whose writes become its
//! stream's DATA frames, as the windows allow. Its id is the connection's with the stream
//! ([`ConnId::with_stream`](reactor::ConnId::with_stream)): the rooms, `WsSender` and
//! `SseSender` address it as they address a connection, and the reactor hands what they send
//! to this connection's strand, which reads the stream from [`Io::addressed`].

use std::io::{self, IoSlice};
use std::time::Instant;

use reactor::{Io, Received, Socket, SocketLayer, Then};

use crate::h2::conn::{Conn, OUTPUT_HIGH};
use crate::h2::error::ErrorCode;
use crate::live::{Command, LiveConn};

use super::work::{Work, work_at};
use super::{H2Strand, logged};
use crate::server::shared::ServerShared;

/// A live connection on a stream: the connection alone (16 bytes in its stream's work). What
/// it has while it has something to do is kept beside, in its connection's [`Busy`] list.
pub(super) struct Live(Box<dyn LiveConn>);

impl Live {
    pub(super) fn new(conn: Box<dyn LiveConn>) -> Live {
        Live(conn)
    }

    pub(super) fn held_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.0) + self.0.held_bytes()
    }

    /// The stream ended after its start: it leaves its rooms and its application is told,
    /// once.
    fn ended(&mut self, id: reactor::ConnId) {
        self.0.closed(id);
    }

    /// Whether the peer's END_STREAM ends what it reads (a WebSocket's stream, as a TCP
    /// connection's FIN would); an event stream's request ends its side at once, and only the
    /// stream's end or reset ends the event stream.
    pub(super) fn reads_to_end(&self) -> bool {
        !self.0.sends_only()
    }

    pub(super) fn wants(&self, msg: &Command) -> bool {
        self.0.wants(msg)
    }
}

/// What a live stream keeps while it has something to do, in its connection's list (a stream
/// with none is idle: started, nothing unread, no deadline, not waiting to write).
#[derive(Default)]
pub(super) struct Busy {
    /// What the peer sent on the stream that the connection has not read yet: bounded by the
    /// stream's window, which reopens only as it is read ([`Conn::consumed`]).
    inbound: Vec<u8>,
    /// When it is to be resumed with a timeout.
    pub(super) deadline: Option<Instant>,
    /// Not started yet (its `start` is to run).
    fresh: bool,
    /// It parked waiting to write (the windows, or the connection's output).
    writing: bool,
    /// The peer ended its side where that ends what it reads: it is to read its end.
    ended: bool,
}

impl Busy {
    /// A live stream just accepted, with what its stream received so far.
    pub(super) fn fresh(early: Vec<u8>) -> Busy {
        Busy {
            inbound: early,
            fresh: true,
            ..Busy::default()
        }
    }

    fn is_idle(&self) -> bool {
        self.inbound.is_empty()
            && self.deadline.is_none()
            && !self.fresh
            && !self.writing
            && !self.ended
    }

    pub(super) fn held_bytes(&self) -> usize {
        self.inbound.capacity()
    }
}

/// The peer sent `data` on live stream `stream` (`end`: its side ended, where that ends what
/// the stream reads): kept for the stream to read.
pub(super) fn received(busy: &mut Vec<(u32, Busy)>, stream: u32, data: &[u8], end: bool) {
    if data.is_empty() && !end {
        return;
    }
    let b = busy_of(busy, stream);
    b.inbound.extend_from_slice(data);
    b.ended |= end;
}

/// `stream`'s entry in `busy`, made if it had none (the list is in stream order: found by
/// halving).
fn busy_of(busy: &mut Vec<(u32, Busy)>, stream: u32) -> &mut Busy {
    let at = match busy.binary_search_by_key(&stream, |(id, _)| *id) {
        Ok(at) => at,
        Err(at) => {
            busy.insert(at, (stream, Busy::default()));
            at
        }
    };
    &mut busy[at].1
}

/// Where `stream`'s entry is in `busy`, if it has one.
pub(super) fn busy_at(busy: &[(u32, Busy)], stream: u32) -> Option<usize> {
    busy.binary_search_by_key(&stream, |(id, _)| *id).ok()
}

/// A live stream just accepted, with what its stream received so far: in `busy` to be started.
pub(super) fn accepted(busy: &mut Vec<(u32, Busy)>, stream: u32, early: Vec<u8>) {
    *busy_of(busy, stream) = Busy::fresh(early);
}

/// Live stream `id` is gone with its stream (reset) or its connection: it leaves its rooms
/// and its application is told — if it started. One accepted whose `start` is still to run
/// (both came in one read) opened nothing, was counted nowhere and joined no room: it is
/// dropped as it is, and its application's `close` never runs without its `open`.
pub(super) fn gone(busy: &mut Vec<(u32, Busy)>, live: &mut Live, id: reactor::ConnId) {
    let stream = id.stream();
    if !busy_at(busy, stream).is_some_and(|at| busy[at].1.fresh) {
        live.ended(id);
    }
    forget(busy, stream);
}

/// `stream` is gone: its entry too (and the list, once empty).
pub(super) fn forget(busy: &mut Vec<(u32, Busy)>, stream: u32) {
    if let Some(at) = busy_at(busy, stream) {
        busy.remove(at);
    }
    if busy.is_empty() {
        *busy = Vec::new();
    }
}

/// What a live stream is asked to do.
pub(super) enum Step {
    /// Resume it: a timeout if its deadline passed, else to read or write what it can.
    Resume { timeout: bool },
    /// A message sent to it.
    Message(Command),
    /// The server stops.
    Drain,
}

/// A stream as its live connection reads and writes it: reads take what the stream received
/// (reopening its window), writes become DATA frames as far as the windows allow and the
/// connection's output is not past [`OUTPUT_HIGH`], and ending our side is END_STREAM.
struct StreamLayer<'a> {
    conn: &'a mut Conn,
    out: &'a mut Vec<u8>,
    /// Bytes of `out` already written to the socket.
    written: usize,
    stream: u32,
    /// What the stream received and its connection has not read (`None`: nothing).
    inbound: Option<&'a mut Vec<u8>>,
    ended: bool,
}

impl StreamLayer<'_> {
    fn unread(&self) -> bool {
        self.inbound.as_ref().is_some_and(|i| !i.is_empty())
    }
}

impl SocketLayer for StreamLayer<'_> {
    fn read(&mut self, _socket: &mut Socket<'_>, into: &mut [u8]) -> Received {
        let Some(inbound) = self.inbound.as_deref_mut().filter(|i| !i.is_empty()) else {
            return match self.ended || !self.conn.is_open(self.stream) {
                true => Received::Closed,
                false => Received::WouldBlock,
            };
        };
        let n = into.len().min(inbound.len());
        into[..n].copy_from_slice(&inbound[..n]);
        inbound.drain(..n);
        self.conn.consumed(self.stream, inbound.len(), self.out);
        Received::Data(n)
    }

    fn write(&mut self, _socket: &mut Socket<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if !self.conn.is_open(self.stream) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let mut took = 0;
        for buf in bufs {
            if self.out.len() - self.written >= OUTPUT_HIGH {
                break;
            }
            let n = self.conn.send_data(self.stream, buf, false, self.out);
            took += n;
            if n < buf.len() {
                break;
            }
        }
        Ok(took)
    }

    fn shutdown_write(&mut self, _socket: &mut Socket<'_>) -> io::Result<()> {
        self.conn.send_data(self.stream, &[], true, self.out);
        Ok(())
    }

    fn read_ready(&self) -> Option<bool> {
        Some(self.unread() || self.ended || !self.conn.is_open(self.stream))
    }
}

impl H2Strand {
    /// Runs `step` on the live stream at `at`, then keeps what it parked with — or, if it
    /// ended, forgets it (resetting its stream with CANCEL if neither side had ended it).
    pub(super) fn step_live(
        &mut self,
        shared: &ServerShared,
        io: &mut Io<'_, Command>,
        at: usize,
        step: Step,
    ) {
        let H2Strand {
            conn,
            out,
            written,
            work,
            busy,
            ..
        } = self;
        let Some((stream, Work::Live(live))) = work.get_mut(at) else {
            return;
        };
        let stream = *stream;
        let mut entry = busy_at(busy, stream).map(|at| &mut busy[at].1);
        let fresh = entry.as_deref_mut().is_some_and(|b| {
            let fresh = b.fresh;
            b.fresh = false;
            fresh
        });
        let ended = live.reads_to_end() && conn.peer_ended(stream);
        let mut layer = StreamLayer {
            conn,
            out,
            written: *written,
            stream,
            ended,
            inbound: entry.map(|b| &mut b.inbound),
        };
        let mut sub = io.substream(stream, &mut layer);
        let conn = &mut live.0;
        let mut next = if !fresh {
            match step {
                Step::Resume { timeout } => conn.resume(&mut sub, timeout),
                Step::Message(cmd) => conn.message(&mut sub, cmd),
                Step::Drain => conn.drain(&mut sub),
            }
        } else {
            let next = conn.start(&mut sub, Vec::new(), &[]);
            match step {
                Step::Drain => conn.drain(&mut sub),
                _ => next,
            }
        };
        if let Then::Park { write: true, .. } = next {
            // What it queued is written now (framed into the connection's output, which the
            // connection writes once for all its streams), as the reactor resumes a
            // connection whose message left output.
            next = conn.resume(&mut sub, false);
        }
        match next {
            Then::Park {
                write, deadline, ..
            } => {
                if deadline.is_some() || write || busy_at(busy, stream).is_some() {
                    let b = busy_of(busy, stream);
                    b.deadline = deadline;
                    b.writing = write;
                    b.ended = false; // read (a stream that read its end closed)
                    if b.is_idle() {
                        forget(busy, stream); // an idle stream holds nothing but its connection
                    }
                }
            }
            Then::Close | Then::Release(_) => {
                let id = io.id().with_stream(stream);
                live.ended(id);
                self.work.remove(at);
                forget(&mut self.busy, stream);
                // Ended by both sides, the stream is gone already; else it is not wanted.
                self.conn.cancel(stream, ErrorCode::Cancel, &mut self.out);
                logged(shared, io.id(), stream);
            }
        }
    }

    /// Starts the live streams just accepted and resumes those with something to do: what
    /// their stream received, or output to write once the windows and the connection's
    /// output allow.
    pub(super) fn live_turn(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) {
        let room = self.out.len() - self.written < OUTPUT_HIGH / 2;
        let wake_writers = std::mem::take(&mut self.wake_writers) && room;
        let due: Vec<u32> = self
            .busy
            .iter()
            .filter(|(_, b)| {
                b.fresh || !b.inbound.is_empty() || b.ended || (b.writing && wake_writers)
            })
            .map(|(id, _)| *id)
            .collect();
        for stream in due {
            if let Some(at) = self.live_at(stream) {
                self.step_live(shared, io, at, Step::Resume { timeout: false });
            }
        }
    }

    /// A message for live stream `stream`: only its part of what the connection holds
    /// changes, and is brought up to date.
    pub(super) fn live_to_one(
        &mut self,
        shared: &ServerShared,
        io: &mut Io<'_, Command>,
        stream: u32,
        cmd: Command,
    ) {
        let before = self.held_by(stream);
        if let Some(at) = self.live_at(stream) {
            self.step_live(shared, io, at, Step::Message(cmd));
        }
        let after = self.held_by(stream);
        self.held = (self.held + after).saturating_sub(before);
    }

    /// A message addressed to the connection, for each live stream that wants it (a
    /// heartbeat; a liveness sweep, taken once for the connection).
    pub(super) fn live_to_all(
        &mut self,
        shared: &ServerShared,
        io: &mut Io<'_, Command>,
        cmd: Command,
    ) {
        let cmd = match cmd {
            Command::Sweep => Command::Swept(io.silent_sweeps()),
            other => other,
        };
        for stream in self.live_streams(|live| live.wants(&cmd)) {
            if let Some(at) = self.live_at(stream) {
                self.step_live(shared, io, at, Step::Message(cmd.clone()));
            }
        }
    }

    /// When the live stream `stream` is next to be resumed, if it keeps a deadline.
    pub(super) fn live_deadline(&self, stream: u32) -> Option<Instant> {
        busy_at(&self.busy, stream).and_then(|at| self.busy[at].1.deadline)
    }

    /// The server stops: each live stream ends as it would alone (an event stream at once, a
    /// WebSocket with its close handshake).
    pub(super) fn drain_live(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) {
        for stream in self.live_streams(|_| true) {
            if let Some(at) = self.live_at(stream) {
                self.step_live(shared, io, at, Step::Drain);
            }
        }
    }

    /// Live streams whose deadline passed are resumed with a timeout.
    pub(super) fn live_timeouts(&mut self, shared: &ServerShared, io: &mut Io<'_, Command>) {
        let now = io.now();
        let late: Vec<u32> = self
            .busy
            .iter()
            .filter(|(_, b)| b.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for stream in late {
            if let Some(at) = self.live_at(stream) {
                self.step_live(shared, io, at, Step::Resume { timeout: true });
            }
        }
    }

    /// Whether a message to every connection of the worker is for one of the live streams.
    pub(crate) fn wants(&self, msg: &Command) -> bool {
        self.work.iter().any(|(_, w)| match w {
            Work::Live(live) => live.wants(msg),
            _ => false,
        })
    }

    /// The live streams `which` picks (an id list: stepping one may end it).
    fn live_streams(&self, which: impl Fn(&Live) -> bool) -> Vec<u32> {
        self.work
            .iter()
            .filter_map(|(id, w)| match w {
                Work::Live(live) if which(live) => Some(*id),
                _ => None,
            })
            .collect()
    }

    /// Where live stream `stream` is in the work list: found by halving, the list being in
    /// stream order (streams are pushed as the peer opens them, and a peer opens them in
    /// increasing order, RFC 9113 §5.1.1; entries leave without moving the rest) — a publish
    /// to many streams of one connection costs each a search, not a walk.
    fn live_at(&self, stream: u32) -> Option<usize> {
        let at = work_at((&self.work, &self.work_index), stream)?;
        matches!(self.work[at].1, Work::Live(_)).then_some(at)
    }
}
