//! Many connections: 2 000 idle keep-alive connections cost no buffer and do not slow a fresh
//! request; past `max_connections`, new connections wait in the backlog.

use crate::wire;

use std::time::{Duration, Instant};

use web::http::{Server, text_response};
use wire::{Client, wait_until};

#[test]
fn two_thousand_idle_keep_alive_connections_hold_no_bytes_and_a_fresh_request_is_quick() {
    const IDLE: usize = 2000;
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|req| text_response(200, req.path().to_owned()))
        .unwrap();
    let addr = server.local_addr();
    let mut idle = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        let mut c = Client::connect(addr);
        let path = format!("/{i}");
        let r = c.get(&path);
        assert_eq!(r.text(), path);
        r.assert_keeps_alive();
        idle.push(c);
    }
    wait_until(
        Duration::from_secs(5),
        "all connections are open, parked and hold nothing",
        || {
            let s = server.stats();
            s.open_connections == IDLE && s.parked == IDLE && s.held_bytes == 0
        },
    );
    assert_eq!(server.stats().requests, IDLE as u64);

    let started = Instant::now();
    let r = Client::connect(addr).get("/fresh");
    let took = started.elapsed();
    assert_eq!(r.text(), "/fresh");
    assert!(
        took < Duration::from_secs(1),
        "a fresh request took {took:?} with {IDLE} idle connections"
    );

    // The idle ones are all still served.
    for (i, c) in idle.iter_mut().enumerate().step_by(97) {
        assert_eq!(c.get(&format!("/again/{i}")).status, 200);
    }
    drop(idle);
    wait_until(Duration::from_secs(5), "every connection is closed", || {
        server.stats().open_connections == 0
    });
}

#[test]
fn past_max_connections_a_new_connection_waits_until_one_closes() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_connections(2)
        .spawn(|req| text_response(200, req.path().to_owned()))
        .unwrap();
    let addr = server.local_addr();
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    assert_eq!(a.get("/a").text(), "/a");
    assert_eq!(b.get("/b").text(), "/b");

    // The kernel completes the handshake, but the server does not take the connection.
    let mut c = Client::connect(addr);
    c.send("GET /c HTTP/1.1\r\nHost: t\r\n\r\n");
    c.assert_silent_for(Duration::from_millis(300));
    assert_eq!(server.stats().open_connections, 2);

    let started = Instant::now();
    drop(a);
    let r = c.reply();
    assert_eq!(r.text(), "/c");
    assert!(started.elapsed() < Duration::from_secs(2));
    // The server still serves the one it kept.
    assert_eq!(b.get("/b2").text(), "/b2");
}

#[test]
fn every_request_carries_the_address_of_the_connection_it_came_on() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|req| text_response(200, format!("{:?}", req.peer())))
        .unwrap();
    let addr = server.local_addr();
    for from in [[127, 0, 0, 2], [127, 0, 0, 3]] {
        let mut c = Client::connect_from(from.into(), addr);
        let local = c.stream.local_addr().unwrap();
        // Every request of a keep-alive connection, the one after a wait included.
        for _ in 0..2 {
            assert_eq!(c.get("/").text(), format!("Some({local})"));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    server.shutdown().unwrap();
}

#[test]
fn an_ipv6_peer_is_read_from_the_socket_for_each_request() {
    // IPv6 peers do not fit the connection's 8 bytes: the server asks the socket.
    let server = Server::bind("[::1]:0")
        .expect("IPv6 loopback (::1) is needed by this test")
        .workers(1)
        .spawn(|req| text_response(200, format!("{:?}", req.peer())))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    let local = c.stream.local_addr().unwrap();
    assert!(local.is_ipv6());
    assert_eq!(c.get("/").text(), format!("Some({local})"));
    assert_eq!(c.get("/").text(), format!("Some({local})"));
    server.shutdown().unwrap();
}

#[test]
fn a_server_on_two_addresses_serves_both_with_every_worker_and_stops_both() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .also_bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|_req| text_response(200, "hi"))
        .unwrap();
    let addrs = server.local_addrs().to_vec();
    assert_eq!(addrs.len(), 2);
    assert_eq!(addrs[0], server.local_addr());
    for addr in &addrs {
        for _ in 0..8 {
            let mut c = Client::connect(*addr);
            assert_eq!(c.get("/").text(), "hi");
        }
    }
    wait_until(
        Duration::from_secs(10),
        "both addresses' requests are counted",
        || server.stats().requests == 16,
    );
    server.shutdown().unwrap();
    for addr in addrs {
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "{addr} served after the stop"
        );
    }
}

#[test]
fn a_further_address_already_in_use_is_refused() {
    let first = Server::bind("127.0.0.1:0").unwrap();
    let taken = first.local_addr().unwrap();
    let second = Server::bind("127.0.0.1:0").unwrap().also_bind(taken);
    assert_eq!(
        second.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::AddrInUse)
    );
}
