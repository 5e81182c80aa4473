//! What a WebSocket connection still owes its peer: a queue of pieces, each either bytes of the
//! connection's own or a frame shared with every other recipient, held without a copy.
//!
//! A frame published to a room is encoded once ([`Arc<[u8]>`](Arc)); each member's outbox
//! holds a reference to it, whatever else is queued before it, so a room's burst costs each
//! member a reference per frame, not a copy. Frames shorter than [`SHARE_MIN`] queued behind
//! others are copied instead (a copy costs less than a piece). The first piece is kept inline,
//! so a connection owed one frame allocates nothing for it. Written pieces are dropped as the peer takes them,
//! and a piece partly written is never appended to, so an outbox holds what is owed and no more
//! (a peer that reads slowly but steadily does not make it grow). What an outbox holds is
//! charged to the server's [`OutputBudget`].

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;

use super::budget::{self, Charge, OutputBudget};

/// Shared frames shorter than this are copied into the connection's own bytes.
const SHARE_MIN: usize = 256;

/// Pieces one write hands the socket at most.
pub(crate) const WRITE_PIECES: usize = 64;

/// One queued piece.
enum Piece {
    Own(Vec<u8>),
    /// A message's payload handed over whole, never appended to (appending could move it).
    Taken(Vec<u8>),
    /// A shared frame, and whether it is charged to the budget (see [`Outbox::reconcile`]).
    Shared(Arc<[u8]>, bool),
}

impl Piece {
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Own(buf) | Piece::Taken(buf) => buf,
            Piece::Shared(frame, _) => frame,
        }
    }
}

/// A queue of pieces whose first is kept inline: a connection owed one piece (the common
/// case: one frame of a room, written at the end of the turn) allocates nothing for the queue.
#[derive(Default)]
struct Pieces {
    first: Option<Piece>,
    /// The pieces after `first` (empty while `first` is `None`).
    rest: VecDeque<Piece>,
}

impl Pieces {
    fn push_back(&mut self, piece: Piece) {
        if self.first.is_none() {
            self.first = Some(piece);
        } else {
            self.rest.push_back(piece);
        }
    }

    fn push_front(&mut self, piece: Piece) {
        if let Some(first) = self.first.replace(piece) {
            self.rest.push_front(first);
        }
    }

    fn pop_front(&mut self) -> Option<Piece> {
        let front = self.first.take();
        self.first = self.rest.pop_front();
        front
    }

    fn pop_back(&mut self) -> Option<Piece> {
        self.rest.pop_back().or_else(|| self.first.take())
    }

    fn front(&self) -> Option<&Piece> {
        self.first.as_ref()
    }

    fn back(&self) -> Option<&Piece> {
        self.rest.back().or(self.first.as_ref())
    }

    fn back_mut(&mut self) -> Option<&mut Piece> {
        match self.rest.back_mut() {
            Some(back) => Some(back),
            None => self.first.as_mut(),
        }
    }

    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    fn iter(&self) -> impl Iterator<Item = &Piece> {
        self.first.iter().chain(self.rest.iter())
    }

    /// The pieces from the `from`th on (the first is the 0th), found in constant time.
    fn iter_mut_from(&mut self, from: usize) -> impl Iterator<Item = &mut Piece> {
        let rest_from = from.saturating_sub(1).min(self.rest.len());
        let first = self.first.iter_mut().take(usize::from(from == 0));
        first.chain(self.rest.range_mut(rest_from..))
    }

    /// Heap bytes of the queue itself.
    fn held_bytes(&self) -> usize {
        self.rest.capacity() * std::mem::size_of::<Piece>()
    }
}

/// Unsent output of one connection.
pub(crate) struct Outbox {
    pieces: Pieces,
    /// Bytes of the front piece already written.
    at: usize,
    /// Bytes owed: the pieces' lengths less `at`.
    pending: usize,
    /// Capacity of the own pieces.
    own_capacity: usize,
    /// What this outbox's own part is charged to the budget now (shared frames are charged
    /// per worker, see [`budget::hold`]).
    charge: Charge,
    /// How many pieces from the front [`Outbox::reconcile`] has seen: the ones behind them are
    /// new, so a reconcile visits each piece once however long the queue (a member far behind
    /// costs the same per message as one that is not).
    seen: usize,
    budget: Arc<OutputBudget>,
    /// Pieces [`Outbox::reconcile`] has visited, all told (what the tests bound).
    #[cfg(test)]
    visited: usize,
}

impl Outbox {
    pub(crate) fn new(budget: Arc<OutputBudget>) -> Outbox {
        Outbox {
            pieces: Pieces::default(),
            at: 0,
            pending: 0,
            own_capacity: 0,
            charge: Charge::default(),
            seen: 0,
            budget,
            #[cfg(test)]
            visited: 0,
        }
    }

    /// Bytes not yet written.
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    /// Whether the peer is so far behind that its connection is to be dropped: owed more than
    /// [`WS_MAX_BACKLOG`](super::conn::WS_MAX_BACKLOG), or more than its share while the server's
    /// output budget is spent (counted then as a connection dropped for falling behind).
    pub(crate) fn falls_behind(&self) -> bool {
        let behind = self.pending > super::conn::WS_MAX_BACKLOG || self.budget.sheds(self.pending);
        if behind {
            self.budget.dropped_one();
            crate::log::info!(owed_bytes = self.pending; "a live connection closed: its peer fell behind");
        }
        behind
    }

    /// Heap bytes held by this connection alone (a shared frame is the publisher's).
    pub(crate) fn held_bytes(&self) -> usize {
        self.own_capacity + self.pieces.held_bytes()
    }

    /// Queues bytes of the connection's own (what the upgrade left to write, say).
    pub(crate) fn push_own(&mut self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        self.pending += bytes.len();
        self.own_capacity += bytes.capacity();
        self.pieces.push_back(Piece::Own(bytes));
    }

    /// Queues a message's payload as it is, without a copy (its frame head written before it).
    pub(crate) fn push_taken(&mut self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        self.pending += bytes.len();
        self.own_capacity += bytes.capacity();
        self.pieces.push_back(Piece::Taken(bytes));
    }

    /// Queues a shared frame: by reference, or copied behind what is queued when it is short.
    pub(crate) fn push_shared(&mut self, frame: &Arc<[u8]>) {
        if frame.len() < SHARE_MIN && self.pending > 0 {
            self.write(|buf| buf.extend_from_slice(frame));
            return;
        }
        self.pending += frame.len();
        self.pieces
            .push_back(Piece::Shared(Arc::clone(frame), false));
    }

    /// Puts back, first, what a gathered send of `frame` did not take (from `from` on): owed
    /// before anything queued since. Nothing of the outbox was written meanwhile (its writes
    /// wait for the send's answer), so no piece is partly written.
    pub(crate) fn put_back_shared(&mut self, frame: Arc<[u8]>, from: usize) {
        let rest = frame.len().saturating_sub(from);
        if rest == 0 {
            return;
        }
        debug_assert_eq!(
            self.at, 0,
            "no piece is written while a gathered send is out"
        );
        self.pieces.push_front(Piece::Shared(frame, false));
        self.at = from;
        self.pending += rest;
        // The budget looks at every piece again (the one put back is not charged yet).
        self.seen = 0;
    }

    /// What is owed when it is one shared frame alone, and where its unsent part starts: what
    /// a publish leaves an idle connection, which the worker may send with others'
    /// ([`Io::send_shared`](reactor::Io::send_shared)).
    pub(crate) fn lone_shared(&self) -> Option<(&Arc<[u8]>, usize)> {
        match &self.pieces.first {
            Some(Piece::Shared(frame, _)) if self.pieces.rest.is_empty() => Some((frame, self.at)),
            _ => None,
        }
    }

    /// Appends bytes of the connection's own with `f` (a frame written into the buffer), after
    /// what is queued.
    pub(crate) fn write(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let was = self.pending;
        // The last piece takes more only if it is the connection's own and not being written.
        let appendable = matches!(self.pieces.back(), Some(Piece::Own(_)))
            && (self.pieces.len() > 1 || self.at == 0);
        if !appendable {
            self.pieces.push_back(Piece::Own(Vec::new()));
        }
        if let Some(Piece::Own(buf)) = self.pieces.back_mut() {
            let (len, capacity) = (buf.len(), buf.capacity());
            f(buf);
            self.pending += buf.len() - len;
            self.own_capacity = self.own_capacity - capacity + buf.capacity();
        }
        if self.pending == was && self.pieces.back().is_some_and(|p| p.bytes().is_empty()) {
            self.pieces.pop_back();
            self.seen = self.seen.min(self.pieces.len());
        }
    }

    /// The unsent bytes, as slices for one vectored write (at most [`WRITE_PIECES`]); answers
    /// how many of `slices` it filled.
    pub(crate) fn unsent<'a>(&'a self, slices: &mut [IoSlice<'a>; WRITE_PIECES]) -> usize {
        let mut n = 0;
        for (i, piece) in self.pieces.iter().take(WRITE_PIECES).enumerate() {
            let bytes = piece.bytes();
            slices[i] = IoSlice::new(if i == 0 { &bytes[self.at..] } else { bytes });
            n += 1;
        }
        n
    }

    /// `n` more bytes were written: the pieces written whole are dropped.
    pub(crate) fn advance(&mut self, mut n: usize) {
        self.pending -= n.min(self.pending);
        while n > 0 {
            let Some(front) = self.pieces.front() else {
                break;
            };
            let left = front.bytes().len() - self.at;
            if n < left {
                self.at += n;
                break;
            }
            n -= left;
            self.at = 0;
            self.drop_front();
        }
        if self.pieces.is_empty() {
            // Written: an idle connection keeps no buffer and no frame.
            self.pieces = Pieces::default();
            self.at = 0;
        }
    }

    fn drop_front(&mut self) {
        self.seen = self.seen.saturating_sub(1);
        match self.pieces.pop_front() {
            Some(Piece::Own(buf) | Piece::Taken(buf)) => self.own_capacity -= buf.capacity(),
            Some(Piece::Shared(frame, true)) => budget::release(&self.budget, &frame),
            Some(Piece::Shared(_, false)) => {}
            None => {}
        }
    }

    /// Brings the budget up to date with what this outbox holds: called after each attempt to
    /// write (what a turn queues and writes whole never touches the budget's shared counters;
    /// what stays is charged then: its own part, and each shared frame not yet held).
    pub(crate) fn reconcile(&mut self) {
        if self.pending > 0 {
            for piece in self.pieces.iter_mut_from(self.seen) {
                #[cfg(test)]
                {
                    self.visited += 1;
                }
                if let Piece::Shared(frame, held @ false) = piece {
                    budget::hold(&self.budget, frame);
                    *held = true;
                }
            }
            self.seen = self.pieces.len();
        }
        let cost = self.held_bytes();
        self.charge.set(&self.budget, cost, self.pending > 0);
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        // The shared frames leave the worker's table; the charge gives the rest back.
        while !self.pieces.is_empty() {
            self.drop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(bytes: &[u8]) -> Arc<[u8]> {
        bytes.to_vec().into()
    }

    fn outbox() -> (Outbox, Arc<OutputBudget>) {
        let budget = OutputBudget::new(usize::MAX);
        (Outbox::new(Arc::clone(&budget)), budget)
    }

    fn unsent(out: &Outbox) -> Vec<u8> {
        let mut slices = [IoSlice::new(&[]); WRITE_PIECES];
        let n = out.unsent(&mut slices);
        slices[..n].iter().flat_map(|s| s.to_vec()).collect()
    }

    #[test]
    fn a_taken_payload_is_queued_without_a_copy_and_never_appended_to() {
        let (mut out, _budget) = outbox();
        let payload = vec![5u8; 4000];
        let at = payload.as_ptr();
        out.write(|b| b.extend_from_slice(b"head"));
        out.push_taken(payload);
        out.write(|b| b.extend_from_slice(b"next"));
        let mut slices = [IoSlice::new(&[]); WRITE_PIECES];
        assert_eq!(
            out.unsent(&mut slices),
            3,
            "head, the payload as it was, then what followed"
        );
        assert_eq!(slices[1].as_ptr(), at);
        assert_eq!(slices[1].len(), 4000);
        assert_eq!(out.pending(), 4008);
        out.advance(4008);
        assert_eq!((out.pending(), out.held_bytes()), (0, 0));
    }

    #[test]
    fn a_shared_frame_is_held_by_reference_whatever_is_queued_then_released() {
        let frame = shared(&[7; 300]);
        let (mut out, budget) = outbox();
        out.write(|b| b.extend_from_slice(b"own"));
        out.push_shared(&frame);
        out.push_shared(&frame);
        assert_eq!(Arc::strong_count(&frame), 3, "held, not copied");
        assert_eq!(out.pending(), 603);
        assert_eq!(budget.used(), 0, "nothing charged before a write attempt");
        out.reconcile();
        let charged = 300 + out.held_bytes();
        assert_eq!(budget.used(), charged, "the frame charged once");
        out.advance(3 + 300 + 100);
        out.reconcile();
        assert_eq!(Arc::strong_count(&frame), 2);
        assert_eq!(budget.used(), 300 + out.held_bytes(), "still held once");
        assert_eq!(unsent(&out), vec![7; 200]);
        out.advance(200);
        out.reconcile();
        assert_eq!(Arc::strong_count(&frame), 1, "released once written");
        assert_eq!((out.pending(), out.held_bytes(), budget.used()), (0, 0, 0));
    }

    #[test]
    fn one_frame_owed_costs_no_allocation_whatever_its_size() {
        for len in [1, SHARE_MIN - 1, SHARE_MIN, 70_000] {
            let frame = shared(&vec![3; len]);
            let (mut out, budget) = outbox();
            out.push_shared(&frame);
            assert_eq!(Arc::strong_count(&frame), 2, "{len}: held by reference");
            assert_eq!(
                out.held_bytes(),
                0,
                "{len}: nothing allocated for the queue"
            );
            out.reconcile();
            assert_eq!(budget.used(), len, "{len}: the frame charged once");
            out.advance(len);
            out.reconcile();
            assert_eq!((out.pending(), budget.used()), (0, 0));
            // Written whole before any reconcile: the budget's counters are never touched.
            out.push_shared(&frame);
            out.advance(len);
            out.reconcile();
            assert_eq!(budget.used(), 0);
        }
    }

    #[test]
    fn pieces_queue_in_order_whatever_came_first() {
        let big = [b'x'; SHARE_MIN];
        // (what is queued, in order: "own" is the connection's own, the rest shared)
        let cases: [&[&[u8]]; 5] = [
            &[b"ab", b"cd"],
            &[b"ab", b"own", b"cd"],
            &[b"own", &big, b"ab"],
            &[&big, b"own", &big],
            &[b"ab"],
        ];
        for parts in cases {
            let (mut out, _) = outbox();
            for part in parts {
                if *part == b"own" {
                    out.write(|b| b.extend_from_slice(part));
                } else {
                    out.push_shared(&shared(part));
                }
            }
            assert_eq!(unsent(&out), parts.concat(), "{parts:?}");
            assert_eq!(out.pending(), parts.concat().len());
        }
    }

    #[test]
    fn a_reader_that_lags_steadily_holds_only_what_is_owed() {
        // Output arrives as fast as it is taken, the peer always a little behind: what is held
        // follows what is owed, not what was ever written.
        let (mut out, budget) = outbox();
        for _ in 0..10_000 {
            out.write(|b| b.extend_from_slice(&[1; 1000]));
            let owed = out.pending();
            out.advance(owed.saturating_sub(5000).min(1000));
            out.reconcile();
            assert!(out.pending() <= 6000);
            assert!(out.held_bytes() <= 4 * 6000 + 1024, "{}", out.held_bytes());
        }
        drop(out);
        assert_eq!(budget.used(), 0);
    }

    /// A member far behind is handed one message at a time, each followed by a reconcile (what
    /// the strand does for a peer that is behind): the work is one visit per piece, not one per
    /// piece queued for every message (the quadratic cost of a lagging member).
    #[test]
    fn a_member_far_behind_costs_one_visit_per_queued_piece() {
        let (mut out, budget) = outbox();
        let frames: Vec<Arc<[u8]>> = (0..4).map(|i| shared(&[i; SHARE_MIN + 44])).collect();
        let n = 20_000;
        for i in 0..n {
            out.push_shared(&frames[i % frames.len()]);
            if i % 7 == 0 {
                out.write(|b| b.extend_from_slice(b"own bytes"));
            }
            if i % 1000 == 999 {
                // The peer takes a little now and then, some of it in the middle of a piece.
                out.advance(SHARE_MIN * 150 + 17);
            }
            out.reconcile();
        }
        assert!(
            out.visited <= 2 * n,
            "{} visits for {n} messages",
            out.visited
        );
        assert!(budget.used() >= 4 * (SHARE_MIN + 44), "every frame held");
        let owed = out.pending();
        out.advance(owed);
        out.reconcile();
        drop(out);
        assert_eq!(budget.used(), 0);
        assert!(frames.iter().all(|f| Arc::strong_count(f) == 1));
    }

    #[test]
    fn a_dropped_outbox_gives_back_everything_it_was_charged() {
        let budget = OutputBudget::new(usize::MAX);
        let frame = shared(&[1; 1000]);
        let mut a = Outbox::new(Arc::clone(&budget));
        let mut b = Outbox::new(Arc::clone(&budget));
        a.push_shared(&frame);
        b.push_shared(&frame);
        b.write(|buf| buf.extend_from_slice(&[2; 100]));
        a.reconcile();
        b.reconcile();
        assert!(budget.used() >= 1100);
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
        assert_eq!(Arc::strong_count(&frame), 1);
    }
}
