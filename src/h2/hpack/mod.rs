//! HPACK (RFC 7541): header compression for HTTP/2 — the primitives (integers, strings,
//! Huffman), the tables, the decoder a connection keeps for what its peer sends, and the
//! encoder of what this side sends.
//!
//! This side's encoder never adds to a dynamic table (a literal is sent without indexing, a
//! static entry by its index): the peer keeps no table for us, and our replies need no state.
//! The decoder's table is as large as this side advertised (SETTINGS_HEADER_TABLE_SIZE), no
//! larger, and holds nothing while the peer has put nothing in it.

mod decoder;
pub(crate) mod encoder;
mod huffman;
mod primitive;
mod table;

pub(crate) use decoder::{Decoder, Scratch};

/// Why a header block cannot be decoded: each is a COMPRESSION_ERROR, which ends the
/// connection (the table can no longer be kept in step with the peer's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HpackError {
    /// The block ends inside a field.
    Truncated,
    /// An integer larger than anything it could stand for.
    IntegerTooLarge,
    /// A Huffman-coded string with EOS or bad padding.
    Huffman,
    /// Index 0, or one past the static and dynamic tables.
    BadIndex,
    /// A dynamic table size update after a field of the block.
    SizeUpdateLate,
    /// A dynamic table size update above what this side advertised.
    SizeUpdateTooLarge,
}

/// Bytes written as hex pairs, spaces ignored: how the RFC's examples are given.
#[cfg(test)]
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}
