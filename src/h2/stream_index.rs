//! Where a stream is in a list kept in stream order, found in one step.
//!
//! A connection keeps its streams (and what each waits for) in lists in stream order — a peer
//! opens streams in increasing order (RFC 9113 §5.1.1), so a new one goes at the end and the
//! order is what answers and fair shares follow. Halving finds a stream in `log₂ n` dependent
//! loads; with 250 streams each frame's look-ups would then cost more than the frame. A
//! [`StreamIndex`] beside a list remembers where each stream was: a table of positions indexed
//! by the stream id's low bits. Every entry is a guess checked against the list (the stream
//! there, or one before it after a removal moved it down), so a wrong or stale guess — two
//! streams whose ids share the bits, a removal that moved the rest — costs one halving, which
//! corrects the entry; it is never a wrong answer.
//!
//! Short lists are halved (a few steps) and hold no table, so an idle connection's lists hold
//! nothing more.

use std::cell::Cell;

/// Lists at least this long get a table.
const INDEXED_FROM: usize = 8;

/// Positions of a list's streams by id (see the module's doc).
#[derive(Debug, Default)]
pub(crate) struct StreamIndex {
    /// `position` of the stream last found in each bucket (see [`bucket`]); empty while the
    /// list is short.
    table: Box<[Cell<u16>]>,
}

impl StreamIndex {
    /// Where stream `id` is in `list` (in stream order, `key` giving an entry's stream).
    #[inline]
    pub(crate) fn find<T>(&self, list: &[T], id: u32, key: impl Fn(&T) -> u32) -> Option<usize> {
        if self.table.is_empty() {
            return list.binary_search_by_key(&id, key).ok();
        }
        let cell = &self.table[bucket(id, self.table.len())];
        let guess = usize::from(cell.get());
        // Where the stream was, or one before it (a removal moved it down).
        for at in [guess, guess.wrapping_sub(1)] {
            if list.get(at).is_some_and(|entry| key(entry) == id) {
                cell.set(at as u16);
                return Some(at);
            }
        }
        let found = list.binary_search_by_key(&id, key).ok();
        if let Some(at) = found {
            cell.set(u16::try_from(at).unwrap_or(u16::MAX));
        }
        found
    }

    /// The list grew: its last entry is new. A table is made (or doubled) once the list is
    /// long enough for it, filled from the list.
    #[inline]
    pub(crate) fn pushed<T>(&mut self, list: &[T], key: impl Fn(&T) -> u32) {
        if list.len() >= INDEXED_FROM {
            self.note_last(list, key);
        }
    }

    /// (`pushed` past the short lists: out of line, so the common short list costs a compare.)
    #[inline(never)]
    fn note_last<T>(&mut self, list: &[T], key: impl Fn(&T) -> u32) {
        let len = list.len();
        if self.table.len() < len {
            let size = len.next_power_of_two();
            self.table = (0..size).map(|_| Cell::new(u16::MAX)).collect();
            for (at, entry) in list.iter().enumerate() {
                self.note(key(entry), at);
            }
        } else if let Some(last) = list.last() {
            self.note(key(last), len - 1);
        }
    }

    /// The list shrank (an entry left it): the table goes once the list is short again (the
    /// positions it holds are guesses, corrected as they are found wrong).
    #[inline]
    pub(crate) fn removed(&mut self, len: usize) {
        if len < INDEXED_FROM / 2 && !self.table.is_empty() {
            self.table = Box::default();
        }
    }

    /// Heap bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.table.len() * std::mem::size_of::<Cell<u16>>()
    }

    fn note(&self, id: u32, at: usize) {
        let cell = &self.table[bucket(id, self.table.len())];
        cell.set(u16::try_from(at).unwrap_or(u16::MAX));
    }
}

/// A stream's bucket in a table of `size` (a power of two): the low bits of its id past the
/// parity bit, so that streams opened one after another (ids 2 apart) fill buckets one after
/// another.
#[inline]
fn bucket(id: u32, size: usize) -> usize {
    (id >> 1) as usize & (size - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of stream ids kept with its index, as a connection keeps one.
    #[derive(Default)]
    struct Indexed {
        list: Vec<u32>,
        index: StreamIndex,
    }

    impl Indexed {
        fn push(&mut self, id: u32) {
            self.list.push(id);
            self.index.pushed(&self.list, |s| *s);
        }
        fn remove(&mut self, id: u32) {
            if let Some(at) = self.find(id) {
                self.list.remove(at);
                self.index.removed(self.list.len());
            }
        }
        fn find(&self, id: u32) -> Option<usize> {
            self.index.find(&self.list, id, |s| *s)
        }
    }

    #[test]
    fn every_stream_is_found_where_it_is_and_no_other_is() {
        let mut streams = Indexed::default();
        for id in (1..600).step_by(2) {
            streams.push(id);
        }
        assert!(!streams.index.table.is_empty());
        for (at, id) in (1..600).step_by(2).enumerate() {
            assert_eq!(streams.find(id), Some(at), "stream {id}");
        }
        for absent in [0, 2, 601, 1_000_001] {
            assert_eq!(streams.find(absent), None);
        }
    }

    #[test]
    fn removals_and_ids_sharing_a_bucket_never_give_a_wrong_position() {
        let mut streams = Indexed::default();
        // Ids 1 024 apart share a bucket in a table of 512.
        let ids: Vec<u32> = (0..300).map(|n| 1 + 2 * n + 1_024 * (n % 3)).collect();
        let mut ids = ids;
        ids.sort_unstable();
        ids.dedup();
        for &id in &ids {
            streams.push(id);
        }
        for (n, &id) in ids.iter().enumerate() {
            if n % 4 == 1 {
                streams.remove(id);
            }
        }
        for &id in &ids {
            let expected = streams.list.binary_search(&id).ok();
            assert_eq!(streams.find(id), expected, "stream {id}");
            // Asked again, after the guess was corrected.
            assert_eq!(streams.find(id), expected, "stream {id}, again");
        }
    }

    #[test]
    fn a_short_list_holds_no_table() {
        let mut streams = Indexed::default();
        for id in (1..2 * INDEXED_FROM as u32).step_by(2) {
            streams.push(id);
        }
        assert!(streams.index.held_bytes() > 0);
        while let Some(&id) = streams.list.first() {
            streams.remove(id);
        }
        assert_eq!(streams.index.held_bytes(), 0);
        streams.push(1);
        assert_eq!(streams.index.held_bytes(), 0);
        assert_eq!(streams.find(1), Some(0));
    }
}
