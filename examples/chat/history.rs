//! Each room's last messages, what a member joining later is sent first — within a bound on
//! rooms and bytes, so that posting to ever new room names (`POST /api/messages` needs no
//! member) cannot grow the process without end: past the bound, the room written to least
//! recently is forgotten.

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
    lines: VecDeque<Arc<str>>,
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

    /// Adds `line` to `room`'s history, dropping its oldest line past `per_room`, then whole
    /// rooms, least recently written first, while over a bound.
    pub fn record(&mut self, room: &str, line: Arc<str>) {
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
        entry.lines.push_back(line);
        while entry.lines.len() > self.per_room {
            self.bytes -= entry.lines.pop_front().map_or(0, |l| l.len());
        }
        while self.rooms.len() > 1
            && (self.rooms.len() > self.max_rooms || self.bytes > self.max_bytes)
        {
            self.forget_oldest();
        }
    }

    /// The lines `room` remembers, oldest first.
    pub fn lines(&self, room: &str) -> impl Iterator<Item = &Arc<str>> {
        self.rooms.get(room).into_iter().flat_map(|r| &r.lines)
    }

    /// Forgets the room written to least recently (a scan: it happens only at a bound).
    fn forget_oldest(&mut self) {
        let Some(oldest) = self
            .rooms
            .iter()
            .min_by_key(|(_, r)| r.last)
            .map(|(name, _)| name.clone())
        else {
            return;
        };
        if let Some(room) = self.rooms.remove(&oldest) {
            self.bytes -= oldest.len() + room.lines.iter().map(|l| l.len()).sum::<usize>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(h: &History, room: &str) -> Vec<String> {
        h.lines(room).map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_room_keeps_its_last_lines_in_order() {
        let mut h = History::new(3, 10, 1 << 20);
        for i in 0..5 {
            h.record("a", format!("m{i}").into());
        }
        assert_eq!(lines(&h, "a"), ["m2", "m3", "m4"]);
        assert!(lines(&h, "b").is_empty());
        assert_eq!(h.bytes, 1 + 3 * 2);
    }

    #[test]
    fn past_the_room_bound_the_least_recently_written_room_is_forgotten() {
        let mut h = History::new(2, 3, 1 << 20);
        h.record("a", "1".into());
        h.record("b", "2".into());
        h.record("c", "3".into());
        h.record("a", "4".into()); // a is now the most recent; b the least
        h.record("d", "5".into());
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
            h.record(&format!("room-{i}"), Arc::clone(&line));
            assert!(h.bytes <= 10_000, "{} bytes after {i}", h.bytes);
        }
        assert!(h.rooms.len() <= 11);
        assert_eq!(lines(&h, "room-9999").len(), 1);
        let held: usize = h
            .rooms
            .iter()
            .map(|(n, r)| n.len() + r.lines.iter().map(|l| l.len()).sum::<usize>())
            .sum();
        assert_eq!(h.bytes, held);
    }

    #[test]
    fn the_room_written_last_is_kept_even_when_alone_over_the_bound() {
        let mut h = History::new(20, 5, 100);
        h.record("a", "y".repeat(50).into());
        h.record("big", "z".repeat(500).into());
        assert!(lines(&h, "a").is_empty());
        assert_eq!(lines(&h, "big").len(), 1);
    }
}
