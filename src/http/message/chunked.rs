//! The incremental decoder of the chunked transfer coding (RFC 9112 §7.1).
//!
//! ```text
//! chunked-body   = *chunk last-chunk trailer-section CRLF
//! chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! last-chunk     = 1*("0") [ chunk-ext ] CRLF
//! ```
//! Extensions are accepted and discarded, bounded by [`MAX_CHUNK_EXTENSIONS`] bytes per
//! message; trailer lines are consumed and discarded (never merged into the headers), bounded by
//! [`MAX_TRAILER_BYTES`].

use crate::http::error::ParseError;
use crate::http::grammar::{is_field_byte, is_tchar};

/// Most bytes of chunk extensions accepted over a whole message.
pub const MAX_CHUNK_EXTENSIONS: usize = 16 * 1024;
/// Most bytes of trailer lines accepted.
pub const MAX_TRAILER_BYTES: usize = 16 * 1024;
/// Most hex digits of a chunk size, leading zeros included (16 hold any 64-bit size).
const MAX_SIZE_DIGITS: u32 = 32;
/// Framing bytes (size lines, CRLFs) a body may spend beyond its data: 64 KiB plus as many as
/// it carries data. Without this, a peer sending tiny chunks (or an endless run of zeros)
/// would make the server hold far more raw input than the body limit says.
const FRAMING_ALLOWANCE: u64 = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum State {
    /// Reading the hex digits of a chunk size (`digits` of them so far).
    #[default]
    Size,
    /// Whitespace after the size: only more of it or a `;` may follow (`BWS ";"`).
    SizeWs,
    /// Inside extensions, up to the CR.
    Extension,
    /// Expecting the LF of the size line.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// Expecting the CR after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// At the start of a trailer line or of the final CRLF.
    TrailerStart,
    /// Inside a trailer line's field name, up to its colon.
    TrailerName,
    /// Inside a trailer line's value.
    Trailer,
    /// Expecting the LF ending a trailer line.
    TrailerLf,
    /// Expecting the LF of the final CRLF.
    EndLf,
    /// The body is complete.
    Done,
}

/// Decodes a chunked body fed in pieces, appending the data to an output buffer.
///
/// ```
/// use web::http::ChunkedDecoder;
/// let mut d = ChunkedDecoder::new(1 << 20);
/// let mut body = Vec::new();
/// let n = d.decode(b"3;ext=1\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\nNEXT", &mut body).unwrap();
/// assert!(d.is_done());
/// assert_eq!((body.as_slice(), n), (&b"abc"[..], 33));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ChunkedDecoder {
    state: State,
    /// Data bytes left in the current chunk, or the size being read.
    size: u64,
    digits: u32,
    extension_bytes: usize,
    trailer_bytes: usize,
    framing: u64,
    decoded: u64,
    max_body: u64,
}

impl ChunkedDecoder {
    /// A decoder that refuses bodies longer than `max_body` decoded bytes.
    ///
    /// ```
    /// let decoder = web::http::ChunkedDecoder::new(1 << 20); // bodies over 1 MiB: BodyTooLarge
    /// assert!(!decoder.is_done());
    /// ```
    pub fn new(max_body: u64) -> ChunkedDecoder {
        ChunkedDecoder {
            max_body,
            ..ChunkedDecoder::default()
        }
    }

    /// Whether the whole body, trailers and final CRLF included, has been read.
    ///
    /// ```
    /// let mut d = web::http::ChunkedDecoder::new(100);
    /// let mut body = Vec::new();
    /// d.decode(b"0\r\n\r\n", &mut body).unwrap();
    /// assert!(d.is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decoded bytes so far.
    ///
    /// ```
    /// let mut d = web::http::ChunkedDecoder::new(100);
    /// let mut body = Vec::new();
    /// d.decode(b"3\r\nabc\r\n", &mut body).unwrap();
    /// assert_eq!(d.decoded(), 3);
    /// ```
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Decodes as much of `input` as it can, appending chunk data to `out`. Returns how many
    /// bytes of `input` it consumed: all of them unless the body ended inside `input`, in which
    /// case the rest belongs to whatever follows the body.
    ///
    /// ```
    /// let mut d = web::http::ChunkedDecoder::new(100);
    /// let mut body = Vec::new();
    /// assert_eq!(d.decode(b"2\r\nhi\r\n0\r\n\r\nNEXT", &mut body), Ok(12)); // NEXT is not the body's
    /// assert_eq!(body, b"hi");
    /// ```
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, ParseError> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            if self.state == State::Data {
                let n = usize::try_from(self.size)
                    .unwrap_or(usize::MAX)
                    .min(input.len() - i);
                out.extend_from_slice(&input[i..i + n]);
                self.size -= n as u64;
                i += n;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            self.step(input[i])?;
            i += 1;
        }
        Ok(i)
    }

    /// One byte of framing.
    fn step(&mut self, b: u8) -> Result<(), ParseError> {
        use State::*;
        self.framing += 1;
        if self.framing > FRAMING_ALLOWANCE.saturating_add(self.decoded) {
            return Err(ParseError::BodyTooLarge);
        }
        self.state = match (self.state, b) {
            (Size, _) if b.is_ascii_hexdigit() => {
                let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
                self.size = self
                    .size
                    .checked_mul(16)
                    .and_then(|s| s.checked_add(digit))
                    .ok_or(ParseError::ChunkSizeOverflow)?;
                self.digits += 1;
                if self.digits > MAX_SIZE_DIGITS {
                    return Err(ParseError::ChunkSize);
                }
                Size
            }
            (Size, _) if self.digits == 0 => return Err(ParseError::ChunkSize),
            // `chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )`: whitespace after
            // the size only before a `;` (a size line `5 ` is refused, as parsers disagree on it).
            (Size | SizeWs, b' ' | b'\t') => {
                self.extension_byte()?;
                SizeWs
            }
            (Size | SizeWs, b';') => {
                self.extension_byte()?;
                Extension
            }
            (Size | Extension, b'\r') => SizeLf,
            (Size | SizeWs | Extension, b'\n') => return Err(ParseError::LineEnding),
            (Size | SizeWs, _) => return Err(ParseError::ChunkSize),
            (Extension, _) if is_field_byte(b) => {
                self.extension_byte()?;
                Extension
            }
            (Extension, _) => return Err(ParseError::ChunkSize),
            (SizeLf, b'\n') => {
                let size = std::mem::take(&mut self.size);
                self.digits = 0;
                if size == 0 {
                    TrailerStart
                } else {
                    self.decoded = self
                        .decoded
                        .checked_add(size)
                        .filter(|&d| d <= self.max_body)
                        .ok_or(ParseError::BodyTooLarge)?;
                    self.size = size;
                    Data
                }
            }
            (SizeLf, _) => return Err(ParseError::LineEnding),
            (DataCr, b'\r') => DataLf,
            (DataCr, _) => return Err(ParseError::ChunkDataEnd),
            (DataLf, b'\n') => Size,
            (DataLf, _) => return Err(ParseError::ChunkDataEnd),
            (TrailerStart, b'\r') => EndLf,
            // A trailer line is a field line: a name, a colon, a value (no folding, no bare LF).
            (TrailerStart | TrailerName, _) if is_tchar(b) => {
                self.trailer_byte()?;
                TrailerName
            }
            (TrailerName, b':') => {
                self.trailer_byte()?;
                Trailer
            }
            (TrailerStart | TrailerName, _) => return Err(ParseError::Trailers),
            (Trailer, b'\r') => TrailerLf,
            (Trailer, _) if is_field_byte(b) => {
                self.trailer_byte()?;
                Trailer
            }
            (Trailer, _) => return Err(ParseError::Trailers),
            (TrailerLf, b'\n') => TrailerStart,
            (EndLf, b'\n') => Done,
            (TrailerLf | EndLf, _) => return Err(ParseError::LineEnding),
            (Data | Done, _) => self.state,
        };
        Ok(())
    }

    fn extension_byte(&mut self) -> Result<(), ParseError> {
        self.extension_bytes += 1;
        if self.extension_bytes > MAX_CHUNK_EXTENSIONS {
            return Err(ParseError::ChunkExtensionTooLong);
        }
        Ok(())
    }

    fn trailer_byte(&mut self) -> Result<(), ParseError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > MAX_TRAILER_BYTES {
            return Err(ParseError::Trailers);
        }
        Ok(())
    }
}

/// Decodes a whole chunked body held in memory: the data and the bytes the body took.
pub(crate) fn decode_all(input: &[u8], max_body: u64) -> Result<(Vec<u8>, usize), ParseError> {
    let mut decoder = ChunkedDecoder::new(max_body);
    let mut out = Vec::new();
    let used = decoder.decode(input, &mut out)?;
    if decoder.is_done() {
        Ok((out, used))
    } else {
        Err(ParseError::Incomplete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_bodies() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"0\r\n\r\n", b""),
            (b"000\r\n\r\n", b""),
            (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world"),
            (b"A\r\n0123456789\r\n0\r\n\r\n", b"0123456789"),
            (b"a\r\n0123456789\r\n0\r\n\r\n", b"0123456789"),
            (b"3;name=value\r\nabc\r\n0;last\r\n\r\n", b"abc"),
            (b"3 ; name=\"quoted value\"\r\nabc\r\n0\r\n\r\n", b"abc"),
            (
                b"3\r\nabc\r\n0\r\nExpires: never\r\nX-Sum: 1\r\n\r\n",
                b"abc",
            ),
            (b"3\r\n\r\n\n\r\n0\r\n\r\n", b"\r\n\n"),
        ];
        for (input, body) in cases {
            let (out, used) = decode_all(input, u64::MAX).unwrap();
            assert_eq!((out.as_slice(), used), (*body, input.len()), "{input:?}");
        }
    }

    #[test]
    fn rejected_bodies() {
        let cases: &[(&[u8], ParseError)] = &[
            (b"\r\n", ParseError::ChunkSize),
            (b"g\r\n", ParseError::ChunkSize),
            (b"-1\r\n", ParseError::ChunkSize),
            (b"0x5\r\n", ParseError::ChunkSize),
            (b"3\nabc\r\n", ParseError::LineEnding),
            (b"3\r\nabcd\r\n", ParseError::ChunkDataEnd),
            (b"3\r\nabc\n0\r\n\r\n", ParseError::ChunkDataEnd),
            (b"3\r\nabc\rX", ParseError::ChunkDataEnd),
            (b"3;a\0b\r\n", ParseError::ChunkSize),
            (b"10000000000000000\r\n", ParseError::ChunkSizeOverflow),
            (b"ffffffffffffffff0\r\n", ParseError::ChunkSizeOverflow),
            (b"0\r\n folded: x\r\n\r\n", ParseError::Trailers),
            (b"0\r\nX: a\0\r\n\r\n", ParseError::Trailers),
            (b"0\r\nX: a\n\r\n", ParseError::Trailers),
            (b"0\r\n\rX", ParseError::LineEnding),
            // Whitespace after a size is allowed only before an extension.
            (b"3 \r\nabc\r\n0\r\n\r\n", ParseError::ChunkSize),
            (b"3\t\r\nabc\r\n0\r\n\r\n", ParseError::ChunkSize),
            (b"3 x\r\nabc\r\n0\r\n\r\n", ParseError::ChunkSize),
            (b"0 \r\n\r\n", ParseError::ChunkSize),
            // A trailer line needs its colon.
            (b"0\r\nNoColon\r\n\r\n", ParseError::Trailers),
            (b"0\r\nX : a\r\n\r\n", ParseError::Trailers),
            (b"0\r\n:a\r\n\r\n", ParseError::Trailers),
        ];
        for (input, err) in cases {
            assert_eq!(
                decode_all(input, u64::MAX).map(|_| ()),
                Err(*err),
                "{input:?}"
            );
        }
    }

    #[test]
    fn the_body_limit_is_checked_before_the_data_arrives() {
        let mut d = ChunkedDecoder::new(10);
        let mut out = Vec::new();
        assert_eq!(d.decode(b"5\r\nhello\r\n", &mut out), Ok(10));
        assert_eq!(d.decode(b"6\r\n", &mut out), Err(ParseError::BodyTooLarge));
        assert_eq!(
            decode_all(b"ffffffffffffffff\r\n", u64::MAX - 1).map(|_| ()),
            Err(ParseError::BodyTooLarge)
        );
    }

    #[test]
    fn extensions_and_trailers_are_bounded() {
        let mut long_ext = b"1;".to_vec();
        long_ext.extend(std::iter::repeat_n(b'x', MAX_CHUNK_EXTENSIONS));
        long_ext.extend_from_slice(b"\r\n");
        assert_eq!(
            decode_all(&long_ext, u64::MAX).map(|_| ()),
            Err(ParseError::ChunkExtensionTooLong)
        );

        let mut many = Vec::new();
        for _ in 0..MAX_CHUNK_EXTENSIONS / 8 + 1 {
            many.extend_from_slice(b"1;abcdefg\r\nx\r\n");
        }
        assert_eq!(
            decode_all(&many, u64::MAX).map(|_| ()),
            Err(ParseError::ChunkExtensionTooLong)
        );

        let mut trailer = b"0\r\nX: ".to_vec();
        trailer.extend(std::iter::repeat_n(b'y', MAX_TRAILER_BYTES));
        assert_eq!(
            decode_all(&trailer, u64::MAX).map(|_| ()),
            Err(ParseError::Trailers)
        );
    }

    #[test]
    fn endless_zeros_and_tiny_chunks_are_refused() {
        // Regression: a chunk size of endless leading zeros was accepted without bound.
        let zeros = vec![b'0'; 10_000];
        assert_eq!(
            ChunkedDecoder::new(u64::MAX).decode(&zeros, &mut Vec::new()),
            Err(ParseError::ChunkSize)
        );
        let mut ok = vec![b'0'; 31];
        ok.extend_from_slice(b"5\r\nhello\r\n0\r\n\r\n");
        assert_eq!(
            decode_all(&ok, u64::MAX).map(|(b, _)| b),
            Ok(b"hello".to_vec())
        );
        // 1-byte chunks cost 6 bytes each: past the framing allowance they are refused.
        let tiny = b"1\r\nx\r\n".repeat(20_000);
        assert_eq!(
            decode_all(&tiny, u64::MAX).map(|_| ()),
            Err(ParseError::BodyTooLarge)
        );
        let fine = b"1\r\nx\r\n".repeat(10_000);
        assert_eq!(
            decode_all(&fine, u64::MAX).map(|_| ()),
            Err(ParseError::Incomplete)
        );
    }

    #[test]
    fn stops_at_the_end_of_the_body() {
        let mut d = ChunkedDecoder::new(100);
        let mut out = Vec::new();
        let input = b"1\r\na\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        assert_eq!(d.decode(input, &mut out), Ok(11));
        assert!(d.is_done());
        assert_eq!(d.decode(b"more", &mut out), Ok(0));
        assert_eq!(d.decoded(), 1);
    }

    #[test]
    fn incomplete_bodies_are_not_done() {
        for input in [
            &b""[..],
            b"5",
            b"5\r\nhel",
            b"5\r\nhello\r\n",
            b"0\r\n",
            b"0\r\nX: y\r\n",
        ] {
            assert_eq!(
                decode_all(input, u64::MAX).map(|_| ()),
                Err(ParseError::Incomplete)
            );
        }
    }
}
