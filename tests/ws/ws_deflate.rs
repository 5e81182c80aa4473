//! permessage-deflate (RFC 7692) through the server, over raw sockets: what is negotiated,
//! compressed messages both ways, a room's publish to compressing and plain members, and
//! every way a peer can break the extension's rules (each earning its close code).
#![cfg(feature = "deflate")]

use std::time::Duration;

use crate::wire;

use web::http::{Server, ServerHandle, text_response};
use web::ws::{Deflate, Message, Ws, WsHandler};
use wire::ws::{Client, masked};

const OFFER: &str = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits";
const AGREED: &str = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";
/// RFC 7692 §7.2.3.1: "Hello" compressed, as one message.
const HELLO: [u8; 7] = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];

/// Echoes, and at `/room` joins "r" and publishes what it gets there.
struct App;

impl WsHandler for App {
    type State = ();
    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join("r");
    }
    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        match &msg {
            Message::Text(t) if t.starts_with("publish ") => {
                ws.publish("r", &msg);
            }
            _ => ws.send(&msg),
        }
    }
}

fn start(deflate: Option<Deflate>, max_message: usize) -> ServerHandle {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .close_timeout(Duration::from_millis(300))
        .websocket("/", App)
        .max_message(max_message);
    server
        .deflate(deflate)
        .spawn(|_req| text_response(404, "not here"))
        .unwrap()
}

/// `payload` compressed as a peer without context takeover sends it (tail left off).
fn compress(payload: &[u8]) -> Vec<u8> {
    let mut c = zlib_rs::Deflate::new(6, false, 15);
    let mut out = vec![0u8; payload.len() + 1024];
    c.compress(payload, &mut out, zlib_rs::DeflateFlush::SyncFlush)
        .unwrap();
    out.truncate(c.total_out() as usize);
    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
    out.truncate(out.len() - 4);
    out
}

fn inflate(data: &[u8]) -> Vec<u8> {
    let mut d = zlib_rs::Inflate::new(false, 15);
    let input = [data, &[0, 0, 0xff, 0xff]].concat();
    let mut out = vec![0u8; 1 << 20];
    d.decompress(&input, &mut out, zlib_rs::InflateFlush::SyncFlush)
        .unwrap();
    out.truncate(d.total_out() as usize);
    out
}

fn header(head: &[u8], name: &str) -> Option<String> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

fn connect(port: u16, extra: &[&str]) -> (Client, Option<String>) {
    let (c, head) = Client::try_connect(port, "/", extra);
    assert!(
        head.starts_with(b"HTTP/1.1 101 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    (c, header(&head, "sec-websocket-extensions"))
}

#[test]
fn an_offer_is_answered_and_messages_go_both_ways_compressed() {
    let server = start(Some(Deflate::default()), 1 << 20);
    let port = server.local_addr().port();
    let (mut c, agreed) = connect(port, &[OFFER]);
    assert_eq!(agreed.as_deref(), Some(AGREED));
    // The RFC's own example: a short message comes back as it is (under the minimum size).
    c.send(&masked(0xc1, &HELLO));
    assert_eq!(c.frame(), (0x81, b"Hello".to_vec()));
    // A long one comes back compressed, and smaller.
    let text = r#"{"type":"message","room":"lobby","text":"hello, hello, hello"}"#.repeat(20);
    c.send(&masked(0xc1, &compress(text.as_bytes())));
    let (first, payload) = c.frame();
    assert_eq!(first, 0xc1, "FIN, RSV1, text");
    assert!(
        payload.len() * 5 < text.len(),
        "{} of {}",
        payload.len(),
        text.len()
    );
    assert_eq!(inflate(&payload), text.as_bytes());
    // Uncompressed messages are still fine on the same connection; fragments too.
    c.send(&masked(0x82, &[7; 100]));
    let (first, payload) = c.frame();
    assert_eq!(first, 0xc2);
    assert_eq!(inflate(&payload), [7; 100]);
    let deflated = compress(&[b'a'; 5000]);
    let (a, b) = deflated.split_at(deflated.len() / 2);
    c.send(&[masked(0x42, a), masked(0x89, b"ping"), masked(0x80, b)].concat());
    assert_eq!(c.frame(), (0x8a, b"ping".to_vec()));
    let (first, payload) = c.frame();
    assert_eq!(first, 0xc2);
    assert_eq!(inflate(&payload), [b'a'; 5000]);
    server.shutdown().unwrap();
}

#[test]
fn offers_the_server_cannot_honour_or_a_server_without_deflate_get_plain_websocket() {
    let with = start(Some(Deflate::default()), 1000);
    let without = start(None, 1000);
    for (port, offer) in [
        (
            with.local_addr().port(),
            "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=16",
        ),
        (
            with.local_addr().port(),
            "Sec-WebSocket-Extensions: permessage-deflate; x=1",
        ),
        (
            with.local_addr().port(),
            "Sec-WebSocket-Extensions: x-webkit-deflate-frame",
        ),
        (without.local_addr().port(), OFFER),
    ] {
        let (mut c, agreed) = connect(port, &[offer]);
        assert_eq!(agreed, None, "{offer}");
        // RSV1 is then a protocol error.
        c.send(&masked(0xc1, &HELLO));
        let (first, payload) = c.frame();
        assert_eq!(
            (first, &payload[..2]),
            (0x88, &1002u16.to_be_bytes()[..]),
            "{offer}"
        );
    }
    // A window the client asks for is what we compress with, and said back.
    let (_, agreed) = connect(
        with.local_addr().port(),
        &["Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=9"],
    );
    assert_eq!(
        agreed.unwrap(),
        format!("{AGREED}; server_max_window_bits=9")
    );
    with.shutdown().unwrap();
    without.shutdown().unwrap();
}

#[test]
fn broken_extension_rules_close_with_their_codes() {
    let server = start(Some(Deflate::default()), 64 * 1024);
    let port = server.local_addr().port();
    let bomb = compress(&vec![0u8; 10 << 20]);
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("RSV1 on a ping", masked(0xc9, b""), 1002),
        (
            "RSV1 on a continuation",
            [masked(0x41, &HELLO[..3]), masked(0xc0, &HELLO[3..])].concat(),
            1002,
        ),
        ("RSV2 beside RSV1", masked(0xe1, &HELLO), 1002),
        ("not DEFLATE", masked(0xc1, &[0xff; 16]), 1007),
        ("a bomb: 10 MiB of zeros", masked(0xc2, &bomb), 1009),
        (
            "compressed text that is not UTF-8",
            masked(0xc1, &compress(b"\xc0\xaf but long enough")),
            1007,
        ),
        (
            "compressed data far over the limit",
            masked(0xc2, &[0; 70_000]),
            1009,
        ),
    ];
    for (what, wire, code) in cases {
        let (mut c, agreed) = connect(port, &[OFFER]);
        assert!(agreed.is_some());
        c.send(&wire);
        let (first, payload) = c.frame();
        assert_eq!(first, 0x88, "{what}");
        assert_eq!(payload[..2], code.to_be_bytes(), "{what}");
        c.expect_eof();
    }
    // Other connections never notice.
    let (mut c, _) = connect(port, &[OFFER]);
    c.send(&masked(0xc1, &HELLO));
    assert_eq!(c.frame(), (0x81, b"Hello".to_vec()));
    server.shutdown().unwrap();
}

#[test]
fn a_publish_reaches_compressing_and_plain_members_each_in_their_form() {
    let server = start(Some(Deflate::default()), 1 << 20);
    let port = server.local_addr().port();
    let mut compressing: Vec<Client> = (0..4).map(|_| connect(port, &[OFFER]).0).collect();
    let mut plain: Vec<Client> = (0..4).map(|_| connect(port, &[]).0).collect();
    // Joins are settled once each connection answers an echo.
    for c in compressing.iter_mut().chain(plain.iter_mut()) {
        c.send(&masked(0x81, b"ready"));
        assert_eq!(c.frame().1, b"ready");
    }
    let text = format!("publish {}", "news for everyone in the room; ".repeat(10));
    plain[0].send(&masked(0x81, text.as_bytes()));
    let mut seen = Vec::new();
    for c in &mut compressing {
        let (first, payload) = c.frame();
        assert_eq!(first, 0xc1);
        assert_eq!(inflate(&payload), text.as_bytes());
        seen.push(payload);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
    for c in &mut plain {
        assert_eq!(c.frame(), (0x81, text.as_bytes().to_vec()));
    }
    server.shutdown().unwrap();
}

#[test]
fn with_a_kept_window_later_messages_are_smaller() {
    let server = start(Some(Deflate::default().context_takeover(12)), 1 << 20);
    let port = server.local_addr().port();
    let (mut c, agreed) = connect(port, &[OFFER]);
    assert_eq!(
        agreed.as_deref(),
        Some("permessage-deflate; client_no_context_takeover; server_max_window_bits=12")
    );
    let text =
        r#"{"type":"message","room":"lobby","user":"ana","text":"good morning, all of you"}"#;
    let mut peer = zlib_rs::Inflate::new(false, 12);
    let mut sizes = Vec::new();
    for _ in 0..3 {
        c.send(&masked(0x81, text.as_bytes()));
        let (first, payload) = c.frame();
        assert_eq!(first, 0xc1);
        let input = [&payload[..], &[0, 0, 0xff, 0xff]].concat();
        let mut out = vec![0u8; 4096];
        let before = peer.total_out();
        peer.decompress(&input, &mut out, zlib_rs::InflateFlush::SyncFlush)
            .unwrap();
        assert_eq!(
            &out[..(peer.total_out() - before) as usize],
            text.as_bytes()
        );
        sizes.push(payload.len());
    }
    assert!(sizes[1] * 3 < sizes[0], "{sizes:?}");
    server.shutdown().unwrap();
}

#[test]
fn the_client_offers_deflate_and_talks_to_every_kind_of_server() {
    let shared = start(Some(Deflate::default()), 1 << 20);
    let kept = start(Some(Deflate::default().context_takeover(10)), 1 << 20);
    let plain = start(None, 1 << 20);
    let long = r#"{"type":"message","text":"compressible, compressible, compressible"}"#.repeat(30);
    for server in [&shared, &kept, &plain] {
        let url = format!("ws://{}/", server.local_addr());
        let mut ws = web::ws::WsConnect::new()
            .deflate(true)
            .timeout(Duration::from_secs(5))
            .connect(&url)
            .unwrap();
        for text in ["short", long.as_str(), long.as_str(), "short again"] {
            ws.send_text(text).unwrap();
            assert_eq!(
                ws.recv().unwrap(),
                Some(Message::Text(text.to_owned())),
                "{url}"
            );
        }
        ws.send(&Message::Binary(vec![1; 10_000])).unwrap();
        assert_eq!(ws.recv().unwrap(), Some(Message::Binary(vec![1; 10_000])));
        assert_eq!(ws.close(1000, "").unwrap(), Some(1000));
    }
    for server in [shared, kept, plain] {
        server.shutdown().unwrap();
    }
}
