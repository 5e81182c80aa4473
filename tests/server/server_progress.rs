//! A connection never pins its worker: whatever bytes arrive, split however, each read is
//! answered or kept and the worker goes on serving its other connections.

use crate::wire;

use std::time::Duration;

use web::http::{Server, ServerHandle};
use wire::{Client, echo};

fn start() -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(echo)
        .unwrap()
}

/// Sends `first`, waits for the worker to have read it, and checks that another connection is
/// still answered (with one worker, a pinned worker answers nobody).
fn assert_worker_free_after(server: &ServerHandle, first: &[u8]) -> Client {
    let mut c = Client::connect(server.local_addr());
    c.send(first);
    std::thread::sleep(Duration::from_millis(50));
    let mut other = Client::connect(server.local_addr());
    let r = other.get("/other");
    assert_eq!(r.status, 200, "after {first:?}: {r:?}");
    c
}

#[test]
fn a_lone_cr_does_not_pin_the_worker() {
    let server = start();
    let mut c = assert_worker_free_after(&server, b"\r");
    // The CR was the start of an empty line: the request after it is served.
    c.send("\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().text(), "GET /a\nhost: t\n\n");
}

#[test]
fn a_request_followed_by_a_lone_cr_does_not_pin_the_worker() {
    let server = start();
    let mut c = assert_worker_free_after(&server, b"GET /a HTTP/1.1\r\nHost: t\r\n\r\n\r");
    assert_eq!(c.reply().status, 200);
    c.send("\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().text(), "GET /b\nhost: t\n\n");
}

#[test]
fn an_empty_line_split_after_its_cr_does_not_pin_the_worker() {
    let server = start();
    let mut c = assert_worker_free_after(&server, b"\r\n\r");
    c.send("\n");
    std::thread::sleep(Duration::from_millis(20));
    c.send("GET /c HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().text(), "GET /c\nhost: t\n\n");
}

#[test]
fn a_lone_cr_then_the_end_of_the_stream_closes_quietly() {
    let server = start();
    let mut c = assert_worker_free_after(&server, b"\r");
    c.shutdown_write();
    c.assert_eof();
}
