//! HPACK's tables (RFC 7541 §2.3): the static table, and the dynamic table a decoder keeps,
//! bounded by the size this side advertised.

use std::collections::VecDeque;

/// RFC 7541 Appendix A: index 1 to 61.
pub(crate) const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The static index of a name, its first entry (for a literal with an indexed name).
pub(crate) fn static_name(name: &str) -> Option<usize> {
    STATIC.iter().position(|(n, _)| *n == name).map(|at| at + 1)
}

/// The static index of a whole field.
pub(crate) fn static_field(name: &str, value: &str) -> Option<usize> {
    STATIC
        .iter()
        .position(|&(n, v)| n == name && v == value)
        .map(|at| at + 1)
}

/// An entry's size as HPACK counts it (RFC 7541 §4.1): its bytes and 32 of overhead.
pub(crate) fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// A decoder's dynamic table: newest first, its size within `max` (the size the peer chose,
/// at most what this side advertised). Holds nothing while empty.
#[derive(Debug, Default)]
pub(crate) struct Dynamic {
    /// Each entry: its name's length, and name and value in one allocation.
    entries: VecDeque<(usize, Box<[u8]>)>,
    size: usize,
    max: usize,
}

impl Dynamic {
    pub(crate) fn new(max: usize) -> Dynamic {
        Dynamic {
            entries: VecDeque::new(),
            size: 0,
            max,
        }
    }

    /// The entry at dynamic index `at` (0 is the newest): name and value.
    pub(crate) fn get(&self, at: usize) -> Option<(&[u8], &[u8])> {
        self.entries
            .get(at)
            .map(|(name_len, both)| both.split_at(*name_len))
    }

    /// Adds an entry, evicting the oldest until it fits; one larger than the whole table
    /// empties it and is not kept (RFC 7541 §4.4).
    pub(crate) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = entry_size(name, value);
        self.evict_to(self.max.saturating_sub(size));
        if size > self.max {
            return;
        }
        let mut both = Vec::with_capacity(name.len() + value.len());
        both.extend_from_slice(name);
        both.extend_from_slice(value);
        self.entries
            .push_front((name.len(), both.into_boxed_slice()));
        self.size += size;
    }

    /// A new maximum size (a dynamic table size update), evicting what no longer fits.
    pub(crate) fn resize(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let Some((_, both)) = self.entries.pop_back() else {
                break;
            };
            self.size -= both.len() + 32;
        }
        if self.entries.is_empty() {
            self.entries = VecDeque::new();
        }
    }

    /// The size as HPACK counts it.
    /// The size it may reach.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Heap bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(usize, Box<[u8]>)>()
            + self.entries.iter().map(|(_, b)| b.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_static_table_is_the_appendix_s() {
        assert_eq!(STATIC[0], (":authority", ""));
        assert_eq!(STATIC[7], (":status", "200"));
        assert_eq!(STATIC[60], ("www-authenticate", ""));
        assert_eq!(static_field(":method", "GET"), Some(2));
        assert_eq!(static_name("content-type"), Some(31));
        assert_eq!(static_name("x-nothing"), None);
    }

    #[test]
    fn entries_are_evicted_oldest_first_and_a_huge_one_empties_the_table() {
        let mut t = Dynamic::new(100);
        t.insert(b"a", b"1"); // 34
        t.insert(b"b", b"2"); // 34
        assert_eq!(
            (t.size(), t.get(0), t.get(1).map(|e| e.0)),
            (68, Some((&b"b"[..], &b"2"[..])), Some(&b"a"[..]))
        );
        t.insert(b"c", b"3"); // 102 > 100: "a" goes
        assert_eq!(t.size(), 68);
        assert_eq!(t.get(1).map(|e| e.0), Some(&b"b"[..]));
        assert!(t.get(2).is_none());
        t.insert(&[b'x'; 80], b""); // 112 > 100: everything goes, itself too
        assert_eq!(t.size(), 0);
        assert!(t.get(0).is_none());
        assert_eq!(t.held_bytes(), 0);
        t.insert(b"d", b"4");
        t.resize(0);
        assert_eq!((t.size(), t.held_bytes()), (0, 0));
    }
}
