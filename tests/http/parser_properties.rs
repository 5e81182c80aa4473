//! Property tests for every parser: percent-coding round trips, the head parser and the chunked
//! decoder never panic, and feeding input in pieces gives exactly the result of feeding it whole.

use proptest::prelude::*;
use web::http::{
    ChunkedDecoder, HeadParser, ParseError, RequestHead, decoded, encoded, parse_reply_head,
    parse_request, response_body,
};

/// Feeds `raw` to a fresh parser in the pieces `cuts` gives (offsets, sorted), as a server does
/// when bytes arrive in several reads, and returns the first answer that is not "incomplete".
fn feed_in_pieces(raw: &[u8], cuts: &[usize]) -> Result<Option<RequestHead>, ParseError> {
    let mut parser = HeadParser::default();
    for &cut in cuts {
        match parser.parse(&raw[..cut]) {
            Ok(None) => continue,
            done => return done,
        }
    }
    parser.parse(raw)
}

fn valid_request() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);
    let path = "/[a-z0-9/._~%-]{0,40}(\\?[a-z0-9=&+%]{0,30})?";
    let headers = prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,20}", "[ -~]{0,40}"), 0..12);
    let body = prop::collection::vec(any::<u8>(), 0..200);
    (method, path, headers, body, any::<bool>()).prop_map(|(m, p, hs, body, chunked)| {
        let mut raw = format!("{m} {p} HTTP/1.1\r\nHost: example.com\r\n").into_bytes();
        for (n, v) in hs {
            let lower = n.to_ascii_lowercase();
            if [
                "host",
                "content-length",
                "transfer-encoding",
                "expect",
                "connection",
            ]
            .contains(&lower.as_str())
            {
                continue;
            }
            raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        if chunked {
            raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            for piece in body.chunks(37) {
                raw.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                raw.extend_from_slice(piece);
                raw.extend_from_slice(b"\r\n");
            }
            raw.extend_from_slice(b"0\r\n\r\n");
        } else {
            raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            raw.extend_from_slice(&body);
        }
        raw
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decoded_undoes_encoded(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        prop_assert_eq!(decoded(encoded(&bytes)), bytes);
    }

    #[test]
    fn encoded_output_is_unreserved_or_upper_hex(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
        let e = encoded(&bytes);
        let e = e.as_bytes();
        let mut i = 0;
        while i < e.len() {
            if e[i] == b'%' {
                let hex = |b: u8| b.is_ascii_digit() || (b'A'..=b'F').contains(&b);
                prop_assert!(e.len() >= i + 3 && hex(e[i + 1]) && hex(e[i + 2]), "{:?}", e);
                i += 3;
            } else {
                prop_assert!(e[i].is_ascii_alphanumeric() || b"-._~".contains(&e[i]), "{:?}", e);
                i += 1;
            }
        }
    }

    #[test]
    fn decoded_never_panics(s in ".{0,100}") {
        let _ = decoded(&s);
    }

    #[test]
    fn head_parser_never_panics_on_arbitrary_bytes(raw in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = HeadParser::default().parse(&raw);
        let _ = parse_request(&raw);
        let _ = parse_reply_head(&raw);
        let _ = response_body(&raw);
    }

    #[test]
    fn head_parser_never_panics_on_near_requests(raw in "(GET|POST) /[ -~]{0,20} HTTP/1\\.[01]\r?\n([ -~\t\r\n]{0,40}\r?\n){0,6}\r?\n?") {
        let _ = HeadParser::default().parse(raw.as_bytes());
        let _ = parse_request(raw.as_bytes());
    }

    #[test]
    fn a_valid_request_split_anywhere_parses_as_when_whole(raw in valid_request(), seed in any::<u64>()) {
        let whole = HeadParser::default().parse(&raw);
        let head = whole.clone().unwrap().unwrap();
        // Split at every single offset.
        for cut in 0..=raw.len() {
            prop_assert_eq!(&feed_in_pieces(&raw, &[cut]), &whole, "cut at {}", cut);
        }
        // And fed a byte at a time, and in random pieces.
        let every: Vec<usize> = (0..raw.len()).collect();
        prop_assert_eq!(&feed_in_pieces(&raw, &every), &whole);
        let mut cuts: Vec<usize> = (0..8).map(|i| (seed.rotate_left(i * 8) as usize) % (raw.len() + 1)).collect();
        cuts.sort_unstable();
        prop_assert_eq!(&feed_in_pieces(&raw, &cuts), &whole);
        // The body the whole-message function finds is the one that was sent.
        let req = parse_request(&raw).unwrap();
        prop_assert!(req.headers().eq(head.request.headers()));
    }

    #[test]
    fn arbitrary_input_fed_in_pieces_ends_as_when_whole(raw in prop::collection::vec(prop::sample::select(b"GET / HTTP/1.1\r\nHost: a:\t0;\x00\xff".to_vec()), 0..120), cut in any::<prop::sample::Index>()) {
        let whole = HeadParser::default().parse(&raw);
        let cut = cut.index(raw.len() + 1);
        prop_assert_eq!(feed_in_pieces(&raw, &[cut]), whole);
    }

    #[test]
    fn chunked_body_split_anywhere_decodes_as_when_whole(body in prop::collection::vec(any::<u8>(), 0..400), sizes in prop::collection::vec(1usize..50, 1..10), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6)) {
        let mut wire = Vec::new();
        let mut rest = &body[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].min(rest.len());
            wire.extend_from_slice(format!("{n:X};i={i}\r\n").as_bytes());
            wire.extend_from_slice(&rest[..n]);
            wire.extend_from_slice(b"\r\n");
            rest = &rest[n..];
            i += 1;
        }
        wire.extend_from_slice(b"0\r\nTrailer: yes\r\n\r\nNEXT");
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
        cuts.push(wire.len());
        cuts.sort_unstable();
        let mut decoder = ChunkedDecoder::new(u64::MAX);
        let mut out = Vec::new();
        let mut at = 0;
        for cut in cuts {
            at += decoder.decode(&wire[at..cut], &mut out).unwrap();
            if decoder.is_done() { break; }
        }
        prop_assert!(decoder.is_done());
        prop_assert_eq!(&wire[at..], b"NEXT");
        prop_assert_eq!(out, body);
    }

    #[test]
    fn chunked_decoder_never_panics_and_is_piece_independent(raw in prop::collection::vec(prop::sample::select(b"0123456789abcdefxX;= \r\n\t\x00".to_vec()), 0..200), cut in any::<prop::sample::Index>()) {
        let whole = {
            let mut d = ChunkedDecoder::new(1000);
            let mut out = Vec::new();
            d.decode(&raw, &mut out).map(|n| (n, out, d.is_done()))
        };
        let cut = cut.index(raw.len() + 1);
        let pieces = {
            let mut d = ChunkedDecoder::new(1000);
            let mut out = Vec::new();
            d.decode(&raw[..cut], &mut out).and_then(|a| {
                if d.is_done() { Ok((a, out, true)) } else {
                    d.decode(&raw[cut..], &mut out).map(|b| (a + b, out, d.is_done()))
                }
            })
        };
        prop_assert_eq!(pieces, whole);
    }
}
