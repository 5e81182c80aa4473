//! The HTTP client's requests by URL (`Client::request` → `ClientResponse`): every method over
//! one kept-alive connection, typed responses (chunked bodies decoded, HEAD), the idle set's
//! bounds (per host, in time), and the retry rule — a reused connection the server had closed
//! is replaced for an idempotent request only.

use crate::wire;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use web::http::{Client, Request, Server, ServerHandle, defer, text_response, with_header};
use wire::wait_until;

/// The server's accepted connections once its figures have caught up (they are published once
/// per loop turn of its worker).
fn connections_become(handle: &ServerHandle, n: u64, what: &str) {
    wait_until(Duration::from_secs(5), what, || {
        handle.stats().connections >= n
    });
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(handle.stats().connections, n, "{what}");
}

/// Echoes `METHOD path body`; `/chunked` streams its body; `/close` asks to close; counts
/// POSTs.
fn server(idle_timeout: Duration, posts: Arc<AtomicUsize>) -> (ServerHandle, String) {
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .idle_timeout(idle_timeout)
        .spawn(move |req: Request| match req.path() {
            "/chunked" => {
                let (reply, later) = defer();
                std::thread::spawn(move || {
                    let mut body = reply.stream(text_response(200, "")).unwrap();
                    body.write_all(b"in ").unwrap();
                    body.write_all(b"pieces").unwrap();
                    body.finish().unwrap();
                });
                later
            }
            "/close" => with_header(text_response(200, "bye"), "Connection", "close"),
            path => {
                if req.method() == "POST" {
                    posts.fetch_add(1, Ordering::SeqCst);
                }
                let body = String::from_utf8_lossy(req.body()).into_owned();
                with_header(
                    text_response(200, format!("{} {path} {body}", req.method())),
                    "X-Seen",
                    "yes",
                )
            }
        })
        .unwrap();
    let base = format!("http://127.0.0.1:{}", handle.local_addr().port());
    (handle, base)
}

#[test]
fn every_method_goes_over_one_kept_alive_connection_and_answers_in_types() {
    let (handle, base) = server(Duration::from_secs(30), Arc::default());
    let client = Client::new();
    for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let res = client
            .request(method, &format!("{base}/thing?x=1"))
            .header("X-Test", "1")
            .body("data")
            .send()
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.header("x-SEEN"), Some("yes"));
        assert_eq!(res.text(), format!("{method} /thing?x=1 data"));
    }
    let head = client.request("HEAD", &format!("{base}/h")).send().unwrap();
    assert_eq!((head.status(), head.body()), (200, &b""[..]));
    let chunked = client
        .request("GET", &format!("{base}/chunked"))
        .send()
        .unwrap();
    assert_eq!(chunked.header("transfer-encoding"), Some("chunked"));
    assert_eq!(chunked.text(), "in pieces");
    connections_become(&handle, 1, "one connection for all of them");
    assert_eq!(client.idle_connections(), 1);
    handle.shutdown().unwrap();
}

#[test]
fn clones_share_the_idle_connections_and_a_closing_reply_is_not_kept() {
    let (handle, base) = server(Duration::from_secs(30), Arc::default());
    let client = Client::new();
    let clone = client.clone();
    client.request("GET", &format!("{base}/a")).send().unwrap();
    clone.request("GET", &format!("{base}/b")).send().unwrap();
    connections_become(&handle, 1, "the clone reuses the connection");
    let res = clone
        .request("GET", &format!("{base}/close"))
        .send()
        .unwrap();
    assert_eq!(res.text(), "bye");
    assert_eq!(
        client.idle_connections(),
        0,
        "a connection the server closes is not kept"
    );
    handle.shutdown().unwrap();
}

#[test]
fn the_idle_set_is_bounded_per_host_and_in_time() {
    let (handle, base) = server(Duration::from_secs(30), Arc::default());
    let none = Client::new().max_idle_per_host(0);
    for _ in 0..3 {
        none.request("GET", &format!("{base}/")).send().unwrap();
    }
    connections_become(&handle, 3, "no idle connection kept");
    let brief = Client::new().idle_timeout(Duration::from_millis(100));
    brief.request("GET", &format!("{base}/")).send().unwrap();
    std::thread::sleep(Duration::from_millis(250));
    brief.request("GET", &format!("{base}/")).send().unwrap();
    connections_become(&handle, 5, "an idle connection past its time is not reused");
    handle.shutdown().unwrap();
}

#[test]
fn a_connection_the_server_closed_is_replaced_for_get_but_never_resent_for_post() {
    let posts = Arc::new(AtomicUsize::new(0));
    let (handle, base) = server(Duration::from_millis(200), Arc::clone(&posts));
    let client = Client::new();
    client
        .request("GET", &format!("{base}/warm"))
        .send()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600)); // the server closes it meanwhile
    let res = client
        .request("GET", &format!("{base}/again"))
        .send()
        .unwrap();
    assert_eq!(res.text(), "GET /again ");
    connections_become(&handle, 2, "replaced once");
    std::thread::sleep(Duration::from_millis(600));
    let err = client
        .request("POST", &format!("{base}/notes"))
        .body("once")
        .send()
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::BrokenPipe
        ),
        "{err}"
    );
    assert_eq!(
        posts.load(Ordering::SeqCst),
        0,
        "the POST was not sent twice (nor once)"
    );
    // A fresh connection for the next one.
    let res = client
        .request("POST", &format!("{base}/notes"))
        .body("now")
        .send()
        .unwrap();
    assert_eq!(res.text(), "POST /notes now");
    assert_eq!(posts.load(Ordering::SeqCst), 1);
    handle.shutdown().unwrap();
}

#[test]
fn bad_urls_and_https_are_clear_errors() {
    let client = Client::new();
    let err = client.request("GET", "ftp://h/").send().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let err = client
        .request("GET", "https://127.0.0.1:1/")
        .send()
        .unwrap_err();
    // Without TLS the URL is refused before connecting; with it, nobody listens on port 1.
    let expected = match cfg!(feature = "tls") {
        false => std::io::ErrorKind::Unsupported,
        true => std::io::ErrorKind::ConnectionRefused,
    };
    assert_eq!(err.kind(), expected);
    let err = client
        .request("GET", "http://127.0.0.1:1/")
        .header("Bad Name", "x")
        .send()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}
