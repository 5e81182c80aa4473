//! The HPACK decoder of one connection (RFC 7541 §3, §6): header blocks in, fields out, the
//! dynamic table kept in step with the peer's encoder.

use super::HpackError;
use super::primitive::{read_int, read_string};
use super::table::{Dynamic, STATIC};

/// Buffers a decode writes Huffman-decoded strings into: the worker's, lent to each
/// connection's decode, so an idle connection holds none.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    name: Vec<u8>,
    value: Vec<u8>,
}

/// One connection's decoder.
#[derive(Debug)]
pub(crate) struct Decoder {
    table: Dynamic,
    /// The table size this side advertised: the most a size update may ask for.
    limit: usize,
}

/// How a literal field representation treats the table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Literal {
    /// Added to the dynamic table (`01`, a 6-bit index).
    Indexed,
    /// Not added (`0000` and `0001` "never indexed", a 4-bit index).
    NotIndexed,
}

impl Decoder {
    /// A decoder whose table may hold `limit` bytes (what this side advertises).
    pub(crate) fn new(limit: usize) -> Decoder {
        Decoder {
            table: Dynamic::new(limit),
            limit,
        }
    }

    /// The peer now knows this side's SETTINGS: its table may hold `limit` bytes from now on
    /// (until then it may use RFC 7541's default, 4 096). Entries past it go at once; a peer
    /// that obeys begins its next block with a size update to at most `limit`, which evicts
    /// the same ones.
    pub(crate) fn settle(&mut self, limit: usize) {
        self.limit = limit;
        if self.table.size() > limit || self.table.max() > limit {
            self.table.resize(limit);
        }
    }

    /// Decodes one whole header block, handing each field to `field` in order. After an
    /// error the table may no longer match the peer's: the connection must end.
    #[inline]
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        scratch: &mut Scratch,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut at = 0;
        let mut fields = false;
        while let Some(rest) = block.get(at..).filter(|r| !r.is_empty()) {
            let first = rest[0];
            let used = if first & 0x80 != 0 {
                let (index, used) = read_int(rest, 7)?;
                let (name, value) = self.entry(index)?;
                field(name, value);
                used
            } else if first & 0x40 != 0 {
                self.literal(rest, 6, Literal::Indexed, scratch, &mut field)?
            } else if first & 0x20 != 0 {
                if fields {
                    return Err(HpackError::SizeUpdateLate);
                }
                let (size, used) = read_int(rest, 5)?;
                let size = usize::try_from(size).map_err(|_| HpackError::SizeUpdateTooLarge)?;
                if size > self.limit {
                    return Err(HpackError::SizeUpdateTooLarge);
                }
                self.table.resize(size);
                at += used;
                continue;
            } else {
                self.literal(rest, 4, Literal::NotIndexed, scratch, &mut field)?
            };
            fields = true;
            at += used;
        }
        Ok(())
    }

    /// A literal field at the start of `input`: the bytes it took.
    fn literal(
        &mut self,
        input: &[u8],
        prefix: u8,
        kind: Literal,
        scratch: &mut Scratch,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<usize, HpackError> {
        let (index, mut used) = read_int(input, prefix)?;
        let Scratch { name, value } = scratch;
        let name: &[u8] = if index == 0 {
            let (literal, n) = read_string(&input[used..], name)?;
            used += n;
            literal
        } else {
            let (entry, _) = self.entry(index)?;
            if kind == Literal::NotIndexed {
                // Borrowed from the table: nothing is added to it.
                let (value, n) = read_string(&input[used..], value)?;
                field(entry, value);
                return Ok(used + n);
            }
            name.clear();
            name.extend_from_slice(entry);
            name
        };
        let (value, n) = read_string(&input[used..], value)?;
        field(name, value);
        if kind == Literal::Indexed {
            self.table.insert(name, value);
        }
        Ok(used + n)
    }

    /// The field at `index` of the static and dynamic tables (RFC 7541 §2.3.3).
    fn entry(&self, index: u64) -> Result<(&[u8], &[u8]), HpackError> {
        let index = usize::try_from(index).map_err(|_| HpackError::BadIndex)?;
        match index {
            0 => Err(HpackError::BadIndex),
            1..=61 => {
                let (name, value) = STATIC[index - 1];
                Ok((name.as_bytes(), value.as_bytes()))
            }
            _ => self.table.get(index - 62).ok_or(HpackError::BadIndex),
        }
    }

    /// Heap bytes held (the dynamic table).
    pub(crate) fn held_bytes(&self) -> usize {
        self.table.held_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack::hex;

    fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut got = Vec::new();
        d.decode(block, &mut Scratch::default(), |n, v| {
            got.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(got)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// RFC 7541 C.3 (without Huffman) and C.4 (with): three requests on one connection, the
    /// table carried from one to the next.
    #[test]
    fn the_rfc_request_examples_with_and_without_huffman() {
        let runs = [
            [
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                "8286 84be 5808 6e6f 2d63 6163 6865",
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            ],
            [
                "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                "8286 84be 5886 a8eb 1064 9cbf",
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            ],
        ];
        for blocks in runs {
            let mut d = Decoder::new(4096);
            let base = [
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ];
            assert_eq!(fields(&mut d, &hex(blocks[0])), Ok(pairs(&base)));
            assert_eq!(d.table.size(), 57);
            let mut second = base.to_vec();
            second.push(("cache-control", "no-cache"));
            assert_eq!(fields(&mut d, &hex(blocks[1])), Ok(pairs(&second)));
            assert_eq!(d.table.size(), 110);
            let third = [
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ];
            assert_eq!(fields(&mut d, &hex(blocks[2])), Ok(pairs(&third)));
            assert_eq!(d.table.size(), 164);
        }
    }

    /// RFC 7541 C.5: responses through a 256-byte table, entries evicted.
    #[test]
    fn the_rfc_response_examples_evict_within_a_small_table() {
        let mut d = Decoder::new(256);
        let first = hex(
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
             6c65 2e63 6f6d",
        );
        let got = fields(&mut d, &first).unwrap();
        assert_eq!(got[0], (":status".into(), "302".into()));
        assert_eq!(d.table.size(), 222);
        let second = hex("4803 3330 37c1 c0bf");
        let got = fields(&mut d, &second).unwrap();
        assert_eq!(got[0], (":status".into(), "307".into()));
        assert_eq!(
            got[3],
            ("location".into(), "https://www.example.com".into())
        );
        assert_eq!(d.table.size(), 222);
    }

    #[test]
    fn broken_blocks_are_refused() {
        let table: [(&[u8], HpackError); 6] = [
            (&[0x80], HpackError::BadIndex),
            (&[0xbe], HpackError::BadIndex), // 62: the empty dynamic table
            (&[0x82, 0x3f, 0xe1, 0x1f], HpackError::SizeUpdateLate),
            (&[0x3f, 0xe2, 0x1f], HpackError::SizeUpdateTooLarge), // 4097
            (&[0x40, 0x05, b'a'], HpackError::Truncated),
            (&[0x00, 0x81, 0x00, 0x00], HpackError::Huffman), // "0" bits then bad padding
        ];
        for (block, err) in table {
            assert_eq!(
                fields(&mut Decoder::new(4096), block),
                Err(err),
                "{block:x?}"
            );
        }
    }

    #[test]
    fn a_size_update_first_shrinks_the_table_and_zero_keeps_nothing() {
        let mut d = Decoder::new(4096);
        fields(&mut d, &hex("4003 6162 6303 7879 7a")).unwrap(); // abc: xyz, indexed
        assert_eq!(d.table.size(), 38);
        assert_eq!(fields(&mut d, &[0x20, 0xbe]), Err(HpackError::BadIndex));
        assert_eq!(d.held_bytes(), 0);
        let mut none = Decoder::new(0);
        assert_eq!(
            fields(&mut none, &hex("4003 6162 6303 7879 7a")),
            Ok(pairs(&[("abc", "xyz")]))
        );
        assert_eq!(none.held_bytes(), 0, "a table of 0 keeps nothing");
    }

    proptest::proptest! {
        #[test]
        fn any_block_decodes_or_is_refused_and_the_table_stays_bounded(
            block in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            limit in 0usize..512,
        ) {
            let mut d = Decoder::new(limit);
            let _ = d.decode(&block, &mut Scratch::default(), |_, _| {});
            proptest::prop_assert!(d.table.size() <= limit);
        }
    }
}
