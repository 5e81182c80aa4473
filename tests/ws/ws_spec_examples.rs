//! Every example the specification gives for the `web/ws` module, as a test, plus the 7-, 16-
//! and 64-bit payload lengths of RFC 6455 §5.2 encoded by the frame builders and decoded again.

use base64::Engine as _;
use web::ws::{
    Decoder, Event, FIXED_MASK, Opcode, Role, accept_key, apply_mask, client_frame,
    client_frame_bin, header_value, parse_frame_head, ws_frame, ws_frame_bin, ws_frame_op,
    ws_handshake_request, ws_wanted,
};

// ---------------------------------------------------------------------------------------------
// accept_key

#[test]
fn accept_key_rfc_example() {
    assert_eq!(
        accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}

#[test]
fn accept_key_differs_per_key_and_is_base64_of_20_bytes() {
    let a = accept_key("dGhlIHNhbXBsZSBub25jZQ==");
    let b = accept_key("AQIDBAUGBwgJCgsMDQ4PEA==");
    assert_ne!(a, b);
    for v in [a, b] {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&v)
            .expect("accept value is base64");
        assert_eq!(raw.len(), 20, "SHA-1 is 20 bytes: {v}");
    }
}

// ---------------------------------------------------------------------------------------------
// Server frames: ws_frame_op, ws_frame, ws_frame_bin

#[test]
fn ws_frame_op_130_two_bytes_begins_82_02() {
    let frame = ws_frame_op(130, b"ab");
    assert_eq!(&frame[..2], &[0x82, 0x02]);
    assert_eq!(frame, [0x82, 0x02, b'a', b'b']);
}

#[test]
fn ws_frame_op_129_is_a_text_frame() {
    let frame = ws_frame_op(129, b"hey");
    assert_eq!(frame, [0x81, 0x03, b'h', b'e', b'y']);
}

#[test]
fn ws_frame_first_byte_is_81_and_unmasked() {
    let frame = ws_frame("hello");
    assert_eq!(frame[0], 0x81);
    assert_eq!(frame[1], 5, "unmasked, length 5");
    assert_eq!(&frame[2..], b"hello");
    // Empty text too.
    assert_eq!(ws_frame(""), [0x81, 0x00]);
}

#[test]
fn ws_frame_bin_first_byte_is_82_and_unmasked() {
    let frame = ws_frame_bin(&[0, 1, 255]);
    assert_eq!(frame, [0x82, 0x03, 0, 1, 255]);
    assert_eq!(ws_frame_bin(&[]), [0x82, 0x00]);
}

// ---------------------------------------------------------------------------------------------
// Client frames: client_frame, client_frame_bin

#[test]
fn client_frame_two_bytes_begins_81_82() {
    let frame = client_frame("hi");
    assert_eq!(&frame[..2], &[0x81, 0x82]);
    assert_eq!(frame.len(), 2 + 4 + 2);
    // The mask key follows, then the masked payload.
    let key = [frame[2], frame[3], frame[4], frame[5]];
    assert_eq!(key, FIXED_MASK, "the fixed mask key");
    let mut payload = frame[6..].to_vec();
    apply_mask(&mut payload, key, 0);
    assert_eq!(payload, b"hi");
}

#[test]
fn client_frame_bin_one_byte_begins_82_81() {
    let frame = client_frame_bin(&[7]);
    assert_eq!(&frame[..2], &[0x82, 0x81]);
    assert_eq!(frame.len(), 2 + 4 + 1);
    let key = [frame[2], frame[3], frame[4], frame[5]];
    assert_eq!(frame[6] ^ key[0], 7);
}

#[test]
fn client_frames_are_masked_with_a_fixed_key() {
    // The same payload gives the same bytes every time (a fixed key).
    assert_eq!(client_frame("abc"), client_frame("abc"));
    assert_eq!(client_frame_bin(b"abc"), client_frame_bin(b"abc"));
    // And differs from the unmasked server frame.
    assert_ne!(&client_frame("abc")[6..], b"abc");
}

// ---------------------------------------------------------------------------------------------
// ws_handshake_request

fn lines(req: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(req).expect("the request is text");
    assert!(
        text.ends_with("\r\n\r\n"),
        "the head ends with an empty line"
    );
    text[..text.len() - 4]
        .split("\r\n")
        .map(str::to_owned)
        .collect()
}

#[test]
fn handshake_request_begins_with_get_host_upgrade() {
    for (host, path) in [
        ("example.com", "/chat"),
        ("127.0.0.1:9001", "/"),
        ("h", "/a/b?c=d"),
    ] {
        let req = ws_handshake_request(host, path);
        let want = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n");
        assert!(
            req.starts_with(want.as_bytes()),
            "{:?} does not start with {want:?}",
            String::from_utf8_lossy(&req)
        );
    }
}

#[test]
fn handshake_request_has_the_other_lines_a_server_needs() {
    let req = ws_handshake_request("example.com", "/chat");
    let lines = lines(&req);
    assert_eq!(lines[0], "GET /chat HTTP/1.1");
    assert_eq!(lines[1], "Host: example.com");
    assert_eq!(lines[2], "Upgrade: websocket");
    let rest = &lines[3..];
    assert!(rest.iter().any(|l| l == "Connection: Upgrade"), "{lines:?}");
    assert!(
        rest.iter().any(|l| l == "Sec-WebSocket-Version: 13"),
        "{lines:?}"
    );
    let keys: Vec<&String> = rest
        .iter()
        .filter(|l| l.starts_with("Sec-WebSocket-Key: "))
        .collect();
    assert_eq!(keys.len(), 1, "exactly one key line: {lines:?}");
    let key = &keys[0]["Sec-WebSocket-Key: ".len()..];
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(key)
        .expect("the key is base64");
    assert_eq!(decoded.len(), 16, "the key is 16 bytes: {key}");
    // Every line is a header line, and the request is one the library itself accepts.
    assert!(rest.iter().all(|l| l.contains(": ")), "{lines:?}");
    assert!(ws_wanted(&req));
    assert!(web::ws::upgrade_reply(&req).is_ok());
}

#[test]
fn handshake_request_keys_are_fresh() {
    let keys: std::collections::HashSet<String> = (0..32)
        .map(|_| header_value(&ws_handshake_request("h", "/"), "Sec-WebSocket-Key: "))
        .collect();
    assert_eq!(keys.len(), 32, "32 requests, 32 different keys");
}

// ---------------------------------------------------------------------------------------------
// ws_wanted

#[test]
fn ws_wanted_with_a_key_in_any_case() {
    for name in [
        "Sec-WebSocket-Key",
        "sec-websocket-key",
        "SEC-WEBSOCKET-KEY",
        "sEc-WeBsOcKeT-kEy",
    ] {
        let raw = format!(
            "GET / HTTP/1.1\r\nhost: a\r\nupgrade: websocket\r\nconnection: upgrade\r\n{name}: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n"
        );
        assert!(ws_wanted(raw.as_bytes()), "{name}");
    }
    assert!(ws_wanted(&ws_handshake_request("a", "/")));
}

#[test]
fn ws_wanted_false_for_ordinary_requests() {
    let cases: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        b"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
        // Not the header: a longer name, or the words in a value.
        b"GET / HTTP/1.1\r\nX-Sec-WebSocket-Key: abc\r\n\r\n",
        b"GET / HTTP/1.1\r\nX-Note: Sec-WebSocket-Key: abc\r\n\r\n",
        // In the body, not the head.
        b"POST / HTTP/1.1\r\nContent-Length: 24\r\n\r\nSec-WebSocket-Key: abc\r\n",
        b"",
    ];
    for raw in cases {
        assert!(!ws_wanted(raw), "{:?}", String::from_utf8_lossy(raw));
    }
}

// ---------------------------------------------------------------------------------------------
// header_value

#[test]
fn header_value_name_case_blind_value_case_intact() {
    let raw = b"GET / HTTP/1.1\r\nHost: Example.COM\r\nsec-websocket-key: AbCdEf==\r\nX-Mixed: MiXeD VaLuE\r\n\r\n";
    for name in [
        "Sec-WebSocket-Key: ",
        "sec-websocket-key: ",
        "SEC-WEBSOCKET-KEY: ",
    ] {
        assert_eq!(header_value(raw, name), "AbCdEf==", "{name}");
    }
    assert_eq!(header_value(raw, "x-mixed: "), "MiXeD VaLuE");
    assert_eq!(header_value(raw, "HOST: "), "Example.COM");
}

#[test]
fn header_value_absent_is_empty() {
    let raw = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_eq!(header_value(raw, "Sec-WebSocket-Key: "), "");
    assert_eq!(header_value(raw, "Hos: "), "");
    assert_eq!(header_value(b"", "Host: "), "");
}

#[test]
fn header_value_first_of_several() {
    let raw = b"GET / HTTP/1.1\r\nX-A: one\r\nx-a: two\r\n\r\n";
    assert_eq!(header_value(raw, "X-A: "), "one");
}

// ---------------------------------------------------------------------------------------------
// 7-, 16- and 64-bit lengths

/// (payload length, the length bytes after the first byte of an unmasked frame)
fn length_cases() -> Vec<(usize, Vec<u8>)> {
    vec![
        (0, vec![0x00]),
        (125, vec![125]),
        (126, vec![126, 0x00, 0x7e]),
        (65535, vec![126, 0xff, 0xff]),
        (65536, vec![127, 0, 0, 0, 0, 0, 1, 0, 0]),
    ]
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn server_frames_encode_7_16_64_bit_lengths() {
    for (len, want) in length_cases() {
        let body = payload(len);
        for (frame, first) in [
            (ws_frame_bin(&body), 0x82),
            (ws_frame_op(130, &body), 0x82),
            (ws_frame(&"x".repeat(len)), 0x81),
        ] {
            assert_eq!(frame[0], first, "len {len}");
            assert_eq!(&frame[1..1 + want.len()], &want[..], "len {len}");
            assert_eq!(frame.len(), 1 + want.len() + len, "len {len}");
        }
        assert_eq!(&ws_frame_bin(&body)[1 + want.len()..], &body[..]);
    }
}

#[test]
fn client_frames_encode_7_16_64_bit_lengths() {
    for (len, mut want) in length_cases() {
        want[0] |= 0x80; // the mask bit
        let body = payload(len);
        for (frame, first) in [
            (client_frame_bin(&body), 0x82),
            (client_frame(&"y".repeat(len)), 0x81),
        ] {
            assert_eq!(frame[0], first, "len {len}");
            assert_eq!(&frame[1..1 + want.len()], &want[..], "len {len}");
            assert_eq!(frame.len(), 1 + want.len() + 4 + len, "len {len}");
        }
    }
}

#[test]
fn server_frames_decode_7_16_64_bit_lengths() {
    for (len, want) in length_cases() {
        let body = payload(len);
        let frame = ws_frame_bin(&body);
        let head = parse_frame_head(&frame, Role::Client)
            .expect("valid")
            .expect("complete");
        assert_eq!(
            (head.fin, head.opcode, head.mask, head.len, head.head_len),
            (true, Opcode::Binary, None, len as u64, 1 + want.len()),
            "len {len}"
        );
        let mut d = Decoder::new(Role::Client, 1 << 20);
        assert_eq!(
            d.next(&frame),
            Ok((frame.len(), Some(Event::Binary(body)))),
            "len {len}"
        );
    }
}

#[test]
fn client_frames_decode_7_16_64_bit_lengths() {
    for (len, want) in length_cases() {
        let body = payload(len);
        let frame = client_frame_bin(&body);
        let head = parse_frame_head(&frame, Role::Server)
            .expect("valid")
            .expect("complete");
        assert_eq!(
            (head.fin, head.opcode, head.mask, head.len, head.head_len),
            (
                true,
                Opcode::Binary,
                Some(FIXED_MASK),
                len as u64,
                1 + want.len() + 4
            ),
            "len {len}"
        );
        let mut d = Decoder::new(Role::Server, 1 << 20);
        assert_eq!(
            d.next(&frame),
            Ok((frame.len(), Some(Event::Binary(body)))),
            "len {len}"
        );

        let text = "z".repeat(len);
        let frame = client_frame(&text);
        let head = parse_frame_head(&frame, Role::Server).unwrap().unwrap();
        assert_eq!((head.opcode, head.len), (Opcode::Text, len as u64));
        let mut d = Decoder::new(Role::Server, 1 << 20);
        assert_eq!(
            d.next(&frame),
            Ok((frame.len(), Some(Event::Text(text)))),
            "len {len}"
        );
    }
}

#[test]
fn lengths_incomplete_until_the_whole_head_is_in() {
    for (len, want) in length_cases() {
        let frame = client_frame_bin(&payload(len));
        let head_len = 1 + want.len() + 4;
        for cut in 0..head_len {
            assert_eq!(
                parse_frame_head(&frame[..cut], Role::Server),
                Ok(None),
                "len {len} cut {cut}"
            );
        }
        assert!(
            parse_frame_head(&frame[..head_len], Role::Server)
                .unwrap()
                .is_some()
        );
    }
}

#[test]
fn ws_handshake_request_sends_host_and_path_as_one_line_each() {
    let req = ws_handshake_request("h\r\nX-Evil: 1", "/a b\r\n\r\nGET /other HTTP/1.1");
    let text = String::from_utf8(req).unwrap();
    let head = text.strip_suffix("\r\n\r\n").unwrap();
    assert!(!head.contains("\r\n\r\n"), "{text}");
    assert!(
        text.starts_with(
            "GET /a%20b%0D%0A%0D%0AGET%20/other%20HTTP/1.1 HTTP/1.1\r\nHost: h%0D%0AX-Evil:%201\r\n"
        ),
        "{text}"
    );
    assert_eq!(head.split("\r\n").count(), 6, "{text}");
}
