//! The header-read timeout (408, then close) and the keep-alive idle timeout (closed quietly).

use crate::wire;

use std::io::Write;
use std::time::{Duration, Instant};

use web::http::{Server, ServerHandle};
use wire::{Client, echo};

const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
const IDLE_TIMEOUT: Duration = Duration::from_millis(300);
/// Slack for a loaded machine: a timeout must fire within this much after it is due.
const LATE: Duration = Duration::from_secs(2);

fn start(header_timeout: Duration, idle_timeout: Duration) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .header_timeout(header_timeout)
        .idle_timeout(idle_timeout)
        .spawn(echo)
        .unwrap()
}

fn assert_between(elapsed: Duration, low: Duration, high: Duration) {
    assert!(
        low <= elapsed && elapsed <= high,
        "took {elapsed:?}, expected between {low:?} and {high:?}"
    );
}

/// Reads a 408 with `Connection: close` and then the end of the stream.
fn assert_timed_out(c: &mut Client) {
    let r = c.reply();
    assert_eq!(r.status, 408, "{r:?}");
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn a_half_sent_head_gets_408_after_the_header_timeout_and_the_connection_closes() {
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    let started = Instant::now();
    c.send("GET /half HTTP/1.1\r\nHost: t\r\nX-Par");
    assert_timed_out(&mut c);
    assert_between(started.elapsed(), HEADER_TIMEOUT, HEADER_TIMEOUT + LATE);
}

#[test]
fn a_head_trickling_in_slower_than_the_header_timeout_gets_408() {
    // The header timeout bounds the whole head, not the gap between two reads.
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    let started = Instant::now();
    for line in [
        "GET /slow HTTP/1.1\r\n",
        "Host: t\r\n",
        "X-1: a\r\n",
        "X-2: b\r\n",
        "X-3: c\r\n",
        "X-4: d\r\n",
        "X-5: e\r\n",
        "X-6: f\r\n",
    ] {
        // The server may have refused and shut its side already: then the writes just go
        // to its lingering read.
        let _ = c.stream.write_all(line.as_bytes());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_timed_out(&mut c);
    assert!(started.elapsed() >= HEADER_TIMEOUT);
}

#[test]
fn a_stalled_body_gets_408() {
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    let started = Instant::now();
    c.send("POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n012");
    assert_timed_out(&mut c);
    assert_between(started.elapsed(), HEADER_TIMEOUT, HEADER_TIMEOUT + LATE);
}

#[test]
fn a_body_that_keeps_arriving_is_not_cut_by_the_header_timeout() {
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    c.send("POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 8192\r\n\r\n");
    let started = Instant::now();
    // 1 KiB every 150 ms: each piece extends the deadline by another header timeout.
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(150));
        c.send([b'z'; 1024]);
    }
    assert!(started.elapsed() > HEADER_TIMEOUT * 3);
    let r = c.reply();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.text().ends_with(&"z".repeat(8192)));
}

#[test]
fn a_body_trickling_below_the_minimum_rate_gets_408() {
    // Regression: every read of a body used to restart the timer, so a byte now and then held
    // the connection forever. Extensions now need 1 KiB of progress each.
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    c.send("POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
    let started = Instant::now();
    for byte in b"0123456789" {
        std::thread::sleep(Duration::from_millis(100));
        if c.try_send([*byte]).is_err() {
            break;
        }
    }
    assert_timed_out(&mut c);
    assert!(
        started.elapsed() < HEADER_TIMEOUT * 4,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_idle_keep_alive_connection_is_closed_quietly_after_the_idle_timeout() {
    let server = start(Duration::from_secs(30), IDLE_TIMEOUT);
    let mut c = Client::connect(server.local_addr());
    // Before the request: the server's idle time starts once its reply is written, which may
    // be a moment before this thread has read it.
    let idle_since = Instant::now();
    let r = c.get("/once");
    assert_eq!(r.status, 200);
    r.assert_keeps_alive();
    c.assert_eof(); // no 408, no bytes at all
    assert_between(idle_since.elapsed(), IDLE_TIMEOUT, IDLE_TIMEOUT + LATE);
}

#[test]
fn a_connection_that_never_sends_a_byte_is_closed_quietly_after_the_idle_timeout() {
    let server = start(Duration::from_secs(30), IDLE_TIMEOUT);
    let mut c = Client::connect(server.local_addr());
    let started = Instant::now();
    c.assert_eof();
    assert_between(started.elapsed(), IDLE_TIMEOUT, IDLE_TIMEOUT + LATE);
}

#[test]
fn each_request_restarts_the_idle_timeout() {
    let server = start(Duration::from_secs(30), IDLE_TIMEOUT);
    let mut c = Client::connect(server.local_addr());
    let started = Instant::now();
    for i in 0..5 {
        std::thread::sleep(IDLE_TIMEOUT / 2);
        assert_eq!(c.get(&format!("/{i}")).status, 200);
    }
    assert!(started.elapsed() > IDLE_TIMEOUT * 2);
}

#[test]
fn an_idle_keep_alive_connection_is_not_cut_by_the_header_timeout() {
    let header_timeout = Duration::from_millis(150);
    let server = start(header_timeout, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/a").status, 200);
    c.assert_silent_for(header_timeout * 3);
    assert_eq!(c.get("/b").status, 200);
}

#[test]
fn a_partial_request_pipelined_behind_a_complete_one_gets_408() {
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    let started = Instant::now();
    c.send("GET /whole HTTP/1.1\r\nHost: t\r\n\r\nGET /part HTTP/1.1\r\nHo");
    let r = c.reply();
    assert!(r.text().starts_with("GET /whole\n"));
    r.assert_keeps_alive();
    assert_timed_out(&mut c);
    assert_between(started.elapsed(), HEADER_TIMEOUT, HEADER_TIMEOUT + LATE);
}

#[test]
fn an_empty_line_after_a_request_does_not_start_the_header_timeout() {
    // RFC 9112 §2.2: a server ignores empty lines before a request line; some clients send a
    // CRLF after a POST body. That is not the start of a request that must finish in time.
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    c.send("POST /p HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok\r\n");
    assert_eq!(c.reply().status, 200);
    c.assert_silent_for(HEADER_TIMEOUT * 3);
    assert!(c.get("/next").text().starts_with("GET /next\n"));
}

#[test]
fn empty_lines_before_a_request_line_are_ignored() {
    let server = start(HEADER_TIMEOUT, Duration::from_secs(30));
    let mut c = Client::connect(server.local_addr());
    c.send("\r\n\r\nGET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(c.reply().text().starts_with("GET /x\n"));
}
