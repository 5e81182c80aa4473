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

/// The HTTP/2 target: with an event-stream route (`/e`) and a WebSocket route (`/w`).
fn h2_target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(Target::start_h2)
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

/// HTTP/2 frames that reach each state of a stream: a whole GET, a POST with its body in two
/// DATA frames, a HEADERS left open then its CONTINUATION, an event stream, a WebSocket by
/// extended CONNECT and a frame of it, a reset, a PING, a WINDOW_UPDATE, SETTINGS and its ACK,
/// a frame on a stream never opened, bytes.
fn h2_fragment() -> impl Strategy<Value = Vec<u8>> {
    // Fields as literals never indexed (HPACK 0x1N): :method GET / POST (static 0x82 / 0x83),
    // :scheme http (0x86), :path / (0x84), :authority "a" (name index 1).
    const GET: &[u8] = b"\x82\x86\x84\x01\x01a";
    const POST: &[u8] = b"\x83\x86\x84\x01\x01a";
    // GET /e (the event stream); CONNECT /w with `:protocol websocket` and its version.
    const EVENTS: &[u8] = b"\x82\x86\x14\x02/e\x01\x01a";
    const CONNECT: &[u8] = b"\x12\x07CONNECT\x10\x09:protocol\x09websocket\x86\x14\x02/w\x01\x01a\x10\x15sec-websocket-version\x0213";
    // A masked WebSocket text frame, "hi".
    const WS_TEXT: &[u8] = b"\x81\x82\x01\x02\x03\x04\x69\x6b";
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }
    let fixed = (0u32..6).prop_flat_map(move |n| {
        let s = 1 + 2 * n;
        prop::sample::select(vec![
            frame(0x1, 0x5, s, GET),
            [
                frame(0x1, 0x4, s, POST),
                frame(0x0, 0, s, b"ab"),
                frame(0x0, 0x1, s, b"c"),
            ]
            .concat(),
            [frame(0x1, 0x1, s, &GET[..3]), frame(0x9, 0x4, s, &GET[3..])].concat(),
            frame(0x1, 0x5, s, EVENTS),
            [frame(0x1, 0x4, s, CONNECT), frame(0x0, 0, s, WS_TEXT)].concat(),
            frame(0x0, 0x1, s, b"\x88\x80\0\0\0\0"),
            frame(0x3, 0, s, &[0, 0, 0, 8]),
            frame(0x6, 0, 0, &[7; 8]),
            frame(0x8, 0, 0, &[0, 0, 0x10, 0]),
            frame(0x4, 0, 0, &[0, 4, 0, 0, 0x40, 0]),
            frame(0x4, 0x1, 0, &[]),
            frame(0x0, 0x1, 1001, b"x"),
        ])
    });
    prop_oneof![
        8 => fixed,
        1 => prop::collection::vec(any::<u8>(), 0..30),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Over HTTP/2 (the preface, SETTINGS, then frames), split anywhere: the connection ends in
    /// time, no strand panics, and the server writes its SETTINGS then whole frames.
    #[test]
    fn any_http2_input_split_anywhere_ends_in_whole_frames(
        (input, cuts) in prop::collection::vec(h2_fragment(), 0..8).prop_flat_map(|parts| {
            let mut input = wire::drive::PREFACE.to_vec();
            input.extend_from_slice(b"\0\0\0\x04\0\0\0\0\0");
            input.extend(parts.concat());
            let len = input.len();
            (Just(input), prop::collection::vec(0..=len, 0..8))
        })
    ) {
        if let Err(e) = h2_target().drive(&pieces(&input, &cuts)) {
            return Err(TestCaseError::fail(format!("{e}\ninput {input:?} cut at {cuts:?}")));
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

/// The HTTP/2 target's live routes answer, and their streams end with the connection: an
/// event stream and a WebSocket (RFC 8441) whose message is echoed.
#[test]
fn live_streams_over_http2_are_answered_and_end_with_the_connection() {
    for seed in ["seed-events", "seed-websocket"] {
        let path = format!(
            "{}/fuzz/corpus/h2_server/{seed}",
            env!("CARGO_MANIFEST_DIR")
        );
        let data = std::fs::read(&path).expect("seed");
        let mut input = wire::drive::PREFACE.to_vec();
        input.extend_from_slice(&data[1..]);
        // The last frame once both streams are answered (the event stream's reset comes once
        // it is live).
        let last = match seed {
            "seed-events" => 13,
            _ => 17,
        };
        let (first, second) = input.split_at(input.len() - last);
        let replies = h2_target()
            .drive_after_heads(first, 2, second)
            .unwrap_or_else(|e| panic!("{seed}: {e}"));
        assert_eq!(replies, 2, "{seed}: a head for each stream");
    }
}
