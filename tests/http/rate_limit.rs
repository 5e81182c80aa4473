//! The rate limiter on a real server over 127.0.0.1: the specification's example, the 429's
//! shape on the wire, buckets per caller that forged headers cannot escape, and exact counts
//! across workers.
//!
//! The window is one second of the limiter's clock: the tests set a clock of their own
//! (`RateLimit::clock`) that stands still, or steps when they say. The specification's
//! functions, which count by the wall clock, are tested in the one second a sequence fits in
//! (run again if the second changed while it ran).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::wire;

use web::http::{
    Header, Layer, RateLimit, Server, ServerHandle, ask, header_in, json_response,
    parse_reply_head, rate_limit, rate_limits, response_body, status_of, text_response, wrap,
};

/// A clock for a limiter that shows `second` until it is changed.
fn clock(second: &Arc<AtomicU64>) -> impl Fn() -> Duration + Send + Sync + 'static {
    let second = Arc::clone(second);
    move || Duration::from_secs(second.load(Ordering::Relaxed))
}

/// A clock that stands still.
fn still() -> impl Fn() -> Duration + Send + Sync + 'static {
    || Duration::from_secs(1_000)
}

/// A server with `workers` workers answering 200 behind `limiter`.
fn limited(limiter: Layer, workers: usize) -> (ServerHandle, u16) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(workers)
        .spawn(wrap(vec![limiter], |_req| text_response(200, "ok")))
        .unwrap();
    let port = server.local_addr().port();
    (server, port)
}

fn status(port: u16, method: &str, headers: &[Header]) -> u16 {
    let reply = ask("127.0.0.1", port, method, "/", headers, b"").unwrap();
    status_of(&reply).unwrap()
}

fn forwarded(value: &str) -> Vec<Header> {
    vec![Header::new("X-Forwarded-For", value)]
}

#[test]
fn specification_example_get_200_post_200_second_post_429() {
    let (_server, port) = limited(rate_limits(1, 100, 0), 2);
    let statuses = wire::within_one_second(|_| {
        [
            status(port, "GET", &[]),
            status(port, "POST", &[]),
            status(port, "POST", &[]),
        ]
    });
    assert_eq!(statuses, [200, 200, 429]);
}

#[test]
fn rate_limit_on_the_wall_clock_shares_one_bucket_of_writes() {
    let (_server, port) = limited(rate_limit(2), 2);
    let statuses = wire::within_one_second(|_| {
        [
            status(port, "GET", &[]),
            status(port, "POST", &forwarded("1.1.1.1")),
            status(port, "PUT", &forwarded("2.2.2.2")),
            status(port, "DELETE", &forwarded("3.3.3.3")),
        ]
    });
    assert_eq!(statuses, [200, 200, 200, 429]);
}

#[test]
fn rate_limit_limits_writes_of_all_callers_together_and_never_reads() {
    // `rate_limit(2)` is these settings, on the wall clock.
    let (_server, port) = limited(RateLimit::writes_only(2).clock(still()).layer(), 2);
    let mut statuses = vec![];
    for _ in 0..20 {
        statuses.push(status(port, "GET", &[]));
    }
    statuses.push(status(port, "POST", &forwarded("1.1.1.1")));
    statuses.push(status(port, "PUT", &forwarded("2.2.2.2")));
    statuses.push(status(port, "DELETE", &forwarded("3.3.3.3")));
    statuses.push(status(port, "HEAD", &[]));
    let mut want = vec![200; 20];
    want.extend([200, 200, 429, 200]);
    assert_eq!(statuses, want);
}

#[test]
fn over_the_allowance_the_reply_is_429_with_retry_after_1_and_a_text_body() {
    let (_server, port) = limited(rate_limits(0, 0, 0), 1);
    let reply = ask("127.0.0.1", port, "POST", "/", &[], b"data").unwrap();
    let head = parse_reply_head(&reply).unwrap().unwrap();
    assert_eq!(head.status, 429);
    assert_eq!(header_in(&head.headers, "retry-after"), "1");
    assert_eq!(header_in(&head.headers, "content-type"), "text/plain");
    let body = response_body(&reply).unwrap();
    assert!(
        (10..100).contains(&body.len()) && body.ends_with(b"\n"),
        "{body:?}"
    );
    assert!(
        String::from_utf8(body)
            .unwrap()
            .contains("Too Many Requests")
    );
}

#[test]
fn a_json_api_refuses_with_its_own_json_429_and_retry_after_1() {
    let json = r#"{"error":"too many requests","retry_after":1}"#;
    let limiter = RateLimit::new(1, 100, 0)
        .refusal(json_response(429, json))
        .clock(still())
        .layer();
    let (_server, port) = limited(limiter, 1);
    let replies = [
        ask("127.0.0.1", port, "POST", "/", &[], b"a").unwrap(),
        ask("127.0.0.1", port, "POST", "/", &[], b"b").unwrap(),
    ];
    assert_eq!(status_of(&replies[0]).unwrap(), 200);
    let head = parse_reply_head(&replies[1]).unwrap().unwrap();
    assert_eq!(head.status, 429);
    assert_eq!(header_in(&head.headers, "content-type"), "application/json");
    assert_eq!(header_in(&head.headers, "retry-after"), "1");
    assert_eq!(response_body(&replies[1]).unwrap(), json.as_bytes());
}

#[test]
fn callers_named_by_x_forwarded_for_have_separate_buckets_that_forged_entries_cannot_escape() {
    let (_server, port) = limited(RateLimit::new(1, 100, 1).clock(still()).layer(), 2);
    let statuses = [
        // The proxy appended 127.0.0.2: its first write passes.
        status(port, "POST", &forwarded("127.0.0.2")),
        // The same caller with forged entries on the left is still 127.0.0.2.
        status(port, "POST", &forwarded("1.2.3.4, 127.0.0.2")),
        status(port, "POST", &forwarded("127.0.0.3, 127.0.0.2")),
        // Another caller has its own bucket.
        status(port, "POST", &forwarded("127.0.0.2, 127.0.0.3")),
        status(port, "POST", &forwarded("127.0.0.3")),
        // No header: fewer entries than hops, one shared bucket, not unlimited.
        status(port, "POST", &[]),
        status(port, "POST", &[]),
        // Reads are a bucket of their own.
        status(port, "GET", &forwarded("127.0.0.2")),
    ];
    assert_eq!(statuses, [200, 429, 429, 200, 429, 200, 429, 200]);
}

/// POSTs from the loopback address `from`, over a connection of its own; the status.
fn post_from(from: [u8; 4], port: u16, headers: &str) -> u16 {
    let addr = ([127, 0, 0, 1], port).into();
    let mut c = wire::Client::connect_from(from.into(), addr);
    c.send(format!(
        "POST / HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 0\r\n\r\n"
    ));
    c.reply().status
}

#[test]
fn callers_on_different_addresses_get_allowances_of_their_own_without_any_header() {
    let (_server, port) = limited(RateLimit::per_address(1, 100).clock(still()).layer(), 2);
    let statuses = [
        post_from([127, 0, 0, 2], port, ""),
        post_from([127, 0, 0, 2], port, ""),
        post_from([127, 0, 0, 3], port, ""),
        // A header of the client's own changes nothing: no proxy is trusted.
        post_from([127, 0, 0, 3], port, "X-Forwarded-For: 9.9.9.9\r\n"),
    ];
    assert_eq!(statuses, [200, 429, 200, 429]);
}

#[test]
fn behind_trusted_proxies_the_forwarded_address_counts_and_a_direct_caller_is_its_peer() {
    let limiter = RateLimit::per_address(1, 100).clock(still()).layer();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .proxies(1)
        .spawn(wrap(vec![limiter], |req| {
            text_response(200, format!("{:?}", req.client_addr()))
        }))
        .unwrap();
    let port = server.local_addr().port();
    let statuses = [
        // Through the proxy on 127.0.0.2: the callers it names.
        post_from([127, 0, 0, 2], port, "X-Forwarded-For: 10.0.0.1\r\n"),
        post_from(
            [127, 0, 0, 2],
            port,
            "X-Forwarded-For: 6.6.6.6, 10.0.0.1\r\n",
        ),
        post_from([127, 0, 0, 2], port, "X-Forwarded-For: 10.0.0.2\r\n"),
        // A caller reaching the server directly, without the header: its own address.
        post_from([127, 0, 0, 4], port, ""),
        post_from([127, 0, 0, 4], port, ""),
    ];
    assert_eq!(statuses, [200, 429, 200, 200, 429]);
    server.shutdown().unwrap();
}

#[test]
fn a_forwarded_address_from_a_peer_that_is_not_a_trusted_proxy_is_ignored() {
    let limiter = RateLimit::per_address(1, 100).clock(still()).layer();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .trust_proxies(["127.0.0.2/32"], 1)
        .unwrap()
        .spawn(wrap(vec![limiter], |req| {
            text_response(200, format!("{:?}", req.client_addr()))
        }))
        .unwrap();
    let port = server.local_addr().port();
    // A caller that names a new address in each request is still itself: one write a
    // second, the rest 429 (it would be let through every time were the header believed).
    let made_up: Vec<u16> = (0..20)
        .map(|i| {
            post_from(
                [127, 0, 0, 3],
                port,
                &format!("X-Forwarded-For: 10.9.0.{i}\r\n"),
            )
        })
        .collect();
    assert_eq!(made_up[0], 200);
    assert!(made_up[1..].iter().all(|&s| s == 429), "{made_up:?}");
    // The trusted proxy's forwarded callers are told apart.
    let proxied = [
        post_from([127, 0, 0, 2], port, "X-Forwarded-For: 10.0.0.1\r\n"),
        post_from([127, 0, 0, 2], port, "X-Forwarded-For: 10.0.0.2\r\n"),
        post_from([127, 0, 0, 2], port, "X-Forwarded-For: 10.0.0.1\r\n"),
    ];
    assert_eq!(proxied, [200, 200, 429]);
    server.shutdown().unwrap();
}

#[test]
fn proxies_alone_trusts_proxies_on_this_host() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .proxies(1)
        .spawn(|req: web::http::Request| text_response(200, format!("{:?}", req.client_addr())))
        .unwrap();
    let addr = ([127, 0, 0, 1], server.local_addr().port()).into();
    let mut c = wire::Client::connect_from([127, 0, 0, 5].into(), addr);
    c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.0.0.7\r\n\r\n");
    assert_eq!(c.reply().text(), "Some(10.0.0.7)");
    server.shutdown().unwrap();
}

#[test]
fn exactly_the_allowance_passes_per_caller_across_4_workers_and_8_concurrent_clients() {
    const CALLERS: usize = 8;
    const THREADS: usize = 8;
    const PER_THREAD: usize = 25; // 200 requests, 25 per caller
    const WRITES: u32 = 5;
    // The handler counts its calls per caller.
    let calls: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let counted = Arc::clone(&calls);
    let limiter = RateLimit::new(WRITES, 1, 1).clock(still()).layer();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(4)
        .spawn(wrap(vec![limiter], move |req| {
            let caller = web::http::client_of(&req, 1).to_owned();
            *counted.lock().unwrap().entry(caller).or_default() += 1;
            text_response(200, "ok")
        }))
        .unwrap();
    let port = server.local_addr().port();

    let statuses = {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                thread::spawn(move || {
                    // Each thread sends for every caller in turn, each request on a new
                    // connection, so one caller's requests reach every worker.
                    (0..PER_THREAD)
                        .map(|i| {
                            let caller = format!("10.0.0.{}", (t + i) % CALLERS);
                            let via = forwarded(&format!("6.6.6.{i}, {caller}"));
                            (caller, status(port, "POST", &via))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect::<Vec<(String, u16)>>()
    };

    assert_eq!(statuses.len(), THREADS * PER_THREAD);
    let mut passed: HashMap<&str, u32> = HashMap::new();
    for (caller, status) in &statuses {
        assert!(matches!(status, 200 | 429), "{status}");
        *passed.entry(caller).or_default() += u32::from(*status == 200);
    }
    assert_eq!(passed.len(), CALLERS);
    for (caller, n) in &passed {
        assert_eq!(*n, WRITES, "caller {caller}: {n} writes passed");
    }
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), CALLERS, "{calls:?}");
    for (caller, n) in calls.iter() {
        assert_eq!(*n, WRITES, "handler calls for {caller}");
    }
    drop(calls);
    server.shutdown().unwrap();
}

#[test]
fn exactly_the_allowance_passes_for_one_shared_bucket_across_4_workers() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 25;
    const WRITES: u32 = 37;
    let (server, port) = limited(RateLimit::writes_only(WRITES).clock(still()).layer(), 4);
    let statuses = {
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                thread::spawn(move || {
                    (0..PER_THREAD)
                        .map(|_| status(port, "POST", &[]))
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect::<Vec<u16>>()
    };
    let passed = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!(
        (passed, refused),
        (WRITES as usize, THREADS * PER_THREAD - WRITES as usize)
    );
    server.shutdown().unwrap();
}

#[test]
fn each_second_of_the_clock_brings_a_new_allowance_on_every_worker() {
    let second = Arc::new(AtomicU64::new(5));
    let limiter = RateLimit::new(2, 100, 1).clock(clock(&second)).layer();
    let (server, port) = limited(limiter, 2);
    let burst = || -> Vec<u16> {
        (0..4)
            .map(|_| status(port, "POST", &forwarded("10.1.1.1")))
            .collect()
    };
    assert_eq!(burst(), [200, 200, 429, 429]);
    assert_eq!(burst(), [429; 4], "the same second: nothing left");
    second.store(6, Ordering::Relaxed);
    assert_eq!(burst(), [200, 200, 429, 429], "the next second");
    second.store(9, Ordering::Relaxed);
    assert_eq!(burst(), [200, 200, 429, 429], "seconds later");
    server.shutdown().unwrap();
}
