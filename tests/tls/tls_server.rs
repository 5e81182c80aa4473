//! HTTPS and WSS served by this library (feature `tls`): requests over kept-alive TLS
//! connections, large bodies both ways, WebSocket and deferred replies and event streams over
//! TLS, SNI, reloading certificates while connections are open, and bad input — plain HTTP to
//! the TLS port, garbage records, a handshake that stops half way, a huge ClientHello — each
//! a clean close, counted, with other connections unaffected.

#![cfg(feature = "tls")]

use crate::wire;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use web::http::{Client, Request, Response, Server, ServerHandle, defer, text_response};
use web::tls::{ClientTls, ServerTls};
use web::ws::{Message, Ws, WsConnect, WsHandler};
use wire::certs::TestCa;
use wire::wait_until;

/// Echoes text; closes nothing.
struct Echo;

impl WsHandler for Echo {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        ws.send(&msg);
    }
}

/// `/big/N` answers N bytes, `/len` the length of the body received, `/later` a deferred
/// reply, anything else its path.
fn handler(req: Request) -> Response {
    let path = req.path().to_owned();
    if let Some(n) = path.strip_prefix("/big/") {
        let n: usize = n.parse().unwrap_or(0);
        let body: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        return text_response(200, body);
    }
    if path == "/len" {
        let sum: u64 = req.body().iter().map(|&b| u64::from(b)).sum();
        return text_response(200, format!("{} {sum}", req.body().len()));
    }
    if path == "/later" {
        let (reply, later) = defer();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            reply.send(text_response(200, "later"));
        });
        return later;
    }
    text_response(200, path)
}

fn start(ca: &TestCa, tweak: impl FnOnce(Server) -> Server) -> ServerHandle {
    let leaf = ca.leaf(&["localhost", "127.0.0.1"]);
    let tls = ServerTls::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes()).unwrap();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_body(8 << 20)
        .max_message(1 << 20)
        .tls(tls)
        .websocket("/ws", Echo);
    tweak(server).spawn(handler).unwrap()
}

fn client(ca: &TestCa) -> Client {
    Client::new().tls(ClientTls::roots_pem(ca.pem.as_bytes()).unwrap())
}

fn url(server: &ServerHandle, path: &str) -> String {
    format!("https://localhost:{}{path}", server.local_addr().port())
}

#[test]
fn https_requests_share_one_kept_alive_connection_and_one_handshake() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let client = client(&ca);
    for n in 0..5 {
        let res = client
            .request("GET", &url(&server, &format!("/n/{n}")))
            .send()
            .unwrap();
        assert_eq!((res.status(), res.text()), (200, format!("/n/{n}")));
    }
    let stats = server.stats();
    assert_eq!(
        (stats.connections, stats.tls_handshakes, stats.requests),
        (1, 1, 5)
    );
    // Idle between requests, the connection holds no buffer: only rustls' state.
    assert_eq!(stats.held_bytes, 0);
}

#[test]
fn large_bodies_cross_tls_both_ways_intact() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let client = client(&ca);
    let up: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
    let sum: u64 = up.iter().map(|&b| u64::from(b)).sum();
    let res = client
        .request("POST", &url(&server, "/len"))
        .body(up)
        .send()
        .unwrap();
    assert_eq!(res.text(), format!("3000000 {sum}"));
    let res = client
        .request("GET", &url(&server, "/big/2500000"))
        .send()
        .unwrap();
    let body = res.body();
    assert_eq!(body.len(), 2_500_000);
    assert!(body.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
    wait_until(Duration::from_secs(2), "buffers given back", || {
        server.stats().held_bytes == 0
    });
}

#[test]
fn a_websocket_over_tls_echoes_and_closes_cleanly() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let ws_url = format!("wss://localhost:{}/ws", server.local_addr().port());
    let mut ws = WsConnect::new()
        .max_message(1 << 20)
        .tls(ClientTls::roots_pem(ca.pem.as_bytes()).unwrap())
        .connect(&ws_url)
        .unwrap();
    ws.send_text("hello over tls").unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Some(Message::Text("hello over tls".into()))
    );
    let big = vec![9u8; 300_000];
    ws.send(&Message::Binary(big.clone())).unwrap();
    let echoed = ws.recv().unwrap();
    assert!(
        echoed == Some(Message::Binary(big)),
        "300 000 bytes did not come back whole"
    );
    assert_eq!(
        ws.close(web::ws::NORMAL, "bye").unwrap(),
        Some(web::ws::NORMAL)
    );
    wait_until(Duration::from_secs(2), "the WebSocket gone", || {
        server.stats().websockets == 0
    });
}

#[test]
fn a_deferred_reply_arrives_over_tls() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let res = client(&ca)
        .request("GET", &url(&server, "/later"))
        .send()
        .unwrap();
    assert_eq!(res.text(), "later");
}

#[test]
fn a_client_that_does_not_trust_the_certificate_is_refused_by_its_own_check() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let other = TestCa::new();
    let err = client(&other)
        .request("GET", &url(&server, "/"))
        .send()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
    // The insecure opt-out (tests only) takes any certificate.
    let res = Client::new()
        .tls(ClientTls::insecure())
        .request("GET", &url(&server, "/x"))
        .send();
    assert_eq!(res.unwrap().text(), "/x");
}

/// Reads until the server closes; what it sent.
fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("the server did not close: {e}"),
        }
    }
}

/// One HTTPS request on a new connection works (other connections are unaffected).
fn still_serves(ca: &TestCa, server: &ServerHandle) {
    let res = client(ca)
        .request("GET", &url(server, "/ok"))
        .send()
        .unwrap();
    assert_eq!(res.text(), "/ok");
}

#[test]
fn a_plain_http_request_to_the_tls_port_gets_a_plain_400_saying_so() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let mut raw = TcpStream::connect(server.local_addr()).unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let got = String::from_utf8(read_to_close(&mut raw)).unwrap();
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert!(got.contains("This port speaks HTTPS"), "{got}");
    wait_until(Duration::from_secs(2), "counted", || {
        server.stats().tls_failures == 1
    });
    still_serves(&ca, &server);
}

#[test]
fn garbage_records_close_the_connection_with_an_alert_and_are_counted() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let cases: [&[u8]; 4] = [
        // A handshake record whose message is nonsense.
        b"\x16\x03\x01\x00\x05hello",
        // An unknown content type.
        b"\x63\x03\x03\x00\x02hi",
        // Application data before any handshake.
        b"\x17\x03\x03\x00\x10aaaaaaaaaaaaaaaa",
        // A record longer than any allowed (2^14 + 2048 + 1).
        b"\x16\x03\x03\x48\x01",
    ];
    for (n, bytes) in cases.iter().enumerate() {
        let mut raw = TcpStream::connect(server.local_addr()).unwrap();
        raw.write_all(bytes).unwrap();
        let got = read_to_close(&mut raw);
        // Whatever the server said was a TLS alert record (content type 21), if anything.
        assert!(got.is_empty() || got[0] == 21, "case {n}: {got:?}");
        wait_until(Duration::from_secs(2), "counted", || {
            server.stats().tls_failures == n as u64 + 1
        });
    }
    // Regression: asking rustls for the alert it owes once gave it fewer bytes than it had
    // seen, and it panicked (the reactor caught it and closed the connection).
    assert_eq!(server.stats().panics, 0);
    still_serves(&ca, &server);
}

#[test]
fn a_handshake_that_stops_half_way_is_closed_at_the_handshake_timeout() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s.handshake_timeout(Duration::from_millis(300)));
    let mut raw = TcpStream::connect(server.local_addr()).unwrap();
    // The first bytes of a ClientHello record, then nothing (slowloris over TLS).
    raw.write_all(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        .unwrap();
    let started = Instant::now();
    assert!(read_to_close(&mut raw).is_empty());
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(server.stats().tls_timeouts, 1);
    wait_until(Duration::from_secs(2), "the connection gone", || {
        server.stats().open_connections == 0
    });
    still_serves(&ca, &server);
}

#[test]
fn a_huge_client_hello_is_refused_without_waiting_for_all_of_it() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let mut raw = TcpStream::connect(server.local_addr()).unwrap();
    // A ClientHello that says it is 16 MiB long, sent as full handshake records.
    let mut record = vec![0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0xff, 0xff, 0xff];
    record.resize(5 + 0x4000, 0x41);
    let mut refused = false;
    for _ in 0..64 {
        if raw.write_all(&record).is_err() {
            refused = true;
            break;
        }
        record.truncate(5);
        record[5..].fill(0);
        record.resize(5 + 0x4000, 0x41);
    }
    if !refused {
        let got = read_to_close(&mut raw);
        assert!(got.is_empty() || got[0] == 21, "{got:?}");
    }
    wait_until(Duration::from_secs(2), "counted", || {
        server.stats().tls_failures == 1
    });
    still_serves(&ca, &server);
}

/// Runs a handshake to `addr` asking for `name`, trusting `ca`: whether it succeeded.
fn handshake(addr: SocketAddr, name: &str, ca: &TestCa) -> Result<(), String> {
    let config = ca.client_config(rustls::DEFAULT_VERSIONS);
    let name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn requests_go_on_after_the_client_updates_the_keys_and_asks_the_server_to() {
    let ca = TestCa::new();
    let server = start(&ca, |s| s);
    let mut tls = ca.stream(server.local_addr(), &[&rustls::version::TLS13]);
    let ask = |tls: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>, path: &str| {
        tls.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        while !got.ends_with(path.as_bytes()) {
            let n = tls.read(&mut buf).unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
    };
    ask(&mut tls, "/before");
    for round in 0..3 {
        // A KeyUpdate that asks for the server's: both directions change keys.
        tls.conn.refresh_traffic_keys().unwrap();
        ask(&mut tls, &format!("/after/{round}"));
    }
    assert_eq!((server.stats().tls_failures, server.stats().panics), (0, 0));
}

#[test]
fn sni_picks_the_certificate_for_the_name_asked_and_the_first_for_any_other() {
    let (first, second) = (TestCa::new(), TestCa::new());
    let a = first.leaf(&["a.test"]);
    let b = second.leaf(&["b.test"]);
    let tls = ServerTls::from_pem(a.cert.as_bytes(), a.key.as_bytes())
        .unwrap()
        .name_pem("B.test", b.cert.as_bytes(), b.key.as_bytes())
        .unwrap();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .tls(tls)
        .spawn(handler)
        .unwrap();
    let addr = server.local_addr();
    assert_eq!(handshake(addr, "b.test", &second), Ok(()));
    assert_eq!(handshake(addr, "a.test", &first), Ok(()));
    // A name not listed gets the first certificate, which is not for that name.
    assert!(handshake(addr, "c.test", &first).is_err());
    assert!(handshake(addr, "a.test", &second).is_err());
}

#[test]
fn reloaded_certificates_serve_new_connections_and_leave_open_ones_alone() {
    let (old_ca, new_ca) = (TestCa::new(), TestCa::new());
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    let control = server.control();
    let old = old_ca.leaf(&["localhost"]);
    let server = server
        .tls(ServerTls::from_pem(old.cert.as_bytes(), old.key.as_bytes()).unwrap())
        .spawn(handler)
        .unwrap();
    let old_client = client(&old_ca);
    assert_eq!(
        old_client
            .request("GET", &url(&server, "/1"))
            .send()
            .unwrap()
            .text(),
        "/1"
    );
    assert!(
        client(&new_ca)
            .request("GET", &url(&server, "/2"))
            .send()
            .is_err()
    );

    let new = new_ca.leaf(&["localhost"]);
    control
        .reload_tls(&ServerTls::from_pem(new.cert.as_bytes(), new.key.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(
        client(&new_ca)
            .request("GET", &url(&server, "/3"))
            .send()
            .unwrap()
            .text(),
        "/3"
    );
    // The connection opened before the reload still carries requests, on its old session.
    let before = server.stats().connections;
    assert_eq!(
        old_client
            .request("GET", &url(&server, "/4"))
            .send()
            .unwrap()
            .text(),
        "/4"
    );
    assert_eq!(server.stats().connections, before);
    // New connections no longer present the old certificate.
    assert!(
        client(&old_ca)
            .request("GET", &url(&server, "/5"))
            .send()
            .is_err()
    );
}

#[test]
fn reloading_a_server_without_tls_is_an_error() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    let control = server.control();
    let _running = server.spawn(handler).unwrap();
    let ca = TestCa::new();
    let leaf = ca.leaf(&["localhost"]);
    let tls = ServerTls::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes()).unwrap();
    assert_eq!(
        control.reload_tls(&tls).unwrap_err().kind(),
        std::io::ErrorKind::NotConnected
    );
}

#[test]
fn an_event_stream_flows_over_tls() {
    struct Hello;
    impl web::sse::SseHandler for Hello {
        type State = ();
        fn accept(&self, _req: &Request) -> Result<(), Response> {
            Ok(())
        }
        fn open(&self, sse: &mut web::sse::Sse<'_>, _state: &mut ()) {
            sse.send(&web::sse::Event::new("hello over tls"));
        }
    }
    let ca = TestCa::new();
    let server = start(&ca, |s| s.sse("/events", Hello));
    // A raw rustls client: the stream never ends, so the blocking client cannot read it whole.
    let mut tls = ca.stream(server.local_addr(), rustls::DEFAULT_VERSIONS);
    tls.write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).contains("data: hello over tls\n\n") {
        let n = tls.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).contains("text/event-stream"));
}

#[test]
fn a_tls_server_with_a_taking_hook_refuses_to_start() {
    let ca = TestCa::new();
    let leaf = ca.leaf(&["localhost"]);
    let tls = ServerTls::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes()).unwrap();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .taking(|_, _| false)
        .tls(tls);
    let err = server
        .spawn(handler)
        .err()
        .expect("a TLS server with a taking hook is refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn the_access_log_says_an_exchange_came_over_tls() {
    let ca = TestCa::new();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let heard = std::sync::Arc::clone(&seen);
    let server = start(&ca, |s| {
        s.access_log(move |a: &web::http::Access<'_>| {
            heard
                .lock()
                .unwrap()
                .push((a.target.to_owned(), a.tls, a.protocol));
        })
    });
    let res = client(&ca)
        .request("GET", &url(&server, "/logged"))
        .send()
        .unwrap();
    assert_eq!(res.status(), 200);
    wait_until(Duration::from_secs(5), "the record", || {
        !seen.lock().unwrap().is_empty()
    });
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [("/logged".to_owned(), true, web::http::Protocol::Http11)]
    );
}
