//! Keep-alive and close rules, pipelining, a request fed byte by byte, HEAD and bodiless
//! statuses, over raw sockets against an in-process server.

use crate::wire;

use std::time::Duration;

use web::http::{Request, Response, Server, ServerHandle, text_response, with_header};
use wire::{Client, echo, wait_until};

fn start(handler: impl Fn(Request) -> Response + Send + Sync + 'static) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(handler)
        .unwrap()
}

fn path_handler(req: Request) -> Response {
    match req.path() {
        "/close" => with_header(text_response(200, "bye"), "Connection", "close"),
        "/no-content" => text_response(204, "must not be sent"),
        "/not-modified" => text_response(304, "must not be sent"),
        "/big" => text_response(200, vec![b'b'; 100_000]),
        _ => text_response(200, format!("{} {}", req.method(), req.path())),
    }
}

#[test]
fn http11_keeps_the_connection_open_by_default() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    for path in ["/one", "/two"] {
        let r = c.get(path);
        assert_eq!((r.status, r.text()), (200, format!("GET {path}")));
        r.assert_keeps_alive();
    }
    c.assert_silent_for(Duration::from_millis(100));
}

#[test]
fn connection_close_request_gets_a_close_reply_and_then_eof() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send("GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let r = c.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "GET /a"));
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn requests_after_a_connection_close_in_the_same_write_are_not_answered() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = c.reply();
    assert_eq!(r.text(), "GET /a");
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn http10_without_keep_alive_closes_after_the_reply() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send("GET /old HTTP/1.0\r\n\r\n");
    let r = c.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "GET /old"));
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn http10_with_keep_alive_stays_open() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    for path in ["/a", "/b"] {
        c.send(format!(
            "GET {path} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        ));
        let r = c.reply();
        assert_eq!(r.text(), format!("GET {path}"));
        r.assert_keeps_alive();
    }
    // The third request without keep-alive is the last.
    c.send("GET /c HTTP/1.0\r\n\r\n");
    let r = c.reply();
    assert_eq!(r.text(), "GET /c");
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn a_handler_adding_connection_close_closes_the_connection() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/first").status, 200);
    let r = c.get("/close");
    assert_eq!((r.status, r.text().as_str()), (200, "bye"));
    r.assert_closes();
    assert_eq!(
        r.headers.iter().filter(|h| h.name == "connection").count(),
        1,
        "one Connection line: {r:?}"
    );
    c.assert_eof();
}

#[test]
fn three_requests_pipelined_in_one_write_are_answered_in_order() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /1 HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /2 HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /3 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    for i in 1..=3 {
        let r = c.reply();
        assert_eq!((r.status, r.text()), (200, format!("GET /{i}")));
        r.assert_keeps_alive();
    }
    c.assert_silent_for(Duration::from_millis(100));
}

#[test]
fn a_pipelined_get_post_with_body_get_are_answered_in_order() {
    let server = start(echo);
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /first HTTP/1.1\r\nHost: t\r\n\r\n\
         POST /second HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello\r\nGET \
         GET /third HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let first = c.reply();
    assert!(first.text().starts_with("GET /first\n"), "{first:?}");
    let second = c.reply();
    assert!(second.text().starts_with("POST /second\n"), "{second:?}");
    assert!(
        second.text().ends_with("\n\nhello\r\nGET "),
        "body taken by Content-Length, GET-like bytes included: {second:?}"
    );
    let third = c.reply();
    assert!(third.text().starts_with("GET /third\n"), "{third:?}");
    c.assert_silent_for(Duration::from_millis(100));
}

#[test]
fn many_pipelined_requests_in_one_write_are_all_answered_in_order() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    let n = 2000; // replies past the server's output high-water mark
    let mut batch = String::new();
    for i in 0..n {
        batch.push_str(&format!("GET /{i} HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    c.send(batch);
    for i in 0..n {
        assert_eq!(c.reply().text(), format!("GET /{i}"));
    }
}

#[test]
fn a_request_fed_one_byte_at_a_time_is_answered() {
    let server = start(echo);
    let mut c = Client::connect(server.local_addr());
    let raw = b"POST /slowly?x=1 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    for byte in raw.iter() {
        c.send([*byte]);
        std::thread::sleep(Duration::from_millis(1));
    }
    let r = c.reply();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.text(),
        "POST /slowly?x=1\nhost: t\ntransfer-encoding: chunked\n\nabc"
    );
    // A second one, fed the same way, on the same connection.
    for byte in b"GET /again HTTP/1.1\r\nHost: t\r\n\r\n".iter() {
        c.send([*byte]);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(c.reply().text().starts_with("GET /again\n"));
    // The partial request's buffer is given back once it is answered.
    wait_until(Duration::from_secs(2), "no bytes are held", || {
        server.stats().held_bytes == 0
    });
}

#[test]
fn head_gets_the_length_a_get_would_get_and_no_body() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    // A GET right behind the HEAD: if the HEAD reply carried a body, the GET reply would not
    // parse.
    c.send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = c.head_reply();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("11")); // "HEAD /hello"
    let get = c.reply();
    assert_eq!((get.status, get.text().as_str()), (200, "GET /hello"));
    c.assert_silent_for(Duration::from_millis(100));
}

#[test]
fn head_of_a_large_body_sends_its_length_and_no_body() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send("HEAD /big HTTP/1.1\r\nHost: t\r\n\r\nGET /one HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = c.head_reply();
    assert_eq!(head.header("content-length"), Some("100000"));
    assert_eq!(c.reply().text(), "GET /one");
    let big = c.get("/big");
    assert_eq!(big.body, vec![b'b'; 100_000]);
}

#[test]
fn replies_204_and_304_have_no_body_and_no_content_length() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /no-content HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /not-modified HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /after HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    for status in [204, 304] {
        let r = c.head_reply(); // a head, and no body to read
        assert_eq!(r.status, status);
        assert!(!r.has("content-length"), "{r:?}");
        assert!(!r.has("transfer-encoding"), "{r:?}");
        r.assert_keeps_alive();
    }
    // Had either carried its body, this reply would not parse.
    assert_eq!(c.reply().text(), "GET /after");
}

#[test]
fn stats_count_the_requests_served() {
    let server = start(path_handler);
    assert_eq!(server.stats().requests, 0);
    let mut a = Client::connect(server.local_addr());
    let mut b = Client::connect(server.local_addr());
    for _ in 0..3 {
        a.get("/a");
    }
    b.send("GET /1 HTTP/1.1\r\nHost: t\r\n\r\nGET /2 HTTP/1.1\r\nHost: t\r\n\r\n");
    b.reply();
    b.reply();
    wait_until(Duration::from_secs(2), "5 requests are counted", || {
        server.stats().requests == 5
    });
    wait_until(Duration::from_secs(2), "2 connections are open", || {
        server.stats().open_connections == 2
    });
    drop((a, b));
    wait_until(Duration::from_secs(2), "the connections are closed", || {
        server.stats().open_connections == 0
    });
    assert_eq!(server.stats().requests, 5);
}

#[test]
fn a_client_half_closing_after_its_requests_still_gets_every_reply() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    c.send("GET /1 HTTP/1.1\r\nHost: t\r\n\r\nGET /2 HTTP/1.1\r\nHost: t\r\n\r\n");
    c.stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(c.reply().text(), "GET /1");
    assert_eq!(c.reply().text(), "GET /2");
    c.assert_eof();
}

#[test]
fn every_reply_carries_a_valid_date_header() {
    let server = start(path_handler);
    let mut c = Client::connect(server.local_addr());
    for path in ["/a", "/no-content", "/close"] {
        let r = c.get(path);
        let date = r
            .header("date")
            .unwrap_or_else(|| panic!("no Date in {r:?}"));
        let when = httpdate::parse_http_date(date).expect("an IMF-fixdate");
        let skew = match when.duration_since(std::time::SystemTime::now()) {
            Ok(ahead) => ahead,
            Err(behind) => behind.duration(),
        };
        assert!(
            skew < Duration::from_secs(5),
            "Date {date} is off by {skew:?}"
        );
    }
}

#[test]
fn a_request_sent_with_the_end_of_stream_is_answered_and_the_connection_closes_at_once() {
    // Guards the reactor's short-read shortcut: when the request and the client's FIN are both
    // queued before the server reads, one short read may take both, and no later event will
    // announce the end of stream; the reactor then keeps the socket readable (READ_CLOSED).
    // (This setup has not been seen to reproduce the lost end of stream without that guard.)
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(Duration::from_secs(60))
        .spawn(|req| {
            if req.path() == "/busy" {
                std::thread::sleep(Duration::from_millis(300)); // keeps the only worker away
            }
            text_response(200, "bye")
        })
        .unwrap();
    let mut busy = Client::connect(server.local_addr());
    busy.send("GET /busy HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(50));
    let mut c = Client::connect(server.local_addr());
    c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    c.shutdown_write(); // both queued while the worker sleeps in the other handler
    let started = std::time::Instant::now();
    assert_eq!(busy.reply().status, 200);
    assert_eq!(c.reply().status, 200);
    c.assert_eof();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    server.shutdown().unwrap();
}
