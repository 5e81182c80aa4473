//! Streamed response bodies (`Reply::stream`, `Reply::stream_sized`, `Pool::stream`): chunked
//! to HTTP/1.1, close-delimited to HTTP/1.0, `Content-Length` when known; HEAD gets the head
//! alone; a slow reader holds the producer back; a client that leaves stops it; a body cut
//! short is never taken for a whole one.

use crate::wire;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use web::http::{
    BodySender, Pool, Reply, Request, STREAM_WINDOW, Server, ServerHandle, defer, text_response,
};
use wire::{Client, wait_until};

/// A server whose `/stream...` requests hand their `Reply` (with the path) to the test.
fn start() -> (ServerHandle, mpsc::Receiver<(String, Reply)>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .reply_timeout(Duration::from_secs(2))
        .spawn(move |req: Request| {
            if !req.path().starts_with("/stream") {
                return text_response(200, format!("now {}", req.path()));
            }
            let (reply, later) = defer();
            let _ = tx.lock().unwrap().send((req.path().to_owned(), reply));
            later
        })
        .unwrap();
    (handle, rx)
}

fn next(rx: &mpsc::Receiver<(String, Reply)>) -> Reply {
    rx.recv_timeout(Duration::from_secs(5))
        .expect("a deferred request")
        .1
}

fn stream(reply: Reply) -> BodySender {
    reply
        .stream(text_response(200, ""))
        .expect("the reply is wanted")
}

#[test]
fn a_streamed_body_is_chunked_and_the_pipelined_request_behind_it_follows() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /after HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = stream(next(&rx));
    for piece in ["one ", "", "two ", "three"] {
        body.write_all(piece.as_bytes()).unwrap();
    }
    body.finish().unwrap();
    let reply = client.reply();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    assert!(!reply.has("content-length"));
    reply.assert_keeps_alive();
    assert_eq!(reply.text(), "one two three");
    assert_eq!(client.reply().text(), "now /after");
    handle.shutdown().unwrap();
}

#[test]
fn a_sized_body_announces_its_length_and_keeps_an_http10_keep_alive_connection() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let reply = next(&rx);
    let mut body = reply.stream_sized(text_response(200, ""), 10).unwrap();
    body.write_all(b"01234").unwrap();
    body.write_all(b"56789").unwrap();
    let err = body.write_all(b"x").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    body.finish().unwrap();
    let reply = client.reply();
    assert_eq!(reply.header("content-length"), Some("10"));
    assert!(!reply.has("transfer-encoding"));
    reply.assert_keeps_alive();
    assert_eq!(reply.text(), "0123456789");
    assert_eq!(client.get("/again").text(), "now /again");
    handle.shutdown().unwrap();
}

#[test]
fn an_http10_client_gets_a_close_delimited_body() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let mut body = stream(next(&rx));
    body.write_all(b"until ").unwrap();
    body.write_all(b"close").unwrap();
    body.finish().unwrap();
    let reply = client.reply(); // reads to the end of stream
    reply.assert_closes();
    assert!(!reply.has("transfer-encoding") && !reply.has("content-length"));
    assert_eq!(reply.text(), "until close");
    handle.shutdown().unwrap();
}

#[test]
fn head_gets_the_head_alone_and_the_producer_is_told_to_stop() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = stream(next(&rx));
    let reply = client.head_reply();
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    reply.assert_keeps_alive();
    wait_until(Duration::from_secs(5), "the body is not wanted", || {
        !body.is_open()
    });
    let err = body.write_all(b"ignored").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    drop(body);
    assert_eq!(client.get("/next").text(), "now /next");
    handle.shutdown().unwrap();
}

#[test]
fn a_connection_close_request_is_closed_after_its_whole_body() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let mut body = stream(next(&rx));
    body.write_all(b"last").unwrap();
    body.finish().unwrap();
    let reply = client.reply();
    reply.assert_closes();
    assert_eq!(reply.text(), "last");
    client.assert_eof();
    handle.shutdown().unwrap();
}

#[test]
fn a_sender_dropped_before_the_end_cuts_the_body_visibly() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = stream(next(&rx));
    body.write_all(b"partial").unwrap();
    drop(body);
    let head = client.head_reply();
    assert_eq!(head.header("transfer-encoding"), Some("chunked"));
    assert_eq!(client.chunked_body(), Err(b"partial".to_vec()));
    handle.shutdown().unwrap();
}

#[test]
fn a_sized_body_finished_short_is_an_error_and_cut() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = next(&rx).stream_sized(text_response(200, ""), 100).unwrap();
    body.write_all(b"short").unwrap();
    let err = body.finish().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let head = client.head_reply();
    assert_eq!(head.header("content-length"), Some("100"));
    let rest = client.exact(5);
    assert_eq!(rest, b"short");
    client.assert_eof();
    handle.shutdown().unwrap();
}

#[test]
fn a_slow_reader_holds_the_producer_back_and_then_gets_every_byte() {
    const TOTAL: u64 = 64 << 20;
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = next(&rx)
        .stream_sized(text_response(200, ""), TOTAL)
        .unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let producer = {
        let sent = Arc::clone(&sent);
        std::thread::spawn(move || {
            let piece: Vec<u8> = (0..=255u8).cycle().take(32 * 1024).collect();
            while sent.load(Ordering::Relaxed) < TOTAL {
                body.write_all(&piece).unwrap();
                sent.fetch_add(piece.len() as u64, Ordering::Relaxed);
            }
            body.finish().unwrap();
        })
    };
    // The client reads nothing: the producer stops once the socket buffers and the window are
    // full, far short of the whole body.
    let mut last = u64::MAX;
    wait_until(Duration::from_secs(10), "the producer stalls", || {
        std::thread::sleep(Duration::from_millis(200));
        let now = sent.load(Ordering::Relaxed);
        let stalled = now == last;
        last = now;
        stalled
    });
    assert!(last < TOTAL / 2, "the producer ran ahead: {last} bytes");
    let held = handle.stats().held_bytes;
    assert!(
        held < 4 * STREAM_WINDOW,
        "the server holds {held} bytes for one slow reader"
    );
    let head = client.head_reply();
    assert_eq!(
        head.header("content-length"),
        Some(TOTAL.to_string().as_str())
    );
    client.cycled_body(TOTAL, 32 * 1024);
    producer.join().unwrap();
    assert_eq!(client.get("/after").text(), "now /after");
    handle.shutdown().unwrap();
}

#[test]
fn a_client_that_leaves_mid_stream_stops_the_producer() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = stream(next(&rx));
    let failed = Arc::new(AtomicBool::new(false));
    let producer = {
        let failed = Arc::clone(&failed);
        std::thread::spawn(move || {
            let piece = vec![b'x'; 16 * 1024];
            loop {
                if body.write_all(&piece).is_err() {
                    failed.store(true, Ordering::Relaxed);
                    return;
                }
            }
        })
    };
    let _ = client.exact(1000);
    drop(client);
    wait_until(Duration::from_secs(10), "the producer is told", || {
        failed.load(Ordering::Relaxed)
    });
    producer.join().unwrap();
    wait_until(Duration::from_secs(5), "the connection is gone", || {
        handle.stats().open_connections == 0
    });
    handle.shutdown().unwrap();
}

#[test]
fn a_stream_with_no_piece_for_reply_timeout_is_cut() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut body = stream(next(&rx));
    body.write_all(b"then nothing").unwrap();
    let head = client.head_reply();
    assert_eq!(head.status, 200);
    // reply_timeout is 2 s here.
    assert_eq!(client.chunked_body(), Err(b"then nothing".to_vec()));
    assert!(!body.is_open());
    assert_eq!(handle.stats().replies_timed_out, 1);
    handle.shutdown().unwrap();
}

#[test]
fn pool_stream_sends_a_reader_with_its_length() {
    let pool = Pool::new(2, 8).unwrap();
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(move |req: Request| {
            let data: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
            let length = (req.path() == "/sized").then_some(data.len() as u64);
            pool.stream(text_response(200, ""), length, std::io::Cursor::new(data))
        })
        .unwrap();
    let want: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
    let mut client = Client::connect(handle.local_addr());
    let sized = client.get("/sized");
    assert_eq!(sized.header("content-length"), Some("200000"));
    assert_eq!(sized.body, want);
    let chunked = client.get("/chunked");
    assert_eq!(chunked.header("transfer-encoding"), Some("chunked"));
    assert_eq!(chunked.body, want);
    handle.shutdown().unwrap();
}

#[test]
fn handle_conn_streams_a_deferred_body_too() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        web::http::handle_conn(conn, |req| {
            if req.path() != "/stream" {
                return text_response(200, "plain");
            }
            let (reply, later) = defer();
            std::thread::spawn(move || {
                let mut body = reply.stream(text_response(200, "")).unwrap();
                body.write_all(b"from ").unwrap();
                body.write_all(b"a thread").unwrap();
                body.finish().unwrap();
            });
            later
        })
        .unwrap()
    });
    let mut client = Client::connect(addr);
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /p HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let reply = client.reply();
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    assert_eq!(reply.text(), "from a thread");
    assert_eq!(client.reply().text(), "plain");
    assert_eq!(server.join().unwrap(), 2);
}

/// Reads from `conn` until `tail` has come; all that came.
fn read_through(conn: &mut std::net::TcpStream, tail: &str) -> String {
    use std::io::Read;
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0; 4096];
    while !String::from_utf8_lossy(&got).contains(tail) {
        let n = conn.read(&mut buf).expect("the reply's bytes");
        assert!(
            n > 0,
            "closed before {tail:?}: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Trailers a stream ends with: one to keep, and framing and control fields that must never
/// trail (RFC 9110 §6.5.1).
fn trailers() -> Vec<web::http::Header> {
    vec![
        web::http::Header::new("X-Checksum", "c0ffee"),
        web::http::Header::new("Content-Length", "99"),
        web::http::Header::new("Connection", "close"),
    ]
}

#[test]
fn a_chunked_body_ends_with_its_trailer_section_and_the_connection_serves_on() {
    let (handle, rx) = start();
    let mut conn = std::net::TcpStream::connect(handle.local_addr()).unwrap();
    conn.write_all(
        b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /after HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    let mut body = stream(next(&rx));
    body.write_all(b"abc").unwrap();
    body.finish_with_trailers(trailers()).unwrap();
    let got = read_through(&mut conn, "now /after");
    assert!(
        got.contains("\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: c0ffee\r\n\r\nHTTP/1.1 200"),
        "{got}"
    );
    assert!(
        !got.contains("99") && !got.contains("Connection: close"),
        "{got}"
    );
    handle.shutdown().unwrap();
}

#[test]
fn a_body_of_announced_length_has_no_trailer_section_and_drops_them() {
    let (handle, rx) = start();
    let mut client = Client::connect(handle.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = next(&rx);
    let mut body = reply.stream_sized(text_response(200, ""), 3).unwrap();
    body.write_all(b"abc").unwrap();
    body.finish_with_trailers(trailers()).unwrap();
    let reply = client.reply();
    assert_eq!(
        (reply.text(), reply.header("content-length")),
        ("abc".into(), Some("3"))
    );
    assert!(!reply.has("x-checksum"));
    reply.assert_keeps_alive();
    handle.shutdown().unwrap();
}

#[test]
fn handle_conn_ends_a_chunked_body_with_its_trailers_too() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        web::http::handle_conn(conn, |_req| {
            let (reply, later) = defer();
            std::thread::spawn(move || {
                let mut body = reply.stream(text_response(200, "")).unwrap();
                body.write_all(b"abc").unwrap();
                body.finish_with_trailers(trailers()).unwrap();
            });
            later
        })
        .unwrap()
    });
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(b"GET /stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let got = read_through(&mut conn, "0\r\nX-Checksum: c0ffee\r\n\r\n");
    assert!(
        got.ends_with("3\r\nabc\r\n0\r\nX-Checksum: c0ffee\r\n\r\n"),
        "{got}"
    );
    assert_eq!(server.join().unwrap(), 1);
}
