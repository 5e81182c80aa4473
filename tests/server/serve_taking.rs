//! `serve_taking` / `Server::taking`: the hook sees every request's raw text; when it takes a
//! connection, the socket is handed over in blocking mode and the server lets go of it.

use crate::wire;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use web::http::{Request, Response, Server, ServerHandle, serve_taking, text_response};
use wire::{Client, wait_until};

/// What the thread that took a connection found.
#[derive(Debug)]
struct Taken {
    /// The raw request the hook was given.
    raw: Vec<u8>,
    /// What its first blocking read of the client's next bytes gave.
    line: Result<Vec<u8>, ErrorKind>,
}

/// The connection's new owner: writes its own reply, then waits (blocking) for a line from the
/// client, answers `pong:<line>`, and closes.
fn own(mut conn: TcpStream, raw: Vec<u8>, report: mpsc::Sender<Taken>) {
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nmine!");
    // With a timeout so a failing test cannot hang; a socket left non-blocking would answer
    // WouldBlock at once instead of waiting for the client's line.
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    let result = loop {
        match conn.read(&mut byte) {
            Ok(1) if byte[0] == b'\n' => break Ok(line),
            Ok(1) => line.push(byte[0]),
            Ok(_) => break Err(ErrorKind::UnexpectedEof),
            Err(e) => break Err(e.kind()),
        }
    };
    if let Ok(line) = &result {
        let _ = conn.write_all(&[b"pong:", line.as_slice(), b"\n"].concat());
    }
    let _ = report.send(Taken { raw, line: result });
    // Dropping `conn` closes it: the caller's job now.
}

/// The hook: takes `GET /take ...` connections, records every raw request it sees.
fn hook(
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    report: mpsc::Sender<Taken>,
) -> impl Fn(&TcpStream, &[u8]) -> bool + Send + Sync + 'static {
    let report = Mutex::new(report);
    move |conn: &TcpStream, raw: &[u8]| {
        seen.lock().unwrap().push(raw.to_vec());
        if !raw.starts_with(b"GET /take ") {
            return false;
        }
        let Ok(mine) = conn.try_clone() else {
            return false;
        };
        let raw = raw.to_vec();
        let report = report.lock().unwrap().clone();
        std::thread::spawn(move || own(mine, raw, report));
        true
    }
}

fn handler(req: Request) -> Response {
    text_response(200, format!("server: {}", req.path()))
}

struct Setup {
    server: ServerHandle,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    taken: mpsc::Receiver<Taken>,
}

fn start() -> Setup {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, taken) = mpsc::channel();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .taking(hook(Arc::clone(&seen), tx))
        .spawn(handler)
        .unwrap();
    Setup {
        server,
        seen,
        taken,
    }
}

/// Checks the far side of a taken connection: its own reply, then a blocking exchange.
fn talk_to_new_owner(c: &mut Client) {
    let r = c.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "mine!"));
    // Give a non-blocking socket every chance to answer WouldBlock before the line comes.
    std::thread::sleep(Duration::from_millis(100));
    c.send("ping\n");
    assert_eq!(c.exact(10), b"pong:ping\n");
    c.assert_eof(); // the new owner closed it; the server wrote nothing more
}

#[test]
fn a_taken_connection_is_handed_over_in_blocking_mode_with_its_raw_request() {
    let s = start();
    let request = "GET /take HTTP/1.1\r\nHost: t\r\nX-Raw: yes\r\n\r\n";
    let mut c = Client::connect(s.server.local_addr());
    c.send(request);
    // The server lets go of the connection.
    wait_until(Duration::from_secs(2), "the server lets go", || {
        s.server.stats().open_connections == 0
    });
    talk_to_new_owner(&mut c);
    let taken = s
        .taken
        .recv_timeout(Duration::from_secs(5))
        .expect("the connection was taken");
    assert_eq!(taken.raw, request.as_bytes(), "raw is the request as sent");
    assert_eq!(taken.line, Ok(b"ping".to_vec()), "a blocking read");
    assert_eq!(s.seen.lock().unwrap().len(), 1);
}

#[test]
fn a_request_not_taken_is_answered_by_the_handler_and_the_hook_saw_it() {
    let s = start();
    let request = "POST /plain HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nbody";
    let mut c = Client::connect(s.server.local_addr());
    c.send(request);
    let r = c.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "server: /plain"));
    r.assert_keeps_alive();
    // The connection stays the server's.
    assert_eq!(c.get("/second").text(), "server: /second");
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], request.as_bytes(), "head and body");
    assert!(seen[1].starts_with(b"GET /second HTTP/1.1\r\n"));
    assert!(s.taken.try_recv().is_err());
}

#[test]
fn replies_to_earlier_requests_are_written_before_the_connection_is_taken() {
    let s = start();
    let mut c = Client::connect(s.server.local_addr());
    c.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\nGET /take HTTP/1.1\r\nHost: t\r\n\r\n");
    let first = c.reply();
    assert_eq!(first.text(), "server: /first");
    talk_to_new_owner(&mut c);
    let taken = s.taken.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(taken.raw, b"GET /take HTTP/1.1\r\nHost: t\r\n\r\n");
}

#[test]
fn taken_and_served_connections_mix_on_one_server() {
    let s = start();
    let addr = s.server.local_addr();
    let mut plain = Client::connect(addr);
    assert_eq!(plain.get("/a").text(), "server: /a");
    let mut taken = Client::connect(addr);
    taken.send("GET /take HTTP/1.1\r\nHost: t\r\n\r\n");
    talk_to_new_owner(&mut taken);
    assert_eq!(plain.get("/b").text(), "server: /b");
    assert_eq!(Client::connect(addr).get("/c").text(), "server: /c");
}

#[test]
fn serve_taking_on_a_bound_listener_hands_over_and_serves() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, taken) = mpsc::channel();
    let hook = hook(Arc::clone(&seen), tx);
    // Serves forever: the thread ends with the test process.
    std::thread::spawn(move || serve_taking(listener, handler, hook));
    let mut plain = Client::connect(addr);
    assert_eq!(plain.get("/plain").text(), "server: /plain");
    let mut c = Client::connect(addr);
    c.send("GET /take HTTP/1.1\r\nHost: t\r\n\r\n");
    talk_to_new_owner(&mut c);
    let report = taken.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(report.line, Ok(b"ping".to_vec()));
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn expect_100_continue_works_when_a_taken_hook_is_installed() {
    // Regression: the queued 100 held the request back, its parse state was dropped, and the
    // strand re-parsed the head and queued another 100 forever, starving its worker.
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .taking(|_conn, _raw| false)
        .spawn(|req| text_response(200, req.into_body()))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /p HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    let interim = c.reply();
    assert_eq!(interim.status, 100, "{interim:?}");
    c.send("hello");
    let r = c.reply();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    // The worker is free: another connection is answered.
    let mut other = Client::connect(server.local_addr());
    assert_eq!(other.get("/x").status, 200);
    server.shutdown().unwrap();
}

#[test]
fn a_panicking_taken_hook_closes_that_connection_and_the_worker_lives_on() {
    // Regression: the socket stayed in blocking mode after the hook panicked, and lingering on
    // it could block the worker.
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .taking(|_conn, raw| {
            if raw.starts_with(b"GET /boom ") {
                panic!("the hook fails");
            }
            false
        })
        .spawn(|_req| text_response(200, "fine"))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /boom HTTP/1.1\r\nHost: t\r\n\r\n");
    c.assert_eof();
    let mut other = Client::connect(server.local_addr());
    assert_eq!(other.get("/x").status, 200);
    server.shutdown().unwrap();
}
