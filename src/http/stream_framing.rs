//! How a streamed response body is delimited on the wire (RFC 9112 §6): by its announced
//! `Content-Length`, by chunked transfer coding, or — for an HTTP/1.0 client when the length is
//! not known — by closing the connection. A pure codec: pieces in, framed bytes out.

use super::render::push_hex;

/// How a streamed body ends, chosen once per response by [`StreamFraming::choose`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamFraming {
    /// `Content-Length` was announced: exactly `left` more bytes.
    Length { left: u64 },
    /// `Transfer-Encoding: chunked`: each piece a chunk, a last chunk at the end.
    Chunked,
    /// No length and a client that cannot read chunks (HTTP/1.0): the body ends when the
    /// connection closes.
    UntilClose,
}

/// A piece would carry the body past its announced length.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PastLength;

impl StreamFraming {
    /// The framing for a body of `length` bytes (when known) to a client speaking HTTP/1.0
    /// (`http10`) or 1.1.
    pub(crate) fn choose(length: Option<u64>, http10: bool) -> StreamFraming {
        match (length, http10) {
            (Some(left), _) => StreamFraming::Length { left },
            (None, false) => StreamFraming::Chunked,
            (None, true) => StreamFraming::UntilClose,
        }
    }

    /// Whether the connection may stay open after a body framed so (a close-delimited body
    /// ends it).
    pub(crate) fn allows_keep_alive(self) -> bool {
        self != StreamFraming::UntilClose
    }

    /// Appends `piece`, framed, to `out`. An empty piece writes nothing (in chunked coding a
    /// chunk of size 0 would end the body).
    pub(crate) fn piece(&mut self, out: &mut Vec<u8>, piece: &[u8]) -> Result<(), PastLength> {
        if piece.is_empty() {
            return Ok(());
        }
        match self {
            StreamFraming::Length { left } => {
                *left = left.checked_sub(piece.len() as u64).ok_or(PastLength)?;
                out.extend_from_slice(piece);
            }
            StreamFraming::Chunked => {
                push_hex(out, piece.len() as u64);
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            StreamFraming::UntilClose => out.extend_from_slice(piece),
        }
        Ok(())
    }

    /// Appends what ends the body — with `trailers` when chunked, the one framing that
    /// carries them (a body of announced length, or one ended by the close, drops them);
    /// `false` when the body is not complete (fewer bytes than announced), so the client must
    /// see the connection close instead.
    pub(crate) fn end(self, out: &mut Vec<u8>, trailers: &[crate::http::Header]) -> bool {
        match self {
            StreamFraming::Length { left } => left == 0,
            StreamFraming::Chunked => {
                out.extend_from_slice(b"0\r\n");
                crate::http::render::push_trailer_lines(out, trailers);
                out.extend_from_slice(b"\r\n");
                true
            }
            StreamFraming::UntilClose => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_follows_length_then_version() {
        let table = [
            (Some(5), false, StreamFraming::Length { left: 5 }),
            (Some(0), true, StreamFraming::Length { left: 0 }),
            (None, false, StreamFraming::Chunked),
            (None, true, StreamFraming::UntilClose),
        ];
        for (length, http10, want) in table {
            assert_eq!(StreamFraming::choose(length, http10), want);
            assert_eq!(want.allows_keep_alive(), want != StreamFraming::UntilClose);
        }
    }

    #[test]
    fn pieces_and_ends_on_the_wire() {
        // (framing, pieces, bytes written, end complete, bytes of the end)
        type Case = (
            StreamFraming,
            &'static [&'static [u8]],
            &'static [u8],
            bool,
            &'static [u8],
        );
        let table: [Case; 5] = [
            (
                StreamFraming::Chunked,
                &[b"hello", b"", b" world!!!!!!!!!!"],
                b"5\r\nhello\r\n10\r\n world!!!!!!!!!!\r\n",
                true,
                b"0\r\n\r\n",
            ),
            (StreamFraming::Chunked, &[], b"", true, b"0\r\n\r\n"),
            (
                StreamFraming::Length { left: 4 },
                &[b"ab", b"cd"],
                b"abcd",
                true,
                b"",
            ),
            (
                StreamFraming::Length { left: 4 },
                &[b"ab"],
                b"ab",
                false,
                b"",
            ),
            (
                StreamFraming::UntilClose,
                &[b"ab", b"cd"],
                b"abcd",
                true,
                b"",
            ),
        ];
        for (mut framing, pieces, wire, complete, end) in table {
            let mut out = Vec::new();
            for piece in pieces {
                framing.piece(&mut out, piece).unwrap();
            }
            assert_eq!(out, wire, "{framing:?}");
            let mut tail = Vec::new();
            assert_eq!(framing.end(&mut tail, &[]), complete, "{framing:?}");
            assert_eq!(tail, end, "{framing:?}");
        }
    }

    #[test]
    fn trailers_follow_the_last_chunk_and_only_a_chunked_body_carries_them() {
        let trailers = [
            crate::http::Header::new("Grpc-Status", "0"),
            crate::http::Header::new("Content-Length", "3"),
            crate::http::Header::new("X-Checksum", "a\r\nb"),
            crate::http::Header::new("Bad Name", "x"),
        ];
        let table = [
            (
                StreamFraming::Chunked,
                &b"0\r\nGrpc-Status: 0\r\nX-Checksum: a  b\r\n\r\n"[..],
            ),
            (StreamFraming::Length { left: 0 }, b""),
            (StreamFraming::UntilClose, b""),
        ];
        for (framing, wire) in table {
            let mut out = Vec::new();
            assert!(framing.end(&mut out, &trailers), "{framing:?}");
            assert_eq!(out, wire, "{framing:?}");
        }
    }

    #[test]
    fn a_piece_past_the_announced_length_is_refused_and_writes_nothing() {
        let mut framing = StreamFraming::Length { left: 3 };
        let mut out = Vec::new();
        assert_eq!(framing.piece(&mut out, b"abcd"), Err(PastLength));
        assert!(out.is_empty());
        assert_eq!(framing, StreamFraming::Length { left: 3 });
    }

    proptest::proptest! {
        /// Any pieces, chunked, decode back (by the library's own strict decoder) to their
        /// concatenation, ending exactly where the framing's end does.
        #[test]
        fn chunked_pieces_decode_to_their_concatenation(
            pieces in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..300), 0..12)
        ) {
            let mut framing = StreamFraming::Chunked;
            let mut wire = Vec::new();
            for piece in &pieces {
                framing.piece(&mut wire, piece).unwrap();
            }
            proptest::prop_assert!(framing.end(&mut wire, &[]));
            let mut decoder = crate::http::ChunkedDecoder::new(u64::MAX);
            let mut body = Vec::new();
            let used = decoder.decode(&wire, &mut body).unwrap();
            proptest::prop_assert!(decoder.is_done());
            proptest::prop_assert_eq!(used, wire.len());
            proptest::prop_assert_eq!(body, pieces.concat());
        }
    }
}
