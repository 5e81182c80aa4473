//! Each room's last messages, what a member joining later is sent first — within a bound on
//! rooms and bytes, so that posting to ever new room names (a post needs no member) cannot grow
//! the process without end: past the bound, the room written to least recently *that has no
//! members* is forgotten first, so a flood of posts to new, empty rooms costs the rooms people
//! are in nothing; only when every room has members does the least recently written go.
//!
//! Also the two merges of this instance's copy of a room with the fleet's (see
//! [`after_last_common`]). Pure: no locks, no I/O.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// One message kept: its id and its text.
pub(crate) type Entry = (u64, Arc<str>);

/// The rooms' histories.
pub(crate) struct Recent {
    rooms: HashMap<String, Room>,
    /// Bytes held: every line and every room name.
    bytes: usize,
    /// Counts writes: the latest write's number marks its room as the most recent.
    writes: u64,
    per_room: usize,
    max_rooms: usize,
    max_bytes: usize,
}

struct Room {
    /// Each line with its message's id, oldest first.
    lines: VecDeque<Entry>,
    /// The number of the last write to this room.
    last: u64,
}

impl Recent {
    /// Keeps `per_room` lines for each room, for at most `max_rooms` rooms and `max_bytes`
    /// bytes (the room written to last is always kept, whatever its size).
    pub(crate) fn new(per_room: usize, max_rooms: usize, max_bytes: usize) -> Recent {
        Recent {
            rooms: HashMap::new(),
            bytes: 0,
            writes: 0,
            per_room,
            max_rooms,
            max_bytes,
        }
    }

    /// Adds `line` (message `id`) to `room`'s history, dropping its oldest line past `per_room`, then whole
    /// rooms while over a bound: the least recently written of those for which `live` is false
    /// first, then the least recently written of all (never `room`).
    pub(crate) fn record(
        &mut self,
        room: &str,
        id: u64,
        line: Arc<str>,
        live: impl Fn(&str) -> bool,
    ) {
        if self.per_room == 0 {
            return;
        }
        self.writes += 1;
        let entry = match self.rooms.get_mut(room) {
            Some(entry) => entry,
            None => {
                self.bytes += room.len();
                self.rooms.entry(room.to_owned()).or_insert(Room {
                    lines: VecDeque::new(),
                    last: 0,
                })
            }
        };
        entry.last = self.writes;
        self.bytes += line.len();
        entry.lines.push_back((id, line));
        while entry.lines.len() > self.per_room {
            self.bytes -= entry.lines.pop_front().map_or(0, |(_, l)| l.len());
        }
        while self.rooms.len() > 1
            && (self.rooms.len() > self.max_rooms || self.bytes > self.max_bytes)
        {
            self.forget_oldest(&live);
        }
    }

    /// The lines `room` remembers, oldest first, each with its message's id.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet merges copies
    pub(crate) fn lines(&self, room: &str) -> impl Iterator<Item = &Entry> {
        self.rooms.get(room).into_iter().flat_map(|r| &r.lines)
    }

    /// The lines `room` remembers of messages after message `id`, oldest first: those behind
    /// it when the room still holds it (ids from several instances need not grow with time),
    /// else those of greater ids (an id older than the room's memory, or 0 for all).
    pub(crate) fn after(&self, room: &str, id: u64) -> impl Iterator<Item = &Entry> {
        let lines = self.rooms.get(room).map(|r| &r.lines);
        let held = lines.and_then(|l| l.iter().position(|(line_id, _)| *line_id == id));
        let skip = held.map_or(0, |at| at + 1);
        lines
            .into_iter()
            .flatten()
            .skip(skip)
            .filter(move |(line_id, _)| held.is_some() || *line_id > id)
    }

    /// Makes `lines` (oldest first) what `room` remembers, as if each had been recorded.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet merges copies
    pub(crate) fn replace(&mut self, room: &str, lines: Vec<Entry>, live: impl Fn(&str) -> bool) {
        if let Some(old) = self.rooms.remove(room) {
            self.bytes -= room.len() + old.lines.iter().map(|(_, l)| l.len()).sum::<usize>();
        }
        for (id, line) in lines {
            self.record(room, id, line, &live);
        }
    }

    /// Whether `room` holds message `id`.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet merges copies
    pub(crate) fn holds(&self, room: &str, id: u64) -> bool {
        self.lines(room).any(|(line_id, _)| *line_id == id)
    }

    /// Whether `room` holds anything.
    #[cfg(test)]
    pub(crate) fn has(&self, room: &str) -> bool {
        self.rooms.contains_key(room)
    }

    /// Forgets the room written to least recently, one without members if there is one (a
    /// scan: it happens only at a bound). The room written last is never the one.
    fn forget_oldest(&mut self, live: &impl Fn(&str) -> bool) {
        let newest = self.writes;
        let Some(oldest) = self
            .rooms
            .iter()
            .filter(|(_, r)| r.last != newest)
            .min_by_key(|(name, r)| (live(name), r.last))
            .map(|(name, _)| name.clone())
        else {
            return;
        };
        if let Some(room) = self.rooms.remove(&oldest) {
            self.bytes -= oldest.len() + room.lines.iter().map(|(_, l)| l.len()).sum::<usize>();
        }
    }
}

/// What `a` holds past the last entry it shares with `b`, less what `b` holds: all of `a`
/// (less `b`) when they share nothing.
///
/// The fleet's copy of a room (in Redis, in the order Redis took the messages) and this
/// instance's copy (in the order its members got them) agree up to their last common message;
/// past it each may hold what the other has not seen yet. A member joining a room this
/// instance was not following gets the fleet's copy and then `after_last_common(ours,
/// fleet's)` (this instance's own posts still on their way to Redis); once following, the
/// messages the subscription may have missed are `after_last_common(fleet's, ours)`.
#[cfg_attr(not(feature = "redis"), allow(dead_code))] // the fleet merges copies
pub(crate) fn after_last_common<'a>(a: &'a [Entry], b: &[Entry]) -> Vec<&'a Entry> {
    let in_b = |id: u64| b.iter().any(|(other, _)| *other == id);
    let start = a
        .iter()
        .rposition(|(id, _)| in_b(*id))
        .map_or(0, |at| at + 1);
    a[start..].iter().filter(|(id, _)| !in_b(*id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Recent {
        /// `record` with no room that has members.
        fn record_quiet(&mut self, room: &str, line: Arc<str>) {
            let id = self.writes + 1;
            self.record(room, id, line, |_| false);
        }
    }

    #[test]
    fn a_flood_of_posts_to_new_empty_rooms_leaves_the_rooms_with_members_alone() {
        let mut h = Recent::new(20, 100, 1 << 20);
        h.record("lobby", 1, "hello".into(), |_| true);
        h.record("quiet", 2, "old".into(), |_| false);
        for i in 0..2_200 {
            h.record(&format!("spam-{}", i % 110), 3 + i, "x".into(), |r| {
                r == "lobby"
            });
        }
        assert_eq!(
            lines(&h, "lobby"),
            ["hello"],
            "a room with members keeps its history"
        );
        assert!(lines(&h, "quiet").is_empty(), "an empty room may go");
        assert!(h.rooms.len() <= 100);
    }

    fn lines(h: &Recent, room: &str) -> Vec<String> {
        h.lines(room).map(|(_, l)| l.to_string()).collect()
    }

    #[test]
    fn a_room_keeps_its_last_lines_in_order() {
        let mut h = Recent::new(3, 10, 1 << 20);
        for i in 0..5 {
            h.record_quiet("a", format!("m{i}").into());
        }
        assert_eq!(lines(&h, "a"), ["m2", "m3", "m4"]);
        let after: Vec<u64> = h.after("a", 3).map(|(id, _)| *id).collect();
        assert_eq!(after, [4, 5]);
        assert!(lines(&h, "b").is_empty());
        assert_eq!(h.bytes, 1 + 3 * 2);
    }

    #[test]
    fn past_the_room_bound_the_least_recently_written_room_is_forgotten() {
        let mut h = Recent::new(2, 3, 1 << 20);
        h.record_quiet("a", "1".into());
        h.record_quiet("b", "2".into());
        h.record_quiet("c", "3".into());
        h.record_quiet("a", "4".into()); // a is now the most recent; b the least
        h.record_quiet("d", "5".into());
        assert_eq!(h.rooms.len(), 3);
        assert!(lines(&h, "b").is_empty());
        assert_eq!(lines(&h, "a"), ["1", "4"]);
        assert_eq!(lines(&h, "d"), ["5"]);
        assert_eq!(h.bytes, 3 + 4);
    }

    #[test]
    fn posting_to_ever_new_rooms_stays_within_the_byte_bound() {
        let mut h = Recent::new(20, usize::MAX, 10_000);
        let line: Arc<str> = "x".repeat(900).into();
        for i in 0..10_000 {
            h.record_quiet(&format!("room-{i}"), Arc::clone(&line));
            assert!(h.bytes <= 10_000, "{} bytes after {i}", h.bytes);
        }
        assert!(h.rooms.len() <= 11);
        assert_eq!(lines(&h, "room-9999").len(), 1);
        let held: usize = h
            .rooms
            .iter()
            .map(|(n, r)| n.len() + r.lines.iter().map(|(_, l)| l.len()).sum::<usize>())
            .sum();
        assert_eq!(h.bytes, held);
    }

    #[test]
    fn the_room_written_last_is_kept_even_when_alone_over_the_bound() {
        let mut h = Recent::new(20, 5, 100);
        h.record_quiet("a", "y".repeat(50).into());
        h.record_quiet("big", "z".repeat(500).into());
        assert!(lines(&h, "a").is_empty());
        assert_eq!(lines(&h, "big").len(), 1);
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    fn entries(ids: &[u64]) -> Vec<Entry> {
        ids.iter()
            .map(|&id| (id, format!("m{id}").into()))
            .collect()
    }

    #[test]
    fn what_one_copy_holds_past_the_other() {
        // (a, b, a past its last entry in b, less b)
        let cases: &[(&[u64], &[u64], &[u64])] = &[
            (&[1, 2, 3], &[1, 2, 3], &[]),
            (&[1, 2, 3, 4], &[1, 2], &[3, 4]),
            (&[1, 2], &[1, 2, 3, 4], &[]),
            // Interleaved: what b has past the common point is left out.
            (&[1, 2, 9, 3], &[1, 2, 3], &[]),
            (&[1, 2, 3, 9], &[1, 2, 3, 4], &[9]),
            (&[1, 9, 2, 8], &[1, 2, 7], &[8]),
            // Nothing shared: all of a.
            (&[5, 6], &[1, 2], &[5, 6]),
            (&[5, 6], &[], &[5, 6]),
            (&[], &[1], &[]),
            // Ids need not grow: order is position.
            (&[90, 10, 50], &[90], &[10, 50]),
        ];
        for &(a, b, want) in cases {
            let (a_e, b_e) = (entries(a), entries(b));
            let got: Vec<u64> = after_last_common(&a_e, &b_e)
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(got, want, "a {a:?} b {b:?}");
        }
    }

    #[test]
    fn after_an_id_is_behind_it_when_held_else_by_value() {
        let mut h = Recent::new(10, 10, 1 << 20);
        for id in [90, 10, 50, 70] {
            h.record("r", id, format!("m{id}").into(), |_| false);
        }
        let cases: &[(u64, &[u64])] = &[
            (90, &[10, 50, 70]),
            (10, &[50, 70]),
            (70, &[]),
            (0, &[90, 10, 50, 70]),
            // Not held: the greater ids.
            (60, &[90, 70]),
            (20, &[90, 50, 70]),
            (100, &[]),
        ];
        for &(after, want) in cases {
            let got: Vec<u64> = h.after("r", after).map(|(id, _)| *id).collect();
            assert_eq!(got, want, "after {after}");
        }
        assert_eq!(h.after("none", 0).count(), 0);
        assert!(h.holds("r", 50) && !h.holds("r", 51) && !h.holds("x", 50));
    }

    #[test]
    fn replacing_a_room_keeps_the_byte_count_true_and_the_bound() {
        let mut h = Recent::new(2, 10, 1 << 20);
        h.record("r", 1, "aaaa".into(), |_| false);
        h.replace("r", entries(&[7, 8, 9]), |_| false);
        let got: Vec<u64> = h.lines("r").map(|(id, _)| *id).collect();
        assert_eq!(got, [8, 9]);
        assert_eq!(h.bytes, 1 + 2 * 2);
        h.replace("r", Vec::new(), |_| false);
        assert!(!h.has("r"));
        assert_eq!(h.bytes, 0);
    }

    #[test]
    fn a_history_of_no_lines_keeps_nothing() {
        let mut h = Recent::new(0, 10, 1 << 20);
        h.record("r", 1, "a".into(), |_| true);
        assert!(!h.has("r"));
        assert_eq!(h.bytes, 0);
    }

    proptest::proptest! {
        /// Merging the fleet's copy with this instance's never repeats a message: the fleet's
        /// list followed by what only this instance holds past their last common message
        /// holds every id once, and so does a copy caught up with what it lacks.
        #[test]
        fn merges_hold_each_message_once(
            fleet in proptest::sample::subsequence((1u64..40).collect::<Vec<_>>(), 0..20),
            ours in proptest::sample::subsequence((1u64..40).collect::<Vec<_>>(), 0..20),
        ) {
            let (fleet, ours) = (entries(&fleet), entries(&ours));
            let mut filled: Vec<u64> = fleet.iter().map(|(id, _)| *id).collect();
            filled.extend(after_last_common(&ours, &fleet).iter().map(|(id, _)| *id));
            let mut caught: Vec<u64> = ours.iter().map(|(id, _)| *id).collect();
            caught.extend(after_last_common(&fleet, &ours).iter().map(|(id, _)| *id));
            for ids in [filled, caught] {
                let mut unique = ids.clone();
                unique.sort_unstable();
                unique.dedup();
                proptest::prop_assert_eq!(unique.len(), ids.len(), "{:?}", ids);
            }
        }
    }
}
