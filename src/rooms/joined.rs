//! The rooms one connection is in, as its strand holds them: one pointer, a list shared with
//! the worker's other connections in the same rooms while it is short.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The rooms one connection is in: one pointer, null while in none. A short list (up to
/// [`SHARED_ROOMS`] rooms, in the order joined) is shared by every connection of the worker in
/// the same rooms (a thousand members of one room hold one list between them); a longer one is
/// the connection's own, with an index, so that joining and leaving cost O(1) however many
/// rooms a connection is in. Held by the connection (its strand), to leave its rooms when it
/// ends.
#[derive(Default)]
pub(crate) struct Joined(Option<Arc<RoomList>>);

/// Rooms up to which a connection's list is shared with the others in the same rooms.
const SHARED_ROOMS: usize = 8;

/// A list of rooms: shared (interned) while short; past [`SHARED_ROOMS`], one connection's own
/// with each room's position in `index`.
#[derive(Default)]
struct RoomList {
    rooms: Vec<Arc<str>>,
    /// `None` for a shared list (boxed: a shared list, one per set of rooms joined, is most
    /// of them, and holds a pointer where the map would take six).
    #[allow(clippy::box_collection)] // the box is the point: see above
    index: Option<Box<Index>>,
}

/// A long list's index: each room's place in it.
type Index = HashMap<Arc<str>, usize>;

/// A shared list as the table keeps it: found by its rooms.
struct Interned(Arc<RoomList>);

impl PartialEq for Interned {
    fn eq(&self, other: &Interned) -> bool {
        self.0.rooms == other.0.rooms
    }
}

impl Eq for Interned {}

impl std::hash::Hash for Interned {
    fn hash<S: std::hash::Hasher>(&self, state: &mut S) {
        // As the slice hashes, so that a lookup by `[Arc<str>]` finds it.
        self.0.rooms[..].hash(state);
    }
}

impl std::borrow::Borrow<[Arc<str>]> for Interned {
    fn borrow(&self) -> &[Arc<str>] {
        &self.0.rooms
    }
}

thread_local! {
    /// The short room lists of this worker's connections, each kept once.
    static LISTS: RefCell<HashSet<Interned>> = RefCell::new(HashSet::new());
}

/// The shared list equal to `rooms` (made and kept if none is).
fn intern(mut rooms: Vec<Arc<str>>) -> Arc<RoomList> {
    let found = LISTS.try_with(|lists| lists.borrow().get(&rooms[..]).map(|l| Arc::clone(&l.0)));
    if let Ok(Some(list)) = found {
        return list;
    }
    rooms.shrink_to_fit();
    let list = Arc::new(RoomList { rooms, index: None });
    let _ = LISTS.try_with(|lists| lists.borrow_mut().insert(Interned(Arc::clone(&list))));
    list
}

/// Lets go of one holder's `list`; the last connection holding a shared list takes it out of
/// the table.
fn release(list: Arc<RoomList>) {
    let _ = LISTS.try_with(|lists| {
        let mut lists = lists.borrow_mut();
        let kept = lists
            .get(&list.rooms[..])
            .is_some_and(|l| Arc::ptr_eq(&l.0, &list));
        // Held by the table and by us alone (every holder lives on this thread).
        if kept && Arc::strong_count(&list) == 2 {
            lists.remove(&list.rooms[..]);
        }
    });
}

impl Joined {
    /// The rooms (in the order joined while they are few).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<str>> {
        self.0.as_deref().into_iter().flat_map(|l| l.rooms.iter())
    }

    /// How many rooms.
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |l| l.rooms.len())
    }

    pub(crate) fn contains(&self, room: &str) -> bool {
        match self.0.as_deref() {
            None => false,
            Some(RoomList { index: None, rooms }) => rooms.iter().any(|r| &**r == room),
            Some(RoomList {
                index: Some(index), ..
            }) => index.contains_key(room),
        }
    }

    /// Adds `room` (the caller checked it is not in).
    pub(crate) fn push(&mut self, room: Arc<str>) {
        if let Some((rooms, index)) = self.own() {
            index.insert(Arc::clone(&room), rooms.len());
            rooms.push(room);
            return;
        }
        let mut rooms: Vec<Arc<str>> = self.iter().cloned().collect();
        rooms.push(room);
        self.set(rooms);
    }

    /// Takes `room` out; `false` when it was not in.
    pub(crate) fn remove(&mut self, room: &str) -> bool {
        if !self.contains(room) {
            return false;
        }
        if let Some((rooms, index)) = self.own() {
            if let Some(at) = index.remove(room) {
                rooms.swap_remove(at);
                if let Some(moved) = rooms.get(at) {
                    index.insert(Arc::clone(moved), at);
                }
            }
            if rooms.len() > SHARED_ROOMS {
                return true;
            }
        }
        let rooms: Vec<Arc<str>> = self.iter().filter(|r| &***r != room).cloned().collect();
        self.set(rooms);
        true
    }

    /// Takes every room out.
    pub(crate) fn take(&mut self) -> Vec<Arc<str>> {
        let rooms = self.iter().cloned().collect();
        self.set(Vec::new());
        rooms
    }

    /// The connection's own list and its index, when it is long enough to be one.
    fn own(&mut self) -> Option<(&mut Vec<Arc<str>>, &mut Index)> {
        let list = Arc::get_mut(self.0.as_mut()?)?;
        Some((&mut list.rooms, list.index.as_deref_mut()?))
    }

    fn set(&mut self, rooms: Vec<Arc<str>>) {
        let new = match rooms.len() {
            0 => None,
            n if n <= SHARED_ROOMS => Some(intern(rooms)),
            _ => {
                let index = rooms
                    .iter()
                    .enumerate()
                    .map(|(at, room)| (Arc::clone(room), at))
                    .collect();
                Some(Arc::new(RoomList {
                    rooms,
                    index: Some(Box::new(index)),
                }))
            }
        };
        if let Some(old) = std::mem::replace(&mut self.0, new) {
            release(old);
        }
    }

    /// Heap bytes held for the list: none of its own while it is shared (the names are the
    /// registry's); a long list's vector and index.
    pub(crate) fn held_bytes(&self) -> usize {
        match self.0.as_deref() {
            Some(RoomList {
                rooms,
                index: Some(index),
            }) => {
                rooms.capacity() * std::mem::size_of::<Arc<str>>()
                    + std::mem::size_of::<Index>()
                    + index.capacity() * std::mem::size_of::<(Arc<str>, usize, u64)>()
            }
            _ => 0,
        }
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        if let Some(list) = self.0.take() {
            release(list);
        }
    }
}

/// The worker has no connection left: its table of shared room lists gives its memory back.
pub(super) fn forget_worker_lists() {
    let _ = LISTS.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.is_empty() {
            *l = HashSet::new();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_s_rooms_join_leave_and_take_in_every_shape() {
        assert_eq!(
            std::mem::size_of::<Joined>(),
            8,
            "one pointer in the strand"
        );
        let mut joined = Joined::default();
        assert!(!joined.remove("a"));
        joined.push("a".into());
        assert!(joined.contains("a") && !joined.contains("b"));
        joined.push("b".into());
        joined.push("c".into());
        let names = |j: &Joined| j.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&joined), ["a", "b", "c"]);
        assert!(joined.remove("b") && !joined.remove("b"));
        assert!(joined.remove("a"));
        assert_eq!(names(&joined), ["c"]);
        assert!(!joined.remove("x"));
        assert!(joined.remove("c"));
        assert!(names(&joined).is_empty());
        joined.push("d".into());
        joined.push("e".into());
        let taken: Vec<String> = joined.take().iter().map(|r| r.to_string()).collect();
        assert_eq!(taken, ["d", "e"]);
        assert!(names(&joined).is_empty());
        assert_eq!(joined.held_bytes(), 0);
    }

    /// Connections in the same rooms share one list, and the last one to let go of a list
    /// takes it out of the worker's table.
    #[test]
    fn a_long_list_is_the_connection_s_own_and_changes_in_place() {
        let mut joined = Joined::default();
        let names: Vec<Arc<str>> = (0..5000).map(|i| format!("room-{i}").into()).collect();
        for (i, name) in names.iter().enumerate() {
            let before = joined.0.as_ref().map(Arc::as_ptr);
            joined.push(Arc::clone(name));
            if i > SHARED_ROOMS {
                // Past the shared size the list is changed where it is: no copy per join.
                assert_eq!(
                    joined.0.as_ref().map(Arc::as_ptr),
                    before,
                    "join {i} copied"
                );
            }
        }
        assert_eq!(joined.len(), 5000);
        assert!(names.iter().all(|n| joined.contains(n)));
        assert!(!joined.contains("room-5000"));
        assert!(joined.held_bytes() > 0);
        // Leave every other room, in place; the index stays right for the rest.
        let before = joined.0.as_ref().map(Arc::as_ptr);
        for name in names.iter().step_by(2) {
            assert!(joined.remove(name));
            assert!(!joined.remove(name));
        }
        assert_eq!(joined.0.as_ref().map(Arc::as_ptr), before, "leaving copied");
        assert_eq!(joined.len(), 2500);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(joined.contains(name), i % 2 == 1, "{name}");
        }
        // Down to the shared size: shared again, with the others in the same rooms.
        let rest: Vec<Arc<str>> = names.iter().skip(1).step_by(2).cloned().collect();
        for name in &rest[SHARED_ROOMS..] {
            assert!(joined.remove(name));
        }
        assert_eq!(joined.len(), SHARED_ROOMS);
        assert_eq!(joined.held_bytes(), 0, "shared again");
        let mut other = Joined::default();
        for name in joined.iter().cloned().collect::<Vec<_>>() {
            other.push(name);
        }
        assert!(Arc::ptr_eq(
            joined.0.as_ref().unwrap(),
            other.0.as_ref().unwrap()
        ));
        let mut sorted: Vec<_> = joined.take();
        sorted.sort();
        let mut want = rest[..SHARED_ROOMS].to_vec();
        want.sort();
        assert_eq!(sorted, want);
    }

    #[test]
    fn connections_in_the_same_rooms_share_one_list_and_the_table_empties() {
        let lists = || LISTS.with(|l| l.borrow().len());
        let before = lists();
        let mut members: Vec<Joined> = (0..1000).map(|_| Joined::default()).collect();
        for j in &mut members {
            j.push("lobby".into());
        }
        assert_eq!(lists(), before + 1, "one list for a thousand members");
        let first = members[0].0.clone();
        assert!(members.iter().all(|j| {
            j.0.as_ref()
                .zip(first.as_ref())
                .is_some_and(|(a, b)| Arc::ptr_eq(a, b))
        }));
        drop(first);
        members[0].push("games".into());
        assert_eq!(lists(), before + 2);
        assert!(members[0].remove("games"));
        assert_eq!(
            lists(),
            before + 1,
            "back to the shared list; the other one is gone"
        );
        for j in &mut members[..500] {
            j.take();
        }
        assert_eq!(lists(), before + 1);
        drop(members);
        assert_eq!(lists(), before, "every list gone with its last holder");
    }
}
