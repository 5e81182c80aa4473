//! Each room's last messages, what a member joining later is sent first — within a bound on
//! rooms and bytes, so that posting to ever new room names (`POST /api/messages` needs no
//! member) cannot grow the process without end: past the bound, the room written to least
//! recently *that has no members* is forgotten first, so a flood of posts to new, empty rooms
//! costs the rooms people are in nothing; only when every room has members does the least
//! recently written go.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The rooms' histories.
pub struct History {
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
    /// Each line with its message's id.
    lines: VecDeque<(u64, Arc<str>)>,
    /// The number of the last write to this room.
    last: u64,
}

impl History {
    /// Keeps `per_room` lines for each room, for at most `max_rooms` rooms and `max_bytes`
    /// bytes (the room written to last is always kept, whatever its size).
    pub fn new(per_room: usize, max_rooms: usize, max_bytes: usize) -> History {
        History {
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
    pub fn record(&mut self, room: &str, id: u64, line: Arc<str>, live: impl Fn(&str) -> bool) {
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
    pub fn lines(&self, room: &str) -> impl Iterator<Item = &(u64, Arc<str>)> {
        self.rooms.get(room).into_iter().flat_map(|r| &r.lines)
    }

    /// The lines `room` remembers of messages after `id`, oldest first.
    pub fn after(&self, room: &str, id: u64) -> impl Iterator<Item = &(u64, Arc<str>)> {
        self.lines(room).filter(move |(line_id, _)| *line_id > id)
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

#[cfg(test)]
mod tests {
    use super::*;

    impl History {
        /// `record` with no room that has members.
        fn record_quiet(&mut self, room: &str, line: Arc<str>) {
            let id = self.writes + 1;
            self.record(room, id, line, |_| false);
        }
    }

    #[test]
    fn a_flood_of_posts_to_new_empty_rooms_leaves_the_rooms_with_members_alone() {
        let mut h = History::new(20, 100, 1 << 20);
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

    fn lines(h: &History, room: &str) -> Vec<String> {
        h.lines(room).map(|(_, l)| l.to_string()).collect()
    }

    #[test]
    fn a_room_keeps_its_last_lines_in_order() {
        let mut h = History::new(3, 10, 1 << 20);
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
        let mut h = History::new(2, 3, 1 << 20);
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
        let mut h = History::new(20, usize::MAX, 10_000);
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
        let mut h = History::new(20, 5, 100);
        h.record_quiet("a", "y".repeat(50).into());
        h.record_quiet("big", "z".repeat(500).into());
        assert!(lines(&h, "a").is_empty());
        assert_eq!(lines(&h, "big").len(), 1);
    }
}
