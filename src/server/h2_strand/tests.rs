//! HTTP/2 served over real sockets: a small client made of the codec's own frame writers and
//! HPACK, against a running `Server`, each test named after what it proves.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::h2::conn::PREFACE;
use crate::h2::error::ErrorCode;
use crate::h2::frame::{self, HEAD_LEN, Head, Kind, Setting, flags};
use crate::h2::hpack::encoder::write_field;
use crate::h2::hpack::{Decoder, Scratch};
use crate::http::{Request, Response, Server, ServerHandle, defer, text_response};

/// What the client read of one stream.
#[derive(Debug, Default)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// RST_STREAM's code, if the stream was reset.
    reset: Option<u32>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The client's socket: plain (h2c), or under TLS with `h2` agreed by ALPN.
enum Wire {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Wire {
    /// The TCP socket beneath.
    fn tcp(&self) -> &TcpStream {
        match self {
            Wire::Plain(s) => s,
            #[cfg(feature = "tls")]
            Wire::Tls(s) => &s.sock,
        }
    }

    fn set_read_timeout(&self, within: Option<Duration>) -> std::io::Result<()> {
        self.tcp().set_read_timeout(within)
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Wire::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Wire::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Wire::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            Wire::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Wire::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            Wire::Tls(s) => s.flush(),
        }
    }
}

/// One client connection.
struct Client {
    sock: Wire,
    decoder: Decoder,
    scratch: Scratch,
    input: Vec<u8>,
    /// A GOAWAY's last stream and code, once one came.
    goaway: Option<(u32, u32)>,
}

impl Client {
    /// Connects with the preface and `settings`.
    fn with_settings(port: u16, settings: &[Setting]) -> Client {
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        Client::over(Wire::Plain(sock), settings)
    }

    /// Connects over TLS trusting `root` (DER), asking for `h2` by ALPN.
    #[cfg(feature = "tls")]
    fn tls(port: u16, root: &[u8]) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root.to_vec().into()).expect("root");
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let conn =
            rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("client");
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let tls = rustls::StreamOwned::new(conn, sock);
        Client::over(Wire::Tls(Box::new(tls)), &[])
    }

    fn over(sock: Wire, settings: &[Setting]) -> Client {
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut c = Client {
            sock,
            decoder: Decoder::new(4096),
            scratch: Scratch::default(),
            input: Vec::new(),
            goaway: None,
        };
        let mut out = PREFACE.to_vec();
        frame::write_settings(&mut out, settings);
        c.send(&out);
        c
    }

    fn new(port: u16) -> Client {
        Client::with_settings(port, &[])
    }

    fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).expect("send");
    }

    /// HEADERS for a request (`body` follows as one DATA frame when given).
    fn request(
        &mut self,
        stream: u32,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<&[u8]>,
    ) {
        let mut block = Vec::new();
        write_field(&mut block, ":method", method.as_bytes());
        write_field(&mut block, ":scheme", b"http");
        write_field(&mut block, ":authority", b"example.test");
        write_field(&mut block, ":path", path.as_bytes());
        for (n, v) in extra {
            write_field(&mut block, n, v.as_bytes());
        }
        let mut out = Vec::new();
        let end = if body.is_none() { flags::END_STREAM } else { 0 };
        let mut pieces = block.chunks(16_384).peekable();
        let mut kind = Kind::Headers;
        while let Some(piece) = pieces.next() {
            let last = if pieces.peek().is_none() {
                flags::END_HEADERS
            } else {
                0
            };
            let f = if kind == Kind::Headers {
                end | last
            } else {
                last
            };
            frame::write_head(&mut out, piece.len(), kind, f, stream);
            out.extend_from_slice(piece);
            kind = Kind::Continuation;
        }
        if let Some(body) = body {
            for (i, chunk) in body.chunks(16_384).enumerate() {
                let last = (i + 1) * 16_384 >= body.len();
                let f = if last { flags::END_STREAM } else { 0 };
                frame::write_head(&mut out, chunk.len(), Kind::Data, f, stream);
                out.extend_from_slice(chunk);
            }
            if body.is_empty() {
                frame::write_head(&mut out, 0, Kind::Data, flags::END_STREAM, stream);
            }
        }
        self.send(&out);
    }

    fn get(&mut self, stream: u32, path: &str) {
        self.request(stream, "GET", path, &[], None);
    }

    /// The next frame (answering SETTINGS and PING as a client must); `None` at the end.
    fn frame(&mut self) -> Option<(Head, Vec<u8>)> {
        loop {
            if let Some(head) = Head::parse(&self.input) {
                let end = HEAD_LEN + head.len as usize;
                if self.input.len() >= end {
                    let payload = self.input[HEAD_LEN..end].to_vec();
                    self.input.drain(..end);
                    match head.kind {
                        Kind::Settings if !head.has(flags::ACK) => {
                            let mut ack = Vec::new();
                            frame::write_settings_ack(&mut ack);
                            self.send(&ack);
                        }
                        Kind::GoAway => {
                            let last = u32::from_be_bytes(payload[..4].try_into().unwrap());
                            let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
                            self.goaway = Some((last, code));
                        }
                        _ => {}
                    }
                    return Some((head, payload));
                }
            }
            let mut buf = [0u8; 65536];
            match self.sock.read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.input.extend_from_slice(&buf[..n]),
            }
        }
    }

    /// A PING and its acknowledgement: the server has finished every turn before the one that
    /// answered it (figures published included). Frames read meanwhile are dropped.
    fn round_trip(&mut self) {
        let mut out = Vec::new();
        frame::write_ping(&mut out, *b"syncsync", false);
        self.send(&out);
        while let Some((head, _)) = self.frame() {
            if head.kind == Kind::Ping && head.has(flags::ACK) {
                return;
            }
        }
        panic!("the connection ended before the PING was acknowledged");
    }

    /// Reads frames until each of `streams` has ended (or been reset).
    fn answers(&mut self, streams: &[u32]) -> Vec<Answer> {
        let mut got: Vec<(u32, Answer, bool)> = streams
            .iter()
            .map(|&s| (s, Answer::default(), false))
            .collect();
        while got.iter().any(|(_, _, done)| !done) {
            let Some((head, payload)) = self.frame() else {
                panic!("connection ended with streams unanswered: {got:?}");
            };
            let Some((_, answer, done)) = got.iter_mut().find(|(s, _, _)| *s == head.stream) else {
                continue;
            };
            match head.kind {
                Kind::Headers => {
                    let mut fields = Vec::new();
                    self.decoder
                        .decode(&payload, &mut self.scratch, |n, v| {
                            fields.push((
                                String::from_utf8_lossy(n).into_owned(),
                                String::from_utf8_lossy(v).into_owned(),
                            ))
                        })
                        .expect("HPACK");
                    for (n, v) in fields {
                        if n == ":status" {
                            answer.status = v.parse().unwrap();
                        } else {
                            answer.headers.push((n, v));
                        }
                    }
                }
                Kind::Data => answer.body.extend_from_slice(&payload),
                Kind::RstStream => {
                    answer.reset = Some(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                    *done = true;
                }
                _ => {}
            }
            if head.has(flags::END_STREAM) && matches!(head.kind, Kind::Headers | Kind::Data) {
                *done = true;
            }
        }
        got.into_iter().map(|(_, a, _)| a).collect()
    }

    fn answer(&mut self, stream: u32) -> Answer {
        self.answers(&[stream]).pop().unwrap()
    }

    /// Reads until the connection ends; whether it did within `within`.
    fn ends_within(&mut self, within: Duration) -> bool {
        self.sock.set_read_timeout(Some(within)).unwrap();
        let start = Instant::now();
        while self.frame().is_some() {}
        start.elapsed() < within
    }
}

fn serve(
    server: Server,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> ServerHandle {
    server.workers(1).spawn(handler).expect("server")
}

/// A server whose handler defers every reply and hands it, with the request's path, to the
/// test.
fn deferring(
    server: Server,
) -> (
    ServerHandle,
    std::sync::mpsc::Receiver<(String, crate::http::Reply)>,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let server = serve(server, move |req| {
        let (reply, later) = defer();
        let _ = tx.lock().unwrap().send((req.path().to_string(), reply));
        later
    });
    (server, rx)
}

fn bind() -> Server {
    Server::bind("127.0.0.1:0").expect("bind")
}

fn echo(req: Request) -> Response {
    let text = format!(
        "{} {} host={} x={} cookie={} body={}",
        req.method(),
        req.path(),
        req.header("host"),
        req.header("x-thing"),
        req.header("cookie"),
        String::from_utf8_lossy(req.body())
    );
    text_response(200, text)
}

#[test]
fn a_request_over_h2c_reaches_the_same_handler_with_its_host_and_body() {
    let server = serve(bind(), echo);
    let port = server.local_addr().port();
    let mut c = Client::new(port);
    c.request(
        1,
        "POST",
        "/notes?a=1",
        &[("x-thing", "7"), ("cookie", "a=1"), ("cookie", "b=2")],
        Some(b"hello"),
    );
    let a = c.answer(1);
    assert_eq!(a.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&a.body),
        "POST /notes?a=1 host=example.test x=7 cookie=a=1; b=2 body=hello"
    );
    assert_eq!(a.header("content-type"), Some("text/plain"));
    assert_eq!(
        a.header("content-length"),
        Some(a.body.len().to_string().as_str())
    );
    assert!(a.header("date").is_some());
    // HTTP/1.1 still works on the same port.
    let plain = crate::http::get("127.0.0.1", port, "/plain").unwrap();
    assert_eq!(crate::http::status_of(&plain), Some(200));
    server.shutdown().unwrap();
}

#[test]
fn many_streams_on_one_connection_are_each_answered() {
    let server = serve(bind(), echo);
    let mut c = Client::new(server.local_addr().port());
    let streams: Vec<u32> = (0..200).map(|i| 1 + 2 * i).collect();
    for &s in &streams {
        c.get(s, &format!("/n/{s}"));
    }
    let answers = c.answers(&streams);
    for (s, a) in streams.iter().zip(&answers) {
        assert_eq!(a.status, 200, "stream {s}");
        assert!(String::from_utf8_lossy(&a.body).starts_with(&format!("GET /n/{s} ")));
    }
    server.shutdown().unwrap();
}

#[test]
fn deferred_replies_of_two_streams_are_sent_as_each_comes() {
    let (server, rx) = deferring(bind());
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/first");
    c.get(3, "/second");
    let mut replies: Vec<(String, crate::http::Reply)> =
        vec![rx.recv().unwrap(), rx.recv().unwrap()];
    replies.sort_by(|a, b| a.0.cmp(&b.0));
    let (first, second) = (replies.remove(0), replies.remove(0));
    assert!(second.1.is_open() && first.1.is_open());
    // The second is answered first, and arrives first.
    assert!(second.1.send(text_response(200, "two")));
    let a = c.answer(3);
    assert_eq!(a.body, b"two");
    assert!(first.1.send(text_response(201, "one")));
    let a = c.answer(1);
    assert_eq!((a.status, &a.body[..]), (201, &b"one"[..]));
    server.shutdown().unwrap();
}

#[test]
fn a_deferred_reply_is_not_wanted_once_its_stream_is_reset() {
    let (server, rx) = deferring(bind());
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/a");
    c.get(3, "/b");
    let (one, three) = (rx.recv().unwrap().1, rx.recv().unwrap().1);
    let mut rst = Vec::new();
    frame::write_rst_stream(&mut rst, 1, ErrorCode::Cancel);
    c.send(&rst);
    let start = Instant::now();
    while one.is_open() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !one.is_open(),
        "the reset stream's reply is no longer wanted"
    );
    assert!(three.is_open(), "the other stream's still is");
    assert!(three.send(text_response(200, "b")));
    assert_eq!(c.answer(3).body, b"b");
    server.shutdown().unwrap();
}

#[test]
fn a_reply_the_handler_never_sends_is_answered_503_after_the_reply_timeout() {
    let server = serve(bind().reply_timeout(Duration::from_millis(100)), |_req| {
        let (reply, later) = defer();
        std::mem::forget(reply);
        later
    });
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/never");
    assert_eq!(c.answer(1).status, 503);
    server.shutdown().unwrap();
}

#[test]
fn a_body_past_max_body_gets_413_on_its_stream_and_the_connection_goes_on() {
    let server = serve(bind().max_body(1000), echo);
    let mut c = Client::new(server.local_addr().port());
    c.request(1, "POST", "/big", &[], Some(&[b'x'; 5000]));
    let a = c.answer(1);
    assert_eq!(a.status, 413);
    c.get(3, "/after");
    assert_eq!(c.answer(3).status, 200);
    server.shutdown().unwrap();
}

#[test]
fn a_header_list_past_the_limit_gets_431_on_its_stream() {
    let server = serve(bind(), echo);
    let mut c = Client::new(server.local_addr().port());
    let big = "v".repeat(8000);
    c.request(
        1,
        "GET",
        "/",
        &[("x-a", &big), ("x-b", &big), ("x-c", &big)],
        None,
    );
    assert_eq!(c.answer(1).status, 431);
    c.get(3, "/after");
    assert_eq!(c.answer(3).status, 200);
    server.shutdown().unwrap();
}

#[test]
fn a_large_body_waits_for_the_client_windows_and_then_comes_whole() {
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let sent = body.clone();
    let server = serve(bind(), move |_req| text_response(200, sent.clone()));
    // A stream window of 1 000 bytes: the reply waits for WINDOW_UPDATEs.
    let mut c = Client::with_settings(
        server.local_addr().port(),
        &[Setting::InitialWindowSize(1000)],
    );
    c.get(1, "/large");
    let mut got = Vec::new();
    let mut ended = false;
    while !ended {
        let (head, payload) = c.frame().expect("frame");
        if head.stream != 1 {
            continue;
        }
        if head.kind == Kind::Data {
            got.extend_from_slice(&payload);
            ended = head.has(flags::END_STREAM);
            if !payload.is_empty() {
                let mut wu = Vec::new();
                frame::write_window_update(&mut wu, 1, payload.len() as u32);
                frame::write_window_update(&mut wu, 0, payload.len() as u32);
                c.send(&wu);
            }
        }
    }
    assert_eq!(got.len(), body.len());
    assert!(got == body);
    server.shutdown().unwrap();
}

#[test]
fn a_streamed_reply_comes_piece_by_piece_on_its_stream() {
    let server = serve(bind(), |_req| {
        let (reply, later) = defer();
        std::thread::spawn(move || {
            let mut body = reply.stream(text_response(200, "")).unwrap();
            for i in 0..100 {
                body.write_all(format!("line {i}\n").as_bytes()).unwrap();
            }
            body.finish().unwrap();
        });
        later
    });
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/stream");
    let a = c.answer(1);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-length"), None);
    let text = String::from_utf8(a.body).unwrap();
    assert_eq!(text.lines().count(), 100);
    assert!(text.ends_with("line 99\n"));
    server.shutdown().unwrap();
}

#[test]
fn a_streamed_reply_ends_with_its_trailers_in_a_last_headers_frame() {
    let server = serve(bind(), |req| {
        let (reply, later) = defer();
        let path = req.path().to_owned();
        std::thread::spawn(move || {
            let mut body = reply.stream(text_response(200, "")).unwrap();
            body.write_all(b"the body").unwrap();
            let trailers = vec![
                crate::http::Header::new("Grpc-Status", "0"),
                // Framing is the server's: never a trailer.
                crate::http::Header::new("Content-Length", "8"),
            ];
            match path.as_str() {
                "/trailers" => body.finish_with_trailers(trailers).unwrap(),
                _ => body.finish().unwrap(),
            }
        });
        later
    });
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/trailers");
    c.get(3, "/none");
    let mut got = c.answers(&[1, 3]).into_iter();
    let (with, without) = (got.next().unwrap(), got.next().unwrap());
    assert_eq!((with.status, &with.body[..]), (200, &b"the body"[..]));
    assert_eq!(with.header("grpc-status"), Some("0"), "{with:?}");
    assert_eq!(with.header("content-length"), None, "{with:?}");
    assert_eq!((without.status, &without.body[..]), (200, &b"the body"[..]));
    assert_eq!(without.header("grpc-status"), None);
    server.shutdown().unwrap();
}

#[test]
fn trailers_wait_for_the_body_the_window_held_back() {
    let body = vec![b'x'; 5000];
    let sent = body.clone();
    let server = serve(bind(), move |_req| {
        let (reply, later) = defer();
        let sent = sent.clone();
        std::thread::spawn(move || {
            let mut stream = reply.stream(text_response(200, "")).unwrap();
            stream.write_all(&sent).unwrap();
            let trailers = vec![crate::http::Header::new("grpc-status", "0")];
            stream.finish_with_trailers(trailers).unwrap();
        });
        later
    });
    // A stream window of 1 000 bytes: the body waits for WINDOW_UPDATEs, the trailers for it.
    let mut c = Client::with_settings(
        server.local_addr().port(),
        &[Setting::InitialWindowSize(1000)],
    );
    c.get(1, "/");
    let (mut got, mut heads) = (Vec::new(), 0);
    loop {
        let (head, payload) = c.frame().expect("frame");
        if head.stream != 1 {
            continue;
        }
        match head.kind {
            Kind::Data => {
                assert!(!head.has(flags::END_STREAM), "the trailers end the stream");
                got.extend_from_slice(&payload);
                let mut wu = Vec::new();
                frame::write_window_update(&mut wu, 1, payload.len().max(1) as u32);
                frame::write_window_update(&mut wu, 0, payload.len().max(1) as u32);
                c.send(&wu);
            }
            Kind::Headers => {
                heads += 1;
                if head.has(flags::END_STREAM) {
                    let mut fields = Vec::new();
                    c.decoder
                        .decode(&payload, &mut c.scratch, |n, v| {
                            fields.push((n.to_vec(), v.to_vec()))
                        })
                        .expect("HPACK");
                    assert_eq!(fields, [(b"grpc-status".to_vec(), b"0".to_vec())]);
                    break;
                }
            }
            _ => {}
        }
    }
    assert_eq!((heads, got.len()), (2, body.len()));
    server.shutdown().unwrap();
}

#[test]
fn a_head_request_gets_the_length_and_no_body() {
    let server = serve(bind(), |_req| text_response(200, "twelve bytes"));
    let mut c = Client::new(server.local_addr().port());
    c.request(1, "HEAD", "/", &[], None);
    let a = c.answer(1);
    assert_eq!((a.status, a.body.len()), (200, 0));
    assert_eq!(a.header("content-length"), Some("12"));
    server.shutdown().unwrap();
}

#[test]
fn with_http2_off_the_preface_is_not_http2() {
    let server = serve(bind().http2(false), echo);
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/");
    // An HTTP/1.1 refusal, never a frame: the first bytes are "HTTP/1.1 ".
    c.sock
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut first = [0u8; 9];
    c.sock.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 ");
    server.shutdown().unwrap();
}

/// What a connection that first spoke HTTP/1.1 answers to the preface sent after a reply, in
/// a later segment (`apart`) or in the same one as the request.
fn preface_after_http1(apart: bool) -> String {
    let server = serve(bind(), echo);
    let mut sock = TcpStream::connect(server.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut preface = PREFACE.to_vec();
    frame::write_settings(&mut preface, &[]);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut read_head = |sock: &mut TcpStream, got: &mut Vec<u8>| {
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match sock.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    if apart {
        sock.write_all(get).unwrap();
        read_head(&mut sock, &mut got);
        sock.write_all(&preface).unwrap();
    } else {
        sock.write_all(&[&get[..], &preface].concat()).unwrap();
    }
    // The second answer, whatever it is, up to the end of the connection.
    let _ = sock.read_to_end(&mut got);
    server.shutdown().unwrap();
    let text = String::from_utf8_lossy(&got).into_owned();
    let second = text.match_indices("HTTP/1.1 ").nth(1).map(|(at, _)| at);
    match second {
        Some(at) => text[at..at + 12].to_string(),
        None => format!("no second HTTP/1.1 answer in {text:?}"),
    }
}

#[test]
fn the_preface_after_an_http1_exchange_is_a_bad_request_line_however_segmented() {
    let pipelined = preface_after_http1(false);
    let apart = preface_after_http1(true);
    assert_eq!(apart, pipelined);
    assert!(
        apart.starts_with("HTTP/1.1 505") || apart.starts_with("HTTP/1.1 400"),
        "{apart}"
    );
}

#[test]
fn a_rapid_reset_flood_ends_that_connection_alone_with_enhance_your_calm() {
    let server = serve(bind(), echo);
    let port = server.local_addr().port();
    let mut bad = Client::new(port);
    let mut out = Vec::new();
    for i in 0..2000u32 {
        let s = 1 + 2 * i;
        let mut block = Vec::new();
        write_field(&mut block, ":method", b"GET");
        write_field(&mut block, ":scheme", b"http");
        write_field(&mut block, ":authority", b"a");
        write_field(&mut block, ":path", b"/");
        frame::write_head(&mut out, block.len(), Kind::Headers, flags::END_HEADERS, s);
        out.extend_from_slice(&block);
        frame::write_rst_stream(&mut out, s, ErrorCode::Cancel);
    }
    let _ = bad.sock.write_all(&out);
    assert!(bad.ends_within(Duration::from_secs(5)));
    assert_eq!(bad.goaway.map(|g| g.1), Some(0xb), "ENHANCE_YOUR_CALM");
    let mut good = Client::new(port);
    good.get(1, "/fine");
    assert_eq!(good.answer(1).status, 200);
    server.shutdown().unwrap();
}

#[test]
fn a_stop_sends_goaway_and_answers_the_streams_in_flight() {
    let (server, rx) = deferring(bind());
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/slow");
    let reply = rx.recv().unwrap().1;
    let stopping = std::thread::spawn(move || server.shutdown());
    // GOAWAY (NO_ERROR, last stream 1) comes before the answer.
    while c.goaway.is_none() {
        c.frame().expect("GOAWAY");
    }
    assert_eq!(c.goaway, Some((1, 0)));
    assert!(reply.send(text_response(200, "late but whole")));
    assert_eq!(c.answer(1).body, b"late but whole");
    assert!(c.ends_within(Duration::from_secs(5)));
    stopping.join().unwrap().unwrap();
}

#[test]
fn an_idle_http2_connection_is_closed_with_goaway_after_the_idle_timeout() {
    let server = serve(bind().idle_timeout(Duration::from_millis(200)), echo);
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/");
    assert_eq!(c.answer(1).status, 200);
    assert!(c.ends_within(Duration::from_secs(5)));
    assert_eq!(c.goaway, Some((1, 0)));
    server.shutdown().unwrap();
}

/// A literal field added to the peer's table (RFC 7541 §6.2.1), as browsers and curl send
/// most of theirs.
fn indexed_literal(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0x40);
    for s in [name.as_bytes(), value.as_bytes()] {
        assert!(s.len() < 127);
        block.push(s.len() as u8);
        block.extend_from_slice(s);
    }
}

#[test]
fn an_idle_http2_connection_after_a_request_holds_under_a_kibibyte_and_is_counted() {
    let server = serve(bind(), echo);
    let mut c = Client::new(server.local_addr().port());
    // A request as a browser sends it: its fields added to our table.
    let mut block = Vec::new();
    write_field(&mut block, ":method", b"GET");
    write_field(&mut block, ":scheme", b"https");
    write_field(&mut block, ":path", b"/dashboard");
    indexed_literal(&mut block, ":authority", "dashboard.example.com");
    indexed_literal(
        &mut block,
        "user-agent",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    );
    indexed_literal(
        &mut block,
        "accept",
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    );
    indexed_literal(&mut block, "accept-language", "en-US,en;q=0.9");
    indexed_literal(&mut block, "accept-encoding", "gzip, deflate, br, zstd");
    let mut out = Vec::new();
    frame::write_head(
        &mut out,
        block.len(),
        Kind::Headers,
        flags::END_STREAM | flags::END_HEADERS,
        1,
    );
    out.extend_from_slice(&block);
    c.send(&out);
    assert_eq!(c.answer(1).status, 200);
    let start = Instant::now();
    let held = loop {
        let stats = server.stats();
        // Idle once the reply is written and the connection parked.
        if stats.parked == 1 || start.elapsed() > Duration::from_secs(5) {
            break stats;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(held.http2_connections, 1);
    assert_eq!(held.http2_streams, 1);
    assert!(
        held.held_bytes <= 1024,
        "an idle HTTP/2 connection holds {} bytes",
        held.held_bytes
    );
    eprintln!("idle HTTP/2 connection: {} bytes held", held.held_bytes);
    drop(c);
    let start = Instant::now();
    while server.stats().http2_connections > 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.stats().http2_connections, 0);
    server.shutdown().unwrap();
}

#[test]
fn bodies_held_at_once_are_bounded_per_connection_and_the_stream_past_it_refused() {
    let server = serve(bind().max_body(1000), echo);
    let mut c = Client::new(server.local_addr().port());
    let mut out = Vec::new();
    // Five uploads of 900 bytes begun, none finished: 4 500 bytes, past four bodies' worth.
    for i in 0..5u32 {
        let s = 1 + 2 * i;
        let mut block = Vec::new();
        write_field(&mut block, ":method", b"POST");
        write_field(&mut block, ":scheme", b"http");
        write_field(&mut block, ":authority", b"a");
        write_field(&mut block, ":path", b"/up");
        frame::write_head(&mut out, block.len(), Kind::Headers, flags::END_HEADERS, s);
        out.extend_from_slice(&block);
        frame::write_head(&mut out, 900, Kind::Data, 0, s);
        out.extend_from_slice(&[b'x'; 900]);
    }
    c.send(&out);
    assert_eq!(c.answer(9).reset, Some(0x7), "REFUSED_STREAM");
    // The four others finish and are answered.
    let mut out = Vec::new();
    for s in [1u32, 3, 5, 7] {
        frame::write_head(&mut out, 0, Kind::Data, flags::END_STREAM, s);
    }
    c.send(&out);
    for a in c.answers(&[1, 3, 5, 7]) {
        assert_eq!(a.status, 200);
        assert!(String::from_utf8_lossy(&a.body).ends_with(&"x".repeat(900)));
    }
    server.shutdown().unwrap();
}

/// One access record, as a test keeps it.
#[derive(Clone, Debug)]
struct Logged {
    target: String,
    status: u16,
    bytes: u64,
    kind: crate::http::AccessKind,
    protocol: crate::http::Protocol,
    tls: bool,
}

/// What an access log heard.
type Heard = std::sync::Arc<std::sync::Mutex<Vec<Logged>>>;

/// `server` with an access log that keeps what it hears.
fn logging(server: Server) -> (Server, Heard) {
    let heard = Heard::default();
    let kept = std::sync::Arc::clone(&heard);
    let server = server.access_log(move |a| {
        kept.lock().unwrap().push(Logged {
            target: a.target.to_owned(),
            status: a.status,
            bytes: a.bytes,
            kind: a.kind,
            protocol: a.protocol,
            tls: a.tls,
        });
    });
    (server, heard)
}

/// Waits until `heard` has `n` records; them, by target.
fn records(heard: &Heard, n: usize) -> Vec<Logged> {
    let start = Instant::now();
    while heard.lock().unwrap().len() < n {
        assert!(start.elapsed() < Duration::from_secs(10), "{heard:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut records = heard.lock().unwrap().clone();
    records.sort_by(|a, b| a.target.cmp(&b.target));
    records
}

/// `(target, status, kind)` of each record.
fn kinds(records: &[Logged]) -> Vec<(&str, u16, crate::http::AccessKind)> {
    records
        .iter()
        .map(|r| (r.target.as_str(), r.status, r.kind))
        .collect()
}

#[test]
fn the_access_log_sees_each_stream_at_once_deferred_streamed_and_reset() {
    use crate::http::AccessKind;
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let (server, heard) = logging(bind());
    let server = serve(server, move |req| match req.path() {
        "/now" => text_response(200, "now"),
        _ => {
            let (reply, later) = defer();
            tx.lock()
                .unwrap()
                .send((req.path().to_owned(), reply))
                .unwrap();
            later
        }
    });
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/now");
    c.answer(1);
    c.get(3, "/later");
    c.get(5, "/streamed");
    c.get(7, "/reset");
    let mut replies: Vec<(String, crate::http::Reply)> =
        (0..3).map(|_| rx.recv().unwrap()).collect();
    replies.sort_by(|a, b| a.0.cmp(&b.0));
    let mut replies = replies.into_iter().map(|(_, r)| r);
    let (later, reset, streamed) = (
        replies.next().unwrap(),
        replies.next().unwrap(),
        replies.next().unwrap(),
    );
    assert!(later.send(text_response(201, "later")));
    let mut body = streamed.stream(text_response(200, "")).unwrap();
    body.write_all(&[b's'; 1000]).unwrap();
    body.finish().unwrap();
    let mut rst = Vec::new();
    frame::write_rst_stream(&mut rst, 7, ErrorCode::Cancel);
    c.send(&rst);
    let got = c.answers(&[3, 5]);
    assert_eq!((got[0].status, got[1].body.len()), (201, 1000));
    let heard = records(&heard, 4);
    drop(reset);
    assert_eq!(
        kinds(&heard),
        [
            ("/later", 201, AccessKind::Deferred),
            ("/now", 200, AccessKind::Now),
            ("/reset", 0, AccessKind::Deferred),
            ("/streamed", 200, AccessKind::Streamed),
        ]
    );
    assert!(heard.iter().all(|r| r.target == "/reset" || r.bytes > 0));
    let streamed_bytes = heard
        .iter()
        .find(|r| r.target == "/streamed")
        .map(|r| r.bytes);
    assert!(
        streamed_bytes.is_some_and(|b| b >= 1000),
        "{streamed_bytes:?}"
    );
    server.shutdown().unwrap();
}

#[cfg(test)]
mod live;

#[test]
fn a_client_that_never_acknowledges_our_settings_is_sent_settings_timeout() {
    let patience = Duration::from_millis(400);
    let server = serve(
        bind().http2_config(crate::http::Http2Config {
            settings_timeout: patience,
            ..Default::default()
        }),
        echo,
    );
    let mut sock = TcpStream::connect(server.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut out = PREFACE.to_vec();
    frame::write_settings(&mut out, &[]);
    sock.write_all(&out).unwrap();
    let start = Instant::now();
    // Frames are read and never answered: no SETTINGS ACK goes back.
    let mut input = Vec::new();
    let mut buf = [0u8; 4096];
    let goaway = loop {
        while let Some(head) = Head::parse(&input) {
            let end = HEAD_LEN + head.len as usize;
            if input.len() < end {
                break;
            }
            if head.kind == Kind::GoAway {
                break;
            }
            input.drain(..end);
        }
        if let Some(head) = Head::parse(&input)
            && head.kind == Kind::GoAway
            && input.len() >= HEAD_LEN + 8
        {
            break u32::from_be_bytes(input[HEAD_LEN + 4..HEAD_LEN + 8].try_into().unwrap());
        }
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => panic!("the connection ended without GOAWAY"),
            Ok(n) => input.extend_from_slice(&buf[..n]),
        }
    };
    assert_eq!(goaway, 0x4, "SETTINGS_TIMEOUT");
    let took = start.elapsed();
    assert!(
        took >= patience && took < Duration::from_secs(10),
        "{took:?}"
    );
    server.shutdown().unwrap();
}

/// `streams` requests on `conns` HTTP/2 connections whose async answers never come: the
/// server's figures once every one waits, with the connections.
#[cfg(feature = "tokio")]
fn never_answered(
    server: Server,
    conns: usize,
    streams: u32,
) -> (ServerHandle, tokio::runtime::Runtime, Vec<Client>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let tasks = rt.handle().clone();
    let server = serve(server, move |_req| {
        crate::http::answer_async(&tasks, std::future::pending())
    });
    let port = server.local_addr().port();
    let clients: Vec<Client> = (0..conns)
        .map(|_| {
            let mut c = Client::new(port);
            for s in 0..streams {
                c.get(1 + 2 * s, "/never");
            }
            c
        })
        .collect();
    let total = conns * streams as usize;
    let start = Instant::now();
    while rt.metrics().num_alive_tasks() < total {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} of {total} tasks started",
            rt.metrics().num_alive_tasks()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (server, rt, clients)
}

/// Waits until `rt` has no task left.
#[cfg(feature = "tokio")]
fn tasks_end(rt: &tokio::runtime::Runtime, within: Duration, after: &str) {
    let start = Instant::now();
    while rt.metrics().num_alive_tasks() != 0 {
        assert!(
            start.elapsed() < within,
            "{} tasks still alive {after}",
            rt.metrics().num_alive_tasks()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(feature = "tokio")]
#[test]
fn async_answers_never_coming_end_their_tasks_once_their_clients_are_gone() {
    // 20 000 futures that never complete, 250 to a connection.
    let (server, rt, clients) = never_answered(bind(), 80, 250);
    assert_eq!(server.stats().replies_waiting, 20_000);
    drop(clients);
    tasks_end(&rt, Duration::from_secs(20), "after their clients left");
    assert_eq!(server.stats().replies_waiting, 0);
    server.shutdown().unwrap();
}

#[cfg(feature = "tokio")]
#[test]
fn async_answers_end_their_tasks_when_the_server_answers_them_at_the_reply_timeout() {
    let server = bind().reply_timeout(Duration::from_millis(300));
    let (server, rt, mut clients) = never_answered(server, 2, 100);
    let streams: Vec<u32> = (0..100).map(|s| 1 + 2 * s).collect();
    for c in &mut clients {
        assert!(c.answers(&streams).iter().all(|a| a.status == 503));
    }
    tasks_end(&rt, Duration::from_secs(10), "after their 503s");
    server.shutdown().unwrap();
}

#[cfg(feature = "tokio")]
#[test]
fn async_answers_end_their_tasks_when_the_server_stops() {
    let server = bind().drain_timeout(Duration::from_millis(300));
    let (server, rt, _clients) = never_answered(server, 2, 100);
    server.shutdown().unwrap();
    tasks_end(&rt, Duration::from_secs(10), "after the server stopped");
}

impl Client {
    /// HEADERS with `fields` that leave the stream open (no END_STREAM: a body or a
    /// WebSocket's frames are to come).
    fn open_stream(&mut self, stream: u32, fields: &[(&str, &str)]) {
        let mut block = Vec::new();
        for (name, value) in fields {
            write_field(&mut block, name, value.as_bytes());
        }
        let mut out = Vec::new();
        frame::write_head(
            &mut out,
            block.len(),
            Kind::Headers,
            flags::END_HEADERS,
            stream,
        );
        out.extend_from_slice(&block);
        self.send(&out);
    }

    /// HEADERS of a POST to `path` whose body is to come.
    fn begin_upload(&mut self, stream: u32, path: &str) {
        let fields = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", "a"),
            (":path", path),
        ];
        self.open_stream(stream, &fields);
    }

    /// `total` bytes of body on `stream` (not ended), each piece within the stream's window,
    /// waiting for the server to open it: the window the server offered in all.
    fn upload_as_windows_allow(&mut self, stream: u32, total: u64) -> u64 {
        let mut offered = u64::from(crate::h2::conn::DEFAULT_WINDOW);
        let mut sent = 0;
        while sent < total {
            let piece = (offered - sent).min(total - sent).min(16_384);
            if piece == 0 {
                let (head, payload) = self.frame().expect("a window update");
                if head.kind == Kind::WindowUpdate && head.stream == stream {
                    offered += u64::from(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                }
                continue;
            }
            self.upload(stream, &vec![b'b'; piece as usize], false);
            sent += piece;
        }
        offered
    }

    /// DATA on `stream`, in frames of at most 16 KiB; `end` ends the body.
    fn upload(&mut self, stream: u32, body: &[u8], end: bool) {
        let mut out = Vec::new();
        let pieces: Vec<&[u8]> = match body.is_empty() {
            true => vec![&[][..]],
            false => body.chunks(16_384).collect(),
        };
        for (i, piece) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            let f = if last && end { flags::END_STREAM } else { 0 };
            frame::write_head(&mut out, piece.len(), Kind::Data, f, stream);
            out.extend_from_slice(piece);
        }
        self.send(&out);
    }
}

#[test]
fn a_body_that_stops_arriving_gets_408_on_its_stream_and_the_connection_goes_on() {
    let server = serve(bind().header_timeout(Duration::from_millis(300)), echo);
    let mut c = Client::new(server.local_addr().port());
    c.begin_upload(1, "/up");
    c.upload(1, &[b'x'; 10_000], false);
    let started = Instant::now();
    let a = c.answer(1);
    assert_eq!(a.status, 408);
    assert!(started.elapsed() >= Duration::from_millis(250));
    // The rest of the body is not wanted: the stream is reset with NO_ERROR after the reply.
    let (head, payload) = c.frame().expect("RST_STREAM");
    assert_eq!((head.kind, head.stream), (Kind::RstStream, 1));
    assert_eq!(payload, [0, 0, 0, 0]);
    assert_eq!(server.stats().held_bodies, 0);
    // (The figure is the worker's, brought up to date as it goes.)
    let start = Instant::now();
    while server.stats().held_bytes >= 4096 {
        let held = server.stats().held_bytes;
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{held} bytes still held"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    c.get(3, "/after");
    assert_eq!(c.answer(3).status, 200);
    server.shutdown().unwrap();
}

#[test]
fn a_body_that_keeps_its_pace_is_answered_whatever_it_takes_in_all() {
    // A KiB every 100 ms for 1.5 s, with a header timeout of 500 ms: each KiB buys more.
    let server = serve(bind().header_timeout(Duration::from_millis(500)), echo);
    let mut c = Client::new(server.local_addr().port());
    c.begin_upload(1, "/up");
    for _ in 0..15 {
        c.upload(1, &[b'k'; 1024], false);
        std::thread::sleep(Duration::from_millis(100));
    }
    c.upload(1, &[], true);
    let a = c.answer(1);
    assert_eq!(a.status, 200);
    assert!(String::from_utf8_lossy(&a.body).ends_with(&"k".repeat(15 * 1024)));
    server.shutdown().unwrap();
}

#[test]
fn a_header_block_that_never_ends_closes_the_connection_at_the_header_timeout() {
    let server = serve(bind().header_timeout(Duration::from_millis(300)), echo);
    let mut c = Client::new(server.local_addr().port());
    // Settings exchanged first (the client's ACK may not come inside the block).
    c.get(1, "/");
    assert_eq!(c.answer(1).status, 200);
    let mut block = Vec::new();
    write_field(&mut block, ":method", b"GET");
    let mut out = Vec::new();
    frame::write_head(&mut out, block.len(), Kind::Headers, flags::END_STREAM, 3);
    out.extend_from_slice(&block);
    c.send(&out);
    assert!(c.ends_within(Duration::from_secs(10)));
    assert_eq!(c.goaway.map(|(_, code)| code), Some(0), "GOAWAY NO_ERROR");
    server.shutdown().unwrap();
}

#[test]
fn a_body_stream_window_never_offers_more_than_max_body() {
    let max_body = 100_000u64;
    let server = serve(bind().max_body(max_body), |req: Request| {
        text_response(200, req.body().len().to_string())
    });
    let mut c = Client::new(server.local_addr().port());
    c.begin_upload(1, "/up");
    // The whole allowance, in pieces the windows let through, and then the end.
    let offered = c.upload_as_windows_allow(1, max_body);
    assert!(offered <= max_body, "offered {offered} bytes of window");
    c.upload(1, &[], true);
    let a = c.answer(1);
    assert_eq!((a.status, a.body), (200, max_body.to_string().into_bytes()));
    server.shutdown().unwrap();
}

#[test]
fn past_the_servers_budget_for_bodies_new_bodies_are_refused_and_come_back_when_it_frees() {
    let server = serve(
        bind()
            .max_body(200_000)
            .max_held_bodies(300_000)
            .drain_timeout(Duration::from_millis(100)),
        |req: Request| text_response(200, req.body().len().to_string()),
    );
    let port = server.local_addr().port();
    // Three connections hold unfinished bodies of 150 000, 150 000 and 10 000 bytes: 310 000,
    // past the budget (none of them past its share of it).
    let mut holders: Vec<Client> = (0..3).map(|_| Client::new(port)).collect();
    for (c, size) in holders.iter_mut().zip([150_000u64, 150_000, 10_000]) {
        c.begin_upload(1, "/up");
        c.upload_as_windows_allow(1, size);
        // A PING answered: the server has taken all of it.
        let mut ping = Vec::new();
        frame::write_ping(&mut ping, *b"all-sent", false);
        c.send(&ping);
        while !matches!(c.frame(), Some((h, _)) if h.kind == Kind::Ping && h.has(flags::ACK)) {}
    }
    // Another connection's body is refused, to be asked again.
    let mut late = Client::new(port);
    late.begin_upload(1, "/up");
    late.upload(1, b"late", true);
    assert_eq!(late.answer(1).reset, Some(0x7), "REFUSED_STREAM");
    let stats = server.stats();
    assert_eq!(stats.bodies_refused, 1);
    assert!(
        stats.held_bodies >= 310_000,
        "{} bytes of bodies held",
        stats.held_bodies
    );
    // One holder ends its body: it is answered, the budget frees, and bodies are taken again.
    holders[0].upload(1, &[], true);
    assert_eq!(holders[0].answer(1).body, b"150000");
    late.begin_upload(3, "/up");
    late.upload(3, b"now", true);
    assert_eq!(late.answer(3).body, b"3");
    server.shutdown().unwrap();
}

#[test]
fn a_reply_whose_client_opens_no_window_is_reset_after_the_write_timeout_and_the_rest_go_on() {
    let server = serve(
        bind().write_timeout(Duration::from_millis(300)),
        |req: Request| match req.path() {
            "/large" => text_response(200, vec![b'l'; 100_000]),
            _ => text_response(200, "small"),
        },
    );
    // A stream window of 1 000 bytes, never opened.
    let mut c = Client::with_settings(
        server.local_addr().port(),
        &[Setting::InitialWindowSize(1000)],
    );
    c.get(1, "/large");
    let started = Instant::now();
    let a = c.answer(1);
    assert_eq!(
        (a.status, a.body.len()),
        (200, 1000),
        "what the window let through"
    );
    assert_eq!(a.reset, Some(0x8), "CANCEL");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(server.stats().lagging_closed, 1);
    // The connection goes on.
    c.get(3, "/small");
    assert_eq!(c.answer(3).body, b"small");
    server.shutdown().unwrap();
}

#[test]
fn an_idle_stream_costs_a_32_byte_work_entry_and_a_16_byte_codec_stream() {
    // What makes an idle HTTP/2 event stream's cost (docs/PERFORMANCE.md): kept from growing.
    assert_eq!(std::mem::size_of::<(u32, super::Work)>(), 32);
    assert_eq!(crate::h2::conn::stream_size(), 16);
}

#[test]
fn replies_held_back_share_an_opened_window_a_frame_each_in_turn() {
    let server = serve(
        bind().drain_timeout(Duration::from_millis(100)),
        |_req: Request| text_response(200, vec![b'd'; 1 << 20]),
    );
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/one");
    c.get(3, "/two");
    // The connection window (65 535 bytes) spent, by either.
    let mut got = 0;
    while got < 65_535 {
        let (head, payload) = c.frame().expect("the downloads");
        if head.kind == Kind::Data {
            got += payload.len();
        }
    }
    // Both streams may take a megabyte more; the connection opens by two frames' worth.
    let mut out = Vec::new();
    frame::write_window_update(&mut out, 1, 1 << 20);
    frame::write_window_update(&mut out, 3, 1 << 20);
    frame::write_window_update(&mut out, 0, 2 * 16_384);
    c.send(&out);
    let mut streams = Vec::new();
    while streams.len() < 2 {
        let (head, payload) = c.frame().expect("a frame");
        if head.kind == Kind::Data {
            assert_eq!(payload.len(), 16_384);
            streams.push(head.stream);
        }
    }
    streams.sort_unstable();
    assert_eq!(streams, [1, 3], "a frame each");
    server.shutdown().unwrap();
}

#[test]
fn a_reply_larger_than_the_socket_takes_at_once_waits_for_it_and_comes_whole() {
    let server = serve(bind(), |_req: Request| {
        text_response(200, vec![b'w'; 8 << 20])
    });
    // Windows that let all of it go at once: only the socket can hold it back.
    let mut c = Client::with_settings(
        server.local_addr().port(),
        &[Setting::InitialWindowSize(16 << 20)],
    );
    let mut out = Vec::new();
    frame::write_window_update(&mut out, 0, 16 << 20);
    c.send(&out);
    c.get(1, "/big");
    // The client reads nothing until the server holds what its socket would not take (or,
    // as before this was fixed, closed the connection when the socket was full).
    let start = Instant::now();
    loop {
        let stats = server.stats();
        if stats.open_connections == 0 || stats.held_bytes >= 1 << 20 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{stats:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    let a = c.answer(1);
    assert_eq!((a.status, a.body.len()), (200, 8 << 20));
    assert_eq!(server.stats().open_connections, 1, "the connection goes on");
    server.shutdown().unwrap();
}

/// A server whose handler starts a streamed reply (status 200, no length) and hands its body's
/// sender to the test.
fn streaming(
    server: Server,
) -> (
    ServerHandle,
    std::sync::mpsc::Receiver<crate::http::BodySender>,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let server = serve(server, move |_req| {
        let (reply, later) = defer();
        let body = reply.stream(text_response(200, "")).unwrap();
        let _ = tx.lock().unwrap().send(body);
        later
    });
    (server, rx)
}

impl Client {
    /// Reads frames until stream `stream`'s HEADERS came.
    fn head_of(&mut self, stream: u32) {
        while let Some((head, _)) = self.frame() {
            if head.kind == Kind::Headers && head.stream == stream {
                return;
            }
        }
        panic!("the connection ended before stream {stream}'s head");
    }
}

#[test]
fn a_streamed_replys_sender_stays_open_while_its_stream_is_open() {
    let (server, rx) = streaming(bind());
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/stream");
    let mut body = rx.recv().unwrap();
    c.head_of(1);
    assert!(
        body.is_open(),
        "the body is wanted while its stream is open"
    );
    body.write_all(b"piece").unwrap();
    body.finish().unwrap();
    assert_eq!(c.answer(1).body, b"piece");
    server.shutdown().unwrap();
}

#[test]
fn a_streamed_reply_whose_sender_drops_unfinished_is_reset() {
    let (server, rx) = streaming(bind());
    let mut c = Client::new(server.local_addr().port());
    c.sock
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    c.get(1, "/stream");
    let mut body = rx.recv().unwrap();
    c.head_of(1);
    body.write_all(b"half").unwrap();
    drop(body);
    let a = c.answer(1);
    assert_eq!(a.reset, Some(ErrorCode::Internal as u32), "{a:?}");
    // The connection goes on.
    c.get(3, "/stream");
    let body = rx.recv().unwrap();
    body.finish().unwrap();
    assert_eq!(c.answer(3).status, 200);
    server.shutdown().unwrap();
}

#[test]
fn a_streamed_reply_with_no_piece_for_the_reply_timeout_is_reset() {
    let (server, rx) = streaming(bind().reply_timeout(Duration::from_millis(200)));
    let mut c = Client::new(server.local_addr().port());
    c.sock
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    c.get(1, "/stream");
    let body = rx.recv().unwrap();
    let a = c.answer(1);
    assert_eq!(a.status, 200);
    assert!(a.reset.is_some(), "{a:?}");
    assert!(!body.is_open(), "the cut body is no longer wanted");
    server.shutdown().unwrap();
}
