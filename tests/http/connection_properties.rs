//! The whole connection — request reading, dispatch, the reactor's HTTP strand — under arbitrary
//! input split at arbitrary points: every connection ends in time once the client ends its
//! stream (no turn without progress pins the worker), no strand panics, and every byte the
//! server writes belongs to a well-formed reply. The fuzz target `connection` drives the same
//! harness with coverage guidance.

use crate::wire;

use std::sync::OnceLock;

use proptest::prelude::*;
use wire::drive::Target;

fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(Target::start)
}

/// Pieces of HTTP/1.1 that reach every state of the reader: whole requests of each framing,
/// empty lines and lone CRs between them, Expect, HEAD, malformed and oversized parts, bytes.
fn fragment() -> impl Strategy<Value = Vec<u8>> {
    let fixed = prop::sample::select(vec![
        &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n",
        b"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
        b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"PUT /e HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nok",
        b"GET /close HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        b"GET /old HTTP/1.0\r\n\r\n",
        b"\r",
        b"\r\n",
        b"\n",
        b"\r\n\r",
        b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551614\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
        b"GET /\x00 HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nX: \r\r\n\r\n",
        b"Host: a\r\n",
        b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
    ])
    .prop_map(<[u8]>::to_vec);
    prop_oneof![
        6 => fixed,
        1 => prop::collection::vec(any::<u8>(), 0..40),
        1 => "[ -~\r\n]{0,600}".prop_map(String::into_bytes),
    ]
}

/// Input made of fragments, and where to cut it into writes.
fn input_and_cuts() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    prop::collection::vec(fragment(), 1..6)
        .prop_map(|parts| parts.concat())
        .prop_flat_map(|input| {
            let len = input.len();
            (Just(input), prop::collection::vec(0..=len, 0..8))
        })
}

fn pieces<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts = cuts.to_vec();
    cuts.sort_unstable();
    cuts.dedup();
    let mut at = 0;
    let mut out = Vec::new();
    for cut in cuts.into_iter().chain([input.len()]) {
        if cut > at {
            out.push(&input[at..cut]);
            at = cut;
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn any_input_split_anywhere_ends_in_whole_replies((input, cuts) in input_and_cuts()) {
        if let Err(e) = target().drive(&pieces(&input, &cuts)) {
            return Err(TestCaseError::fail(format!("{e}\ninput {:?} cut at {cuts:?}", String::from_utf8_lossy(&input))));
        }
    }
}

/// The inputs the review found pinning a worker, each a regression case of the harness.
#[test]
fn the_lone_cr_cases_end_in_time() {
    let cases: &[&[&[u8]]] = &[
        &[b"\r"],
        &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n\r"],
        &[b"\r\n\r"],
        &[
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"\r",
            b"\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ],
    ];
    for pieces in cases {
        let replies = target()
            .drive(pieces)
            .unwrap_or_else(|e| panic!("{pieces:?}: {e}"));
        assert!(replies <= 2, "{pieces:?}: {replies}");
    }
}
