//! Graceful shutdown: stop accepting, close idle connections, let in-flight lines finish,
//! close the rest at the drain deadline, join.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Client, start};
use reactor::Config;

const IDLE: Duration = Duration::from_secs(30);

#[test]
fn shutdown_closes_idle_connections_and_lets_a_partial_line_finish() {
    let handle = start(
        Config::default()
            .workers(2)
            .drain_deadline(Duration::from_secs(5)),
        IDLE,
    );
    let addr = handle.local_addr();
    let mut idle = Client::connect(addr);
    assert_eq!(idle.roundtrip("idle").as_deref(), Some("idle"));
    let mut busy = Client::connect(addr);
    assert_eq!(busy.roundtrip("first").as_deref(), Some("first"));
    busy.send(b"hal");
    // Let the worker read the partial line before shutdown starts.
    assert!(common::wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .held_bytes
        > 0));
    let since = Instant::now();
    let joiner = std::thread::spawn(move || handle.shutdown());
    assert!(
        idle.closed_within(Duration::from_secs(3)),
        "idle closed at once"
    );
    assert!(since.elapsed() < Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !joiner.is_finished(),
        "shutdown waits for the busy connection"
    );
    busy.send(b"f\n");
    assert_eq!(busy.line().as_deref(), Some("half"));
    assert!(
        busy.closed_within(Duration::from_secs(3)),
        "closed once its line is done"
    );
    joiner.join().expect("join").expect("shutdown");
    assert!(since.elapsed() < Duration::from_secs(4));
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "no longer accepting"
    );
}

#[test]
fn shutdown_closes_what_is_left_at_the_drain_deadline() {
    let deadline = Duration::from_millis(300);
    let handle = start(Config::default().workers(1).drain_deadline(deadline), IDLE);
    let mut stuck = Client::connect(handle.local_addr());
    stuck.send(b"never finished");
    assert!(common::wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .held_bytes
        > 0));
    let since = Instant::now();
    handle.shutdown().expect("shutdown");
    let took = since.elapsed();
    assert!(
        took >= deadline - Duration::from_millis(20),
        "waited: {took:?}"
    );
    assert!(
        took < deadline + Duration::from_secs(1),
        "not longer: {took:?}"
    );
    assert!(stuck.closed_within(Duration::from_secs(1)));
}

#[test]
fn dropping_the_handle_shuts_down() {
    let handle = start(Config::default().workers(2), IDLE);
    let mut c = Client::connect(handle.local_addr());
    assert_eq!(c.roundtrip("x").as_deref(), Some("x"));
    drop(handle);
    assert!(c.closed_within(Duration::from_secs(1)));
}

#[test]
fn run_returns_after_a_remote_shutdown() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let reactor = reactor::Reactor::new(listener, Config::default().workers(2), |_| {
        common::EchoService { idle: IDLE }
    })
    .expect("reactor");
    let remote = reactor.remote();
    let addr = reactor.local_addr();
    let runner = std::thread::spawn(move || reactor.run());
    let mut c = Client::connect(addr);
    assert_eq!(c.roundtrip("x").as_deref(), Some("x"));
    remote.shutdown();
    assert!(common::wait_until(Duration::from_secs(3), || runner.is_finished()));
    runner.join().expect("join").expect("run");
    assert!(!remote.send(reactor::ConnId::from_parts(0, 0, 0), Vec::new()));
}
