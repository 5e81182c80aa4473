//! HPACK's two primitive types (RFC 7541 §5): integers with an N-bit prefix, and string
//! literals, raw or Huffman-coded.

use super::HpackError;
use super::huffman;

/// The largest integer a peer may send: what HPACK integers stand for here (indexes, lengths,
/// table sizes) all fit well below it, and a longer one is refused before it can overflow.
const MAX_INT: u64 = u32::MAX as u64;

/// Reads an integer with an N-bit prefix from the start of `input` (the first byte's high bits
/// are the caller's): the value and the bytes it took.
pub(crate) fn read_int(input: &[u8], prefix_bits: u8) -> Result<(u64, usize), HpackError> {
    let first = *input.first().ok_or(HpackError::Truncated)?;
    let mask = (1u16 << prefix_bits) - 1;
    let mut value = u64::from(first) & u64::from(mask);
    if value < u64::from(mask) {
        return Ok((value, 1));
    }
    let mut shift = 0u32;
    for (at, &byte) in input.iter().enumerate().skip(1) {
        if shift > 28 {
            // Five continuation bytes carry 35 bits: a sixth is never needed.
            return Err(HpackError::IntegerTooLarge);
        }
        value += u64::from(byte & 0x7f) << shift;
        if value > MAX_INT {
            return Err(HpackError::IntegerTooLarge);
        }
        if byte & 0x80 == 0 {
            return Ok((value, at + 1));
        }
        shift += 7;
    }
    Err(HpackError::Truncated)
}

/// Appends `value` with an N-bit prefix; `first` holds the first byte's high bits.
pub(crate) fn write_int(out: &mut Vec<u8>, first: u8, prefix_bits: u8, value: u64) {
    let mask = (1u64 << prefix_bits) - 1;
    if value < mask {
        out.push(first | value as u8);
        return;
    }
    out.push(first | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A string literal at the start of `input`: its bytes (Huffman-decoded into `scratch`, which
/// it then borrows, or borrowed from `input` as they are) and the bytes it took.
pub(crate) fn read_string<'a>(
    input: &'a [u8],
    scratch: &'a mut Vec<u8>,
) -> Result<(&'a [u8], usize), HpackError> {
    let huffman = input.first().ok_or(HpackError::Truncated)? & 0x80 != 0;
    let (len, used) = read_int(input, 7)?;
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| used.checked_add(len))
        .ok_or(HpackError::Truncated)?;
    let raw = input.get(used..end).ok_or(HpackError::Truncated)?;
    if !huffman {
        return Ok((raw, end));
    }
    scratch.clear();
    huffman::decode(raw, scratch).map_err(|_| HpackError::Huffman)?;
    Ok((&scratch[..], end))
}

/// Appends `bytes` as a string literal: Huffman-coded when that is shorter.
pub(crate) fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    let coded = huffman::encoded_len(bytes);
    if coded < bytes.len() {
        write_int(out, 0x80, 7, coded as u64);
        huffman::encode(bytes, out);
    } else {
        write_int(out, 0, 7, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7541 C.1: 10 and 1337 with a 5-bit prefix, 42 with an 8-bit one.
    #[test]
    fn the_rfc_integer_examples() {
        let table: [(u64, u8, &[u8]); 3] = [
            (10, 5, &[0b0000_1010]),
            (1337, 5, &[0b0001_1111, 0b1001_1010, 0b0000_1010]),
            (42, 8, &[0b0010_1010]),
        ];
        for (value, bits, wire) in table {
            let mut out = Vec::new();
            write_int(&mut out, 0, bits, value);
            assert_eq!(out, wire, "{value}");
            assert_eq!(read_int(wire, bits), Ok((value, wire.len())));
        }
    }

    #[test]
    fn an_integer_cut_short_or_too_large_is_refused() {
        assert_eq!(read_int(&[0x1f, 0x9a], 5), Err(HpackError::Truncated));
        assert_eq!(read_int(&[], 5), Err(HpackError::Truncated));
        // 2^35: more than any index, length or size.
        assert_eq!(
            read_int(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f], 5),
            Err(HpackError::IntegerTooLarge)
        );
        // Endless continuation bytes stop at the bound, not at the end of the input.
        let mut long = vec![0x1f];
        long.extend(std::iter::repeat_n(0x80, 1000));
        assert_eq!(read_int(&long, 5), Err(HpackError::IntegerTooLarge));
        // A small value padded with zero continuation bytes is refused past five of them.
        let mut zeros = vec![0x1f];
        zeros.extend(std::iter::repeat_n(0x80, 9));
        zeros.push(0x01);
        assert_eq!(read_int(&zeros, 5), Err(HpackError::IntegerTooLarge));
    }

    #[test]
    fn strings_raw_and_huffman_and_cut_short() {
        let mut scratch = Vec::new();
        assert_eq!(
            read_string(b"\x0acustom-key", &mut scratch).map(|(s, n)| (s.to_vec(), n)),
            Ok((b"custom-key".to_vec(), 11))
        );
        let coded = [0x88, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f];
        let (s, n) = read_string(&coded, &mut scratch).unwrap();
        assert_eq!((s, n), (&b"custom-key"[..], 9));
        assert_eq!(
            read_string(b"\x0ashort", &mut scratch),
            Err(HpackError::Truncated)
        );
        let mut out = Vec::new();
        write_string(&mut out, b"custom-key");
        assert_eq!(out, coded);
    }

    proptest::proptest! {
        #[test]
        fn integers_round_trip(value in 0..=MAX_INT, bits in 1u8..=8) {
            let mut out = Vec::new();
            write_int(&mut out, 0, bits, value);
            proptest::prop_assert_eq!(read_int(&out, bits), Ok((value, out.len())));
        }
    }
}
