//! Deadlines: an idle timeout fires on time; activity moves it and it does not fire early.

mod common;

use std::time::{Duration, Instant};

use common::{Client, start, wait_until};
use reactor::Config;

#[test]
fn idle_timeout_closes_the_connection_on_time() {
    let idle = Duration::from_millis(300);
    let handle = start(Config::default().workers(1), idle);
    let mut c = Client::connect(handle.local_addr());
    assert_eq!(c.roundtrip("hello").as_deref(), Some("hello"));
    let since = Instant::now();
    assert!(
        c.closed_within(Duration::from_secs(3)),
        "closed by the idle timeout"
    );
    let took = since.elapsed();
    assert!(
        took >= idle - Duration::from_millis(20),
        "not early: {took:?}"
    );
    assert!(
        took <= idle + Duration::from_millis(400),
        "not much late: {took:?}"
    );
    assert!(wait_until(Duration::from_secs(2), || handle
        .stats()
        .total
        .open
        == 0));
}

#[test]
fn activity_moves_the_deadline_and_it_does_not_fire_early() {
    let idle = Duration::from_millis(400);
    let handle = start(Config::default().workers(1), idle);
    let mut c = Client::connect(handle.local_addr());
    let since = Instant::now();
    // Five lines 200 ms apart: 1 s in all, more than twice the idle time.
    for i in 0..5 {
        assert_eq!(c.roundtrip(&format!("tick {i}")), Some(format!("tick {i}")));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(since.elapsed() > idle * 2);
    assert_eq!(c.roundtrip("still open").as_deref(), Some("still open"));
    let last = Instant::now();
    assert!(c.closed_within(Duration::from_secs(3)));
    let took = last.elapsed();
    assert!(
        took >= idle - Duration::from_millis(20),
        "not early: {took:?}"
    );
    assert!(
        took <= idle + Duration::from_millis(400),
        "not much late: {took:?}"
    );
}

#[test]
fn many_deadlines_fire_each_once() {
    let idle = Duration::from_millis(200);
    let handle = start(Config::default().workers(2), idle);
    let mut clients: Vec<Client> = (0..100)
        .map(|_| Client::connect(handle.local_addr()))
        .collect();
    for c in clients.iter_mut() {
        assert_eq!(c.roundtrip("x").as_deref(), Some("x"));
    }
    for c in clients.iter_mut() {
        assert!(c.closed_within(Duration::from_secs(3)));
    }
    assert!(wait_until(Duration::from_secs(2), || handle
        .stats()
        .total
        .open
        == 0));
    assert_eq!(handle.stats().total.held_bytes, 0);
}
