//! The specification's blocking WebSocket path end to end over real sockets on 127.0.0.1.
//!
//! The server is the library's own (`Server::taking`, the builder form of `serve_taking`): its
//! `taken` hook takes every request where `ws_wanted(raw)`, clones the stream and moves it to a
//! thread that runs `ws_accept`, then loops `ws_take` / `ws_write` (echo) until an empty
//! payload, then `ws_close`. The client is built from `ws_handshake_request` and
//! `client_frame` / `client_frame_bin`, and reads with `ws_take`. Every read has a timeout, so a
//! failing test fails instead of hanging.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, mpsc};
use std::thread;
use std::time::Duration;

use web::http::{Server, ServerHandle, text_response};
use web::ws::{
    Decoder, Event, FIXED_MASK, OP_BINARY, OP_CLOSE, OP_PING, OP_TEXT, Role, accept_key,
    client_frame, client_frame_bin, fill, header_value, write_frame, ws_accept, ws_close, ws_frame,
    ws_frame_bin, ws_frame_op, ws_handshake_request, ws_read, ws_take, ws_wanted, ws_write,
    ws_write_bin,
};

/// How long any single read may wait before the test fails.
const LIMIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Measuring allocations: the largest single allocation made on a thread while tracking is on.

struct Tracking;

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = TRACK.try_with(|on| {
        if on.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; `note` only reads and
// writes two thread-local cells, which do not allocate.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract for `realloc`, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

/// Runs `f` and returns its result with the largest single allocation it made on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    TRACK.with(|t| t.set(true));
    let out = f();
    TRACK.with(|t| t.set(false));
    (out, LARGEST.with(Cell::get))
}

// ---------------------------------------------------------------------------------------------
// The server: the library's, with a `taken` hook running the specification's server sequence.

/// How a WebSocket session on the server ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// `ws_take` (or `ws_read`) returned an empty payload; the leftover it returned.
    Empty(Vec<u8>),
    /// A close frame came in (typed echo only).
    CloseFrame,
    /// `ws_take` failed.
    Error(ErrorKind),
}

/// What a session on the server did, sent when it is over.
#[derive(Debug)]
struct Report {
    /// What `ws_accept` returned.
    accepted: Result<bool, ErrorKind>,
    /// The payloads echoed, in order.
    payloads: Vec<Vec<u8>>,
    /// What each `ws_write` / `ws_write_bin` returned.
    written: Vec<usize>,
    end: Option<End>,
    /// The largest single allocation made while reading frames.
    largest_allocation: usize,
}

/// The session, run on a thread of its own with the connection the hook took.
///
/// Paths: `/` is the specification's loop (ws_take, echo with ws_write — or ws_write_bin for a
/// payload that is not UTF-8 — until an empty payload, then ws_close); `/typed` peeks at each
/// frame's first byte (`fill`) to echo text as text and binary as binary and stops at a close
/// frame; `/read` loops `ws_read` / `ws_write`.
fn session(mut conn: TcpStream, raw: Vec<u8>, report: mpsc::Sender<Report>) {
    conn.set_read_timeout(Some(LIMIT)).unwrap();
    conn.set_write_timeout(Some(LIMIT)).unwrap();
    let mut r = Report {
        accepted: Err(ErrorKind::Other),
        payloads: Vec::new(),
        written: Vec::new(),
        end: None,
        largest_allocation: 0,
    };
    r.accepted = ws_accept(&mut conn, &raw).map_err(|e| e.kind());
    if r.accepted != Ok(true) {
        // Refused: the caller closes the socket itself (dropping it here).
        let _ = report.send(r);
        return;
    }
    // Bytes the client sent right after its request (frames written with the handshake).
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole head")
        + 4;
    let mut acc = raw[head_end..].to_vec();
    let typed = raw.starts_with(b"GET /typed ");
    let read_mode = raw.starts_with(b"GET /read ");
    if read_mode && !acc.is_empty() {
        // ws_read keeps nothing between calls: frames sent with the handshake would be lost.
        r.end = Some(End::Error(ErrorKind::Unsupported));
        let _ = report.send(r);
        return;
    }
    loop {
        if read_mode {
            match ws_read(&mut conn) {
                Ok(text) if text.is_empty() => {
                    r.end = Some(End::Empty(Vec::new()));
                    break;
                }
                Ok(text) => {
                    r.written.push(ws_write(&mut conn, &text).unwrap());
                    r.payloads.push(text.into_bytes());
                    continue;
                }
                Err(e) => {
                    r.end = Some(End::Error(e.kind()));
                    break;
                }
            }
        }
        let mut opcode = None;
        if typed {
            if acc.is_empty() {
                acc = fill(&mut conn, acc, 1).unwrap();
            }
            opcode = acc.first().map(|b| b & 0x0f);
        }
        let (taken, largest) = largest_allocation(|| ws_take(&mut conn, std::mem::take(&mut acc)));
        r.largest_allocation = r.largest_allocation.max(largest);
        let (payload, rest) = match taken {
            Ok(t) => t,
            Err(e) => {
                r.end = Some(End::Error(e.kind()));
                if e.kind() == ErrorKind::InvalidData {
                    // A frame over the limit: close with 1009 (message too big).
                    let _ = conn.write_all(&ws_frame_op(0x88, &1009u16.to_be_bytes()));
                }
                let _ = conn.shutdown(Shutdown::Both);
                let _ = report.send(r);
                return;
            }
        };
        acc = rest;
        if payload.is_empty() {
            r.end = Some(End::Empty(acc));
            break;
        }
        let written = match (opcode, std::str::from_utf8(&payload)) {
            (Some(OP_CLOSE), _) => {
                r.end = Some(End::CloseFrame);
                break;
            }
            (Some(OP_BINARY), _) | (None, Err(_)) => ws_write_bin(&mut conn, &payload),
            (_, Ok(text)) => ws_write(&mut conn, text),
            (Some(_), Err(_)) => panic!("text frame that is not UTF-8"),
        };
        r.written.push(written.unwrap());
        r.payloads.push(payload);
    }
    ws_close(conn).unwrap();
    let _ = report.send(r);
}

struct Echo {
    server: ServerHandle,
    addr: SocketAddr,
    reports: mpsc::Receiver<Report>,
}

impl Echo {
    fn start() -> Echo {
        let (tx, reports) = mpsc::channel();
        let tx = Mutex::new(tx);
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .taking(move |conn: &TcpStream, raw: &[u8]| {
                if !ws_wanted(raw) {
                    return false;
                }
                let Ok(mine) = conn.try_clone() else {
                    return false;
                };
                let raw = raw.to_vec();
                let tx = tx.lock().unwrap().clone();
                thread::spawn(move || session(mine, raw, tx));
                true
            })
            .spawn(|req| text_response(200, format!("plain HTTP at {}", req.path())))
            .unwrap();
        let addr = server.local_addr();
        Echo {
            server,
            addr,
            reports,
        }
    }

    /// The report of the next session to end.
    fn report(&self) -> Report {
        self.reports
            .recv_timeout(LIMIT)
            .expect("the session reports within the limit")
    }

    fn stop(self) {
        self.server.shutdown().unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// The client: ws_handshake_request, client_frame / client_frame_bin, ws_take.

struct Client {
    stream: TcpStream,
    acc: Vec<u8>,
    request: Vec<u8>,
}

fn tcp(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.set_write_timeout(Some(LIMIT)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

impl Client {
    /// Connects and writes the handshake (the 101 reply is left for `ws_take` to skip).
    fn connect(addr: SocketAddr, path: &str) -> Client {
        Client::connect_with(addr, path, &[])
    }

    /// Connects and writes the handshake followed by `frames` in the same write.
    fn connect_with(addr: SocketAddr, path: &str, frames: &[u8]) -> Client {
        let mut stream = tcp(addr);
        let request = ws_handshake_request(&addr.to_string(), path);
        stream.write_all(&[&request[..], frames].concat()).unwrap();
        Client {
            stream,
            acc: Vec::new(),
            request,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// One frame's payload, with `ws_take`.
    fn take(&mut self) -> Vec<u8> {
        let (payload, rest) = ws_take(&mut self.stream, std::mem::take(&mut self.acc))
            .expect("ws_take on the client");
        self.acc = rest;
        payload
    }

    /// Reads the server's reply head by hand (instead of letting `ws_take` skip it).
    fn reply_head(&mut self) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match self.stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                Ok(_) => panic!("EOF inside the reply head: {head:?}"),
                Err(e) => panic!("reading the reply head: {e}"),
            }
        }
        String::from_utf8(head).unwrap()
    }

    /// Everything until the server closes.
    fn rest(&mut self) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.acc);
        self.stream
            .read_to_end(&mut all)
            .expect("the server closes within the limit");
        all
    }

    /// The next events, read raw and decoded as a client decodes a server's frames (after the
    /// reply head has been read with `reply_head`).
    fn events(&mut self, n: usize) -> Vec<Event> {
        let mut d = Decoder::new(Role::Client, 1 << 20);
        let mut events = Vec::new();
        let mut buf = std::mem::take(&mut self.acc);
        let mut chunk = [0u8; 4096];
        while events.len() < n {
            let mut at = 0;
            while at < buf.len() && events.len() < n {
                let (used, event) = d.next(&buf[at..]).expect("valid server frames");
                at += used;
                events.extend(event);
            }
            buf.drain(..at);
            if events.len() < n {
                let got = self
                    .stream
                    .read(&mut chunk)
                    .expect("a frame within the limit");
                assert!(got > 0, "EOF after {events:?}");
                buf.extend_from_slice(&chunk[..got]);
            }
        }
        self.acc = buf;
        events
    }
}

const CLOSE_1000: [u8; 4] = [0x88, 0x02, 0x03, 0xe8];

// ---------------------------------------------------------------------------------------------
// The handshake.

#[test]
fn handshake_gets_101_with_the_right_accept_key() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    let head = c.reply_head();
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let key = header_value(&c.request, "Sec-WebSocket-Key: ");
    assert_eq!(
        header_value(head.as_bytes(), "Sec-WebSocket-Accept: "),
        accept_key(&key)
    );
    assert!(header_value(head.as_bytes(), "Upgrade: ").eq_ignore_ascii_case("websocket"));
    assert!(header_value(head.as_bytes(), "Connection: ").eq_ignore_ascii_case("upgrade"));
    // No subprotocol or extension was asked for, and none is given.
    assert_eq!(
        header_value(head.as_bytes(), "Sec-WebSocket-Protocol: "),
        ""
    );
    assert_eq!(
        header_value(head.as_bytes(), "Sec-WebSocket-Extensions: "),
        ""
    );
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    assert_eq!(echo.report().accepted, Ok(true));
    echo.stop();
}

#[test]
fn an_ordinary_request_is_not_taken() {
    let echo = Echo::start();
    let mut s = tcp(echo.addr);
    s.write_all(b"GET /plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 "), "{reply}");
    assert!(reply.ends_with("plain HTTP at /plain"), "{reply}");
    assert!(echo.reports.try_recv().is_err(), "no session started");
    // Closed at once, so the server's lingering after `Connection: close` ends at once too.
    drop(s);
    echo.stop();
}

// ---------------------------------------------------------------------------------------------
// Echo.

#[test]
fn text_echo() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    c.send(&client_frame("hello, world"));
    assert_eq!(c.take(), b"hello, world");
    c.send(&client_frame("κόσμε 𝄞"));
    assert_eq!(c.take(), "κόσμε 𝄞".as_bytes());
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    let r = echo.report();
    assert_eq!(r.payloads, [&b"hello, world"[..], "κόσμε 𝄞".as_bytes()]);
    // ws_write returns the bytes of the whole frame: 2 of head and the payload.
    assert_eq!(r.written, [2 + 12, 2 + "κόσμε 𝄞".len()]);
    echo.stop();
}

#[test]
fn binary_echo() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    let body: Vec<u8> = (0..=255u8).rev().collect();
    c.send(&client_frame_bin(&body));
    assert_eq!(c.take(), body);
    c.send(&client_frame_bin(&[0xff]));
    assert_eq!(c.take(), [0xff]);
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    let r = echo.report();
    // 256 bytes take a 16-bit length: 4 bytes of head.
    assert_eq!(r.written, [4 + 256, 2 + 1]);
    echo.stop();
}

#[test]
fn text_is_echoed_as_text_and_binary_as_binary() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/typed");
    assert!(c.reply_head().starts_with("HTTP/1.1 101 "));
    c.send(&client_frame("text"));
    c.send(&client_frame_bin(b"binary"));
    c.send(&client_frame("more text"));
    assert_eq!(
        c.events(3),
        [
            Event::Text("text".into()),
            Event::Binary(b"binary".to_vec()),
            Event::Text("more text".into()),
        ]
    );
    // A close frame from the client: the server answers with its own and closes.
    let mut close = Vec::new();
    write_frame(&mut close, 0x88, &1000u16.to_be_bytes(), Some(FIXED_MASK));
    c.send(&close);
    assert_eq!(c.rest(), CLOSE_1000);
    assert_eq!(echo.report().end, Some(End::CloseFrame));
    echo.stop();
}

#[test]
fn several_frames_in_one_write() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    let batch = [
        client_frame("one"),
        client_frame_bin(&[2, 2]),
        client_frame("three"),
        client_frame(&"4".repeat(300)),
        client_frame("five"),
    ]
    .concat();
    c.send(&batch);
    assert_eq!(c.take(), b"one");
    assert_eq!(c.take(), [2, 2]);
    assert_eq!(c.take(), b"three");
    assert_eq!(c.take(), "4".repeat(300).as_bytes());
    assert_eq!(c.take(), b"five");
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    assert_eq!(echo.report().payloads.len(), 5);
    echo.stop();
}

#[test]
fn frames_in_the_same_write_as_the_handshake() {
    // The hook's `raw` holds them after the head; the session passes them to ws_take as `acc`.
    let echo = Echo::start();
    let frames = [client_frame("early"), client_frame_bin(b"bird")].concat();
    let mut c = Client::connect_with(echo.addr, "/", &frames);
    assert_eq!(c.take(), b"early");
    assert_eq!(c.take(), b"bird");
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    echo.stop();
}

#[test]
fn a_frame_split_across_writes_byte_by_byte() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    // Wait for the 101, so the frame's bytes arrive on the taken connection one by one.
    assert!(c.reply_head().starts_with("HTTP/1.1 101 "));
    for frame in [
        client_frame("split into single bytes"),
        client_frame_bin(&[9; 200]),
    ] {
        for b in &frame {
            c.send(std::slice::from_ref(b));
            thread::sleep(Duration::from_millis(1));
        }
    }
    assert_eq!(c.take(), b"split into single bytes");
    assert_eq!(c.take(), [9; 200]);
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    echo.stop();
}

#[test]
fn the_largest_frame_64_kib_is_echoed() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    let body: Vec<u8> = (0..64 * 1024).map(|i| (i % 253) as u8).collect();
    c.send(&client_frame_bin(&body));
    assert_eq!(c.take(), body);
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    let r = echo.report();
    // 65 536 bytes take a 64-bit length: 10 bytes of head.
    assert_eq!(r.written, [10 + 65536]);
    echo.stop();
}

#[test]
fn ws_read_on_a_simple_exchange() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/read");
    // One message at a time (ws_read keeps nothing between calls): wait for the 101 first.
    assert!(c.reply_head().starts_with("HTTP/1.1 101 "));
    c.send(&client_frame("question"));
    assert_eq!(ws_read(&mut c.stream).unwrap(), "question");
    c.send(&client_frame("again"));
    assert_eq!(ws_read(&mut c.stream).unwrap(), "again");
    c.stream.shutdown(Shutdown::Write).unwrap();
    // The server's close frame: ws_read says the connection is done.
    assert_eq!(ws_read(&mut c.stream).unwrap(), "");
    let r = echo.report();
    assert_eq!(r.payloads, [&b"question"[..], b"again"]);
    assert_eq!(r.end, Some(End::Empty(Vec::new())));
    echo.stop();
}

#[test]
fn ws_read_answers_a_ping_with_a_pong() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/read");
    assert!(c.reply_head().starts_with("HTTP/1.1 101 "));
    let mut ping = Vec::new();
    write_frame(
        &mut ping,
        0x80 | OP_PING,
        b"are you there",
        Some(FIXED_MASK),
    );
    c.send(&[ping, client_frame("after the ping")].concat());
    assert_eq!(
        c.events(2),
        [
            Event::Pong(b"are you there".to_vec()),
            Event::Text("after the ping".into())
        ]
    );
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest(), CLOSE_1000);
    echo.stop();
}

#[test]
fn ws_read_on_the_client_skips_the_101() {
    let (mut server, mut client) = pair();
    let reply = web::ws::upgrade_reply(GOOD.as_bytes()).unwrap();
    server
        .write_all(&[reply, ws_frame("first message")].concat())
        .unwrap();
    assert_eq!(ws_read(&mut client).unwrap(), "first message");
    // A ping is answered with a pong, a pong skipped, then the text.
    let mut ping = Vec::new();
    write_frame(&mut ping, 0x80 | OP_PING, b"p", None);
    let mut pong = Vec::new();
    write_frame(&mut pong, 0x80 | web::ws::OP_PONG, b"q", None);
    server
        .write_all(&[ping, pong, ws_frame("second")].concat())
        .unwrap();
    assert_eq!(ws_read(&mut client).unwrap(), "second");
    let mut answer = [0u8; 1];
    server.read_exact(&mut answer).unwrap();
    assert_eq!(answer[0], 0x8a, "a pong");
    ws_close(server).unwrap();
    assert_eq!(ws_read(&mut client).unwrap(), "");
}

#[test]
fn ws_read_on_the_client_answers_a_ping_with_a_masked_pong() {
    let (mut server, mut client) = pair();
    let mut ping = Vec::new();
    write_frame(&mut ping, 0x80 | OP_PING, b"ping!", None);
    server
        .write_all(&[ping, ws_frame("text")].concat())
        .unwrap();
    assert_eq!(ws_read(&mut client).unwrap(), "text");
    drop(client);
    let mut got = Vec::new();
    server.read_to_end(&mut got).unwrap();
    // What a server reads from a client: the pong must pass a server's decoder.
    let mut d = Decoder::new(Role::Server, 1024);
    assert_eq!(
        d.next(&got),
        Ok((got.len(), Some(Event::Pong(b"ping!".to_vec()))))
    );
}

// ---------------------------------------------------------------------------------------------
// Closing.

#[test]
fn ws_take_returns_an_empty_payload_when_the_peer_closes() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    c.send(&client_frame("last words"));
    assert_eq!(c.take(), b"last words");
    c.stream.shutdown(Shutdown::Write).unwrap();
    // The server's ws_take saw the end: an empty payload, nothing left over.
    let r = echo.report();
    assert_eq!(r.end, Some(End::Empty(Vec::new())));
    // On the client: the close frame's payload (1000), then an empty payload (the server is
    // gone), nothing left over.
    assert_eq!(c.take(), [0x03, 0xe8]);
    let (payload, rest) = ws_take(&mut c.stream, std::mem::take(&mut c.acc)).unwrap();
    assert!(
        payload.is_empty() && rest.is_empty(),
        "{payload:?} {rest:?}"
    );
    echo.stop();
}

#[test]
fn ws_take_returns_an_empty_payload_with_the_leftover_of_a_cut_frame() {
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    assert!(c.reply_head().starts_with("HTTP/1.1 101 "));
    let frame = client_frame("never finished");
    c.send(&frame[..5]);
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert_eq!(c.rest()[..], CLOSE_1000[..]);
    assert_eq!(echo.report().end, Some(End::Empty(frame[..5].to_vec())));
    echo.stop();
}

#[test]
fn ws_close_sends_a_close_frame_then_closes_the_socket() {
    let (mut server, mut client) = pair();
    ws_close(server.try_clone().unwrap()).unwrap();
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    assert_eq!(got, CLOSE_1000);
    // The server side is shut down for writing too.
    assert!(server.write_all(b"x").is_err());
}

#[test]
fn an_empty_frame_ends_the_specification_loop() {
    // "An empty payload means the peer stopped": the loop ends at an empty text frame too.
    let echo = Echo::start();
    let mut c = Client::connect(echo.addr, "/");
    c.send(&[client_frame("x"), client_frame("")].concat());
    assert_eq!(c.take(), b"x");
    assert_eq!(c.take(), [0x03, 0xe8]);
    assert_eq!(echo.report().end, Some(End::Empty(Vec::new())));
    echo.stop();
}

// ---------------------------------------------------------------------------------------------
// Frames over 64 KiB.

#[test]
fn the_server_refuses_a_frame_over_64_kib_without_allocating_it() {
    let echo = Echo::start();
    for announced in [64 * 1024 + 1u64, 100 << 20, 1 << 40] {
        let mut c = Client::connect(echo.addr, "/");
        let mut head = vec![0x82, 0x80 | 127];
        head.extend_from_slice(&announced.to_be_bytes());
        head.extend_from_slice(&FIXED_MASK);
        head.extend_from_slice(&[0; 100]); // the start of a payload
        c.send(&head);
        let r = echo.report();
        assert_eq!(
            r.end,
            Some(End::Error(ErrorKind::InvalidData)),
            "{announced}"
        );
        assert!(
            r.largest_allocation < 256 * 1024,
            "announced {announced}: allocated {} bytes at once",
            r.largest_allocation
        );
        // The session closed with 1009.
        assert_eq!(c.take(), [0x03, 0xf1]);
    }
    echo.stop();
}

#[test]
fn the_client_refuses_a_frame_over_64_kib_without_allocating_it() {
    for announced in [64 * 1024 + 1u64, 100 << 20, 1 << 40] {
        let (mut server, mut client) = pair();
        let mut frame = vec![0x82, 127];
        frame.extend_from_slice(&announced.to_be_bytes());
        frame.extend_from_slice(&[7; 1000]);
        server.write_all(&frame).unwrap();
        let (result, largest) = largest_allocation(|| ws_take(&mut client, Vec::new()));
        let err = result.expect_err("a frame over 64 KiB is refused");
        assert_eq!(err.kind(), ErrorKind::InvalidData, "{announced}: {err}");
        assert!(
            largest < 256 * 1024,
            "announced {announced}: allocated {largest} bytes at once"
        );
    }
}

#[test]
fn the_client_takes_a_frame_of_exactly_64_kib() {
    let (mut server, mut client) = pair();
    let body = vec![0x5a; 64 * 1024];
    let writer = thread::spawn(move || {
        server.write_all(&ws_frame_bin(&body)).unwrap();
        server
    });
    let (payload, rest) = ws_take(&mut client, Vec::new()).unwrap();
    assert_eq!(payload.len(), 64 * 1024);
    assert!(payload.iter().all(|&b| b == 0x5a));
    assert!(rest.is_empty());
    drop(writer.join().unwrap());
}

// ---------------------------------------------------------------------------------------------
// ws_accept refusing broken upgrades.

/// A connected pair over 127.0.0.1: (server side, client side), both with read timeouts.
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = tcp(listener.local_addr().unwrap());
    let (server, _) = listener.accept().unwrap();
    server.set_read_timeout(Some(LIMIT)).unwrap();
    server.set_write_timeout(Some(LIMIT)).unwrap();
    (server, client)
}

/// The server sequence on a plain socket: read the request with `fill`, answer with
/// `ws_accept`, close. Returns what `ws_accept` returned and everything the client read.
fn accept_once(request: &[u8]) -> (bool, Vec<u8>) {
    let (mut server, mut client) = pair();
    client.write_all(request).unwrap();
    let mut raw = fill(&mut server, Vec::new(), 1).unwrap();
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let had = raw.len();
        raw = fill(&mut server, raw, had + 1).unwrap();
        assert!(raw.len() > had, "the whole request arrives");
    }
    let accepted = ws_accept(&mut server, &raw).unwrap();
    drop(server); // the caller closes the socket itself
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    (accepted, got)
}

const GOOD: &str = "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

#[test]
fn ws_accept_answers_a_valid_upgrade_with_101() {
    let (accepted, got) = accept_once(GOOD.as_bytes());
    assert!(accepted);
    let reply = String::from_utf8(got).unwrap();
    assert!(reply.starts_with("HTTP/1.1 101 "), "{reply}");
    assert!(reply.contains("\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    assert!(
        reply.ends_with("\r\n\r\n"),
        "nothing after the head: {reply}"
    );
}

#[test]
fn ws_accept_without_a_key_returns_false_and_writes_nothing() {
    let raw = GOOD.replace("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", "");
    assert_eq!(accept_once(raw.as_bytes()), (false, Vec::new()));
    let (accepted, got) = accept_once(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(!accepted);
    assert!(got.is_empty());
}

#[test]
fn ws_accept_with_a_wrong_version_writes_426() {
    for version in [
        "Sec-WebSocket-Version: 8\r\n",
        "Sec-WebSocket-Version: 14\r\n",
        "",
    ] {
        let raw = GOOD.replace("Sec-WebSocket-Version: 13\r\n", version);
        let (accepted, got) = accept_once(raw.as_bytes());
        assert!(!accepted, "{version:?}");
        let reply = String::from_utf8(got).unwrap();
        assert!(reply.starts_with("HTTP/1.1 426 "), "{version:?}: {reply}");
        assert_eq!(
            header_value(reply.as_bytes(), "Sec-WebSocket-Version: "),
            "13"
        );
    }
}

#[test]
fn ws_accept_with_a_broken_upgrade_writes_400() {
    let cases = [
        ("GET /chat", "POST /chat"),
        ("HTTP/1.1\r\nHost", "HTTP/1.0\r\nHost"),
        ("Upgrade: websocket\r\n", ""),
        ("Upgrade: websocket", "Upgrade: h2c"),
        ("Connection: Upgrade\r\n", ""),
        ("Connection: Upgrade", "Connection: keep-alive"),
        ("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZQ=="), // 11 bytes
        ("dGhlIHNhbXBsZSBub25jZQ==", "not base64 at all"),
        ("dGhlIHNhbXBsZSBub25jZQ==", ""),
    ];
    for (from, to) in cases {
        let raw = GOOD.replace(from, to);
        let (accepted, got) = accept_once(raw.as_bytes());
        assert!(!accepted, "{from:?} -> {to:?}");
        let reply = String::from_utf8(got).unwrap();
        assert!(
            reply.starts_with("HTTP/1.1 400 "),
            "{from:?} -> {to:?}: {reply}"
        );
    }
}

#[test]
fn ws_accept_takes_case_and_lists_in_its_stride() {
    let raw = GOOD
        .replace("Upgrade: websocket", "upgrade: WebSocket")
        .replace("Connection: Upgrade", "connection: keep-alive, Upgrade")
        .replace("Sec-WebSocket-Key", "sec-websocket-key")
        .replace("Sec-WebSocket-Version", "SEC-WEBSOCKET-VERSION");
    let (accepted, got) = accept_once(raw.as_bytes());
    assert!(accepted);
    assert!(
        String::from_utf8(got)
            .unwrap()
            .contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n")
    );
}

#[test]
fn a_broken_upgrade_through_the_server_gets_its_refusal() {
    let echo = Echo::start();
    for (from, to, status) in [
        (
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Version: 7",
            "426",
        ),
        ("Upgrade: websocket\r\n", "", "400"),
    ] {
        let mut s = tcp(echo.addr);
        let raw = GOOD.replace(from, to);
        s.write_all(raw.as_bytes()).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        let reply = String::from_utf8(got).unwrap();
        assert!(reply.starts_with(&format!("HTTP/1.1 {status} ")), "{reply}");
        assert_eq!(echo.report().accepted, Ok(false));
    }
    echo.stop();
}

// ---------------------------------------------------------------------------------------------
// fill, ws_write, ws_take on the client side.

#[test]
fn fill_reads_until_it_has_enough_or_the_peer_stops() {
    let (mut server, mut client) = pair();
    let writer = thread::spawn(move || {
        for piece in [&b"ab"[..], b"cd", b"ef"] {
            client.write_all(piece).unwrap();
            thread::sleep(Duration::from_millis(20));
        }
        client.shutdown(Shutdown::Write).unwrap();
        client
    });
    let got = fill(&mut server, b"0".to_vec(), 5).unwrap();
    assert!(got.len() >= 5 && got.starts_with(b"0abcd"), "{got:?}");
    // Asking for more than will ever come: what there is, once the peer stops.
    let got = fill(&mut server, got, 100).unwrap();
    assert_eq!(got, b"0abcdef");
    // The peer is gone and nothing was buffered: empty.
    assert!(fill(&mut server, Vec::new(), 1).unwrap().is_empty());
    drop(writer.join().unwrap());
}

#[test]
fn ws_write_sends_one_frame_and_returns_its_length() {
    let (mut server, mut client) = pair();
    let long = "x".repeat(70_000);
    let cases: [(&str, usize); 4] = [("", 2), ("hi", 4), (&long[..200], 204), (&long, 70_010)];
    let reader = thread::spawn(move || {
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        got
    });
    let mut want = Vec::new();
    for (text, len) in cases {
        assert_eq!(
            ws_write(&mut server, text).unwrap(),
            len,
            "{} bytes",
            text.len()
        );
        want.extend(ws_frame(text));
    }
    assert_eq!(ws_write_bin(&mut server, &[1, 2, 3]).unwrap(), 5);
    want.extend(ws_frame_bin(&[1, 2, 3]));
    drop(server);
    assert_eq!(reader.join().unwrap(), want);
}

#[test]
fn the_client_takes_frames_the_server_writes_byte_by_byte_and_in_batches() {
    let (mut server, mut client) = pair();
    server.set_nodelay(true).unwrap();
    let writer = thread::spawn(move || {
        server
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n")
            .unwrap();
        for b in ws_frame("slowly") {
            server.write_all(&[b]).unwrap();
            thread::sleep(Duration::from_millis(1));
        }
        let batch = [ws_frame("a"), ws_frame_bin(&[0; 300]), ws_frame("c")].concat();
        server.write_all(&batch).unwrap();
        ws_close(server).unwrap();
    });
    let mut acc = Vec::new();
    let mut take = |client: &mut TcpStream| {
        let (payload, rest) = ws_take(client, std::mem::take(&mut acc)).unwrap();
        acc = rest;
        payload
    };
    assert_eq!(take(&mut client), b"slowly");
    assert_eq!(take(&mut client), b"a");
    assert_eq!(take(&mut client), [0; 300]);
    assert_eq!(take(&mut client), b"c");
    assert_eq!(take(&mut client), [0x03, 0xe8]);
    assert!(take(&mut client).is_empty());
    writer.join().unwrap();
}

#[test]
fn the_client_sequence_by_hand_masks_every_frame() {
    // What the client sends is what a server decoder accepts: masked frames with the fixed key.
    let (mut server, mut client) = pair();
    let request = ws_handshake_request("127.0.0.1", "/");
    client.write_all(&request).unwrap();
    client.write_all(&client_frame("masked")).unwrap();
    client.write_all(&client_frame_bin(&[1, 2, 3])).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    server.read_to_end(&mut got).unwrap();
    assert!(got.starts_with(&request));
    let mut d = Decoder::new(Role::Server, 1024);
    let frames = &got[request.len()..];
    let (used, first) = d.next(frames).unwrap();
    assert_eq!(first, Some(Event::Text("masked".into())));
    let (_, second) = d.next(&frames[used..]).unwrap();
    assert_eq!(second, Some(Event::Binary(vec![1, 2, 3])));
    assert_eq!(frames[0] & 0x0f, OP_TEXT);
}

#[test]
fn an_endless_upgrade_reply_is_refused_at_the_head_limit_after_one_scan() {
    let (mut server, mut client) = pair();
    let writer = thread::spawn(move || {
        // "HTTP/" then junk that never ends the head: 1 MiB offered, the client stops at 16 KiB.
        let _ = server.write_all(b"HTTP/1.1 101 ");
        let junk = vec![b'x'; 1024];
        for _ in 0..1024 {
            if server.write_all(&junk).is_err() {
                break;
            }
        }
    });
    let started = std::time::Instant::now();
    let err = ws_take(&mut client, Vec::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("longer than"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(client);
    writer.join().unwrap();
}

#[test]
fn an_upgrade_refused_by_the_server_is_an_error_not_a_frame() {
    let (mut server, mut client) = pair();
    server
        .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno")
        .unwrap();
    let err = ws_take(&mut client, Vec::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(err.to_string().contains("403"), "{err}");
}

#[test]
fn a_frame_breaking_the_protocol_is_an_error_that_names_the_rule() {
    // A reserved opcode (0x3), then RSV2 set on a text frame.
    for frame in [[0x83u8, 0x00], [0xa1, 0x00]] {
        let (mut server, mut client) = pair();
        server.write_all(&frame).unwrap();
        let err = ws_take(&mut client, Vec::new()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
        let cause = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<web::ws::WsError>());
        assert_eq!(cause.map(|e| e.code()), Some(1002), "{frame:?}: {err}");
    }
}
