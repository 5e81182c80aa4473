//! The connection limit: beyond it new connections wait in the backlog, without spinning, until
//! one closes.
//!
//! This binary holds this one test only: it measures the process's CPU time.

mod common;

use std::time::Duration;

use common::{Client, cpu_time, start, wait_until};
use reactor::Config;

#[test]
fn connections_beyond_the_limit_wait_in_the_backlog_until_one_closes() {
    let handle = start(
        Config::default().workers(1).max_connections(3),
        Duration::from_secs(30),
    );
    let addr = handle.local_addr();
    let mut first: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();
    for (i, c) in first.iter_mut().enumerate() {
        assert_eq!(c.roundtrip(&format!("c{i}")), Some(format!("c{i}")));
    }
    let mut fourth = Client::connect(addr);
    fourth.send(b"fourth\n");
    let mut fifth = Client::connect(addr);
    fifth.send(b"fifth\n");

    let cpu = cpu_time();
    assert!(!fourth.closed_within(Duration::from_millis(500)));
    let mut more: Vec<Client> = (0..5).map(|_| Client::connect(addr)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let spent = cpu_time() - cpu;
    assert!(
        spent < Duration::from_millis(100),
        "no spinning: {spent:?} of CPU in 1 s"
    );
    assert_eq!(handle.stats().total.open, 3);
    assert_eq!(handle.stats().total.accepted, 3);

    // One closes: one waiting connection is accepted and served.
    drop(first.pop());
    assert_eq!(fourth.line().as_deref(), Some("fourth"));
    assert!(wait_until(Duration::from_secs(2), || handle
        .stats()
        .total
        .accepted
        == 4));
    assert_eq!(handle.stats().total.open, 3);
    drop(first);
    assert_eq!(fifth.line().as_deref(), Some("fifth"));
    for c in more.iter_mut().take(1) {
        assert_eq!(c.roundtrip("more").as_deref(), Some("more"));
    }
    handle.shutdown().expect("shutdown");
}
