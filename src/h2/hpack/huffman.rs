//! The Huffman code of HPACK string literals (RFC 7541 §5.2, Appendix B).
//!
//! The code is canonical: codes of one length are consecutive in symbol order, and each length
//! starts where the shorter ones left off, doubled. So the appendix is fully given by each
//! symbol's code length, which is all this file writes down ([`LENGTHS`], readable against the
//! appendix row by row); the codes, and the tables decoding walks, are computed from it at
//! compile time, and the tests check them against the appendix's codes and its examples.
//!
//! Decoding is bit by bit over the canonical tables (at most 30 steps a symbol, 5 to 8 for the
//! characters headers are made of) and refuses what RFC 7541 §5.2 refuses: the EOS symbol, and
//! padding longer than 7 bits or not all ones.

/// Each symbol's code length in bits, symbols 0–255 and EOS (256): RFC 7541 Appendix B's
/// `len` column.
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    // 0–31: control characters
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    // 32–63: ' ' ! " # $ % & ' ( ) * + , - . / 0–9 : ; < = > ?
     6, 10, 10, 12, 13,  6,  8, 11, 10, 10,  8, 11,  8,  6,  6,  6,
     5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8, 15,  6, 12, 10,
    // 64–95: @ A–Z [ \ ] ^ _
    13,  6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,
     7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8, 13, 19, 13, 14,  6,
    // 96–127: ` a–z { | } ~ DEL
    15,  5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,
     6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7, 15, 11, 14, 13, 28,
    // 128–255
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    // EOS
    30,
];

/// The longest code.
const MAX_LEN: usize = 30;
/// The EOS symbol (never in a string).
const EOS: u16 = 256;

/// The canonical code, computed from [`LENGTHS`].
struct Code {
    /// Each symbol's code, right-aligned.
    codes: [u32; 257],
    /// The first code of each length.
    first: [u32; MAX_LEN + 1],
    /// How many symbols have each length.
    count: [u16; MAX_LEN + 1],
    /// Where each length's symbols start in `sorted`.
    start: [u16; MAX_LEN + 1],
    /// The symbols by (length, symbol).
    sorted: [u16; 257],
}

const CODE: Code = canonical();

const fn canonical() -> Code {
    let mut count = [0u16; MAX_LEN + 1];
    let mut s = 0;
    while s < 257 {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; MAX_LEN + 1];
    let mut start = [0u16; MAX_LEN + 1];
    let mut code = 0u32;
    let mut at = 0u16;
    let mut len = 1;
    while len <= MAX_LEN {
        first[len] = code;
        start[len] = at;
        code = (code + count[len] as u32) << 1;
        at += count[len];
        len += 1;
    }
    // Every code of the longest length is used, EOS last and all ones: the code is complete.
    assert!(code == 1 << (MAX_LEN + 1));
    let mut codes = [0u32; 257];
    let mut sorted = [0u16; 257];
    let mut next = first;
    let mut placed = start;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                codes[s] = next[len];
                next[len] += 1;
                sorted[placed[len] as usize] = s as u16;
                placed[len] += 1;
            }
            s += 1;
        }
        len += 1;
    }
    assert!(codes[EOS as usize] == (1 << MAX_LEN) - 1);
    Code {
        codes,
        first,
        count,
        start,
        sorted,
    }
}

/// Why a Huffman-coded string was refused (a COMPRESSION_ERROR on the connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// The EOS symbol inside the string.
    Eos,
    /// Padding of 8 bits or more, or not the high bits of EOS (all ones).
    Padding,
}

/// Appends the decoding of `input` to `out`.
pub(crate) fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let mut code = 0u32;
    let mut len = 0usize;
    for &byte in input {
        for bit in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> bit) & 1);
            len += 1;
            let offset = code.wrapping_sub(CODE.first[len]);
            if offset < u32::from(CODE.count[len]) {
                let symbol = CODE.sorted[usize::from(CODE.start[len]) + offset as usize];
                if symbol == EOS {
                    return Err(HuffmanError::Eos);
                }
                out.push(symbol as u8);
                code = 0;
                len = 0;
            } else if len == MAX_LEN {
                // Never: every 30-bit pattern is a code (the code is complete).
                return Err(HuffmanError::Eos);
            }
        }
    }
    // What is left is padding: at most 7 bits, all ones (the start of EOS).
    if len > 7 || code != (1 << len) - 1 {
        return Err(HuffmanError::Padding);
    }
    Ok(())
}

/// How many bytes `input` takes Huffman-coded.
pub(crate) fn encoded_len(input: &[u8]) -> usize {
    let bits: usize = input
        .iter()
        .map(|&b| usize::from(LENGTHS[usize::from(b)]))
        .sum();
    bits.div_ceil(8)
}

/// Appends `input` Huffman-coded, padded with the high bits of EOS.
pub(crate) fn encode(input: &[u8], out: &mut Vec<u8>) {
    let mut bits = 0u64;
    let mut held = 0u32;
    for &byte in input {
        let len = u32::from(LENGTHS[usize::from(byte)]);
        bits = (bits << len) | u64::from(CODE.codes[usize::from(byte)]);
        held += len;
        while held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
        }
        bits &= (1 << held) - 1;
    }
    if held > 0 {
        let pad = 8 - held;
        out.push(((bits << pad) | ((1 << pad) - 1)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack::hex;

    #[test]
    fn the_computed_codes_are_the_appendix_s() {
        // (symbol, code as hex, length) rows of RFC 7541 Appendix B, from every length.
        let rows: [(usize, u32, u8); 16] = [
            (0, 0x1ff8, 13),
            (1, 0x7fffd8, 23),
            (9, 0xffffea, 24),
            (10, 0x3ffffffc, 30),
            (b' ' as usize, 0x14, 6),
            (b'0' as usize, 0x0, 5),
            (b':' as usize, 0x5c, 7),
            (b'<' as usize, 0x7ffc, 15),
            (b'X' as usize, 0xfc, 8),
            (b'\\' as usize, 0x7fff0, 19),
            (b't' as usize, 0x9, 5),
            (b'|' as usize, 0x7fc, 11),
            (128, 0xfffe6, 20),
            (153, 0x1fffdc, 21),
            (199, 0x1ffffec, 25),
            (256, 0x3fffffff, 30),
        ];
        for (symbol, code, len) in rows {
            assert_eq!(
                (CODE.codes[symbol], LENGTHS[symbol]),
                (code, len),
                "{symbol}"
            );
        }
    }

    /// RFC 7541 Appendix C.4 and C.6: the examples' Huffman-coded strings.
    #[test]
    fn the_rfc_examples_round_trip() {
        let table: [(&str, &str); 8] = [
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("302", "6402"),
            ("private", "aec3 771a 4b"),
            (
                "Mon, 21 Oct 2013 20:13:21 GMT",
                "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
            ),
            (
                "https://www.example.com",
                "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
            ),
        ];
        for (text, coded) in table {
            let coded = hex(coded);
            let mut out = Vec::new();
            encode(text.as_bytes(), &mut out);
            assert_eq!(out, coded, "{text}");
            assert_eq!(encoded_len(text.as_bytes()), coded.len());
            let mut back = Vec::new();
            decode(&coded, &mut back).unwrap();
            assert_eq!(back, text.as_bytes());
        }
    }

    #[test]
    fn eos_and_bad_padding_are_refused() {
        // EOS in full (30 ones), padded.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()),
            Err(HuffmanError::Eos)
        );
        // 'a' (00011) then 3 bits of padding that are not ones.
        assert_eq!(
            decode(&[0b0001_1000], &mut Vec::new()),
            Err(HuffmanError::Padding)
        );
        // 'a' then a whole byte of ones: padding of 11 bits.
        assert_eq!(
            decode(&[0b0001_1111, 0xff], &mut Vec::new()),
            Err(HuffmanError::Padding)
        );
        // 'a' and its proper padding.
        let mut out = Vec::new();
        decode(&[0b0001_1111], &mut out).unwrap();
        assert_eq!(out, b"a");
        // Nothing at all is the empty string.
        assert_eq!(decode(&[], &mut Vec::new()), Ok(()));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_round_trip(input in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let mut coded = Vec::new();
            encode(&input, &mut coded);
            proptest::prop_assert_eq!(coded.len(), encoded_len(&input));
            let mut back = Vec::new();
            decode(&coded, &mut back).unwrap();
            proptest::prop_assert_eq!(back, input);
        }

        #[test]
        fn any_input_decodes_or_is_refused_without_panic(input in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let mut out = Vec::new();
            let _ = decode(&input, &mut out);
            proptest::prop_assert!(out.len() <= input.len() * 8 / 5);
        }
    }
}
