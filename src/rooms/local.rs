//! One worker's members of each room, on the worker's own thread: what a publish reaching the
//! worker fans out to, without a lock.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use reactor::ConnId;

/// The worker has no connection left: its table of rooms gives its memory back.
pub(super) fn forget_worker_rooms() {
    let _ = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.rooms.is_empty() {
            l.rooms = HashMap::new();
        }
    });
}

/// Makes `id` (a connection of the calling worker thread) receive what its worker fans out
/// for `room` from now on.
pub(super) fn join(room: &Arc<str>, id: ConnId) {
    LOCAL.with(|local| local.borrow_mut().join(room, id));
}

/// Takes `id` out of this worker's list of `room`.
pub(super) fn leave(room: &str, id: ConnId) {
    // During a worker thread's teardown the thread-local may be gone: nothing to fan out to.
    let _ = LOCAL.try_with(|local| local.borrow_mut().leave(room, id));
}

/// The ids of this worker's members of `room` (what a publish fans out to).
pub(crate) fn local_members(room: &str, to: &mut Vec<ConnId>) {
    LOCAL.with(|local| match local.borrow().rooms.get(room) {
        Some(Members::One(id)) => to.push(*id),
        Some(Members::Many(members)) => {
            to.reserve_exact(members.len());
            to.extend(members.iter().copied());
        }
        None => {}
    });
}

thread_local! {
    /// The members of each room on this worker thread.
    static LOCAL: RefCell<LocalRooms> = RefCell::new(LocalRooms::default());
}

/// One worker's members of each room: a set per room (joining and leaving cost O(1), also when
/// thousands leave at once; a publish walks the set; about 14 to 28 bytes a member).
#[derive(Default)]
struct LocalRooms {
    rooms: HashMap<Arc<str>, Members>,
}

/// One room's members on this worker. A room of one member — a room per customer, per
/// device — holds it in place: no set, no allocation of its own; a larger room's set is boxed,
/// so that every room's entry in the table stays small.
enum Members {
    One(ConnId),
    #[allow(clippy::box_collection)] // the box is the point: see above
    Many(Box<HashSet<ConnId>>),
}

impl LocalRooms {
    /// Adds `id`; `false` when it was a member already.
    fn join(&mut self, room: &Arc<str>, id: ConnId) -> bool {
        let Some(members) = self.rooms.get_mut(&**room) else {
            self.rooms.insert(Arc::clone(room), Members::One(id));
            return true;
        };
        match members {
            Members::One(one) if *one == id => false,
            Members::One(one) => {
                *members = Members::Many(Box::new(HashSet::from([*one, id])));
                true
            }
            Members::Many(set) => set.insert(id),
        }
    }

    fn leave(&mut self, room: &str, id: ConnId) -> bool {
        let Some(members) = self.rooms.get_mut(room) else {
            return false;
        };
        let set = match members {
            Members::One(one) if *one == id => {
                // The last member left: the room's memory goes back.
                self.rooms.remove(room);
                return true;
            }
            Members::One(_) => return false,
            Members::Many(set) => set,
        };
        if !set.remove(&id) {
            return false;
        }
        match set.len() {
            0 => {
                self.rooms.remove(room);
            }
            1 => {
                let last = set.iter().copied().next();
                if let Some(last) = last {
                    *members = Members::One(last);
                }
            }
            n if set.capacity() > 4 * n.max(16) => {
                // Most left: what they took goes back too.
                set.shrink_to_fit();
            }
            _ => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(key: u32) -> ConnId {
        ConnId::from_parts(0, key, 0)
    }

    #[test]
    fn local_rooms_join_leave_and_list_members() {
        let mut local = LocalRooms::default();
        let a: Arc<str> = "a".into();
        assert!(local.join(&a, id(1)));
        assert!(!local.join(&a, id(1)), "already a member");
        assert!(local.join(&a, id(2)));
        assert!(local.join(&a, id(3)));
        assert!(local.leave("a", id(1)));
        assert!(!local.leave("a", id(1)));
        let mut ids = Vec::new();
        LOCAL.with(|l| *l.borrow_mut() = std::mem::take(&mut local));
        local_members("a", &mut ids);
        LOCAL.with(|l| local = std::mem::take(&mut *l.borrow_mut()));
        ids.sort_by_key(|i| i.key());
        assert_eq!(ids, [id(2), id(3)]);
        assert!(local.leave("a", id(2)) && local.leave("a", id(3)));
        assert!(local.rooms.is_empty(), "an empty room is forgotten");
    }

    #[test]
    fn many_leaving_at_once_leave_the_rest_and_give_memory_back() {
        let mut local = LocalRooms::default();
        let r: Arc<str> = "r".into();
        for k in 0..1000 {
            local.join(&r, id(k));
        }
        let capacity = |local: &LocalRooms| match &local.rooms["r"] {
            Members::Many(set) => set.capacity(),
            Members::One(_) => 1,
        };
        let grown = capacity(&local);
        for k in (0..1000).filter(|k| k % 50 != 0) {
            assert!(local.leave("r", id(k)));
        }
        let Members::Many(room) = &local.rooms["r"] else {
            panic!("twenty members left");
        };
        let mut left: Vec<u32> = room.iter().map(|i| i.key()).collect();
        left.sort();
        assert_eq!(left, (0..1000).step_by(50).collect::<Vec<u32>>());
        assert!(
            room.capacity() * 4 < grown,
            "{} of {grown} kept",
            room.capacity()
        );
        for k in (50..1000).step_by(50) {
            assert!(local.leave("r", id(k)));
        }
        assert!(
            matches!(local.rooms["r"], Members::One(last) if last == id(0)),
            "the one left is held in place"
        );
        assert!(local.join(&r, id(7)) && !local.join(&r, id(7)) && !local.join(&r, id(0)));
        assert!(local.leave("r", id(0)) && local.leave("r", id(7)));
        assert!(local.rooms.is_empty());
    }
}
