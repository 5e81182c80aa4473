use super::*;

fn parse(raw: &[u8]) -> Result<Option<RequestHead>, ParseError> {
    HeadParser::default().parse(raw)
}

fn head(raw: &str) -> RequestHead {
    match parse(raw.as_bytes()) {
        Ok(Some(h)) => h,
        other => panic!("{raw:?} gave {other:?}"),
    }
}

#[test]
fn rejections_each_with_its_kind_and_status() {
    use ParseError::*;
    let cases: &[(&str, &[u8], ParseError, u16)] = &[
        ("CL with TE", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", LengthAndTransferEncoding, 400),
        ("TE with CL", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", LengthAndTransferEncoding, 400),
        ("differing duplicate CL", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", ContentLength, 400),
        ("differing CL list", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 4\r\n\r\n", ContentLength, 400),
        ("CL with sign", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n", ContentLength, 400),
        ("CL negative", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", ContentLength, 400),
        ("CL hex", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", ContentLength, 400),
        ("CL empty", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", ContentLength, 400),
        ("CL inner space", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", ContentLength, 400),
        ("CL overflow", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n", ContentLength, 400),
        ("TE last not chunked", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", TransferEncoding, 400),
        ("TE unknown coding", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", UnsupportedTransferCoding, 501),
        ("TE identity", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", TransferEncoding, 400),
        ("TE on two lines, last not chunked", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", TransferEncoding, 400),
        ("TE empty element beside chunked", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n", TransferEncoding, 400),
        ("TE empty line beside chunked", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\nTransfer-Encoding: chunked\r\n\r\n", TransferEncoding, 400),
        ("TE unknown coding on its own line before chunked", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", UnsupportedTransferCoding, 501),
        ("Host with a non-numeric port", b"GET / HTTP/1.1\r\nHost: a:http\r\n\r\n", BadHost, 400),
        ("Host with an out-of-range port", b"GET / HTTP/1.1\r\nHost: a:65536\r\n\r\n", BadHost, 400),
        ("Host with two colons", b"GET / HTTP/1.1\r\nHost: a:1:2\r\n\r\n", BadHost, 400),
        ("Host with a broken IP literal", b"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", BadHost, 400),
        ("TE chunked twice", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", TransferEncoding, 400),
        ("TE empty", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n", TransferEncoding, 400),
        ("TE in HTTP/1.0", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", TransferEncodingInHttp10, 400),
        ("space before colon", b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", SpaceBeforeColon, 400),
        ("tab before colon", b"GET / HTTP/1.1\r\nHost: a\r\nX\t: b\r\n\r\n", SpaceBeforeColon, 400),
        ("invalid token char in name", b"GET / HTTP/1.1\r\nHost: a\r\nX(y): b\r\n\r\n", HeaderName, 400),
        ("non-ASCII name", b"GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: b\r\n\r\n", HeaderName, 400),
        ("empty name", b"GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", HeaderName, 400),
        ("no colon", b"GET / HTTP/1.1\r\nHost: a\r\nJunk\r\n\r\n", HeaderName, 400),
        ("obs-fold", b"GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n  c\r\n\r\n", ObsFold, 400),
        ("whitespace before first header", b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", ObsFold, 400),
        ("bare CR in value", b"GET / HTTP/1.1\r\nHost: a\r\nX: b\rc\r\n\r\n", HeaderValue, 400),
        ("bare LF ending a header", b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", LineEnding, 400),
        ("bare LF ending the request line", b"GET / HTTP/1.1\nHost: a\r\n\r\n", LineEnding, 400),
        ("bare LF as blank line", b"GET / HTTP/1.1\r\nHost: a\r\n\n", LineEnding, 400),
        ("NUL in value", b"GET / HTTP/1.1\r\nHost: a\r\nX: b\0c\r\n\r\n", HeaderValue, 400),
        ("control char in value", b"GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[31m\r\n\r\n", HeaderValue, 400),
        ("DEL in value", b"GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n", HeaderValue, 400),
        ("HTTP/1.1 without Host", b"GET / HTTP/1.1\r\nX: a\r\n\r\n", MissingHost, 400),
        ("two Hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", DuplicateHost, 400),
        ("two Hosts in 1.0", b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", DuplicateHost, 400),
        ("Host with slash", b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", BadHost, 400),
        ("Host with space", b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", BadHost, 400),
        ("HTTP/2.0", b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", UnsupportedVersion, 505),
        ("HTTP/0.9", b"GET / HTTP/0.9\r\n\r\n", UnsupportedVersion, 505),
        ("HTTP/3.1", b"GET / HTTP/3.1\r\nHost: a\r\n\r\n", UnsupportedVersion, 505),
        ("h2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", UnsupportedVersion, 505),
        ("lower-case version", b"GET / http/1.1\r\nHost: a\r\n\r\n", Version, 400),
        ("two-digit minor", b"GET / HTTP/1.10\r\nHost: a\r\n\r\n", Version, 400),
        ("no minor", b"GET / HTTP/1\r\nHost: a\r\n\r\n", Version, 400),
        ("no version", b"GET /\r\nHost: a\r\n\r\n", RequestLine, 400),
        ("only a method", b"GET\r\n\r\n", RequestLine, 400),
        ("two spaces", b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", Target, 400),
        ("space in target", b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", Target, 400),
        ("tab in target", b"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", Target, 400),
        ("bare CR in request line", b"GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n", RequestLine, 400),
        ("NUL in name", b"GET / HTTP/1.1\r\nHost: a\r\nX\0Y: b\r\n\r\n", HeaderValue, 400),
        ("control in target", b"GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", RequestLine, 400),
        ("relative target", b"GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", Target, 400),
        ("asterisk for GET", b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", Target, 400),
        ("bad method char", b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", Method, 400),
        ("empty method", b" / HTTP/1.1\r\nHost: a\r\n\r\n", Method, 400),
        ("a common method's start, then not a token", b"GET( / HTTP/1.1\r\nHost: a\r\n\r\n", Method, 400),
        ("target not UTF-8", b"GET /\xff HTTP/1.1\r\nHost: a\r\n\r\n", NotUtf8, 400),
        ("other expectation", b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", Expectation, 417),
    ];
    for (what, raw, kind, status) in cases {
        let got = parse(raw);
        assert_eq!(got, Err(*kind), "{what}");
        assert_eq!(kind.status(), *status, "{what}");
    }
}

#[test]
fn limits_give_414_and_431() {
    let long_target = format!(
        "GET /{} HTTP/1.1\r\nHost: a\r\n\r\n",
        "a".repeat(MAX_HEAD_BYTES)
    );
    assert_eq!(parse(long_target.as_bytes()), Err(ParseError::UriTooLong));
    assert_eq!(ParseError::UriTooLong.status(), 414);
    // Incomplete but already too long: refused without waiting for the end.
    assert_eq!(
        parse(&long_target.as_bytes()[..MAX_HEAD_BYTES + 1]),
        Err(ParseError::UriTooLong)
    );

    let big = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "b".repeat(MAX_HEAD_BYTES)
    );
    assert_eq!(parse(big.as_bytes()), Err(ParseError::HeadTooLarge));
    assert_eq!(ParseError::HeadTooLarge.status(), 431);

    let mut many = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
    for i in 0..MAX_HEADERS {
        many.push_str(&format!("X-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(parse(many.as_bytes()), Err(ParseError::TooManyHeaders));
    assert_eq!(ParseError::TooManyHeaders.status(), 431);

    // Exactly at the limits is fine.
    let mut at = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
    for i in 0..MAX_HEADERS - 1 {
        at.push_str(&format!("X-{i}: v\r\n"));
    }
    at.push_str("\r\n");
    assert_eq!(head(&at).request.headers().len(), MAX_HEADERS);

    let limits = HeadLimits {
        max_head_bytes: 64,
        max_headers: 2,
    };
    let exact = "GET / HTTP/1.1\r\nHost: a\r\nX: 01234567890123456789012345678901\r\n\r\n";
    assert_eq!(exact.len(), 64);
    assert!(
        HeadParser::new(limits)
            .parse(exact.as_bytes())
            .unwrap()
            .is_some()
    );
    let over = "GET / HTTP/1.1\r\nHost: a\r\nX: 012345678901234567890123456789012\r\n\r\n";
    assert_eq!(
        HeadParser::new(limits).parse(over.as_bytes()),
        Err(ParseError::HeadTooLarge)
    );
}

#[test]
fn accepted_forms() {
    let h = head("GET http://example.com:8080/a?b HTTP/1.1\r\nHost: example.com:8080\r\n\r\n");
    assert_eq!(h.request.path(), "http://example.com:8080/a?b");

    let h = head("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!((h.request.method(), h.request.path()), ("OPTIONS", "*"));

    // Each common method, and tokens that are not one of them.
    for method in [
        "GET", "PUT", "POST", "HEAD", "DELETE", "PATCH", "GETS", "M-SEARCH",
    ] {
        let h = head(&format!("{method} / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert_eq!(h.request.method(), method);
    }

    let h = head("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    assert_eq!(h.request.path(), "example.com:443");

    let h = head(
        "GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nAccept: y\r\nX-Empty:\r\nX-Ows: \t v  w \t\r\n\r\n",
    );
    let pairs: Vec<(&str, &str)> = h
        .request
        .headers()
        .map(|h| (h.name(), h.text().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("host", "a"),
            ("accept", "x"),
            ("accept", "y"),
            ("x-empty", ""),
            ("x-ows", "v  w")
        ]
    );

    let h = head("get /%41?q=%20 HTTP/1.1\r\nHOST: a\r\n\r\n");
    assert_eq!(
        h.request.method(),
        "get",
        "methods are case-sensitive and kept as sent"
    );
    assert_eq!(
        h.request.path(),
        "/%41?q=%20",
        "the target is kept exactly as sent"
    );
    assert_eq!(h.request.headers().next().unwrap().name(), "host");

    let h = head("GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\nX: caf\u{e9}\r\n\r\n");
    assert_eq!(h.request.path(), "/caf\u{e9}");
    assert_eq!(
        h.request.headers().nth(1).unwrap().value(),
        "caf\u{e9}".as_bytes()
    );

    // obs-text (RFC 9110 §5.5): a value that is not UTF-8 is kept as opaque bytes.
    let h = parse(b"GET / HTTP/1.1\r\nHost: a\r\nX: \xff\xfe caf\xe9\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(h.request.header_bytes("x"), b"\xff\xfe caf\xe9");
    assert_eq!(
        h.request.header("x"),
        "",
        "the text accessor reads non-UTF-8 as empty"
    );

    let h = head("GET / HTTP/1.2\r\nHost: a\r\n\r\n");
    assert_eq!(
        h.version,
        Version::Http11,
        "HTTP/1.x with x > 1 is treated as 1.1"
    );

    let h = head("GET / HTTP/1.0\r\n\r\n");
    assert_eq!(h.version, Version::Http10);
    assert_eq!(h.request.headers().len(), 0);
}

#[test]
fn leading_empty_lines_are_ignored() {
    let raw = "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let h = head(raw);
    assert_eq!(h.len, raw.len());
    assert_eq!(h.request.method(), "GET");
}

#[test]
fn framing_keep_alive_and_expect() {
    let cases: &[(&str, Framing, bool, bool)] = &[
        (
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            Framing::None,
            true,
            false,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            Framing::None,
            false,
            false,
        ),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\n",
            Framing::None,
            false,
            false,
        ),
        ("GET / HTTP/1.0\r\n\r\n", Framing::None, false, false),
        (
            "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            Framing::None,
            true,
            false,
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n",
            Framing::Length(10),
            true,
            false,
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\nContent-Length: 10\r\n\r\n",
            Framing::Length(10),
            true,
            false,
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7, 7\r\n\r\n",
            Framing::Length(7),
            true,
            false,
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n",
            Framing::Chunked,
            true,
            false,
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-Continue\r\n\r\n",
            Framing::Length(5),
            true,
            true,
        ),
        (
            "POST / HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
            Framing::Length(5),
            false,
            false,
        ),
    ];
    for (raw, framing, keep, expect) in cases {
        let h = head(raw);
        assert_eq!(
            (h.framing, h.keep_alive, h.expect_continue),
            (*framing, *keep, *expect),
            "{raw:?}"
        );
    }
}

#[test]
fn incomplete_until_the_blank_line_then_reusable() {
    let raw = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n";
    let mut p = HeadParser::default();
    for end in 0..28 {
        assert_eq!(p.parse(&raw[..end]), Ok(None), "prefix {end}");
    }
    let first = p.parse(raw).unwrap().unwrap();
    assert_eq!((first.request.path(), first.len), ("/a", 28));
    let second = p.parse(&raw[first.len..]).unwrap().unwrap();
    assert_eq!(second.request.path(), "/b");
    assert_eq!(p.held_bytes(), 0);
}

#[test]
fn a_bad_request_line_is_refused_before_the_head_ends() {
    let mut p = HeadParser::default();
    assert_eq!(
        p.parse(b"GET / HTTP/9.9\r\nHost"),
        Err(ParseError::UnsupportedVersion)
    );
    assert_eq!(
        p.parse(b"GET / HTTP/1.1\r\n"),
        Ok(None),
        "the parser starts over after an error"
    );
}

#[test]
fn a_shorter_buffer_than_before_starts_over_instead_of_panicking() {
    let mut p = HeadParser::default();
    assert_eq!(p.parse(b"GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
    assert_eq!(p.parse(b"GET"), Ok(None));
    assert!(
        p.parse(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap()
            .is_some()
    );
}

#[test]
fn bytes_changed_between_calls_never_make_invalid_text() {
    // Regression: the first parser trusted a "this line is ASCII" flag computed on an earlier
    // call's bytes and made `str`s without checking; a caller feeding other bytes got invalid
    // UTF-8 in a `String` from a safe call. Now each line is copied when it is checked, so the
    // request holds exactly the bytes that were checked, and text accessors check again.
    let mut p = HeadParser::default();
    let first = b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n";
    assert_eq!(p.parse(first), Ok(None));
    let mut second = first.to_vec();
    second[0] = 0xc0; // inside the method, already parsed
    second[5] = 0xff; // inside the target, already parsed
    second[22] = 0xfe; // inside the name "Host", already parsed
    second.extend_from_slice(b"X: 1\r\n\r\n");
    let head = p.parse(&second).unwrap().unwrap();
    let req = head.request;
    assert_eq!((req.method(), req.path()), ("GET", "/caf\u{e9}"));
    let names: Vec<&str> = req.headers().map(|h| h.name()).collect();
    assert_eq!(names, ["host", "x"]);
    assert!(format!("{req:?}").contains("x: \"1\""));
}

#[test]
fn a_refused_head_request_is_known_as_head() {
    let mut p = HeadParser::default();
    assert!(p.parse(b"HEAD / HTTP/1.1\r\n\r\n").is_err());
    assert!(p.refused_head());
    assert!(p.parse(b"GET / HTTP/1.1\r\n\r\n").is_err());
    assert!(!p.refused_head());
}
