//! `examples/axum_on_web`: the router and `web`'s live routes on one port.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::ask;
use super::examples::serving;

#[test]
fn an_order_posted_to_the_router_reaches_the_live_stream_on_the_same_port() {
    let (mut child, port, _stderr) = serving(
        "axum_on_web",
        &[],
        "axum_on_web: listening on http://127.0.0.1:",
    );
    let mut live = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    live.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("a timeout");
    live.write_all(b"GET /live HTTP/1.1\r\nHost: a\r\n\r\n")
        .expect("asks");
    let mut got = Vec::new();
    let mut buf = [0; 1024];
    // The stream's head first: it has joined the room.
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = live.read(&mut buf).expect("the head");
        assert!(n > 0, "the stream ended");
        got.extend_from_slice(&buf[..n]);
    }
    let url = format!("http://127.0.0.1:{port}/api/orders");
    let json = [("content-type", "application/json")];
    let created = ask("POST", &url, &json, r#"{"item":"green tea"}"#);
    assert_eq!(
        (created.status(), created.text()),
        (201, r#"{"id":1,"item":"green tea"}"#.to_owned())
    );
    while !String::from_utf8_lossy(&got).contains("data: order 1: green tea") {
        let n = live.read(&mut buf).expect("the event");
        assert!(n > 0, "the stream ended: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let one = ask("GET", &format!("{url}/1"), &[], "");
    assert_eq!(one.text(), r#"{"id":1,"item":"green tea"}"#);
    assert_eq!(ask("GET", &format!("{url}/2"), &[], "").status(), 404);
    let _ = child.kill();
    let _ = child.wait();
}
