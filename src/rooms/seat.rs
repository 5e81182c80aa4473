//! A connection's place in the rooms, as its callbacks see it — the same for a WebSocket and a
//! Server-Sent Events stream: joining (counted at once, entered in the worker's list behind the
//! publishes already queued), leaving, the rooms it is in.

use std::collections::HashMap;
use std::sync::Arc;

use reactor::ConnId;

use super::history::{Handed, Line};
use super::{Delivery, Joined, Rooms};

/// What a connection waits for in one room: the joins it queued ([`Delivery::Join`]) that
/// have not come back yet, and the fleet's history of the room (a join with history on a room
/// this instance did not follow: see `Rooms::join_recent`).
#[derive(Default)]
struct Queued {
    joins: u32,
    history: Option<Waiting>,
}

/// A join waiting for the fleet's history of its room: the connection is not counted in the
/// room until it comes ([`Delivery::History`] counts it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    /// Still wanted: the history is sent and the connection entered when it comes.
    Member,
    /// Left meanwhile: what comes is dropped (and uncounted).
    Left,
}

/// What a connection waits for, per room.
#[derive(Default)]
pub(crate) struct Joining(HashMap<Arc<str>, Queued>);

impl Joining {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn held_bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<(Arc<str>, Queued)>()
    }

    /// One join of `room` came back: whether it was the last one queued. Only the last join of
    /// a room enters the connection in its worker's list: a join before it was undone by a
    /// leave (joining a room one is in queues nothing), and the publishes queued between the
    /// two are not for this connection.
    fn back(&mut self, room: &str) -> bool {
        let Some(queued) = self.0.get_mut(room) else {
            return false; // no join of ours: nothing to enter
        };
        queued.joins = queued.joins.saturating_sub(1);
        let last = queued.joins == 0;
        self.forget_if_done(room);
        last
    }

    /// Whether the connection waits for `room`'s history (and so is not counted in it).
    pub(crate) fn waits_history(&self, room: &str) -> bool {
        self.0.get(room).is_some_and(|q| q.history.is_some())
    }

    fn set_history(&mut self, room: &Arc<str>, waiting: Waiting) {
        self.0.entry(Arc::clone(room)).or_default().history = Some(waiting);
    }

    /// `room`'s history came: whether the connection still wants it.
    fn history_back(&mut self, room: &str) -> bool {
        let Some(queued) = self.0.get_mut(room) else {
            return false;
        };
        let wanted = queued.history.take() == Some(Waiting::Member);
        self.forget_if_done(room);
        wanted
    }

    fn forget_if_done(&mut self, room: &str) {
        if self
            .0
            .get(room)
            .is_some_and(|q| q.joins == 0 && q.history.is_none())
        {
            self.0.remove(room);
        }
        if self.0.is_empty() {
            self.0 = HashMap::new();
        }
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

/// A room's history came to a connection (on its worker) that waited for it: `send` is handed
/// each line and the connection enters the room (counted already), if it still wants it;
/// else what came is dropped, and the count with it.
pub(crate) fn history_back(
    joining: Option<&mut Joining>,
    joined: &Joined,
    came: &Handed,
    mut send: impl FnMut(&Line),
) {
    let Some(came) = came.take() else {
        return;
    };
    let wanted = joining.is_some_and(|j| j.history_back(&came.seated.room));
    if wanted && joined.contains(&came.seated.room) {
        for line in &came.lines {
            send(line);
        }
        came.seated.enter();
    }
}

/// The connection ends: it leaves every room it is counted in (not those whose history it
/// still waits for: it was never counted there).
pub(crate) fn leave_all(joined: &mut Joined, joining: Option<&Joining>, rooms: &Rooms, id: ConnId) {
    for room in joined.take() {
        if !joining.is_some_and(|j| j.waits_history(&room)) {
            rooms.leave(&room, id);
        }
    }
}

/// One connection's rooms, borrowed for a callback.
pub(crate) struct Seat<'a> {
    pub(crate) id: ConnId,
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
        if self.rejoin_waiting(room) {
            return true;
        }
        let name = self.rooms.count_in(room, self.id.worker());
        self.joined.push(Arc::clone(&name));
        // Entered in the worker's list behind what is already queued for the worker.
        if self
            .rooms
            .to_conn(self.id, Delivery::Join(Arc::clone(&name)))
        {
            self.joining.0.entry(name).or_default().joins += 1;
        } else {
            self.rooms.join_local(&name, self.id);
        }
        true
    }

    /// Whether [`try_join`](Seat::try_join) would make the connection a member of `room`.
    pub(crate) fn may_join(&self, room: &str) -> bool {
        self.joined.contains(room) || self.joined.len() < self.max_rooms
    }

    /// Leaves `room` at once (no effect if not a member). A room whose history the connection
    /// waits for is left when it comes (it was never counted there).
    pub(crate) fn leave(&mut self, room: &str) {
        if !self.joined.remove(room) {
            return;
        }
        match self.joining.0.get_mut(room) {
            Some(Queued {
                history: Some(waiting),
                ..
            }) => *waiting = Waiting::Left,
            _ => self.rooms.leave(room, self.id),
        }
    }

    /// A member (to be) of `room` once the fleet's history of it comes: in the connection's
    /// rooms now, counted when it comes.
    pub(crate) fn wait_for_history(&mut self, room: Arc<str>) {
        self.joining.set_history(&room, Waiting::Member);
        self.joined.push(room);
    }

    /// `room` was left while its history was on its way: wanted again (no second read).
    fn rejoin_waiting(&mut self, room: &str) -> bool {
        let Some((name, queued)) = self.joining.0.get_key_value(room) else {
            return false;
        };
        if queued.history != Some(Waiting::Left) {
            return false;
        }
        let name = Arc::clone(name);
        self.wait_for_history(name);
        true
    }

    /// Joins `room` with its recent messages after `after`, handed to `send` (see
    /// `Rooms::join_recent`): whether the connection is a member now (or will be once the
    /// fleet's history of the room comes).
    pub(crate) fn join_after(
        &mut self,
        room: &str,
        after: u64,
        send: &mut dyn FnMut(&Line),
    ) -> bool {
        if !self.may_join(room) {
            return false;
        }
        if self.rejoin_waiting(room) {
            return true;
        }
        let rooms = self.rooms;
        rooms.join_recent(room, after, self, send)
    }

    pub(crate) fn joined(&self) -> impl Iterator<Item = &str> {
        self.joined.iter().map(|r| &**r)
    }
}
