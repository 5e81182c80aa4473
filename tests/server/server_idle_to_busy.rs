//! An idle HTTP connection keeps nothing but its keep-alive deadline (in the reactor's timer
//! wheel); what it is doing lives in a part made when a request arrives and kept only while
//! there is something to keep. Nothing is lost on the way in or out: part of a pipelined request
//! or body left for a later read, a reply the socket has not taken, an upgrade behind a reply,
//! large bodies both ways under backpressure — and the keep-alive deadline itself, restarted by
//! a request that arrives just before it. (A wake that brings nothing cannot be provoked from
//! a socket; that the deadline read back then is kept exactly is proven in the reactor's
//! `tests/deadline_read_back.rs`.)

use crate::wire;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, ServerHandle, text_response};
use web::ws::{write_frame, ws_handshake_request};
use wire::ws::Echo;
use wire::{Client, wait_until};

/// `/echo` answers the request's body; anything else its path.
fn handler(req: Request) -> Response {
    match req.path() {
        "/echo" => text_response(200, req.body().to_vec()),
        path => text_response(200, path.to_owned()),
    }
}

fn start(idle_timeout: Duration) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(idle_timeout)
        .max_body(16 << 20)
        .websocket("/ws", Echo)
        .spawn(handler)
        .unwrap()
}

/// Lets the server read what was sent on its own before more comes (so that the pieces are
/// separate reads): no state to poll tells that a read happened.
fn settle() {
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn the_rest_of_a_pipelined_request_arriving_in_a_later_read_is_answered_in_order() {
    let server = start(Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    // One whole request and the start of the next: the first is answered at once, the rest kept.
    c.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\nGET /sec");
    assert_eq!(c.reply().text(), "/first");
    settle();
    c.send("ond HTTP/1.1\r\nHo");
    settle();
    c.send("st: t\r\n\r\n");
    assert_eq!(c.reply().text(), "/second");
    // A body cut at every stage: in the head, between head and body, inside the body.
    c.send("GET /third HTTP/1.1\r\nHost: t\r\n\r\nPOST /echo HTTP/1.1\r\nHost: t\r\nContent-Le");
    assert_eq!(c.reply().text(), "/third");
    settle();
    c.send("ngth: 10\r\n\r\n");
    settle();
    c.send("01234");
    settle();
    c.send("56789GET /last HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().text(), "0123456789");
    assert_eq!(c.reply().text(), "/last");
    // Idle again, and still serving.
    settle();
    assert_eq!(c.get("/again").text(), "/again");
    drop(server);
}

#[test]
fn an_upgrade_pipelined_behind_a_request_gets_the_reply_then_the_101_then_its_frames() {
    let server = start(Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    let mut bytes = b"GET /before HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
    bytes.extend_from_slice(&ws_handshake_request("127.0.0.1", "/ws"));
    // A frame right behind the upgrade request, in the same write.
    write_frame(&mut bytes, 0x81, b"early bird", Some([1, 2, 3, 4]));
    c.send(&bytes);
    assert_eq!(c.reply().text(), "/before");
    // What came with the reply (the 101, perhaps the frame) goes on to the WebSocket client.
    let rest = c.exact(c.buffered());
    let mut ws = wire::ws::Client {
        conn: c.stream.try_clone().unwrap(),
        buf: rest,
    };
    let head = ws.until(b"\r\n\r\n");
    assert!(head.starts_with(b"HTTP/1.1 101 "), "{head:?}");
    assert_eq!(ws.frame(), (0x81, b"early bird".to_vec()));
    drop((ws, c));
    drop(server);
}

/// Whether the server closed the connection (end of stream or reset), waiting at most `wait`.
fn closed_within(c: &mut Client, wait: Duration) -> bool {
    c.stream.set_read_timeout(Some(wait)).unwrap();
    let mut byte = [0u8; 1];
    match c.stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => panic!("the server sent a byte to an idle connection"),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        Err(_) => false,
    }
}

#[test]
fn a_request_just_before_the_keep_alive_deadline_is_answered_and_restarts_it() {
    const IDLE: Duration = Duration::from_millis(600);
    let server = start(IDLE);
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/one").text(), "/one");
    // Just before the deadline (a tick is 10 ms): answered, and the deadline moves.
    std::thread::sleep(IDLE - Duration::from_millis(60));
    assert_eq!(c.get("/two").text(), "/two");
    let from = Instant::now();
    std::thread::sleep(IDLE - Duration::from_millis(60));
    assert_eq!(c.get("/three").text(), "/three");
    assert!(from.elapsed() < IDLE, "the test itself was too slow");
    // Then idle: closed at the restarted deadline.
    assert!(closed_within(&mut c, IDLE * 4), "never closed");
    drop(server);
}

#[test]
fn large_bodies_both_ways_with_requests_behind_them_arrive_whole_and_in_order() {
    const BIG: usize = 3 << 20;
    let server = start(Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    let body_a: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    let body_b: Vec<u8> = (0..BIG).map(|i| (i % 241) as u8).collect();
    let mut bytes = Vec::new();
    for body in [&body_a, &body_b] {
        bytes.extend_from_slice(
            format!(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        bytes.extend_from_slice(body);
        bytes.extend_from_slice(b"GET /small HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    // Written from another thread while this one reads nothing yet: the server stops reading
    // behind the first large reply (backpressure) and the writer blocks until we read.
    let mut writer = c.stream.try_clone().unwrap();
    let sending = std::thread::spawn(move || {
        for chunk in bytes.chunks(100_000) {
            writer.write_all(chunk).unwrap();
        }
    });
    // Read once the server holds the first reply back.
    wait_until(
        Duration::from_secs(10),
        "the first reply waits for the reader",
        || server.stats().held_bytes > 0,
    );
    assert_eq!(c.reply().body, body_a);
    assert_eq!(c.reply().text(), "/small");
    assert_eq!(c.reply().body, body_b);
    assert_eq!(c.reply().text(), "/small");
    sending.join().unwrap();
    wait_until(
        Duration::from_secs(5),
        "idle again, holding nothing",
        || server.stats().held_bytes == 0,
    );
    assert_eq!(c.get("/after").text(), "/after");
    drop(server);
}
