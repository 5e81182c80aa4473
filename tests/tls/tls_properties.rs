//! The whole TLS connection under arbitrary splits (feature `tls`): requests sealed in records
//! cut anywhere — a byte per record, records cut across TCP writes — come back as whole replies
//! in order; arbitrary bytes where records belong end the connection in time with an alert or
//! nothing, never a panic or a hang; records of every kind sealed by the harness after a
//! handshake (key updates, alerts, empty and padded records) end in time, and every record the
//! server answers with opens. Harness: `tests/wire/tls_drive.rs` (shared with the fuzz
//! target `tls_connection`).

#![cfg(feature = "tls")]

use crate::wire;

use std::sync::OnceLock;

use proptest::prelude::*;
use wire::tls_drive::TlsTarget;

fn target() -> &'static TlsTarget {
    static TARGET: OnceLock<TlsTarget> = OnceLock::new();
    TARGET.get_or_init(TlsTarget::start)
}

const TWO: &[u8] = b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello";

#[test]
fn a_byte_per_record_and_a_byte_per_write_still_make_two_whole_replies() {
    let records: Vec<&[u8]> = TWO.chunks(1).collect();
    let replies = target().drive_records(&records, &[]).unwrap();
    assert_eq!(replies, 2);
    // The same records, every byte of ciphertext its own write.
    let cuts: Vec<usize> = (1..4000).collect();
    assert_eq!(target().drive_records(&records, &cuts).unwrap(), 2);
}

#[test]
fn one_record_cut_into_every_write_size_arrives_whole() {
    for size in [1, 5, 6, 21, 22, 100] {
        let cuts: Vec<usize> = (1..40).map(|n| n * size).collect();
        assert_eq!(
            target().drive_records(&[TWO], &cuts).unwrap(),
            2,
            "writes of {size}"
        );
    }
}

/// Found by the `tls_connection` fuzz target: HTTP/2's preface sealed in records (no ALPN)
/// makes the connection HTTP/2, answered in frames — its SETTINGS, then GOAWAY for the bytes
/// after the preface, which are no frame — and the harness checks frames there.
#[test]
fn the_http2_preface_over_tls_without_alpn_is_answered_in_whole_frames() {
    let preface: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xb7\xb7\x8d=";
    let records: [&[u8]; 2] = [&preface[..1], &preface[1..]];
    assert_eq!(target().drive_records(&records, &[13, 10]).unwrap(), 0);
    let frames: [&[u8]; 1] = [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0"];
    assert_eq!(target().drive_records(&frames, &[]).unwrap(), 0);
}

#[test]
fn garbage_where_records_belong_ends_in_time() {
    let cases: [&[u8]; 5] = [
        b"",
        b"\x16",
        b"\x16\x03\x01\x00",
        b"GET / HTTP/1.1\r\nHost: t\r\n\r\n",
        &[0xff; 300],
    ];
    for case in cases {
        target().drive_raw(&[case]).unwrap();
    }
}

/// Requests, well-formed or not, as pieces of plaintext.
fn plaintext() -> impl Strategy<Value = Vec<u8>> {
    let request = prop_oneof![
        Just(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n".to_vec()),
        Just(b"POST /y HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc".to_vec()),
        Just(b"HEAD /z HTTP/1.1\r\nHost: t\r\n\r\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
    ];
    proptest::collection::vec(request, 1..4).prop_map(|r| r.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn requests_in_records_cut_anywhere_come_back_as_whole_replies(
        text in plaintext(),
        record_cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        write_cuts in proptest::collection::vec(0usize..600, 0..6),
    ) {
        let mut at: Vec<usize> = record_cuts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.sort_unstable();
        let mut records = Vec::new();
        let mut from = 0;
        for cut in at.into_iter().chain([text.len()]) {
            records.push(&text[from..cut.max(from)]);
            from = cut.max(from);
        }
        let mut cuts = write_cuts;
        cuts.sort_unstable();
        prop_assert!(target().drive_records(&records, &cuts).is_ok());
    }

    #[test]
    fn arbitrary_records_after_a_handshake_end_in_time(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        first in prop_oneof![Just(0x17u8), Just(0x15), Just(0x16), any::<u8>()],
        length in any::<u16>(),
    ) {
        // A record header (a type, version 3.3, any length), then anything.
        let mut input = vec![first, 3, 3];
        input.extend_from_slice(&length.to_be_bytes());
        input.extend_from_slice(&bytes);
        let (a, b) = input.split_at(input.len() / 3);
        prop_assert!(target().drive_after_handshake(&[a, b]).is_ok());
    }

    #[test]
    fn records_of_every_kind_sealed_after_a_handshake_end_in_time_and_every_answer_opens(
        pieces in proptest::collection::vec(
            (0u8..8, proptest::collection::vec(any::<u8>(), 0..64)),
            1..24,
        ),
    ) {
        // Each piece: a kind (data, key update, alert, handshake bytes, empty, padded, any
        // inner plaintext; see `tls_drive::sealed_record`), then its content.
        let pieces: Vec<Vec<u8>> = pieces
            .into_iter()
            .map(|(kind, content)| [&[kind][..], &content].concat())
            .collect();
        let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
        let result = target().drive_sealed(&pieces);
        prop_assert!(result.is_ok(), "{result:?}");
    }

    #[test]
    fn arbitrary_bytes_where_records_belong_end_in_time(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        first in prop_oneof![Just(0x16u8), Just(0x17), Just(0x15), any::<u8>()],
    ) {
        let mut input = vec![first];
        input.extend_from_slice(&bytes);
        let (a, b) = input.split_at(input.len() / 2);
        prop_assert!(target().drive_raw(&[a, b]).is_ok());
    }
}
