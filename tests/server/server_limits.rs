//! Every limit and every kind of malformed request is answered with its status and
//! `Connection: close`, and then the server closes the connection.

use crate::wire;

use std::time::Duration;

use web::http::{Server, ServerHandle};
use wire::{Client, echo};

const MAX_HEAD: usize = 1024;
const MAX_HEADERS: usize = 8;
const MAX_BODY: u64 = 100;

fn start() -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_head_bytes(MAX_HEAD)
        .max_headers(MAX_HEADERS)
        .max_body(MAX_BODY)
        .spawn(echo)
        .unwrap()
}

/// Sends `raw` on a fresh connection and checks it is refused with `status`, the reply saying
/// `Connection: close`, and the connection then closed.
fn assert_refused(server: &ServerHandle, raw: impl AsRef<[u8]>, status: u16) {
    let raw = raw.as_ref();
    let mut c = Client::connect(server.local_addr());
    c.send(raw);
    let r = c.reply();
    assert_eq!(
        r.status,
        status,
        "for {:?}: {r:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(200)])
    );
    r.assert_closes();
    assert!(r.has("content-length"), "{r:?}");
    c.assert_eof();
}

fn assert_served(server: &ServerHandle, raw: impl AsRef<[u8]>) {
    let mut c = Client::connect(server.local_addr());
    c.send(raw);
    let r = c.reply();
    assert_eq!(r.status, 200, "{r:?}");
    r.assert_keeps_alive();
}

#[test]
fn a_head_larger_than_max_head_bytes_gets_431() {
    let server = start();
    let big = "a".repeat(MAX_HEAD);
    assert_refused(
        &server,
        format!("GET / HTTP/1.1\r\nHost: t\r\nX-Big: {big}\r\n\r\n"),
        431,
    );
}

#[test]
fn a_head_growing_past_the_limit_is_refused_before_it_ends() {
    let server = start();
    // A header line that never ends, nor does the head: the server must not wait for it.
    let mut raw = String::from("GET / HTTP/1.1\r\nHost: t\r\nX-Long: ");
    raw.push_str(&"v".repeat(MAX_HEAD + 100));
    let mut c = Client::connect(server.local_addr());
    c.send(&raw);
    let r = c.reply();
    assert_eq!(r.status, 431, "{r:?}");
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn a_head_just_within_max_head_bytes_is_served() {
    let server = start();
    let start = "GET / HTTP/1.1\r\nHost: t\r\nX-Fill: ";
    let fill = "f".repeat(MAX_HEAD - start.len() - 4);
    let raw = format!("{start}{fill}\r\n\r\n");
    assert_eq!(raw.len(), MAX_HEAD);
    assert_served(&server, raw);
}

#[test]
fn a_target_longer_than_the_head_limit_gets_414() {
    let server = start();
    let target = format!("/{}", "t".repeat(MAX_HEAD + 10));
    assert_refused(
        &server,
        format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n"),
        414,
    );
}

#[test]
fn more_headers_than_max_headers_gets_431() {
    let server = start();
    let mut raw = String::from("GET / HTTP/1.1\r\nHost: t\r\n");
    for i in 0..MAX_HEADERS {
        raw.push_str(&format!("X-{i}: v\r\n"));
    }
    raw.push_str("\r\n");
    assert_refused(&server, raw, 431);
}

#[test]
fn exactly_max_headers_is_served() {
    let server = start();
    let mut raw = String::from("GET / HTTP/1.1\r\nHost: t\r\n");
    for i in 1..MAX_HEADERS {
        raw.push_str(&format!("X-{i}: v\r\n"));
    }
    raw.push_str("\r\n");
    assert_served(&server, raw);
}

#[test]
fn a_content_length_over_max_body_gets_413_without_waiting_for_the_body() {
    let server = start();
    assert_refused(
        &server,
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        ),
        413,
    );
}

#[test]
fn a_body_of_exactly_max_body_is_served() {
    let server = start();
    let body = "b".repeat(MAX_BODY as usize);
    assert_served(
        &server,
        format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {MAX_BODY}\r\n\r\n{body}"),
    );
    let half = "c".repeat(MAX_BODY as usize / 2);
    assert_served(
        &server,
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{half}\r\n{:x}\r\n{half}\r\n0\r\n\r\n",
            half.len(),
            half.len()
        ),
    );
}

#[test]
fn a_chunked_body_over_max_body_gets_413() {
    let server = start();
    // One chunk announced too large.
    assert_refused(
        &server,
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            MAX_BODY + 1
        ),
        413,
    );
    // Chunks each within the limit whose sum is not.
    let part = "p".repeat(60);
    assert_refused(
        &server,
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3c\r\n{part}\r\n3c\r\n{part}\r\n0\r\n\r\n"
        ),
        413,
    );
}

#[test]
fn expect_continue_with_a_body_over_max_body_gets_413_and_no_100() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n");
    let r = c.reply();
    assert_eq!(
        r.status, 413,
        "the first reply is the refusal, not a 100: {r:?}"
    );
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn an_expectation_other_than_100_continue_gets_417() {
    let server = start();
    assert_refused(
        &server,
        "GET / HTTP/1.1\r\nHost: t\r\nExpect: the-unexpected\r\n\r\n",
        417,
    );
}

#[test]
fn malformed_requests_get_400() {
    let server = start();
    let cases: &[&[u8]] = &[
        // whitespace between a field name and its colon
        b"GET / HTTP/1.1\r\nHost : t\r\n\r\n",
        // bare LF line endings
        b"GET / HTTP/1.1\nHost: t\n\n",
        b"GET / HTTP/1.1\r\nHost: t\nX: y\r\n\r\n",
        // a CR not followed by LF
        b"GET / HTTP/1.1\r\nHost: t\rX: y\r\n\r\n",
        // both Content-Length and Transfer-Encoding
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        // HTTP/1.1 without Host, and with two
        b"GET / HTTP/1.1\r\nX: y\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        // obsolete line folding
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n",
        // Content-Length not plain digits, or two that disagree
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\nab",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        // a request line that is not three parts, a bad method, a bad target, a bad version
        b"GET /\r\nHost: t\r\n\r\n",
        b"G(T / HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET noslash HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET / HTTQ/1.1\r\nHost: t\r\n\r\n",
        // a control byte in a value, a name that is not a token
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX(Y): v\r\n\r\n",
        // a target that is not UTF-8
        b"GET /\xff\xfe HTTP/1.1\r\nHost: t\r\n\r\n",
        // a Host with a non-numeric or out-of-range port (RFC 9112 §3.2, RFC 9110 §7.2)
        b"GET / HTTP/1.1\r\nHost: t:http\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t:70000\r\n\r\n",
        // Transfer-Encoding whose final coding is not chunked (RFC 9112 §6.3), or with an
        // empty element or line beside chunked (TE.TE desync)
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked,\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        // Transfer-Encoding in HTTP/1.0
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ];
    for raw in cases {
        assert_refused(&server, raw, 400);
    }
}

#[test]
fn a_malformed_chunk_gets_400_and_the_connection_closes() {
    let server = start();
    let head = "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    for chunks in [
        "zz\r\nabc\r\n0\r\n\r\n",           // size not hex
        "3\r\nabcX\r\n0\r\n\r\n",           // data not followed by CRLF
        "3;a\x00b\r\nabc\r\n0\r\n\r\n",     // a control byte in an extension
        "-3\r\nabc\r\n0\r\n\r\n",           // a sign before the size
        "3\nabc\r\n0\r\n\r\n",              // bare LF after the size
        "ffffffffffffffffff\r\n",           // size overflows
        "3 \r\nabc\r\n0\r\n\r\n",           // whitespace after a size with no extension
        "3\r\nabc\r\n0\r\nNoColon\r\n\r\n", // a trailer line without a colon
    ] {
        assert_refused(&server, format!("{head}{chunks}"), 400);
    }
}

#[test]
fn an_unknown_transfer_coding_before_chunked_gets_501() {
    let server = start();
    for te in ["gzip, chunked", "x-custom, chunked"] {
        assert_refused(
            &server,
            format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: {te}\r\n\r\n"),
            501,
        );
    }
}

#[test]
fn http2_request_line_gets_505() {
    let server = start();
    assert_refused(&server, "GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
}

#[test]
fn a_refused_request_after_a_served_one_closes_the_connection_and_drops_the_rest() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /fine HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /bad HTTP/1.1\r\nHost : t\r\n\r\n\
         GET /never HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let ok = c.reply();
    assert_eq!(ok.status, 200);
    ok.assert_keeps_alive();
    let bad = c.reply();
    assert_eq!(bad.status, 400);
    bad.assert_closes();
    c.assert_eof();
}

#[test]
fn the_default_limits_are_16_kib_of_head_100_headers_and_1_mib_of_body() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(echo)
        .unwrap();
    let near = |n: usize| "h".repeat(n);
    // 16 KiB of head.
    let line = "GET / HTTP/1.1\r\nHost: t\r\nX: ";
    let fits = format!("{line}{}\r\n\r\n", near(16 * 1024 - line.len() - 4));
    assert_served(&server, fits);
    assert_refused(&server, format!("{line}{}\r\n\r\n", near(16 * 1024)), 431);
    // 100 header lines.
    let headers = |n: usize| {
        let mut raw = String::from("GET / HTTP/1.1\r\nHost: t\r\n");
        for i in 1..n {
            raw.push_str(&format!("X-{i}: v\r\n"));
        }
        raw + "\r\n"
    };
    assert_served(&server, headers(100));
    assert_refused(&server, headers(101), 431);
    // 1 MiB of body.
    assert_refused(
        &server,
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            (1 << 20) + 1
        ),
        413,
    );
    let mut c = Client::connect(server.local_addr());
    c.send(format!(
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        1 << 20
    ));
    c.send(vec![b'm'; 1 << 20]);
    let r = c.reply();
    assert_eq!(r.status, 200);
    assert!(r.body.ends_with(&[b'm'; 1024]));
    c.assert_silent_for(Duration::from_millis(50));
}

#[test]
fn obs_text_in_a_header_value_is_accepted_and_kept_byte_for_byte() {
    // RFC 9110 §5.5: bytes 0x80-0xFF in a value are opaque data, neither refused nor altered.
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send(b"GET /o HTTP/1.1\r\nHost: t\r\nX-Name: Andr\xe9 \xff\xfe\r\n\r\n");
    let r = c.reply();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body, b"GET /o\nhost: t\nx-name: Andr\xe9 \xff\xfe\n\n");
}

#[test]
fn a_refused_head_request_gets_its_status_and_no_body() {
    // RFC 9110 §9.3.2: a reply to HEAD has no body, refusals included.
    use std::io::{Read, Write};
    let server = start();
    for (raw, status) in [
        (&b"HEAD / HTTP/1.1\r\n\r\n"[..], "400"),
        (
            b"HEAD / HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\n",
            "413",
        ),
    ] {
        let mut conn = std::net::TcpStream::connect(server.local_addr()).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        conn.write_all(raw).unwrap();
        let mut reply = Vec::new();
        conn.read_to_end(&mut reply).unwrap();
        let text = String::from_utf8_lossy(&reply);
        assert!(text.starts_with(&format!("HTTP/1.1 {status} ")), "{text}");
        assert!(text.contains("\r\nContent-Length: "), "{text}");
        assert!(text.ends_with("\r\n\r\n"), "a body followed: {text:?}");
    }
}

#[test]
fn a_longer_linger_lets_a_client_that_writes_its_whole_body_first_read_the_413() {
    use std::io::{Read, Write};
    // The client announces 3 MiB over the 100-byte limit and sends all of it, slowly (about
    // 3 s), before it reads: the server refuses at once, then lingers reading and dropping.
    // With the default 2 s linger the connection would be closed (reset) under the client.
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_body(MAX_BODY)
        .linger(Duration::from_secs(8))
        .spawn(echo)
        .unwrap();
    let mut conn = std::net::TcpStream::connect(server.local_addr()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let chunk = vec![b'x'; 64 * 1024];
    let chunks = 48;
    conn.write_all(
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            chunk.len() * chunks
        )
        .as_bytes(),
    )
    .unwrap();
    for _ in 0..chunks {
        conn.write_all(&chunk).unwrap();
        std::thread::sleep(Duration::from_millis(62));
    }
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).unwrap();
    assert!(
        reply.starts_with(b"HTTP/1.1 413 "),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );
}

/// A Content-Length near `u64::MAX` with `max_body(u64::MAX)` must not wrap when added to the
/// head's length (the POST answered with an empty body and its body bytes read as the next
/// request): a body no buffer can hold is refused with 413 before any of it is read.
#[test]
fn a_huge_content_length_with_no_body_limit_is_refused_not_smuggled() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_body(u64::MAX)
        .spawn(echo)
        .unwrap();
    for (length, status) in [
        ("18446744073709551614", 413),
        ("18446744073709551615", 413),
        ("9223372036854775808", 413),
        ("18446744073709551616", 400),
    ] {
        let mut c = Client::connect(server.local_addr());
        c.send(format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n\
             GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n"
        ));
        let r = c.reply();
        assert_eq!(r.status, status, "Content-Length {length}: {r:?}");
        r.assert_closes();
        c.assert_eof();
    }
}
