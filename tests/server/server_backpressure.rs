//! Large replies: a 100 MB body to a slow reader is neither copied whole again nor in the way of
//! other connections, and a reader that takes nothing is dropped after the write timeout.

use crate::wire;

use std::io::{ErrorKind, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use web::http::{Server, text_response};
use wire::{Client, wait_until};

const BIG: usize = 100 << 20;

/// Reads a reply head by hand (up to its blank line) and returns its text.
fn read_head(c: &mut Client) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match c.stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => panic!("reading a head: {other:?} after {head:?}"),
        }
    }
    String::from_utf8(head).unwrap()
}

/// Reads `len` body bytes in pieces of at most `piece`, checking each is all `fill`.
fn read_body(c: &mut Client, len: usize, piece: usize, fill: u8) {
    let expected = vec![fill; piece];
    let mut buf = vec![0u8; piece];
    let mut got = 0;
    while got < len {
        let want = piece.min(len - got);
        let n = c.stream.read(&mut buf[..want]).expect("reading the body");
        assert!(n > 0, "end of stream after {got} of {len} body bytes");
        assert!(buf[..n] == expected[..n], "a body byte is not {fill:?}");
        got += n;
    }
}

#[test]
fn a_100_mb_reply_to_a_slow_reader_does_not_hold_up_other_connections() {
    let body = Arc::new(vec![b'x'; BIG]);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1) // one worker: the big write must not block it
        .spawn(move |req| match req.path() {
            // The handler's own copy; the server must not make another of it.
            "/big" => text_response(200, body.as_ref().clone()),
            _ => text_response(200, "small"),
        })
        .unwrap();
    let addr = server.local_addr();
    let mut most_held = 0;
    let sample = |most: &mut usize| *most = (*most).max(server.stats().held_bytes);

    let mut slow = Client::connect(addr);
    slow.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    wait_until(
        Duration::from_secs(10),
        "the reply waits for the reader",
        || server.stats().held_bytes > 0,
    );
    sample(&mut most_held);
    let head = read_head(&mut slow);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nContent-Length: {BIG}\r\n")),
        "{head}"
    );

    // While the slow reader takes a little now and then, another client is served at once.
    let mut other = Client::connect(addr);
    let mut slow_got = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let r = other.get("/small");
        let took = started.elapsed();
        assert_eq!((r.status, r.text().as_str()), (200, "small"));
        assert!(
            took < Duration::from_secs(1),
            "a small request took {took:?} behind the big reply"
        );
        sample(&mut most_held);
        for _ in 0..4 {
            read_body(&mut slow, 1024, 1024, b'x');
            slow_got += 1024;
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // A fresh connection too.
    let started = Instant::now();
    assert_eq!(Client::connect(addr).get("/fresh").status, 200);
    assert!(started.elapsed() < Duration::from_secs(1));

    // Now the slow reader takes the rest, all of it.
    let rest = BIG - slow_got;
    let mut took = 0;
    while took < rest {
        let n = (8 << 20).min(rest - took);
        read_body(&mut slow, n, 256 * 1024, b'x');
        took += n;
        sample(&mut most_held);
    }
    assert!(
        most_held < BIG + BIG / 2,
        "{most_held} bytes held for a {BIG}-byte reply: the body was copied"
    );
    // The reply is whole and nothing follows it; the connection is still usable.
    let r = slow.get("/after");
    assert_eq!(r.text(), "small");
    wait_until(Duration::from_secs(2), "no bytes are held", || {
        server.stats().held_bytes == 0
    });
}

#[test]
fn a_reader_that_takes_nothing_is_dropped_after_the_write_timeout() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .write_timeout(Duration::from_millis(300))
        .spawn(|_req| text_response(200, vec![b'w'; 32 << 20]))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    // The reactor's count of accepted connections moved (it only grows, and is published with
    // the open ones: on a loaded machine the 300 ms timeout may close the connection before a
    // look at the open ones would see it).
    wait_until(Duration::from_secs(5), "the connection is accepted", || {
        server.stats().connections == 1
    });
    // The client reads nothing: the socket fills, the write stalls, the timeout closes it.
    wait_until(
        Duration::from_secs(5),
        "the stalled connection is closed",
        || server.stats().open_connections == 0,
    );
    assert_eq!(server.stats().held_bytes, 0);
    // The client finds less than the whole reply, then the end (or a reset).
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("{e} after {total} bytes"),
        }
    }
    assert!(total < 32 << 20, "got the whole reply ({total} bytes)");
}

#[test]
fn a_slow_reader_that_keeps_taking_bytes_gets_the_whole_reply() {
    let size = 4 << 20;
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .write_timeout(Duration::from_millis(500))
        .spawn(move |_req| text_response(200, vec![b's'; size]))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /paced HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = read_head(&mut c);
    assert!(head.contains(&format!("\r\nContent-Length: {size}\r\n")));
    let started = Instant::now();
    let mut got = 0;
    while got < size {
        let n = (256 * 1024).min(size - got);
        read_body(&mut c, n, 64 * 1024, b's');
        got += n;
        std::thread::sleep(Duration::from_millis(25));
    }
    // Slower in all than the write timeout, each step well within it.
    assert!(started.elapsed() > Duration::from_millis(300));
    assert_eq!(c.get("/again").body.len(), size);
}

#[test]
fn requests_pipelined_behind_a_large_reply_are_answered_after_it_in_order() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(|req| match req.path() {
            "/big" => text_response(200, vec![b'g'; 8 << 20]),
            path => text_response(200, path.to_owned()),
        })
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    let mut batch = String::from("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    for i in 0..50 {
        batch.push_str(&format!("GET /{i} HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    batch.push_str("GET /big HTTP/1.1\r\nHost: t\r\n\r\nGET /end HTTP/1.1\r\nHost: t\r\n\r\n");
    c.send(batch);
    // Read only once the big reply waits for us, so the requests behind it wait for it.
    wait_until(
        Duration::from_secs(10),
        "the reply waits for the reader",
        || server.stats().held_bytes > 0,
    );
    let head = read_head(&mut c);
    assert!(head.contains("\r\nContent-Length: 8388608\r\n"), "{head}");
    read_body(&mut c, 8 << 20, 64 * 1024, b'g');
    for i in 0..50 {
        assert_eq!(c.reply().text(), format!("/{i}"));
    }
    assert_eq!(c.reply().body.len(), 8 << 20);
    assert_eq!(c.reply().text(), "/end");
    wait_until(Duration::from_secs(2), "no bytes are held", || {
        server.stats().held_bytes == 0
    });
}

#[test]
fn a_client_vanishing_mid_reply_frees_its_buffers_at_once() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .write_timeout(Duration::from_secs(30)) // not what closes it
        .spawn(|_req| text_response(200, vec![b'v'; 32 << 20]))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    read_head(&mut c);
    read_body(&mut c, 1 << 20, 64 * 1024, b'v');
    wait_until(Duration::from_secs(2), "the reply is held", || {
        server.stats().held_bytes > 0
    });
    drop(c); // unread bytes: the kernel resets the connection
    wait_until(
        Duration::from_secs(3),
        "the connection is closed and its buffers freed",
        || {
            let s = server.stats();
            s.open_connections == 0 && s.held_bytes == 0
        },
    );
    // And the server goes on.
    assert_eq!(
        Client::connect(server.local_addr())
            .get("/again")
            .body
            .len(),
        32 << 20
    );
}

#[test]
fn a_large_reply_with_connection_close_is_written_whole_before_the_close() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(|_req| text_response(200, vec![b'c'; 8 << 20]))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    // The socket fills before we read.
    wait_until(
        Duration::from_secs(10),
        "the reply waits for the reader",
        || server.stats().held_bytes > 0,
    );
    let head = read_head(&mut c);
    assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
    read_body(&mut c, 8 << 20, 64 * 1024, b'c');
    c.assert_eof();
}

#[test]
fn a_client_half_closing_behind_a_large_reply_still_gets_every_reply() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(|req| match req.path() {
            "/big" => text_response(200, vec![b'h'; 8 << 20]),
            path => text_response(200, path.to_owned()),
        })
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /a HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /big HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /b HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    c.stream.shutdown(std::net::Shutdown::Write).unwrap();
    // The end of the client's input is read while the big reply waits for it.
    wait_until(
        Duration::from_secs(10),
        "the reply waits for the reader",
        || server.stats().held_bytes > 0,
    );
    assert_eq!(c.reply().text(), "/a");
    assert_eq!(c.reply().body.len(), 8 << 20);
    assert_eq!(c.reply().text(), "/b");
    c.assert_eof();
}
