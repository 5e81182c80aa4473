//! Request bodies: by Content-Length and chunked, arriving whole or in pieces, and
//! `Expect: 100-continue`.

use crate::wire;

use std::time::Duration;

use web::http::{Server, ServerHandle};
use wire::{Client, echo};

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

fn start() -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_body(1000)
        .spawn(echo)
        .unwrap()
}

#[test]
fn a_chunked_body_reaches_the_handler_de_chunked_without_extensions_or_trailers() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send(
        "POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
         3;name=value\r\nabc\r\n\
         4;flag;quoted=\"a b\"\r\ndefg\r\n\
         A\r\n0123456789\r\n\
         0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n\
         GET /next HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = c.reply();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.text(),
        "POST /up\nhost: t\ntransfer-encoding: chunked\n\nabcdefg0123456789",
        "trailers are not headers, extensions are not data"
    );
    // The request right behind the trailers is read from the right byte.
    assert!(c.reply().text().starts_with("GET /next\n"));
}

#[test]
fn a_chunked_body_arriving_in_pieces_is_reassembled() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    let pieces = [
        "POST /p HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
        "5\r",
        "\nhel",
        "lo\r\n",
        "6\r\n world\r",
        "\n0\r\n",
        "\r\n",
    ];
    for piece in pieces {
        c.send(piece);
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = c.reply();
    assert!(r.text().ends_with("\n\nhello world"), "{r:?}");
    r.assert_keeps_alive();
}

#[test]
fn a_content_length_body_arriving_in_pieces_is_reassembled() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n");
    std::thread::sleep(Duration::from_millis(30));
    c.send("01234");
    std::thread::sleep(Duration::from_millis(30));
    c.assert_silent_for(Duration::from_millis(50));
    c.send("56789GET /after HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.reply();
    assert!(r.text().ends_with("\n\n0123456789"), "{r:?}");
    assert!(c.reply().text().starts_with("GET /after\n"));
}

#[test]
fn a_body_is_binary_safe() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    let body: Vec<u8> = (0..=255u8).collect();
    c.send(format!(
        "POST /bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    c.send(&body);
    let r = c.reply();
    assert!(r.body.ends_with(&body));
}

#[test]
fn expect_100_continue_gets_the_interim_reply_before_the_body_is_sent() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.exact(CONTINUE.len()), CONTINUE);
    c.assert_silent_for(Duration::from_millis(50));
    c.send("hello");
    let r = c.reply();
    assert_eq!(r.status, 200);
    assert!(r.text().ends_with("expect: 100-continue\n\nhello"), "{r:?}");
    r.assert_keeps_alive();
    // The connection goes on as usual.
    assert!(c.get("/next").text().starts_with("GET /next\n"));
}

#[test]
fn expect_100_continue_works_with_a_chunked_body() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send(
        "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
    );
    assert_eq!(c.exact(CONTINUE.len()), CONTINUE);
    c.send("2\r\nok\r\n0\r\n\r\n");
    let r = c.reply();
    assert!(r.text().ends_with("\n\nok"), "{r:?}");
}

#[test]
fn expect_100_continue_from_http10_gets_no_interim_reply() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /old HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
    c.assert_silent_for(Duration::from_millis(150));
    c.send("hi");
    let r = c.reply();
    assert_eq!(r.status, 200);
    assert!(r.text().ends_with("\n\nhi"));
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn expect_100_continue_without_a_body_gets_the_final_reply_directly() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /nobody HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n");
    let r = c.reply();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.text().starts_with("GET /nobody\n"));
}

#[test]
fn expect_100_continue_pipelined_behind_another_request_still_gets_its_100() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send(
        "GET /first HTTP/1.1\r\nHost: t\r\n\r\n\
         PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
    );
    assert!(c.reply().text().starts_with("GET /first\n"));
    assert_eq!(c.exact(CONTINUE.len()), CONTINUE);
    c.send("abc");
    assert!(c.reply().text().ends_with("\n\nabc"));
}

#[test]
fn an_empty_chunked_body_is_an_empty_body() {
    let server = start();
    let mut c = Client::connect(server.local_addr());
    c.send("POST /e HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    let r = c.reply();
    assert_eq!(r.text(), "POST /e\nhost: t\ntransfer-encoding: chunked\n\n");
    r.assert_keeps_alive();
}
