//! A graceful stop and WebSocket peers: every peer is sent 1001 at once; a stop whose peers all
//! answer returns promptly, and one with a peer that never answers waits briefly for it (the
//! close timeout, bounded by the stop's linger, 250 ms — not once per peer).

use crate::wire;

use std::time::{Duration, Instant};

use web::http::{Server, text_response};
use web::ws::{FIXED_MASK, OP_CLOSE, write_frame};
use wire::ws::{Client, Echo};

fn server(close_timeout: Duration) -> web::http::ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .close_timeout(close_timeout)
        .websocket("/", Echo)
        .spawn(|_req| text_response(404, ""))
        .unwrap()
}

/// Reads the server's close frame (1001) and answers it, as a well-behaved peer does.
fn answer_close(peer: &mut Client) {
    let (first, payload) = peer.frame();
    assert_eq!(first, 0x80 | OP_CLOSE);
    assert_eq!(payload[..2], 1001u16.to_be_bytes());
    let mut reply = Vec::new();
    write_frame(&mut reply, 0x80 | OP_CLOSE, &payload[..2], Some(FIXED_MASK));
    peer.send(&reply);
    peer.expect_eof();
}

#[test]
fn a_stop_whose_peers_all_answer_returns_promptly() {
    let handle = server(Duration::from_secs(5));
    let port = handle.local_addr().port();
    let mut peers: Vec<Client> = (0..6).map(|_| Client::connect(port)).collect();
    let started = Instant::now();
    let answering = std::thread::spawn(move || {
        for p in &mut peers {
            answer_close(p);
        }
    });
    handle.shutdown().unwrap();
    let took = started.elapsed();
    answering.join().unwrap();
    assert!(took < Duration::from_secs(2), "the stop took {took:?}");
}

#[test]
fn silent_peers_are_waited_for_briefly_once_not_each_whatever_the_close_timeout() {
    for close_timeout in [Duration::from_millis(150), Duration::from_secs(30)] {
        let handle = server(close_timeout);
        let port = handle.local_addr().port();
        let peers: Vec<Client> = (0..6).map(|_| Client::connect(port)).collect();
        let started = Instant::now();
        handle.shutdown().unwrap();
        let took = started.elapsed();
        let waited = close_timeout.min(Duration::from_millis(250));
        assert!(
            took >= waited - Duration::from_millis(20),
            "the stop took {took:?}"
        );
        assert!(took < Duration::from_millis(2000), "the stop took {took:?}");
        drop(peers);
    }
}
