//! A panicking handler, and graceful shutdown with requests in flight.

use crate::wire;

use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, ServerHandle, text_response};
use wire::{Client, wait_until};

/// How long the `/slow` handler takes.
const SLOW: Duration = Duration::from_millis(300);

/// A server whose `/slow` handler tells `started` it began, then takes [`SLOW`]; `/panic`
/// panics; anything else answers its path.
fn start(workers: usize) -> (ServerHandle, mpsc::Receiver<()>) {
    let (tx, started) = mpsc::channel();
    let tx = Mutex::new(tx);
    let handler = move |req: Request| -> Response {
        match req.path() {
            "/slow" => {
                let _ = tx.lock().unwrap().send(());
                std::thread::sleep(SLOW);
                text_response(200, "slow done")
            }
            "/panic" => panic!("this handler panics on purpose"),
            path => text_response(200, path.to_owned()),
        }
    };
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(workers)
        .spawn(handler)
        .unwrap();
    (server, started)
}

#[test]
fn a_panicking_handler_gets_500_and_other_connections_keep_working() {
    let (server, _started) = start(1);
    let addr = server.local_addr();
    let mut before = Client::connect(addr);
    assert_eq!(before.get("/before").text(), "/before");

    let mut victim = Client::connect(addr);
    victim.send("GET /panic HTTP/1.1\r\nHost: t\r\n\r\nGET /behind HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = victim.reply();
    assert_eq!(r.status, 500, "{r:?}");
    r.assert_closes();
    victim.assert_eof(); // the request behind it is dropped with the connection

    // The worker lives on: the connection opened before, and new ones, are served.
    assert_eq!(before.get("/still").text(), "/still");
    let mut after = Client::connect(addr);
    assert_eq!(after.get("/after").text(), "/after");
    // And again: a second panic is no different.
    let mut again = Client::connect(addr);
    assert_eq!(again.get("/panic").status, 500);
    assert_eq!(after.get("/after2").text(), "/after2");
    // A panic behind a pipelined request: the earlier reply is intact, then the 500.
    let mut pipelined = Client::connect(addr);
    pipelined.send("GET /ok HTTP/1.1\r\nHost: t\r\n\r\nGET /panic HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(pipelined.reply().text(), "/ok");
    let r = pipelined.reply();
    assert_eq!(r.status, 500);
    r.assert_closes();
    pipelined.assert_eof();
}

/// Starts `GET /slow` on a fresh connection and waits until its handler runs.
fn slow_request_in_flight(server: &ServerHandle, started: &mpsc::Receiver<()>) -> Client {
    let mut busy = Client::connect(server.local_addr());
    busy.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    started
        .recv_timeout(Duration::from_secs(5))
        .expect("the slow handler started");
    busy
}

/// Calls `shutdown` on another thread; the receiver gets its result and when it returned.
fn shutdown_in_background(server: ServerHandle) -> mpsc::Receiver<(std::io::Result<()>, Instant)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = server.shutdown();
        let _ = tx.send((result, Instant::now()));
    });
    rx
}

#[test]
fn graceful_shutdown_answers_the_request_in_flight_and_closes_idle_connections() {
    let (server, started) = start(2);
    let addr = server.local_addr();
    let mut idle = Client::connect(addr);
    assert_eq!(idle.get("/idle").text(), "/idle");

    let mut busy = slow_request_in_flight(&server, &started);
    let shutdown_called = Instant::now();
    let done = shutdown_in_background(server);

    // The request in flight gets its whole reply, and then the end of the stream.
    let r = busy.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "slow done"));
    busy.assert_eof();
    drop(busy);
    // The idle connection is closed without a word.
    idle.assert_eof();

    let (result, returned) = done
        .recv_timeout(Duration::from_secs(5))
        .expect("shutdown returned");
    result.expect("shutdown joined the workers");
    assert!(
        returned.duration_since(shutdown_called) < Duration::from_secs(3),
        "shutdown took {:?}",
        returned.duration_since(shutdown_called)
    );
    // Nobody listens any more.
    let refused = TcpStream::connect(addr);
    assert!(refused.is_err(), "a connection was accepted after shutdown");
}

#[test]
fn the_reply_in_flight_at_shutdown_says_connection_close() {
    let (server, started) = start(1);
    let mut busy = slow_request_in_flight(&server, &started);
    let done = shutdown_in_background(server);
    let r = busy.reply();
    assert_eq!(r.status, 200);
    r.assert_closes();
    busy.assert_eof();
    drop(busy);
    done.recv_timeout(Duration::from_secs(5))
        .expect("shutdown returned")
        .0
        .unwrap();
}

#[test]
fn shutdown_waits_for_the_request_in_flight() {
    let (server, started) = start(1);
    let mut busy = slow_request_in_flight(&server, &started);
    let shutdown_called = Instant::now();
    let done = shutdown_in_background(server);
    // Shutdown has not returned while the handler still runs.
    assert!(
        done.recv_timeout(SLOW / 3).is_err(),
        "shutdown did not wait"
    );
    let r = busy.reply();
    assert_eq!(r.text(), "slow done");
    drop(busy);
    let (result, returned) = done.recv_timeout(Duration::from_secs(5)).unwrap();
    result.unwrap();
    assert!(returned.duration_since(shutdown_called) >= SLOW / 2);
}

#[test]
fn shutdown_with_only_idle_connections_is_quick_and_refuses_new_ones() {
    let (server, _started) = start(2);
    let addr = server.local_addr();
    let mut idle: Vec<Client> = (0..20).map(|_| Client::connect(addr)).collect();
    for (i, c) in idle.iter_mut().enumerate() {
        assert_eq!(c.get(&format!("/{i}")).status, 200);
    }
    wait_until(Duration::from_secs(2), "20 connections are open", || {
        server.stats().open_connections == 20
    });
    let started = Instant::now();
    server.shutdown().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    for c in &mut idle {
        c.assert_eof();
    }
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let (server, _started) = start(1);
    let addr = server.local_addr();
    assert_eq!(Client::connect(addr).get("/x").status, 200);
    drop(server);
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn shutdown_during_a_large_reply_finishes_it_then_closes_promptly() {
    let drain = Duration::from_secs(3);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .drain_timeout(drain)
        .spawn(|_req| text_response(200, vec![b'd'; 8 << 20]))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    wait_until(
        Duration::from_secs(10),
        "the reply is under way, the socket full",
        || server.stats().held_bytes > 0,
    );
    let addr = server.local_addr();
    let done = shutdown_in_background(server);
    wait_until(Duration::from_secs(5), "the server stops listening", || {
        TcpStream::connect(addr).is_err()
    });
    let r = c.reply();
    assert_eq!(r.body.len(), 8 << 20, "the reply in flight is finished");
    let finished = Instant::now();
    c.assert_eof();
    let closed_after = finished.elapsed();
    drop(c);
    let (result, returned) = done.recv_timeout(drain * 2).unwrap();
    result.unwrap();
    assert!(
        closed_after < Duration::from_secs(1),
        "the connection was closed {closed_after:?} after its reply was read (drain timeout {drain:?})"
    );
    assert!(
        returned.duration_since(finished) < Duration::from_secs(1),
        "shutdown returned {:?} after the reply was read",
        returned.duration_since(finished)
    );
}

/// Keep-alive clients posting one request after another while the server stops: every POST
/// the handler executed was answered, and every client sees its connection end cleanly (a
/// reply, then the end of the stream) — never a reset that leaves it unable to tell whether
/// its request ran.
#[test]
fn a_graceful_stop_answers_every_request_it_executed_and_resets_none() {
    use std::io::{ErrorKind, Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    // Clients that have had a reply: the stop comes when every one is under way.
    let under_way = Arc::new(AtomicUsize::new(0));
    let executed = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&executed);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(move |_req| {
            counted.fetch_add(1, Ordering::SeqCst);
            text_response(200, "done")
        })
        .unwrap();
    let addr = server.local_addr();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let under_way = Arc::clone(&under_way);
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let post = b"POST /p HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok";
                let mut replies = 0u64;
                let mut buf = vec![0u8; 4096];
                loop {
                    if c.write_all(post).is_err() {
                        return (replies, "write failed");
                    }
                    // One reply (its length varies only with Connection: close), or the end.
                    let mut got = 0;
                    let end = loop {
                        match c.read(&mut buf[got..]) {
                            Ok(0) => break "eof",
                            Ok(n) => {
                                got += n;
                                let text = String::from_utf8_lossy(&buf[..got]);
                                if text.ends_with("\r\n\r\ndone") {
                                    break "reply";
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::ConnectionReset => break "reset",
                            Err(e) => panic!("{e}"),
                        }
                    };
                    match end {
                        "reply" => replies += 1,
                        other => return (replies, other),
                    }
                    if replies == 1 {
                        under_way.fetch_add(1, Ordering::SeqCst);
                    }
                    if String::from_utf8_lossy(&buf[..got]).contains("Connection: close") {
                        let mut rest = [0u8; 16];
                        return match c.read(&mut rest) {
                            Ok(0) => (replies, "eof"),
                            Ok(_) => (replies, "bytes after the last reply"),
                            Err(_) => (replies, "reset"),
                        };
                    }
                }
            })
        })
        .collect();
    wait_until(Duration::from_secs(10), "every client is under way", || {
        under_way.load(Ordering::SeqCst) == 8
    });
    server.shutdown().unwrap();
    let mut answered = 0;
    for client in clients {
        let (replies, end) = client.join().unwrap();
        assert_eq!(end, "eof", "after {replies} replies");
        answered += replies;
    }
    assert_eq!(executed.load(Ordering::SeqCst), answered);
}
