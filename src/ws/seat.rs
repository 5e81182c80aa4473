//! A connection's place in the rooms, as its callbacks see it — the same for a WebSocket and a
//! Server-Sent Events stream: joining (counted at once, entered in the worker's list behind the
//! publishes already queued), leaving, the rooms it is in.

use std::collections::HashMap;
use std::sync::Arc;

use reactor::{ConnId, Remote};

use super::app::WsCommand;
use super::rooms::{Joined, Rooms};

/// The joins a connection queued ([`WsCommand::Join`]) that have not come back yet, per room.
#[derive(Default)]
pub(crate) struct Joining(HashMap<Arc<str>, u32>);

impl Joining {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn held_bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<(Arc<str>, u32)>()
    }

    /// One join of `room` came back: whether it was the last one queued. Only the last join of
    /// a room enters the connection in its worker's list: a join before it was undone by a
    /// leave (joining a room one is in queues nothing), and the publishes queued between the
    /// two are not for this connection.
    fn back(&mut self, room: &str) -> bool {
        let Some(queued) = self.0.get_mut(room) else {
            return false; // no join of ours: nothing to enter
        };
        *queued -= 1;
        if *queued > 0 {
            return false;
        }
        self.0.remove(room);
        if self.0.is_empty() {
            self.0 = HashMap::new();
        }
        true
    }
}

/// A join came back to connection `id` (on its worker): entered in the worker's list of the
/// room if it was the connection's last join of it and the connection is still a member.
pub(crate) fn join_back(
    joining: Option<&mut Joining>,
    joined: &Joined,
    rooms: &Rooms,
    room: &Arc<str>,
    id: ConnId,
) {
    let last = joining.is_some_and(|j| j.back(room));
    if last && joined.contains(room) {
        rooms.join_local(room, id);
    }
}

/// One connection's rooms, borrowed for a callback.
pub(crate) struct Seat<'a> {
    pub(crate) id: ConnId,
    pub(crate) remote: &'a Remote<WsCommand>,
    pub(crate) rooms: &'a Rooms,
    pub(crate) joined: &'a mut Joined,
    pub(crate) joining: &'a mut Joining,
    /// Most rooms this connection may be in.
    pub(crate) max_rooms: usize,
}

impl Seat<'_> {
    /// Joins `room`; whether the connection is a member now (`false` only when it is in
    /// `max_rooms` rooms and `room` is not one of them).
    pub(crate) fn try_join(&mut self, room: &str) -> bool {
        if self.joined.contains(room) {
            return true;
        }
        if self.joined.len() >= self.max_rooms {
            return false;
        }
        let name = self.rooms.count_in(room, self.id.worker());
        self.joined.push(Arc::clone(&name));
        // Entered in the worker's list behind what is already queued for the worker.
        if self
            .remote
            .send(self.id, WsCommand::Join(Arc::clone(&name)))
        {
            *self.joining.0.entry(name).or_insert(0) += 1;
        } else {
            self.rooms.join_local(&name, self.id);
        }
        true
    }

    /// Whether [`try_join`](Seat::try_join) would make the connection a member of `room`.
    pub(crate) fn may_join(&self, room: &str) -> bool {
        self.joined.contains(room) || self.joined.len() < self.max_rooms
    }

    /// Leaves `room` at once (no effect if not a member).
    pub(crate) fn leave(&mut self, room: &str) {
        if self.joined.remove(room) {
            self.rooms.leave(room, self.id);
        }
    }

    pub(crate) fn joined(&self) -> impl Iterator<Item = &str> {
        self.joined.iter().map(|r| &**r)
    }
}
