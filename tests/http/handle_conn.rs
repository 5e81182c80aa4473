//! `handle_conn`: the blocking driver of the codec, over a real socket accepted from a std
//! listener, returning how many requests it served.

use crate::wire;

use std::io;
use std::net::{Shutdown, TcpListener};
use std::sync::mpsc;
use std::time::Duration;

use web::http::{Request, Response, handle_conn, text_response};
use wire::{Client, echo};

fn handler(req: Request) -> Response {
    match req.path() {
        "/panic" => panic!("this handler panics on purpose"),
        "/empty" => text_response(204, "not sent"),
        _ => echo(req),
    }
}

/// Accepts one connection and runs `handle_conn` on it in a thread; the receiver gets what it
/// returned.
fn serve_one() -> (Client, mpsc::Receiver<io::Result<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = Client::connect(listener.local_addr().unwrap());
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let _ = tx.send(handle_conn(conn, handler));
    });
    (client, done)
}

fn served(done: &mpsc::Receiver<io::Result<usize>>) -> usize {
    done.recv_timeout(Duration::from_secs(5))
        .expect("handle_conn returned")
        .expect("handle_conn succeeded")
}

#[test]
fn handle_conn_answers_pipelined_requests_in_order_and_counts_them() {
    let (mut c, done) = serve_one();
    c.send(
        "GET /1 HTTP/1.1\r\nHost: t\r\n\r\n\
         POST /2 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\
         GET /3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let one = c.reply();
    assert!(one.text().starts_with("GET /1\n"));
    one.assert_keeps_alive();
    let two = c.reply();
    assert!(two.text().starts_with("POST /2\n") && two.text().ends_with("\n\nabc"));
    let three = c.reply();
    assert!(three.text().starts_with("GET /3\n"));
    three.assert_closes();
    c.assert_eof();
    drop(c);
    assert_eq!(served(&done), 3);
}

#[test]
fn handle_conn_returns_when_the_client_closes_between_requests() {
    let (mut c, done) = serve_one();
    assert!(c.get("/a").text().starts_with("GET /a\n"));
    let r = c.get("/b");
    r.assert_keeps_alive();
    c.stream.shutdown(Shutdown::Write).unwrap();
    c.assert_eof();
    drop(c);
    assert_eq!(served(&done), 2);
}

#[test]
fn handle_conn_refuses_a_malformed_request_with_400_and_closes() {
    let (mut c, done) = serve_one();
    c.send("GET /ok HTTP/1.1\r\nHost: t\r\n\r\nGET /bad HTTP/1.1\r\nHost : t\r\n\r\n");
    assert_eq!(c.reply().status, 200);
    let bad = c.reply();
    assert_eq!(bad.status, 400);
    bad.assert_closes();
    c.assert_eof();
    drop(c);
    assert_eq!(served(&done), 1, "the refused request is not counted");
}

#[test]
fn handle_conn_sends_100_continue_and_reads_the_body_after_it() {
    let (mut c, done) = serve_one();
    c.send("PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.exact(25), b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send("ok");
    assert!(c.reply().text().ends_with("\n\nok"));
    drop(c);
    assert_eq!(served(&done), 1);
}

#[test]
fn handle_conn_answers_head_and_204_without_bodies() {
    let (mut c, done) = serve_one();
    c.send(
        "HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /empty HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /last HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let head = c.head_reply();
    assert_eq!(head.header("content-length"), Some("17")); // "HEAD /h\nhost: t\n\n"
    let empty = c.head_reply();
    assert_eq!(empty.status, 204);
    assert!(!empty.has("content-length"));
    assert!(c.reply().text().starts_with("GET /last\n"));
    c.assert_eof();
    drop(c);
    assert_eq!(served(&done), 3);
}

#[test]
fn handle_conn_answers_a_panicking_handler_with_500_and_closes() {
    let (mut c, done) = serve_one();
    c.send("GET /panic HTTP/1.1\r\nHost: t\r\n\r\nGET /never HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.reply();
    assert_eq!(r.status, 500);
    r.assert_closes();
    c.assert_eof();
    drop(c);
    assert_eq!(served(&done), 1);
}
