//! Character classes and small pieces of HTTP syntax shared by the request parser, the reply
//! parser and the chunked decoder (RFC 9110 §5.5–§5.6, RFC 9112 §2–§5).

use super::error::ParseError;

/// A byte table: ASCII letters and digits, and the bytes of `extra`.
pub(crate) const fn alphanumeric_and(extra: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
}

/// `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
/// / DIGIT / ALPHA` (RFC 9110 §5.6.2).
static TCHAR: [bool; 256] = alphanumeric_and(b"!#$%&'*+-.^_`|~");

/// Each `tchar` lower-cased, and 0 for every byte that is not a `tchar`: a field name is
/// checked and folded to lower case in one pass ([`lower_field_name`]).
static TCHAR_LOWER: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        if TCHAR[b] {
            t[b] = (b as u8).to_ascii_lowercase();
        }
        b += 1;
    }
    t
};

/// Bytes allowed inside a field value: `field-vchar = VCHAR / obs-text` plus SP and HTAB between
/// them (RFC 9110 §5.5). Every other control byte — NUL, CR, LF, DEL, ... — is refused.
static FIELD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b == 0x09 || (b >= 0x20 && b != 0x7f);
        b += 1;
    }
    t
};

/// Whether `b` may appear in a token (method, field name, transfer coding).
#[inline]
pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// Whether `b` may appear in a field value.
#[inline]
pub(crate) fn is_field_byte(b: u8) -> bool {
    FIELD_BYTE[b as usize]
}

/// A byte a client may put in a request target or a `Host` value it sends: visible ASCII or
/// obs-text — never a space, a control byte (CR and LF above all: they would end the line and
/// start another request) or DEL. The one check for every request line this library writes.
pub(crate) fn is_sendable_target_byte(b: u8) -> bool {
    b > 0x20 && b != 0x7f
}

/// Whether `s` is a URI scheme: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` (RFC 3986 §3.1).
pub(crate) fn is_scheme(s: &[u8]) -> bool {
    matches!(s.first(), Some(b) if b.is_ascii_alphabetic())
        && s.iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// Whether every byte is a `tchar` and there is at least one.
pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Whether `word` has a byte equal to zero: the lowest set bit of the result marks the first.
#[inline]
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(LO) & !word & HI
}

/// The position of the first `\n` in `buf`, eight bytes at a time.
#[inline]
pub(crate) fn find_lf(buf: &[u8]) -> Option<usize> {
    let mut chunks = buf.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = zero_bytes(u64::from_le_bytes(word) ^ (LO * u64::from(b'\n')));
        if found != 0 {
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| base + i)
}

/// The lines of what a peer sent, read leniently (RFC 9112 §2.2: a recipient may take a bare LF
/// for a line end): each ends at LF, the CR before it removed. The one way the library splits
/// raw heads it does not serve — replies, raw requests handed to the specification's helpers.
/// (The server's own request parser, `message/head.rs`, is strict and reads bytes one state at
/// a time.)
#[derive(Clone, Debug)]
pub(crate) struct Lines<'a> {
    buf: &'a [u8],
    /// Where the next line starts.
    at: usize,
    /// Whether the bytes after the last LF are a line too.
    with_tail: bool,
}

impl<'a> Lines<'a> {
    /// Only lines an LF ends: what follows the last LF is left (see [`Lines::at`]).
    pub(crate) fn terminated(buf: &'a [u8]) -> Lines<'a> {
        Lines {
            buf,
            at: 0,
            with_tail: false,
        }
    }

    /// Every line, the bytes after the last LF included when there are any.
    pub(crate) fn all(buf: &'a [u8]) -> Lines<'a> {
        Lines {
            buf,
            at: 0,
            with_tail: true,
        }
    }

    /// Bytes taken by the lines read so far, their line ends included.
    pub(crate) fn at(&self) -> usize {
        self.at
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.buf.get(self.at..)?;
        let (line, taken) = match find_lf(rest) {
            Some(lf) => (&rest[..lf], lf + 1),
            None if self.with_tail && !rest.is_empty() => (rest, rest.len()),
            None => return None,
        };
        self.at += taken;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}

/// The position of the first control byte (below 0x20, or DEL) in `buf` at or after `from`:
/// sixteen bytes at a time with SSE2 on x86_64 (part of its baseline), eight at a time
/// elsewhere.
#[inline]
pub(crate) fn find_control(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = buf.get(at..at + 16) {
        let mask = sse2::control_mask(chunk.try_into().ok()?);
        if mask != 0 {
            return Some(at + mask.trailing_zeros() as usize);
        }
        at += 16;
    }
    while let Some(chunk) = buf.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        // Bytes below 0x20 (exact as a "has any" test, and for the lowest hit) or equal to 0x7f.
        let below = word.wrapping_sub(LO * 0x20) & !word & HI;
        let del = zero_bytes(word ^ (LO * 0x7f));
        let found = below | del;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    buf.get(at..)?
        .iter()
        .position(|&b| b < 0x20 || b == 0x7f)
        .map(|i| at + i)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// A bit per byte of `chunk` (lowest bit first): set for a control byte (below 0x20) or DEL.
    #[inline]
    pub(super) fn control_mask(chunk: &[u8; 16]) -> u32 {
        // SAFETY: SSE2 is part of the x86_64 baseline, so these intrinsics exist on every
        // x86_64 CPU; `_mm_loadu_si128` reads exactly the 16 bytes of `chunk` (a reference to
        // 16 initialised bytes) and has no alignment requirement.
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            // Unsigned `v <= 0x1f` as `max(v, 0x1f) == 0x1f`.
            let low = _mm_set1_epi8(0x1f);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
            let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
            _mm_movemask_epi8(_mm_or_si128(control, del)) as u32
        }
    }
}

/// `s` without leading and trailing SP / HTAB (the optional whitespace `OWS`).
#[inline]
pub(crate) fn trim_ows(s: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !is_ows(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

/// Splits one field line (without its CRLF) into name and value, the value trimmed of OWS.
///
/// ```text
/// field-line = field-name ":" OWS field-value OWS        (RFC 9112 §5)
/// ```
/// No whitespace is allowed between the name and the colon (RFC 9112 §5.1) and a line starting
/// with whitespace is an obsolete line folding (§5.2). The bytes of the value are not checked
/// here: see [`check_field_value`].
pub(crate) fn split_field_line(line: &[u8]) -> Result<(&[u8], &[u8]), ParseError> {
    let name_len = line
        .iter()
        .position(|&b| !is_tchar(b))
        .unwrap_or(line.len());
    field_line_parts(line, name_len)
}

/// Folds the field name at the start of `line` to lower case in place, checking it as it goes;
/// returns its length (where the first byte that is not a `tchar` is). Pass the result to
/// [`field_line_parts`].
///
/// Eight bytes at a time while they are letters, digits or `-` (most names); the word where
/// that run ends has its run lower-cased at once, and the table takes over from the first other
/// byte (usually the colon, so a short name such as `Host` is one step and one lookup).
#[inline]
pub(crate) fn lower_field_name(line: &mut [u8]) -> usize {
    let mut i = 0;
    while let Some(chunk) = line.get_mut(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let (lower, run) = lower_simple_run(u64::from_le_bytes(word));
        chunk.copy_from_slice(&lower.to_le_bytes());
        i += run;
        if run < 8 {
            break;
        }
    }
    while let Some(b) = line.get_mut(i) {
        let lower = TCHAR_LOWER[usize::from(*b)];
        if lower == 0 {
            break;
        }
        *b = lower;
        i += 1;
    }
    i
}

/// How many of the eight bytes of `w` (first byte lowest) are, from the first on, ASCII
/// letters, digits or `-`, and `w` with those lower-cased (the others unchanged). Byte-wise
/// arithmetic on the low seven bits of each byte, which never carries into the next byte;
/// a byte with its high bit set ends the run.
#[inline]
fn lower_simple_run(w: u64) -> (u64, usize) {
    let w7 = w & !HI;
    // High bit of each byte set where lo <= byte <= hi.
    let in_range = |x: u64, lo: u8, hi: u8| {
        let at_least_lo = x + LO * u64::from(0x80 - lo);
        let above_hi = x + LO * u64::from(0x7f - hi);
        at_least_lo & !above_hi & HI
    };
    let alpha = in_range(w7 | (LO * 0x20), b'a', b'z');
    let digit = in_range(w7, b'0', b'9');
    let dash = !((w7 ^ (LO * u64::from(b'-'))) + LO * 0x7f) & HI;
    let other = (!(alpha | digit | dash) & HI) | (w & HI);
    // Bytes before the first other one (all eight when there is none).
    let run = (other.trailing_zeros() / 8) as usize;
    let in_run = match run {
        8 => u64::MAX,
        n => (1u64 << (8 * n)) - 1,
    };
    (w | ((alpha >> 2) & in_run), run)
}

/// The name (its first `name_len` bytes, all `tchar`s) and the OWS-trimmed value of a field
/// line, or why it is not one.
pub(crate) fn field_line_parts(line: &[u8], name_len: usize) -> Result<(&[u8], &[u8]), ParseError> {
    match line.get(name_len) {
        _ if name_len == 0 => {
            return Err(match line.first() {
                Some(b' ' | b'\t') => ParseError::ObsFold,
                _ => ParseError::HeaderName,
            });
        }
        Some(b':') => {}
        Some(b' ' | b'\t') => return Err(ParseError::SpaceBeforeColon),
        _ => return Err(ParseError::HeaderName),
    }
    Ok((&line[..name_len], trim_ows(&line[name_len + 1..])))
}

/// Refuses a field value holding a control byte other than HTAB (a lone CR included).
pub(crate) fn check_field_value(value: &[u8]) -> Result<(), ParseError> {
    if value.iter().all(|&b| is_field_byte(b)) {
        Ok(())
    } else {
        Err(ParseError::HeaderValue)
    }
}

/// Parses `1*DIGIT` into a `u64`, refusing anything else (signs, spaces, overflow).
pub(crate) fn parse_digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Test cases for a byte-class scanner: `plain` with `x` at `p` and `y` at `q`, for every pair
/// of positions `p <= q` and every pair of bytes from `bytes`, each given to `check` with a
/// description.
#[cfg(test)]
pub(crate) fn each_with_two_bytes(
    plain: &[u8],
    bytes: &[u8],
    mut check: impl FnMut(Vec<u8>, &str),
) {
    for p in 0..plain.len() {
        for q in p..plain.len() {
            for &x in bytes {
                for &y in bytes {
                    let mut case = plain.to_vec();
                    case[p] = x;
                    case[q] = y;
                    check(
                        case,
                        &format!("len {}, {x:#x} at {p}, {y:#x} at {q}", plain.len()),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_with_or_without_cr_and_the_tail_is_a_line_only_when_asked() {
        // (input, terminated lines and where they end, all lines)
        type Case = (
            &'static [u8],
            &'static [&'static [u8]],
            usize,
            &'static [&'static [u8]],
        );
        let cases: [Case; 6] = [
            (b"", &[], 0, &[]),
            (b"a\r\nb\nc", &[b"a", b"b"], 5, &[b"a", b"b", b"c"]),
            (b"a\r\n\r\n", &[b"a", b""], 5, &[b"a", b""]),
            (b"\n\n", &[b"", b""], 2, &[b"", b""]),
            (b"a\rb\r", &[], 0, &[b"a\rb"]),
            (b"x\r\r\n", &[b"x\r"], 4, &[b"x\r"]),
        ];
        for (input, terminated, end, all) in cases {
            let mut lines = Lines::terminated(input);
            let got: Vec<&[u8]> = lines.by_ref().collect();
            assert_eq!((got.as_slice(), lines.at()), (terminated, end), "{input:?}");
            let got: Vec<&[u8]> = Lines::all(input).collect();
            assert_eq!(got.as_slice(), all, "{input:?}");
        }
    }

    #[test]
    fn find_lf_finds_the_first_newline_at_every_position() {
        for len in 0..40 {
            for at in 0..len {
                let mut buf = vec![b'a'; len];
                buf[at] = b'\n';
                if at + 1 < len {
                    buf[len - 1] = b'\n';
                }
                assert_eq!(find_lf(&buf), Some(at), "len {len} at {at}");
            }
            assert_eq!(find_lf(&vec![0x8a; len]), None);
        }
    }

    #[test]
    fn find_control_finds_the_first_control_byte() {
        for len in 0..40 {
            for at in 0..len {
                for byte in [0u8, b'\t', b'\r', b'\n', 0x1f, 0x7f] {
                    let mut buf = vec![b'a'; len];
                    buf[at] = byte;
                    assert_eq!(find_control(&buf, 0), Some(at), "len {len} at {at}");
                    if at > 0 {
                        assert_eq!(find_control(&buf, at), Some(at));
                    }
                }
            }
            assert_eq!(find_control(&vec![0x20; len], 0), None);
            assert_eq!(
                find_control(&vec![0xc3; len], 0),
                None,
                "obs-text is not control"
            );
            assert_eq!(find_control(b"ab", 5), None);
        }
    }

    #[test]
    fn lower_field_name_agrees_with_the_table_for_every_byte_at_every_position() {
        for byte in 0..=255u8 {
            for len in [1usize, 7, 8, 9, 16, 17, 23] {
                for at in 0..len {
                    let mut line: Vec<u8> =
                        b"Content-Type-X1-ABCDEFGHIJKLMNOPQRSTUVWXYZ"[..len].to_vec();
                    line[at] = byte;
                    line.extend_from_slice(b": v");
                    let mut want = line.clone();
                    let want_len = lower_field_name_by_bytes(&mut want);
                    let got_len = lower_field_name(&mut line);
                    assert_eq!(
                        (got_len, &line),
                        (want_len, &want),
                        "byte {byte:#x} at {at}"
                    );
                }
            }
        }
    }

    /// `lower_simple_run` a byte at a time: the run of ASCII letters, digits and `-` from the
    /// first byte, lower-cased; the bytes after it unchanged.
    fn lower_simple_run_by_bytes(w: u64) -> (u64, usize) {
        let mut bytes = w.to_le_bytes();
        let run = bytes
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-'))
            .unwrap_or(8);
        bytes[..run].make_ascii_lowercase();
        (u64::from_le_bytes(bytes), run)
    }

    /// `lower_field_name` a byte at a time, through the table.
    fn lower_field_name_by_bytes(line: &mut [u8]) -> usize {
        let mut i = 0;
        while i < line.len() && TCHAR_LOWER[usize::from(line[i])] != 0 {
            line[i] = TCHAR_LOWER[usize::from(line[i])];
            i += 1;
        }
        i
    }

    /// Two bytes of any value in any two lanes (the same lane too) of words otherwise filled
    /// with each kind of run byte: carries or borrows between lanes would show here.
    #[test]
    fn lower_simple_run_agrees_with_a_byte_loop_for_every_pair_of_bytes_and_lanes() {
        for fill in [b'A', b'z', b'0', b'-'] {
            for i in 0..8 {
                for j in i..8 {
                    for a in 0..=255u8 {
                        for b in 0..=255u8 {
                            let mut bytes = [fill; 8];
                            bytes[i] = a;
                            bytes[j] = b;
                            let w = u64::from_le_bytes(bytes);
                            assert_eq!(
                                lower_simple_run(w),
                                lower_simple_run_by_bytes(w),
                                "{bytes:02x?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Lines of every length up to 36 (none with a colon, so the name may run to the end of
    /// the buffer), each with two unusual bytes at every pair of positions: the name's length
    /// and every byte of the line agree with the byte loop.
    #[test]
    fn lower_field_name_edges_and_two_unusual_bytes() {
        const NAME: &[u8] = b"X-Forwarded-For-Sec-WebSocket-Key-AbZ9";
        let unusual = [
            0u8, b'\t', b' ', b'!', b'.', b'_', b'~', b'`', b'|', b'@', b'[', b'{', b'/', b'"',
            0x7f, 0x80, 0xc3, 0xff,
        ];
        for len in 0..=36 {
            let plain = &NAME[..len];
            let mut want = plain.to_vec();
            assert_eq!(lower_field_name_by_bytes(&mut want), len);
            let mut got = plain.to_vec();
            assert_eq!((lower_field_name(&mut got), &got), (len, &want), "{len}");
            each_with_two_bytes(plain, &unusual, |mut line, case| {
                let mut want = line.clone();
                let want_len = lower_field_name_by_bytes(&mut want);
                let got_len = lower_field_name(&mut line);
                assert_eq!((got_len, &line), (want_len, &want), "{case}");
            });
        }
    }

    #[test]
    fn find_control_agrees_with_a_byte_loop_for_every_byte_value_and_position() {
        for byte in 0..=255u8 {
            for len in [1usize, 7, 8, 9, 15, 16, 17, 31, 33] {
                for at in 0..len {
                    let mut buf = vec![b'a'; len];
                    buf[at] = byte;
                    let want = buf.iter().position(|&b| b < 0x20 || b == 0x7f);
                    assert_eq!(
                        find_control(&buf, 0),
                        want,
                        "byte {byte:#x} len {len} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn split_field_line_cases() {
        let ok: &[(&[u8], &[u8], &[u8])] = &[
            (b"Host: a", b"Host", b"a"),
            (b"X:\t a b \t", b"X", b"a b"),
            (b"Empty:", b"Empty", b""),
            (b"Empty:   ", b"Empty", b""),
            (b"U: caf\xc3\xa9", b"U", b"caf\xc3\xa9"),
        ];
        for (line, name, value) in ok {
            assert_eq!(split_field_line(line), Ok((*name, *value)));
        }
        let bad: &[(&[u8], ParseError)] = &[
            (b"Host : a", ParseError::SpaceBeforeColon),
            (b"Host\t: a", ParseError::SpaceBeforeColon),
            (b" folded", ParseError::ObsFold),
            (b"\tfolded", ParseError::ObsFold),
            (b": novalue", ParseError::HeaderName),
            (b"Na(me: x", ParseError::HeaderName),
            (b"NoColon", ParseError::HeaderName),
            (b"X: a\0b", ParseError::HeaderValue),
            (b"X: a\rb", ParseError::HeaderValue),
            (b"X: a\x7fb", ParseError::HeaderValue),
            (b"X: a\x01", ParseError::HeaderValue),
        ];
        for (line, err) in bad {
            assert_eq!(
                split_field_line(line).and_then(|(_, v)| check_field_value(v)),
                Err(*err),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn parse_digits_cases() {
        assert_eq!(parse_digits(b"0"), Some(0));
        assert_eq!(parse_digits(b"007"), Some(7));
        assert_eq!(parse_digits(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"18446744073709551616",
            b"+1",
            b"-1",
            b"1 ",
            b"0x10",
            b"1.0",
        ] {
            assert_eq!(parse_digits(bad), None);
        }
    }
}
