//! What a fleet must do whatever Redis it runs on (one server, a cluster): the same checks
//! for `fleet_redis.rs` and `fleet_cluster.rs`.

use std::time::Duration;

use web::fleet::{Fleet, LimitAcrossFleet};
use web::http::{Header, RateLimit, Request, text_response, wrap};

/// A caller's writes and reads alternating over two instances of one fleet (`fa`, `fb`) in one
/// wall-clock second are counted once: its allowance and at most one request more (the
/// documented bound), reads in their own bucket, another caller in its own.
pub fn a_caller_is_counted_once_across_two_instances(fa: &Fleet, fb: &Fleet) {
    let app = |f: &Fleet| {
        wrap(vec![RateLimit::new(5, 2, 1).fleet(f).layer()], |_req| {
            text_response(201, "")
        })
    };
    let (a, b) = (app(fa), app(fb));
    super::wait_until(Duration::from_secs(5), "both limiters connected", || {
        fa.stats().connections >= 1 && fb.stats().connections >= 1
    });
    let req = |method: &str, from: &str| {
        Request::new(method, "/", vec![Header::new("X-Forwarded-For", from)], "")
    };
    // Requests a Redis round trip apart: each instance decides at once on its own count and
    // what the other had counted as of its own last report, one step old — a caller spread
    // over two instances gets its allowance and at most one request more (README: the bound).
    let spaced = |f: &dyn Fn(Request) -> web::http::Response, r: Request| {
        let status = f(r).status;
        std::thread::sleep(Duration::from_millis(15));
        status
    };
    // 10 writes and 4 reads of one caller alternating over the two instances, and one write of
    // another caller, all in one wall-clock second.
    let (writes, reads, other) = super::within_one_second(|_| {
        let writes: Vec<u16> = (0..10)
            .map(|i| spaced([&a, &b][i % 2], req("POST", "10.0.0.1")))
            .collect();
        let reads: Vec<u16> = (0..4)
            .map(|i| spaced([&a, &b][i % 2], req("GET", "10.0.0.1")))
            .collect();
        (writes, reads, b(req("POST", "10.0.0.2")).status)
    });
    let admitted = writes.iter().filter(|&&s| s == 201).count();
    assert!((5..=6).contains(&admitted), "{writes:?}");
    assert!(writes[..5].iter().all(|&s| s == 201), "{writes:?}");
    assert!(writes[6..].iter().all(|&s| s == 429), "{writes:?}");
    let read = reads.iter().filter(|&&s| s == 201).count();
    assert!(
        (2..=3).contains(&read),
        "reads: their own bucket: {reads:?}"
    );
    assert_eq!(other, 201, "another caller: its own bucket");
    assert_eq!(fa.stats().local_decisions + fb.stats().local_decisions, 0);
}
