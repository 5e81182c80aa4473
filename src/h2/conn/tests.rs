//! The connection's rules, each a raw exchange: frames in, events and frames out.

use super::*;
use crate::h2::hpack::encoder::write_field;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let len = (payload.len() as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        write_field(&mut out, n, v.as_bytes());
    }
    out
}

fn get(path: &str) -> Vec<u8> {
    block(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", path),
    ])
}

fn post(length: Option<&str>) -> Vec<u8> {
    let mut fields = vec![
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", "/up"),
    ];
    if let Some(n) = length {
        fields.push(("content-length", n));
    }
    block(&fields)
}

/// A frame this side wrote: type, flags, stream, payload.
type Out = (u8, u8, u32, Vec<u8>);

struct Peer {
    conn: Conn,
    out: Vec<u8>,
    scratch: Scratch,
    events: Vec<String>,
}

impl Peer {
    fn new(config: Config) -> Peer {
        let mut peer = Peer {
            conn: Conn::new(config),
            out: Vec::new(),
            scratch: Scratch::default(),
            events: Vec::new(),
        };
        peer.conn.preface(&mut peer.out);
        peer
    }

    /// Preface and an empty SETTINGS sent, what came back read and dropped.
    fn started() -> Peer {
        Peer::started_with(Config::default())
    }

    fn started_with(config: Config) -> Peer {
        let mut peer = Peer::new(config);
        let mut hello = PREFACE.to_vec();
        hello.extend(frame(SETTINGS, 0, 0, &[]));
        assert_eq!(peer.feed(&hello), hello.len());
        peer.frames();
        peer
    }

    fn feed(&mut self, bytes: &[u8]) -> usize {
        let events = &mut self.events;
        self.conn
            .receive(bytes, &mut self.out, &mut self.scratch, &mut |e| {
                events.push(match e {
                    Event::Request {
                        stream,
                        head,
                        end_stream,
                    } => format!(
                        "request {stream} {} {} end={end_stream}",
                        String::from_utf8_lossy(head.method()),
                        String::from_utf8_lossy(head.path())
                    ),
                    Event::Refuse { stream, status } => format!("refuse {stream} {status}"),
                    Event::Data {
                        stream,
                        data,
                        end_stream,
                    } => format!("data {stream} {} end={end_stream}", data.len()),
                    Event::Reset { stream } => format!("reset {stream}"),
                    Event::WindowOpened => "window".to_owned(),
                })
            })
    }

    /// The frames written since the last call.
    fn frames(&mut self) -> Vec<Out> {
        let mut got = Vec::new();
        let mut rest = &self.out[..];
        while let Some(head) = Head::parse(rest) {
            let end = HEAD_LEN + head.len as usize;
            got.push((
                rest[3],
                head.flags,
                head.stream,
                rest[HEAD_LEN..end].to_vec(),
            ));
            rest = &rest[end..];
        }
        assert!(rest.is_empty(), "a frame cut short");
        self.out.clear();
        got
    }

    fn take_events(&mut self) -> Vec<String> {
        std::mem::take(&mut self.events)
    }

    /// The GOAWAY written, if any: its error code.
    fn goaway(&mut self) -> Option<u32> {
        self.frames()
            .into_iter()
            .find(|f| f.0 == 0x7)
            .map(|f| u32::from_be_bytes([f.3[4], f.3[5], f.3[6], f.3[7]]))
    }

    /// The RST_STREAMs written: stream and code.
    fn resets(&mut self) -> Vec<(u32, u32)> {
        self.frames()
            .into_iter()
            .filter(|f| f.0 == RST)
            .map(|f| (f.2, u32::from_be_bytes([f.3[0], f.3[1], f.3[2], f.3[3]])))
            .collect()
    }
}

const PROTOCOL: u32 = 0x1;
const FLOW_CONTROL: u32 = 0x3;
const STREAM_CLOSED: u32 = 0x5;
const FRAME_SIZE: u32 = 0x6;
const REFUSED: u32 = 0x7;
const COMPRESSION: u32 = 0x9;
const CALM: u32 = 0xb;

#[test]
fn the_server_preface_advertises_its_settings_and_opens_the_connection_window() {
    let mut peer = Peer::new(Config::default());
    let frames = peer.frames();
    assert_eq!(frames[0].0, SETTINGS);
    let settings: Vec<Setting> = frame::settings(&frames[0].3).collect();
    assert!(settings.contains(&Setting::MaxConcurrentStreams(250)));
    assert!(settings.contains(&Setting::EnableConnectProtocol(true)));
    assert_eq!(frames[1].0, WINDOW_UPDATE);
}

#[test]
fn a_request_is_read_and_its_settings_and_pings_answered() {
    let mut peer = Peer::new(Config::default());
    peer.frames();
    let mut input = PREFACE.to_vec();
    input.extend(frame(SETTINGS, 0, 0, &[0, 4, 0, 0, 0x10, 0]));
    input.extend(frame(PING, 0, 0, b"abcdefgh"));
    input.extend(frame(HEADERS, 0x5, 1, &get("/hello")));
    assert_eq!(peer.feed(&input), input.len());
    assert_eq!(peer.take_events(), ["request 1 GET /hello end=true"]);
    let frames = peer.frames();
    assert_eq!(
        (frames[0].0, frames[0].1),
        (SETTINGS, 0x1),
        "SETTINGS acknowledged"
    );
    assert_eq!(
        (frames[1].0, frames[1].1, &frames[1].3[..]),
        (PING, 0x1, &b"abcdefgh"[..])
    );
}

#[test]
fn input_split_anywhere_reads_the_same() {
    let mut input = PREFACE.to_vec();
    input.extend(frame(SETTINGS, 0, 0, &[]));
    input.extend(frame(HEADERS, 0x4, 1, &post(Some("5"))));
    input.extend(frame(DATA, 0x0, 1, b"he"));
    input.extend(frame(DATA, 0x1, 1, b"llo"));
    input.extend(frame(HEADERS, 0x5, 3, &get("/b")));
    let whole = {
        let mut peer = Peer::new(Config::default());
        peer.feed(&input);
        peer.take_events()
    };
    assert_eq!(whole.len(), 4);
    for split in 1..input.len() {
        let mut peer = Peer::new(Config::default());
        let used = peer.feed(&input[..split]);
        let mut rest = input[used..].to_vec();
        let n = peer.feed(&rest);
        rest.drain(..n);
        assert!(rest.is_empty(), "split at {split}");
        assert_eq!(peer.take_events(), whole, "split at {split}");
    }
}

/// Each broken rule of the connection (RFC 9113 §3.4, §5, §6), one row: what is sent after
/// the preface and SETTINGS, and the GOAWAY code it earns.
#[test]
fn each_connection_rule_ends_the_connection_with_its_code() {
    let headers_then = |f: Vec<u8>| [frame(HEADERS, 0x0, 1, &get("/")), f].concat();
    let table: Vec<(Vec<u8>, u32, &str)> = vec![
        (
            headers_then(frame(PING, 0, 0, &[0; 8])),
            PROTOCOL,
            "a frame inside a header block",
        ),
        (
            headers_then(frame(CONTINUATION, 0x4, 3, &[])),
            PROTOCOL,
            "CONTINUATION of another stream",
        ),
        (
            frame(CONTINUATION, 0x4, 1, &[]),
            PROTOCOL,
            "CONTINUATION with no block open",
        ),
        (
            frame(HEADERS, 0x5, 2, &get("/")),
            PROTOCOL,
            "an even stream id",
        ),
        (
            [
                frame(HEADERS, 0x5, 5, &get("/")),
                frame(HEADERS, 0x5, 3, &get("/")),
            ]
            .concat(),
            PROTOCOL,
            "a lower stream id",
        ),
        (
            frame(DATA, 0x1, 1, b"x"),
            PROTOCOL,
            "DATA on an idle stream",
        ),
        (
            frame(WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1]),
            PROTOCOL,
            "WINDOW_UPDATE on an idle stream",
        ),
        (
            frame(RST, 0, 1, &[0, 0, 0, 8]),
            PROTOCOL,
            "RST_STREAM on an idle stream",
        ),
        (
            frame(WINDOW_UPDATE, 0, 0, &[0x7f, 0xff, 0xff, 0xff]),
            FLOW_CONTROL,
            "the connection's send window past 2^31-1",
        ),
        (
            frame(HEADERS, 0x5, 1, &[0x80]),
            COMPRESSION,
            "a header block HPACK refuses",
        ),
        (
            frame(DATA, 0, 1, &vec![0; 16_385]),
            FRAME_SIZE,
            "a frame past MAX_FRAME_SIZE",
        ),
        (
            frame(SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
            FLOW_CONTROL,
            "INITIAL_WINDOW_SIZE past 2^31-1",
        ),
    ];
    for (input, code, rule) in table {
        let mut peer = Peer::started();
        peer.feed(&input);
        assert_eq!(peer.goaway(), Some(code), "{rule}");
        assert!(peer.conn.is_closed(), "{rule}");
    }
}

#[test]
fn a_bad_preface_or_a_first_frame_other_than_settings_ends_the_connection() {
    let mut peer = Peer::new(Config::default());
    peer.frames();
    peer.feed(b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(peer.goaway(), Some(PROTOCOL));
    let mut peer = Peer::new(Config::default());
    peer.frames();
    peer.feed(&[PREFACE, &frame(PING, 0, 0, &[0; 8])].concat());
    assert_eq!(peer.goaway(), Some(PROTOCOL));
    // A preface arriving a byte at a time is waited for.
    let mut peer = Peer::new(Config::default());
    assert_eq!(peer.feed(&PREFACE[..5]), 0);
    assert!(!peer.conn.is_closed());
}

/// Each broken rule that ends one stream, one row: the RST_STREAM code, the connection going
/// on.
#[test]
fn each_stream_rule_resets_the_stream_and_the_connection_goes_on() {
    let opened = |f: Vec<u8>| [frame(HEADERS, 0x4, 1, &post(None)), f].concat();
    let table: Vec<(Vec<u8>, u32, &str)> = vec![
        (
            frame(
                HEADERS,
                0x5,
                1,
                &block(&[(":method", "GET"), (":path", "/")]),
            ),
            PROTOCOL,
            "no :scheme",
        ),
        (
            frame(
                HEADERS,
                0x5,
                1,
                &[get("/"), block(&[("connection", "close")])].concat(),
            ),
            PROTOCOL,
            "a connection-specific field",
        ),
        (
            [
                frame(HEADERS, 0x4, 1, &post(Some("3"))),
                frame(DATA, 0x1, 1, b"four"),
            ]
            .concat(),
            PROTOCOL,
            "more DATA than content-length",
        ),
        (
            [
                frame(HEADERS, 0x4, 1, &post(Some("3"))),
                frame(DATA, 0x1, 1, b"tw"),
            ]
            .concat(),
            PROTOCOL,
            "less DATA than content-length",
        ),
        (
            frame(HEADERS, 0x5, 1, &post(Some("3"))),
            PROTOCOL,
            "content-length with no body",
        ),
        (
            frame(HEADERS, 0x4, 1, &post(Some("+5"))),
            PROTOCOL,
            "content-length with a sign",
        ),
        (
            frame(
                HEADERS,
                0x4,
                1,
                &[post(Some("5")), block(&[("content-length", "6")])].concat(),
            ),
            PROTOCOL,
            "two different content-lengths",
        ),
        (
            frame(HEADERS, 0x5, 1, &get("/a b")),
            PROTOCOL,
            "a space in :path",
        ),
        (
            frame(HEADERS, 0x5, 1, &get("http://example.com/")),
            PROTOCOL,
            "an absolute-form :path",
        ),
        (
            opened(frame(WINDOW_UPDATE, 0, 1, &[0x7f, 0xff, 0xff, 0xff])),
            FLOW_CONTROL,
            "a stream's send window past 2^31-1",
        ),
        (
            opened(frame(HEADERS, 0x4, 1, &block(&[("x-trailer", "1")]))),
            PROTOCOL,
            "trailers that do not end the stream",
        ),
        (
            [frame(HEADERS, 0x5, 1, &get("/")), frame(DATA, 0x1, 1, b"x")].concat(),
            STREAM_CLOSED,
            "DATA after END_STREAM",
        ),
        (
            frame(PRIORITY, 0, 1, &[0, 0, 0, 1, 0]),
            PROTOCOL,
            "PRIORITY on itself",
        ),
    ];
    for (input, code, rule) in table {
        let mut peer = Peer::started();
        peer.feed(&input);
        assert_eq!(peer.resets(), [(1, code)], "{rule}");
        assert!(!peer.conn.is_closed(), "{rule}");
        peer.feed(&frame(HEADERS, 0x5, 3, &get("/next")));
        assert!(
            peer.take_events()
                .iter()
                .any(|e| e == "request 3 GET /next end=true"),
            "{rule}"
        );
    }
}

#[test]
fn headers_in_fragments_are_one_request_and_a_continuation_flood_is_stopped() {
    let mut peer = Peer::started();
    let b = get("/split");
    let mut input = frame(HEADERS, 0x1, 1, &b[..3]);
    input.extend(frame(CONTINUATION, 0, 1, &b[3..6]));
    input.extend(frame(CONTINUATION, 0x4, 1, &b[6..]));
    peer.feed(&input);
    assert_eq!(peer.take_events(), ["request 1 GET /split end=true"]);
    // Empty fragments without end (CVE-2024-27316): the connection ends, early.
    let mut peer = Peer::started();
    let mut flood = frame(HEADERS, 0x1, 1, &b[..3]);
    for _ in 0..10_000 {
        flood.extend(frame(CONTINUATION, 0, 1, &[]));
    }
    let used = peer.feed(&flood);
    assert_eq!(peer.goaway(), Some(CALM));
    assert!(used < 1_000, "read {used} bytes of the flood");
    // Fragments that add up past the bound.
    let mut peer = Peer::started();
    let mut big = frame(HEADERS, 0x1, 1, &b);
    for _ in 0..4 {
        big.extend(frame(CONTINUATION, 0, 1, &vec![0x41; 16_000]));
    }
    peer.feed(&big);
    assert_eq!(peer.goaway(), Some(CALM));
}

#[test]
fn a_header_list_over_the_advertised_size_is_refused_431_and_hpack_stays_in_step() {
    let mut peer = Peer::started_with(Config {
        max_header_list_size: 1024,
        ..Config::default()
    });
    // An HPACK bomb: one entry added to the table, then referenced many times.
    let mut bomb = get("/");
    bomb.push(0x40);
    bomb.push(0x05);
    bomb.extend_from_slice(b"x-big");
    bomb.push(0x7f);
    bomb.extend_from_slice(&[0x81, 0x01]); // 127 + 129 = 256 bytes
    bomb.extend(std::iter::repeat_n(b'y', 256));
    bomb.extend(std::iter::repeat_n(0xbe, 100)); // index 62 a hundred times
    peer.feed(&frame(HEADERS, 0x5, 1, &bomb));
    assert_eq!(peer.take_events(), ["refuse 1 431"]);
    // The table took the entry although the list was refused: the next block refers to it
    // once, within the size, and is served (an index past the table would end the
    // connection with COMPRESSION_ERROR).
    peer.feed(&frame(
        HEADERS,
        0x5,
        3,
        &[get("/after"), vec![0xbe]].concat(),
    ));
    assert_eq!(peer.take_events(), ["request 3 GET /after end=true"]);
    assert!(peer.goaway().is_none());
}

#[test]
fn streams_past_the_concurrent_limit_are_refused() {
    let mut peer = Peer::started_with(Config {
        max_concurrent_streams: 2,
        ..Config::default()
    });
    for id in [1, 3, 5] {
        peer.feed(&frame(HEADERS, 0x4, id, &post(None)));
    }
    assert_eq!(peer.resets(), [(5, REFUSED)]);
    assert_eq!(peer.conn.open_streams(), 2);
}

#[test]
fn data_past_a_window_is_a_flow_control_error() {
    let mut peer = Peer::started_with(Config {
        stream_window: 100,
        ..Config::default()
    });
    peer.feed(&frame(HEADERS, 0x4, 1, &post(None)));
    peer.feed(&frame(DATA, 0, 1, &[0; 101]));
    assert_eq!(peer.resets(), [(1, FLOW_CONTROL)]);
    // The connection's own window (65 535 until our WINDOW_UPDATE is counted: it is sent).
    let mut peer = Peer::started_with(Config {
        conn_window: DEFAULT_WINDOW,
        stream_window: 1 << 20,
        ..Config::default()
    });
    peer.feed(&frame(HEADERS, 0x4, 1, &post(None)));
    let mut input = Vec::new();
    for _ in 0..4 {
        input.extend(frame(DATA, 0, 1, &[0; 16_384]));
    }
    input.extend(frame(DATA, 0, 1, &[0; 16_384]));
    peer.feed(&input);
    // Windows were opened as data was read: no error for an honest sender.
    assert!(peer.goaway().is_none());
}

#[test]
fn rapid_reset_ends_the_connection_and_honest_streams_never_do() {
    let mut peer = Peer::started();
    let mut input = Vec::new();
    for i in 0..2_000u32 {
        let id = 2 * i + 1;
        input.extend(frame(HEADERS, 0x4, id, &post(None)));
        input.extend(frame(RST, 0, id, &[0, 0, 0, 8]));
    }
    peer.feed(&input);
    assert_eq!(peer.goaway(), Some(CALM));
    let resets = peer
        .take_events()
        .iter()
        .filter(|e| e.starts_with("reset"))
        .count();
    assert!(resets < 300, "{resets} resets taken before the end");
    // Ten thousand requests answered one after another never spend the budget.
    let mut peer = Peer::started();
    for i in 0..10_000u32 {
        let id = 2 * i + 1;
        peer.feed(&frame(HEADERS, 0x5, id, &get("/")));
        let mut block = Vec::new();
        crate::h2::hpack::encoder::write_status(&mut block, 200);
        peer.conn.send_headers(id, &block, true, &mut peer.out);
        // A browser cancels one stream in ten.
        if i % 10 == 0 {
            peer.feed(&frame(PING, 0, 0, &[0; 8]));
        }
        peer.out.clear();
    }
    assert!(!peer.conn.is_closed());
    assert_eq!(peer.conn.open_streams(), 0);
}

#[test]
fn a_ping_flood_stops_reading_while_the_answers_are_not_written() {
    let mut peer = Peer::started();
    let mut input = Vec::new();
    for _ in 0..5_000 {
        input.extend(frame(PING, 0, 0, &[0; 8]));
    }
    let used = peer.feed(&input);
    assert!(used < input.len(), "stops while the output is owed");
    assert!(peer.out.len() < OUTPUT_HIGH + 64);
    // An honest peer that reads gets every answer, within the budget of a thousand.
    let mut peer = Peer::started();
    let pings: Vec<u8> = (0..500).flat_map(|_| frame(PING, 0, 0, &[0; 8])).collect();
    assert_eq!(peer.feed(&pings), pings.len());
    assert_eq!(peer.frames().len(), 500);
    // Past the budget with nothing else asked: the connection ends.
    let more: Vec<u8> = (0..600).flat_map(|_| frame(PING, 0, 0, &[0; 8])).collect();
    peer.feed(&more);
    assert_eq!(peer.goaway(), Some(CALM));
}

#[test]
fn sending_waits_for_the_windows_and_goes_on_when_they_open() {
    let mut peer = Peer::started();
    // The peer's initial stream window: 10 bytes.
    peer.feed(&frame(SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 10]));
    peer.feed(&frame(HEADERS, 0x5, 1, &get("/")));
    peer.frames();
    let body = [7u8; 25];
    let sent = peer.conn.send_data(1, &body, true, &mut peer.out);
    assert_eq!(sent, 10);
    peer.feed(&frame(WINDOW_UPDATE, 0, 1, &[0, 0, 0, 100]));
    assert!(peer.take_events().contains(&"window".to_owned()));
    let sent = peer.conn.send_data(1, &body[10..], true, &mut peer.out);
    assert_eq!(sent, 15);
    let data: Vec<Out> = peer.frames().into_iter().filter(|f| f.0 == DATA).collect();
    assert_eq!(data.iter().map(|f| f.3.len()).sum::<usize>(), 25);
    assert_eq!(
        data.last().map(|f| f.1),
        Some(0x1),
        "END_STREAM on the last"
    );
    assert_eq!(
        peer.conn.open_streams(),
        0,
        "both sides ended: the stream is gone"
    );
}

#[test]
fn headers_on_a_stream_just_closed_are_stream_closed_and_a_goaway_refuses_new_streams() {
    let mut peer = Peer::started();
    peer.feed(&frame(HEADERS, 0x4, 1, &post(None)));
    peer.feed(&frame(RST, 0, 1, &[0, 0, 0, 8]));
    peer.feed(&frame(HEADERS, 0x5, 1, &get("/")));
    assert_eq!(peer.goaway(), Some(STREAM_CLOSED));
    let mut peer = Peer::started();
    peer.feed(&frame(HEADERS, 0x4, 1, &post(None)));
    peer.conn.go_away(&mut peer.out);
    let goaway = peer.frames();
    assert_eq!(
        goaway.last().map(|f| (f.0, f.3[3])),
        Some((0x7, 1)),
        "the last stream is 1"
    );
    peer.feed(&frame(HEADERS, 0x5, 3, &get("/late")));
    assert_eq!(peer.resets(), [(3, REFUSED)]);
    peer.feed(&frame(DATA, 0x1, 1, b""));
    assert!(
        peer.take_events().iter().any(|e| e == "data 1 0 end=true"),
        "the stream in flight finishes"
    );
}

#[test]
fn an_idle_connection_after_a_request_holds_little() {
    let mut peer = Peer::started();
    peer.feed(&frame(HEADERS, 0x5, 1, &get("/")));
    let mut block = Vec::new();
    crate::h2::hpack::encoder::write_status(&mut block, 204);
    peer.conn.send_headers(1, &block, true, &mut peer.out);
    assert_eq!(peer.conn.open_streams(), 0);
    // The decoder's table holds :authority from the request? No: it was sent without
    // indexing; the list's buffers are kept for the next request.
    let held = peer.conn.held_bytes();
    assert!(held < 1024, "{held} bytes held");
    assert!(
        std::mem::size_of::<Conn>() < 400,
        "{}",
        std::mem::size_of::<Conn>()
    );
}

/// A literal field added to the table (RFC 7541 §6.2.1), its name and value literal.
fn indexed(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0x40);
    for s in [name, value] {
        assert!(s.len() < 127);
        block.push(s.len() as u8);
        block.extend_from_slice(s.as_bytes());
    }
}

/// Regression: Python's h2 sent 200 requests before reading our SETTINGS, indexing fields as
/// RFC 7541's default 4 096-byte table allows; a decoder already at the 512 we advertise had
/// evicted what they then referred to, and the connection ended with COMPRESSION_ERROR.
#[test]
fn until_the_peer_acknowledges_our_settings_its_table_may_be_the_default_size() {
    let config = Config {
        header_table_size: 512,
        ..Config::default()
    };
    let mut peer = Peer::started_with(config);
    let long = "v".repeat(100);
    for (i, stream) in [1u32, 3, 5, 7, 9].into_iter().enumerate() {
        let mut b = get("/");
        // Each request adds one field of 100 + 7 + 32 bytes; the fifth refers to the first,
        // 4 entries back (dynamic index 62 + 4), past what 512 bytes could keep.
        indexed(&mut b, &format!("x-f{i}-{i}"), &long);
        if i == 4 {
            b.push(0x80 | (62 + 4));
        }
        peer.feed(&frame(HEADERS, 0x5, stream, &b));
    }
    let frames = peer.frames();
    assert_eq!(peer.events.len(), 5, "{:?} {frames:?}", peer.events);
    assert!(frames.iter().all(|f| f.0 != 0x7), "no GOAWAY");
    // Once acknowledged, the table is 512 bytes: what is past it went, and the peer may not
    // ask for more.
    peer.feed(&frame(SETTINGS, 0x1, 0, &[]));
    assert!(peer.conn.held_bytes() < 4096);
    let mut b = vec![0x3f, 0xe1, 0x1f]; // a size update to 4 096
    b.extend(get("/"));
    peer.feed(&frame(HEADERS, 0x5, 11, &b));
    assert!(
        peer.frames().iter().any(|f| f.0 == 0x7),
        "GOAWAY: COMPRESSION_ERROR"
    );
}

/// A stream's window is the server's to reopen, as far as it allows: never as DATA merely
/// arrives, never left shut below what it allows, never past it.
#[test]
fn a_stream_window_reopens_as_far_as_allowed_and_is_never_left_shut_below_it() {
    let mut peer = Peer::started();
    peer.feed(&frame(HEADERS, 0x4, 1, &post(None)));
    let window_updates = |peer: &mut Peer| -> Vec<u32> {
        peer.frames()
            .into_iter()
            .filter(|f| f.0 == WINDOW_UPDATE && f.2 == 1)
            .map(|f| u32::from_be_bytes(f.3[..4].try_into().unwrap()))
            .collect()
    };
    // Half the window used: nothing reopens by itself.
    peer.feed(&frame(DATA, 0, 1, &[0; 16_384]));
    peer.feed(&frame(DATA, 0, 1, &[0; 16_384]));
    assert_eq!(window_updates(&mut peer), Vec::<u32>::new());
    // Room for all of it: reopened to the full window at once.
    let mut out = Vec::new();
    peer.conn.allow(1, 1 << 20, &mut out);
    peer.out.extend_from_slice(&out);
    assert_eq!(window_updates(&mut peer), [32_768]);
    // The window used up with 1 000 bytes still allowed: reopened by exactly those.
    for _ in 0..4 {
        peer.feed(&frame(DATA, 0, 1, &[0; 16_383]));
    }
    peer.feed(&frame(DATA, 0, 1, &[0; 3]));
    let mut out = Vec::new();
    peer.conn.allow(1, 1_000, &mut out);
    peer.out.extend_from_slice(&out);
    assert_eq!(window_updates(&mut peer), [1_000]);
    // Nothing more allowed: nothing more offered.
    peer.feed(&frame(DATA, 0, 1, &[0; 1_000]));
    let mut out = Vec::new();
    peer.conn.allow(1, 0, &mut out);
    peer.out.extend_from_slice(&out);
    assert_eq!(window_updates(&mut peer), Vec::<u32>::new());
}

/// SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's window (RFC 9113 §6.9.2) without
/// walking them: up, down below zero, and past 2³¹ − 1 for a stream that was given more.
#[test]
fn the_initial_window_moves_every_streams_window_and_overflow_is_still_caught() {
    let initial = |size: u32| frame(SETTINGS, 0, 0, &[&[0, 4][..], &size.to_be_bytes()].concat());
    let mut peer = Peer::started();
    for s in [1u32, 3, 5] {
        peer.feed(&frame(HEADERS, 0x5, s, &get("/")));
    }
    peer.frames();
    // The connection's window first, so that only the streams' bound.
    peer.feed(&frame(WINDOW_UPDATE, 0, 0, &(1u32 << 30).to_be_bytes()));
    // Down to 10: a stream sends 10 bytes, then nothing.
    peer.feed(&initial(10));
    let body = [7u8; 100];
    assert_eq!(peer.conn.send_data(1, &body, false, &mut peer.out), 10);
    assert_eq!(peer.conn.send_data(1, &body, false, &mut peer.out), 0);
    // Down to 0: stream 1's window is −10; up to 30: it has 20, stream 3 has 30.
    peer.feed(&initial(0));
    assert_eq!(peer.conn.send_data(1, &body, false, &mut peer.out), 0);
    peer.feed(&initial(30));
    assert_eq!(peer.conn.send_data(1, &body, false, &mut peer.out), 20);
    assert_eq!(peer.conn.send_data(3, &body, false, &mut peer.out), 30);
    peer.frames();
    // Stream 5 given 2³¹ − 1 − 30 more: its window is at the maximum; the initial window
    // cannot grow by one without taking it past.
    let top = (1u32 << 31) - 1 - 30;
    peer.feed(&frame(WINDOW_UPDATE, 0, 5, &top.to_be_bytes()));
    assert!(peer.frames().is_empty(), "no error yet");
    peer.feed(&initial(31));
    let f = peer.frames();
    assert_eq!(f.last().map(|f| f.0), Some(GOAWAY));
    assert_eq!(
        f.last().map(|f| f.3[4..8].to_vec()),
        Some(vec![0, 0, 0, 3]),
        "FLOW_CONTROL_ERROR"
    );
}

/// The bound that spares the walk is brought down to the truth when a stream that had the
/// most credit is gone: the initial window may then grow again.
#[test]
fn the_initial_window_may_grow_once_the_stream_with_most_credit_is_gone() {
    let initial = |size: u32| frame(SETTINGS, 0, 0, &[&[0, 4][..], &size.to_be_bytes()].concat());
    let mut peer = Peer::started();
    peer.feed(&frame(HEADERS, 0x5, 1, &get("/")));
    peer.feed(&frame(HEADERS, 0x5, 3, &get("/")));
    peer.feed(&frame(WINDOW_UPDATE, 0, 1, &(1u32 << 30).to_be_bytes()));
    peer.feed(&frame(RST, 0, 1, &[0, 0, 0, 8]));
    peer.frames();
    peer.feed(&initial((1u32 << 31) - 1));
    assert!(peer.frames().iter().all(|f| f.0 != GOAWAY));
}
