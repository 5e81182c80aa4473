//! Each room's last messages, what a member joining later is sent first — within a bound on
//! rooms and bytes, so that posting to ever new room names (a post needs no member) cannot grow
//! the process without end: past the bound, the room written to least recently *that has no
//! members* is forgotten first, so a flood of posts to new, empty rooms costs the rooms people
//! are in nothing; only when every room has members does the least recently written go, and a
//! room alone over the bound keeps its newest lines within it (one at least).
//!
//! **Order.** A room's ids increase in the order its messages were posted, on every instance
//! of a fleet (see `web::fleet`), so a room's lines are kept sorted by id and "after id X"
//! means the same messages everywhere, whether X is still held or long evicted: the lines whose
//! id is greater. A line that arrives late (from the fleet's copy) takes its place by id, and
//! one already held is not taken twice.
//!
//! **Shared.** Each line keeps its two encodings, made once by the rooms' encoding: the whole
//! message (a WebSocket frame) and the event (with its `id`). A member joining later is handed them by reference, so
//! a replay costs each member a reference per line, not a copy, and the bytes bound counts
//! them. Pure: no locks, no I/O.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::rooms::Encoding;

/// A message as the fleet exchanges it: its id and its text.
pub(crate) type Entry = (u64, Arc<str>);

/// One message a room keeps: its id, its text, and its encodings for every member.
#[derive(Clone, Debug)]
pub(crate) struct Line {
    pub(crate) id: u64,
    pub(crate) text: Arc<str>,
    /// For members that take whole messages (a WebSocket's text frame).
    pub(crate) message: Arc<[u8]>,
    /// For members that take events (an event with its `id`).
    pub(crate) event: Arc<[u8]>,
}

impl Line {
    /// Message `id` of a room, encoded by `encoding`.
    pub(crate) fn new(id: u64, text: Arc<str>, encoding: &Encoding) -> Line {
        Line {
            id,
            message: (encoding.text)(&text),
            event: (encoding.text_event)(Some(id), &text),
            text,
        }
    }

    /// Bytes it holds (what the history's byte bound counts).
    fn bytes(&self) -> usize {
        self.text.len() + self.message.len() + self.event.len()
    }

    pub(crate) fn entry(&self) -> Entry {
        (self.id, Arc::clone(&self.text))
    }
}

/// The rooms' last messages.
pub(crate) struct Recent {
    rooms: HashMap<String, Room>,
    /// Bytes held: room names and lines.
    bytes: usize,
    /// Writes so far, to tell which room was written to least recently.
    writes: u64,
    per_room: usize,
    max_rooms: usize,
    max_bytes: usize,
}

struct Room {
    /// By id, oldest first.
    lines: VecDeque<Line>,
    /// `writes` when it was last written to.
    last: u64,
}

impl Room {
    /// Where a line with `id` is, or goes.
    fn find(&self, id: u64) -> Result<usize, usize> {
        match self.lines.back() {
            // The common case: the newest message, appended.
            Some(back) if back.id < id => Err(self.lines.len()),
            None => Err(0),
            Some(_) => self.lines.binary_search_by_key(&id, |l| l.id),
        }
    }
}

impl Recent {
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

    /// Keeps `line` in `room`, in its place by id; `false` when the room held it already.
    /// `live` tells which rooms have members (kept before those that have none).
    pub(crate) fn record(&mut self, room: &str, line: Line, live: impl Fn(&str) -> bool) -> bool {
        if self.per_room == 0 {
            return true;
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
        let Err(at) = entry.find(line.id) else {
            return false;
        };
        entry.last = self.writes;
        self.bytes += line.bytes();
        entry.lines.insert(at, line);
        while entry.lines.len() > self.per_room {
            self.bytes -= entry.lines.pop_front().map_or(0, |l| l.bytes());
        }
        while self.rooms.len() > 1
            && (self.rooms.len() > self.max_rooms || self.bytes > self.max_bytes)
        {
            self.forget_oldest(&live);
        }
        // Alone over the bound: its oldest lines go, the newest stays.
        if let Some(entry) = self.rooms.get_mut(room) {
            while self.bytes > self.max_bytes && entry.lines.len() > 1 {
                self.bytes -= entry.lines.pop_front().map_or(0, |l| l.bytes());
            }
        }
        true
    }

    /// `room`'s lines, oldest first.
    #[cfg(test)]
    pub(crate) fn lines(&self, room: &str) -> impl Iterator<Item = &Line> {
        self.rooms.get(room).into_iter().flat_map(|r| &r.lines)
    }

    /// `room`'s lines whose id is greater than `id`, oldest first (0: all of them).
    pub(crate) fn after(&self, room: &str, id: u64) -> impl Iterator<Item = &Line> {
        let lines = self.rooms.get(room).map(|r| &r.lines);
        let from = lines.map_or(0, |l| l.partition_point(|line| line.id <= id));
        lines.into_iter().flat_map(move |l| l.range(from..))
    }

    /// The greatest id `room` holds.
    pub(crate) fn last(&self, room: &str) -> Option<u64> {
        self.rooms.get(room)?.lines.back().map(|l| l.id)
    }

    /// Whether `room` holds message `id`.
    #[cfg(test)]
    pub(crate) fn holds(&self, room: &str, id: u64) -> bool {
        self.rooms.get(room).is_some_and(|r| r.find(id).is_ok())
    }

    #[cfg(test)]
    pub(crate) fn has(&self, room: &str) -> bool {
        self.rooms.contains_key(room)
    }

    /// Forgets the room written to least recently, those without members first (never the
    /// one written last).
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
            self.bytes -= oldest.len() + room.lines.iter().map(Line::bytes).sum::<usize>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rooms::PLAIN;

    impl Recent {
        /// Keeps `text` as `room`'s next message, with no room that has members.
        fn record_quiet(&mut self, room: &str, text: &str) {
            let id = self.writes + 1;
            self.record(room, Line::new(id, text.into(), &PLAIN), |_| false);
        }

        fn keep(&mut self, room: &str, id: u64, live: impl Fn(&str) -> bool) -> bool {
            self.record(room, Line::new(id, format!("m{id}").into(), &PLAIN), live)
        }

        /// What the lines held cost, counted afresh.
        fn counted(&self) -> usize {
            self.rooms
                .iter()
                .map(|(n, r)| n.len() + r.lines.iter().map(Line::bytes).sum::<usize>())
                .sum()
        }
    }

    fn lines(h: &Recent, room: &str) -> Vec<String> {
        h.lines(room).map(|l| l.text.to_string()).collect()
    }

    fn ids<'a>(lines: impl Iterator<Item = &'a Line>) -> Vec<u64> {
        lines.map(|l| l.id).collect()
    }

    #[test]
    fn a_line_keeps_its_two_encodings_with_its_id() {
        let line = Line::new(42, "a\nb".into(), &PLAIN);
        assert_eq!(&line.message[..], b"M:a\nb");
        assert_eq!(&line.event[..], b"T42:a\nb");
        assert_eq!(line.bytes(), 3 + 5 + 7, "the text and both encodings");
        assert_eq!(line.entry(), (42, "a\nb".into()));
    }

    #[test]
    fn a_flood_of_posts_to_new_empty_rooms_leaves_the_rooms_with_members_alone() {
        let mut h = Recent::new(20, 100, 1 << 20);
        h.keep("lobby", 1, |_| true);
        h.keep("quiet", 2, |_| false);
        for i in 0..2_200 {
            h.keep(&format!("spam-{}", i % 110), 3 + i, |r| r == "lobby");
        }
        assert_eq!(
            lines(&h, "lobby"),
            ["m1"],
            "a room with members keeps its history"
        );
        assert!(lines(&h, "quiet").is_empty(), "an empty room may go");
        assert!(h.rooms.len() <= 100);
        assert_eq!(h.bytes, h.counted());
    }

    #[test]
    fn a_room_keeps_its_last_lines_in_order() {
        let mut h = Recent::new(3, 10, 1 << 20);
        for i in 0..5 {
            h.record_quiet("a", &format!("m{i}"));
        }
        assert_eq!(lines(&h, "a"), ["m2", "m3", "m4"]);
        assert_eq!(ids(h.after("a", 3)), [4, 5]);
        assert!(lines(&h, "b").is_empty());
        assert_eq!(h.bytes, h.counted());
        assert_eq!(h.last("a"), Some(5));
    }

    #[test]
    fn lines_take_their_place_by_id_and_once() {
        let mut h = Recent::new(10, 10, 1 << 20);
        // (id arriving, kept as new, the room's ids after it)
        let cases: &[(u64, bool, &[u64])] = &[
            (10, true, &[10]),
            (30, true, &[10, 30]),
            (20, true, &[10, 20, 30]),
            (30, false, &[10, 20, 30]),
            (5, true, &[5, 10, 20, 30]),
            (10, false, &[5, 10, 20, 30]),
            (31, true, &[5, 10, 20, 30, 31]),
        ];
        for &(id, new, want) in cases {
            assert_eq!(h.keep("r", id, |_| false), new, "{id}");
            assert_eq!(ids(h.lines("r")), want, "after {id}");
        }
        assert_eq!(h.bytes, h.counted());
    }

    #[test]
    fn after_an_id_come_the_greater_ones_held_or_evicted() {
        let mut h = Recent::new(4, 10, 1 << 20);
        for id in [10, 50, 70, 90, 95] {
            h.keep("r", id, |_| false);
        }
        // 10 is evicted: the room holds 50, 70, 90, 95.
        let cases: &[(u64, &[u64])] = &[
            (0, &[50, 70, 90, 95]),
            (10, &[50, 70, 90, 95]),
            (49, &[50, 70, 90, 95]),
            (50, &[70, 90, 95]),
            (60, &[70, 90, 95]),
            (95, &[]),
            (u64::MAX, &[]),
        ];
        for &(after, want) in cases {
            assert_eq!(ids(h.after("r", after)), want, "after {after}");
        }
        assert_eq!(h.after("none", 0).count(), 0);
        assert!(h.holds("r", 50) && !h.holds("r", 51) && !h.holds("x", 50));
    }

    #[test]
    fn past_the_room_bound_the_least_recently_written_room_is_forgotten() {
        let mut h = Recent::new(2, 3, 1 << 20);
        h.record_quiet("a", "1");
        h.record_quiet("b", "2");
        h.record_quiet("c", "3");
        h.record_quiet("a", "4"); // a is now the most recent; b the least
        h.record_quiet("d", "5");
        assert_eq!(h.rooms.len(), 3);
        assert!(lines(&h, "b").is_empty());
        assert_eq!(lines(&h, "a"), ["1", "4"]);
        assert_eq!(lines(&h, "d"), ["5"]);
        assert_eq!(h.bytes, h.counted());
    }

    #[test]
    fn posting_to_ever_new_rooms_stays_within_the_byte_bound() {
        let mut h = Recent::new(20, usize::MAX, 10_000);
        let text = "x".repeat(900);
        for i in 0..10_000 {
            h.record_quiet(&format!("room-{i}"), &text);
            assert!(h.bytes <= 10_000, "{} bytes after {i}", h.bytes);
        }
        assert!(h.rooms.len() <= 5);
        assert_eq!(lines(&h, "room-9999").len(), 1);
        assert_eq!(h.bytes, h.counted());
    }

    #[test]
    fn a_room_alone_over_the_bound_keeps_its_newest_lines_within_it() {
        // What a hostile Redis's answer of large entries comes to: the bound holds.
        let mut h = Recent::new(20, 5, 10_000);
        for id in 1..=20 {
            h.record("big", Line::new(id, "z".repeat(800).into(), &PLAIN), |_| {
                true
            });
            assert!(h.bytes <= 10_000, "{} bytes at {id}", h.bytes);
        }
        let held = ids(h.lines("big"));
        assert_eq!(held.last(), Some(&20));
        assert!(held.len() < 20 && held.windows(2).all(|w| w[0] + 1 == w[1]));
        // One line larger than the bound is the one kept.
        h.record(
            "big",
            Line::new(21, "y".repeat(20_000).into(), &PLAIN),
            |_| true,
        );
        assert_eq!(ids(h.lines("big")), [21]);
        assert_eq!(h.bytes, h.counted());
    }

    #[test]
    fn a_history_of_no_lines_keeps_nothing() {
        let mut h = Recent::new(0, 10, 1 << 20);
        assert!(h.keep("r", 1, |_| true), "always new: nothing is held");
        assert!(!h.has("r"));
        assert_eq!(h.bytes, 0);
    }

    proptest::proptest! {
        /// Whatever order lines arrive in, and however often, a room holds each id once, in
        /// increasing order, its newest ones, and the byte count stays true.
        #[test]
        fn any_arrival_order_keeps_one_sorted_copy_of_the_newest(
            arrivals in proptest::collection::vec(1u64..60, 0..120),
        ) {
            let mut h = Recent::new(16, 4, 1 << 20);
            for &id in &arrivals {
                h.keep("r", id, |_| true);
            }
            let held = ids(h.lines("r"));
            proptest::prop_assert!(held.windows(2).all(|w| w[0] < w[1]), "{:?}", held);
            proptest::prop_assert!(held.len() <= 16);
            proptest::prop_assert_eq!(h.bytes, h.counted());
        }
    }
}
