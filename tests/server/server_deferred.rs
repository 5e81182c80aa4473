//! Deferred replies (`web::http::defer`): answered later from another thread while the
//! connection is parked; pipelined requests wait their turn; a dropped `Reply` answers 500, a
//! late one 503; a client that leaves is visible to the holder; a stop waits for them.

use crate::wire;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use web::http::{Reply, Request, Response, Server, ServerHandle, defer, text_response};
use wire::{Client, wait_until};

/// A server whose `/later` requests hand their `Reply` (with the path) to the test.
fn start(server: Server) -> (ServerHandle, mpsc::Receiver<(String, Reply)>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let handle = server
        .spawn(move |req: Request| {
            if !req.path().starts_with("/later") {
                return text_response(200, format!("now {}", req.path()));
            }
            let (reply, later) = defer();
            let _ = tx.lock().unwrap().send((req.path().to_owned(), reply));
            later
        })
        .unwrap();
    (handle, rx)
}

fn one_worker() -> Server {
    Server::bind("127.0.0.1:0").unwrap().workers(1)
}

fn next(rx: &mpsc::Receiver<(String, Reply)>) -> (String, Reply) {
    rx.recv_timeout(Duration::from_secs(5))
        .expect("a deferred request")
}

#[test]
fn a_reply_sent_from_another_thread_answers_the_request_and_the_connection_goes_on() {
    let (server, rx) = start(one_worker());
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later/1 HTTP/1.1\r\nHost: t\r\n\r\n");
    let (path, reply) = next(&rx);
    assert!(reply.is_open());
    assert_eq!(server.stats().replies_waiting, 1);
    std::thread::spawn(move || assert!(reply.send(text_response(200, format!("done {path}")))));
    let r = c.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "done /later/1"));
    r.assert_keeps_alive();
    let r = c.get("/after");
    assert_eq!(r.text(), "now /after");
    wait_until(Duration::from_secs(2), "nothing waiting", || {
        server.stats().replies_waiting == 0
    });
}

#[test]
fn a_waiting_request_does_not_hold_up_other_connections_of_its_worker() {
    let (server, rx) = start(one_worker());
    let mut waiting: Vec<Client> = (0..4)
        .map(|i| {
            let mut c = Client::connect(server.local_addr());
            c.send(format!("GET /later/{i} HTTP/1.1\r\nHost: t\r\n\r\n"));
            c
        })
        .collect();
    let replies: Vec<(String, Reply)> = (0..4).map(|_| next(&rx)).collect();
    let began = Instant::now();
    let mut quick = Client::connect(server.local_addr());
    assert_eq!(quick.get("/quick").text(), "now /quick");
    // (Held behind the waiting replies, it would wait for ever: they come after it.)
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    for (path, reply) in replies {
        assert!(reply.send(text_response(200, path)));
    }
    let mut answered: Vec<String> = waiting.iter_mut().map(|c| c.reply().text()).collect();
    answered.sort();
    assert_eq!(answered, ["/later/0", "/later/1", "/later/2", "/later/3"]);
}

#[test]
fn requests_pipelined_behind_a_deferred_one_are_answered_after_it_in_order() {
    let (server, rx) = start(one_worker());
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later/a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\nGET /later/c HTTP/1.1\r\nHost: t\r\n\r\nGET /d HTTP/1.1\r\nHost: t\r\n\r\n");
    let (_, a) = next(&rx);
    // Nothing behind it is answered (nor run) before it.
    c.assert_silent_for(Duration::from_millis(100));
    assert!(rx.try_recv().is_err());
    assert!(a.send(text_response(200, "A")));
    assert_eq!(c.reply().text(), "A");
    assert_eq!(c.reply().text(), "now /b");
    let (_, later) = next(&rx);
    assert!(later.send(text_response(200, "C")));
    assert_eq!(c.reply().text(), "C");
    assert_eq!(c.reply().text(), "now /d");
    drop(server);
}

#[test]
fn a_reply_dropped_unanswered_gets_the_client_a_500_and_is_counted() {
    let (server, rx) = start(one_worker());
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
    let (_, reply) = next(&rx);
    drop(reply);
    let r = c.reply();
    assert_eq!(r.status, 500);
    assert_eq!(server.stats().replies_dropped, 1);
    assert_eq!(c.get("/still").text(), "now /still");
}

#[test]
fn a_reply_later_than_the_reply_timeout_gets_a_503_and_is_not_wanted_any_more() {
    let (server, rx) = start(one_worker().reply_timeout(Duration::from_millis(200)));
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
    let (_, reply) = next(&rx);
    let began = Instant::now();
    let r = c.reply();
    assert_eq!(r.status, 503);
    assert!(began.elapsed() >= Duration::from_millis(150));
    assert!(!reply.is_open());
    assert!(!reply.send(text_response(200, "too late")));
    assert_eq!(server.stats().replies_timed_out, 1);
    // The connection goes on, and the late reply never reaches it.
    assert_eq!(c.get("/next").text(), "now /next");
}

#[test]
fn a_client_that_leaves_is_visible_to_the_holder_of_its_reply() {
    let (server, rx) = start(one_worker());
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
    let (_, reply) = next(&rx);
    assert!(reply.is_open());
    drop(c);
    wait_until(Duration::from_secs(2), "the reply is not wanted", || {
        !reply.is_open()
    });
    assert!(!reply.send(text_response(200, "nobody")));
    assert_eq!(server.stats().replies_waiting, 0);
    assert_eq!(server.stats().replies_dropped, 0);
}

#[test]
fn a_deferred_head_request_gets_the_head_only_and_http10_closes_after_it() {
    let (server, rx) = start(one_worker());
    let mut c = Client::connect(server.local_addr());
    c.send("HEAD /later HTTP/1.1\r\nHost: t\r\n\r\n");
    let (_, reply) = next(&rx);
    assert!(reply.send(text_response(200, "not sent")));
    let r = c.head_reply();
    assert_eq!(r.header("content-length"), Some("8"));
    assert!(r.body.is_empty());
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later HTTP/1.0\r\n\r\n");
    let (_, reply) = next(&rx);
    assert!(reply.send(text_response(200, "old")));
    let r = c.reply();
    assert_eq!(r.text(), "old");
    r.assert_closes();
    c.assert_eof();
}

#[test]
fn a_stop_waits_for_deferred_replies_within_the_drain_timeout() {
    let (server, rx) = start(one_worker().drain_timeout(Duration::from_secs(5)));
    let mut c = Client::connect(server.local_addr());
    c.send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
    let (_, reply) = next(&rx);
    let control = server.control();
    control.shutdown();
    let addr = server.local_addr();
    wait_until(Duration::from_secs(10), "the drain has begun", || {
        std::net::TcpStream::connect(addr).is_err()
    });
    assert!(reply.send(text_response(200, "in time")));
    let r = c.reply();
    assert_eq!(r.text(), "in time");
    r.assert_closes();
    server.join().unwrap();
}

#[test]
fn a_reply_sent_before_the_handler_returns_is_not_lost() {
    let server = one_worker()
        .spawn(|_req| {
            let (reply, later) = defer();
            assert!(reply.send(text_response(200, "at once")));
            later
        })
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/").text(), "at once");
    assert_eq!(c.get("/").text(), "at once");
}

#[test]
fn handle_conn_waits_for_a_deferred_reply_on_its_thread() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        web::http::handle_conn(conn, |_req| {
            let (reply, later) = defer();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                reply.send(text_response(200, "blocking, later"));
            });
            later
        })
    });
    let mut c = Client::connect(addr);
    c.send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(c.reply().text(), "blocking, later");
    assert_eq!(serving.join().unwrap().unwrap(), 1);
}

#[test]
fn defer_outside_a_server_goes_nowhere() {
    let (reply, placeholder) = defer();
    assert!(!reply.is_open());
    assert_eq!(placeholder, Response::default());
    assert!(!reply.send(text_response(200, "nobody")));
}

/// Many deferred requests answered by several threads at once: each gets its own reply.
#[test]
fn replies_from_many_threads_reach_their_own_requests() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|req| {
            let (reply, later) = defer();
            let path = req.path().to_owned();
            std::thread::spawn(move || reply.send(text_response(200, path)));
            later
        })
        .unwrap();
    let addr = server.local_addr();
    let answered = Arc::new(Mutex::new(0));
    let clients: Vec<_> = (0..8)
        .map(|t| {
            let answered = Arc::clone(&answered);
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..50 {
                    let path = format!("/{t}/{i}");
                    assert_eq!(c.get(&path).text(), path);
                    *answered.lock().unwrap() += 1;
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(*answered.lock().unwrap(), 400);
}

#[test]
fn a_pool_runs_blocking_work_off_the_worker_and_refuses_past_its_queue() {
    let pool = web::http::Pool::new(1, 2).unwrap();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Arc::new(Mutex::new(go_rx));
    let p = pool.clone();
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s = Arc::clone(&started);
    let server = one_worker()
        .spawn(move |req| match req.path() {
            "/slow" => {
                let go = Arc::clone(&go_rx);
                let started = Arc::clone(&s);
                p.answer(move || {
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let _ = go.lock().unwrap().recv_timeout(Duration::from_secs(5));
                    text_response(200, "slow done")
                })
            }
            "/panic" => p.answer(|| panic!("a job that panics")),
            _ => text_response(200, "fast"),
        })
        .unwrap();
    // One running, two queued: the fourth is refused at once.
    let mut slow = Vec::new();
    for queued in [0, 1, 2] {
        let mut c = Client::connect(server.local_addr());
        c.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
        slow.push(c);
        wait_until(Duration::from_secs(2), "the job taken or queued", || {
            started.load(std::sync::atomic::Ordering::SeqCst) == 1 && pool.queued() == queued
        });
    }
    let mut refused = Client::connect(server.local_addr());
    let r = refused.get("/slow");
    assert_eq!((r.status, r.header("retry-after")), (503, Some("1")));
    assert_eq!(pool.refused(), 1);
    assert_eq!(refused.get("/fast").text(), "fast");
    for _ in 0..3 {
        go_tx.send(()).unwrap();
    }
    for c in &mut slow {
        assert_eq!(c.reply().text(), "slow done");
    }
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/panic").status, 500);
}
