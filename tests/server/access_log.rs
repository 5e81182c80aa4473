//! The access log (`Server::access_log`): one entry per exchange with what was really sent —
//! replies answered at once, deferred, streamed, refused by the server, not waited for by
//! their client — and WebSocket sessions when they end.

use crate::wire;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use web::http::{Access, AccessKind, Server, ServerHandle, defer, text_response};
use wire::{Client, wait_until};

/// An entry as the test keeps it.
#[derive(Clone, Debug)]
struct Entry {
    method: String,
    target: String,
    status: u16,
    bytes: u64,
    duration: Duration,
    peer: Option<SocketAddr>,
    kind: AccessKind,
}

type Log = Arc<Mutex<Vec<Entry>>>;

/// One worker: `/later` answers 503 after 150 ms from a thread, `/stream` streams 1 MiB in
/// 64 KiB pieces, `/never` is never answered (its `Reply` is kept), `/ws` is WebSocket echo,
/// anything else is answered at once (404 for `/missing`).
fn start() -> (ServerHandle, Log) {
    let log: Log = Arc::default();
    let heard = Arc::clone(&log);
    let kept = Mutex::new(Vec::new());
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .websocket("/ws", wire::ws::Echo)
        .access_log(move |a: &Access<'_>| {
            heard.lock().unwrap().push(Entry {
                method: a.method.to_owned(),
                target: a.target.to_owned(),
                status: a.status,
                bytes: a.bytes,
                duration: a.duration,
                peer: a.peer,
                kind: a.kind,
            })
        })
        .spawn(move |req| match web::http::path_of(req.path()) {
            "/later" => {
                let (reply, later) = defer();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(150));
                    reply.send(text_response(503, "busy"))
                });
                later
            }
            "/stream" => {
                let (reply, later) = defer();
                std::thread::spawn(move || {
                    let mut body = reply.stream(text_response(200, "")).unwrap();
                    for _ in 0..16 {
                        body.write_all(&[b'x'; 64 * 1024]).unwrap();
                    }
                    body.finish().unwrap();
                });
                later
            }
            "/never" => {
                let (reply, later) = defer();
                kept.lock().unwrap().push(reply);
                later
            }
            "/missing" => text_response(404, "no"),
            _ => text_response(200, "hi"),
        })
        .unwrap();
    (server, log)
}

/// Waits for the entry for `target` and returns it.
fn entry(log: &Log, target: &str) -> Entry {
    let mut found = None;
    wait_until(Duration::from_secs(5), target, || {
        found = log
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.target == target)
            .cloned();
        found.is_some()
    });
    found.unwrap()
}

/// Reads raw bytes from `c` until `done` says the reply is whole; how many came.
fn raw_reply(c: &mut Client, done: impl Fn(&[u8]) -> bool) -> usize {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !done(&got) {
        let n = std::io::Read::read(&mut c.stream, &mut buf).unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
    }
    got.len()
}

#[test]
fn replies_answered_at_once_are_logged_with_their_status_bytes_and_peer() {
    let (server, log) = start();
    let mut c = Client::connect(server.local_addr());
    let me = c.stream.local_addr().unwrap();
    c.send("GET /missing?x=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    let got = raw_reply(&mut c, |b| b.ends_with(b"\r\n\r\nno"));
    let e = entry(&log, "/missing?x=1");
    assert_eq!(
        (e.method.as_str(), e.status, e.kind),
        ("GET", 404, AccessKind::Now)
    );
    assert_eq!(e.bytes, got as u64, "the bytes the client got");
    assert_eq!(e.peer, Some(me));
    server.shutdown().unwrap();
}

#[test]
fn each_pipelined_or_split_request_is_logged_with_its_own_method_and_target() {
    let (server, log) = start();
    let mut c = Client::connect(server.local_addr());
    // Blank lines before a request, three in one write, the last one's head in pieces.
    c.send("\r\nGET /one HTTP/1.1\r\nHost: t\r\n\r\nPOST /two?x=%C3%A9 HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhiDELETE /thr");
    raw_reply(&mut c, |b| b.windows(2).filter(|w| w == b"hi").count() == 2);
    c.send("ee/caf\u{e9} HTTP/1.1\r\nHo");
    c.send("st: t\r\n\r\n");
    raw_reply(&mut c, |b| b.ends_with(b"hi"));
    for (method, target) in [
        ("GET", "/one"),
        ("POST", "/two?x=%C3%A9"),
        ("DELETE", "/three/caf\u{e9}"),
    ] {
        assert_eq!(entry(&log, target).method, method, "{target}");
    }
    server.shutdown().unwrap();
}

#[test]
fn a_deferred_reply_is_logged_with_its_real_status_and_duration() {
    let (server, log) = start();
    let mut c = Client::connect(server.local_addr());
    let r = c.get("/later");
    assert_eq!(r.status, 503);
    let e = entry(&log, "/later");
    assert_eq!((e.status, e.kind), (503, AccessKind::Deferred));
    assert!(e.duration >= Duration::from_millis(150), "{:?}", e.duration);
    assert!(e.bytes > 4, "{}", e.bytes);
    server.shutdown().unwrap();
}

#[test]
fn a_streamed_body_is_logged_at_its_end_with_every_byte_framed() {
    let (server, log) = start();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let got = raw_reply(&mut c, |b| b.ends_with(b"\r\n0\r\n\r\n"));
    let e = entry(&log, "/stream");
    assert_eq!((e.status, e.kind), (200, AccessKind::Streamed));
    assert_eq!(e.bytes, got as u64);
    assert!(e.bytes > 16 * 64 * 1024);
    server.shutdown().unwrap();
}

#[test]
fn a_client_that_leaves_before_its_reply_is_logged_with_status_0() {
    let (server, log) = start();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /never HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(100));
    assert!(log.lock().unwrap().iter().all(|e| e.target != "/never"));
    drop(c);
    let e = entry(&log, "/never");
    assert_eq!((e.status, e.bytes, e.kind), (0, 0, AccessKind::Deferred));
    server.shutdown().unwrap();
}

#[test]
fn a_request_refused_by_the_server_is_logged_with_its_status() {
    let (server, log) = start();
    let mut c = Client::connect(server.local_addr());
    c.send("GET / HTTP/1.1\r\n\r\n"); // no Host
    assert_eq!(c.reply().status, 400);
    let e = entry(&log, "");
    assert_eq!((e.method.as_str(), e.status), ("", 400));
    server.shutdown().unwrap();
}

#[test]
fn a_websocket_session_is_logged_when_it_ends_with_101_and_its_length() {
    let (server, log) = start();
    let mut ws = wire::ws::Client::connect_to(server.local_addr().port(), "/ws");
    std::thread::sleep(Duration::from_millis(120));
    assert!(log.lock().unwrap().iter().all(|e| e.target != "/ws"));
    ws.send(&web::ws::client_frame("bye"));
    let (_, echoed) = ws.frame();
    assert_eq!(echoed, b"bye");
    drop(ws);
    let e = entry(&log, "/ws");
    assert_eq!((e.status, e.kind), (101, AccessKind::WebSocket));
    assert!(e.duration >= Duration::from_millis(120), "{:?}", e.duration);
    server.shutdown().unwrap();
}

#[test]
fn a_record_names_the_client_through_trusted_proxies_the_protocol_and_the_route() {
    type Seen = (
        Option<std::net::IpAddr>,
        web::http::Protocol,
        bool,
        String,
        u16,
    );
    let seen: Arc<Mutex<Vec<(String, Seen)>>> = Arc::default();
    let heard = Arc::clone(&seen);
    let router = web::http::Router::new()
        .get("/orders/:id", |req| {
            text_response(200, req.path_param("id").to_owned())
        })
        .post("/orders", |_req| {
            let (reply, later) = defer();
            std::thread::spawn(move || reply.send(text_response(201, "made")));
            later
        });
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .proxies(1) // this host's proxies are trusted: the test is one
        .access_log(move |a: &Access<'_>| {
            let entry = (
                a.client_addr,
                a.protocol,
                a.tls,
                a.route.to_owned(),
                a.status,
            );
            heard.lock().unwrap().push((a.target.to_owned(), entry));
        })
        .spawn(move |req| router.answer(req))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /orders/7 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n");
    assert_eq!(c.reply().text(), "7");
    c.send("POST /orders HTTP/1.0\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(c.reply().status, 201);
    let mut plain = Client::connect(server.local_addr());
    assert_eq!(plain.get("/nowhere").status, 404);
    wait_until(Duration::from_secs(5), "three records", || {
        seen.lock().unwrap().len() == 3
    });
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let local = Some("127.0.0.1".parse().unwrap());
    let forwarded = Some("203.0.113.9".parse().unwrap());
    use web::http::Protocol::{Http10, Http11};
    assert_eq!(
        seen,
        [
            (
                "/nowhere".into(),
                (local, Http11, false, String::new(), 404)
            ),
            (
                "/orders".into(),
                (local, Http10, false, "/orders".into(), 201)
            ),
            (
                "/orders/7".into(),
                (forwarded, Http11, false, "/orders/:id".into(), 200)
            ),
        ]
    );
    server.shutdown().unwrap();
}
