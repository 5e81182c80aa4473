//! Serving a counted number of requests: `accept_n`, `serve_n` and `Server::requests`.

use crate::wire;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, accept_n, serve_n, text_response};
use wire::Client;

/// A handler answering its path, and the number of times it ran.
fn counted() -> (
    impl Fn(Request) -> Response + Send + Sync + 'static,
    Arc<AtomicUsize>,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let handler = move |req: Request| {
        seen.fetch_add(1, Ordering::SeqCst);
        text_response(200, req.path().to_owned())
    };
    (handler, calls)
}

#[test]
fn accept_n_serves_exactly_count_requests_across_connections_then_returns() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (handler, calls) = counted();
    let (tx, returned) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(accept_n(listener, handler, 3));
    });

    let mut first = Client::connect(addr);
    for path in ["/1", "/2"] {
        let r = first.get(path);
        assert_eq!(r.text(), path);
        r.assert_keeps_alive();
    }
    let mut second = Client::connect(addr);
    second.send("GET /3 HTTP/1.1\r\nHost: t\r\n\r\nGET /4 HTTP/1.1\r\nHost: t\r\n\r\n");
    let last = second.reply();
    assert_eq!(last.text(), "/3");
    last.assert_closes(); // the last of the count says so
    second.assert_eof(); // and the fourth is not answered
    drop(second); // (else the server lingers on it before it stops)

    returned
        .recv_timeout(Duration::from_secs(5))
        .expect("accept_n returned after 3 requests")
        .expect("accept_n succeeded");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    first.assert_eof(); // the idle connection is closed when the server stops
    assert!(
        TcpStream::connect(addr).is_err(),
        "the listener was closed when accept_n returned"
    );
}

#[test]
fn serve_n_listens_on_its_port_and_returns_after_count_requests() {
    let (handler, calls) = counted();
    let handler = Arc::new(handler);
    // `serve_n` takes a port number: one that was free a moment ago may be taken meanwhile
    // (another test's connection or server), and `serve_n` then returns `AddrInUse` while the
    // connect below may reach the other socket. Try another port then.
    let (port, returned, stream) = (0..5)
        .find_map(|_| {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let (tx, returned) = mpsc::channel();
            let handler = Arc::clone(&handler);
            std::thread::spawn(move || {
                let _ = tx.send(serve_n(port, move |r| handler(r), 2));
            });
            let deadline = Instant::now() + Duration::from_secs(5);
            let stream = loop {
                if let Ok(Err(e)) = returned.try_recv() {
                    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "serve_n: {e}");
                    return None;
                }
                match TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => break s,
                    Err(e) => {
                        assert!(Instant::now() < deadline, "serve_n never listened: {e}");
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            };
            // A failed bind is reported at once: still running a moment later, it listens.
            std::thread::sleep(Duration::from_millis(50));
            match returned.try_recv() {
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::AddrInUse => None,
                Ok(other) => panic!("serve_n returned early: {other:?}"),
                Err(_) => Some((port, returned, stream)),
            }
        })
        .expect("a free port within five tries");
    drop(stream); // a connection that sends nothing does not count
    let mut c = Client::connect(SocketAddr::from(([127, 0, 0, 1], port)));
    c.send("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n");
    c.reply().assert_keeps_alive();
    let last = c.reply();
    assert_eq!(last.text(), "/b");
    last.assert_closes();
    c.assert_eof();
    drop(c);
    returned
        .recv_timeout(Duration::from_secs(5))
        .expect("serve_n returned")
        .expect("serve_n succeeded");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_spawned_server_with_a_request_budget_stops_by_itself_and_join_returns() {
    let (handler, calls) = counted();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .requests(2)
        .spawn(handler)
        .unwrap();
    let addr = server.local_addr();
    assert_eq!(Client::connect(addr).get("/x").text(), "/x");
    let r = Client::connect(addr).get("/y");
    assert_eq!(r.text(), "/y");
    r.assert_closes();
    let (tx, joined) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.join());
    });
    joined
        .recv_timeout(Duration::from_secs(5))
        .expect("join returned")
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
