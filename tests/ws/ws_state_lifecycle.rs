//! A WebSocket application's per-connection state is handed back to `close` (or dropped) exactly
//! once, however the connection ends: the peer's close frame, our own close, the peer going away,
//! a panic in `open`, `message` or `close` (while the state is borrowed or after it was handed
//! over), a write timeout, and the drain deadline at shutdown. The connection leaves its rooms on
//! every path, and other connections never notice.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::wire;

use web::http::{Request, Response, Server, ServerHandle, param, query_of, text_response};
use web::ws::{ConnId, Message, Ws, WsHandler, write_frame, ws_handshake_request};
use wire::wait_until;
use wire::ws::{Client, masked};

/// What happened to the state of each connection, by the name it connected with.
#[derive(Default)]
struct Log {
    by_name: Mutex<HashMap<String, Seen>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Seen {
    /// Calls of `close`, with their codes.
    closes: Vec<Option<u16>>,
    /// Drops of the state.
    drops: usize,
}

impl Log {
    fn seen(&self, name: &str) -> Seen {
        let map = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        map.get(name).cloned().unwrap_or_default()
    }

    fn note(&self, name: &str, f: impl FnOnce(&mut Seen)) {
        let mut map = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        f(map.entry(name.to_owned()).or_default());
    }

    /// Waits until the state of `name` was dropped, then a moment more (a second drop or close
    /// would show), and returns what happened to it.
    fn settled(&self, name: &str) -> Seen {
        wait_until(
            Duration::from_secs(10),
            &format!("{name}'s state drops"),
            || self.seen(name).drops > 0,
        );
        std::thread::sleep(Duration::from_millis(100));
        self.seen(name)
    }
}

/// The state: its drop is counted under its name.
struct Tracked {
    name: String,
    /// A field that owns heap memory, so a double drop would be a double free as well.
    #[allow(dead_code)]
    heap: Vec<u8>,
    log: Arc<Log>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.log.note(&self.name, |s| s.drops += 1);
    }
}

/// Connects as `/?name=N&panic=open|message|close&room=R`: panics in the callback named (in
/// `message` for the text `panic`), joins room R in `open`; `close:N` closes with N; `big`
/// queues 8 MiB; anything else is echoed.
struct App {
    log: Arc<Log>,
}

impl WsHandler for App {
    type State = (Tracked, String);

    fn accept(&self, req: &Request) -> Result<(Tracked, String), Response> {
        let query = query_of(req.path());
        let state = Tracked {
            name: param(query, "name"),
            heap: vec![7; 64],
            log: Arc::clone(&self.log),
        };
        Ok((state, param(query, "panic")))
    }

    fn open(&self, ws: &mut Ws<'_>, (state, panic): &mut (Tracked, String)) {
        ws.join(&format!("room-{}", state.name));
        if panic == "open" {
            panic!("open panics on purpose");
        }
    }

    fn message(&self, ws: &mut Ws<'_>, (_state, _panic): &mut (Tracked, String), msg: Message) {
        match &msg {
            Message::Text(t) if t == "panic" => panic!("message panics on purpose"),
            Message::Text(t) if t.starts_with("close:") => {
                ws.close(t["close:".len()..].parse().unwrap_or(1000))
            }
            Message::Text(t) if t == "big" => ws.send_binary(&vec![0u8; 8 << 20]),
            _ => ws.send(&msg),
        }
    }

    fn close(&self, _id: ConnId, (state, panic): (Tracked, String), code: Option<u16>) {
        state.log.note(&state.name, |s| s.closes.push(code));
        if panic == "close" {
            panic!("close panics on purpose");
        }
    }
}

struct Fixture {
    log: Arc<Log>,
    rooms: web::ws::Rooms,
    handle: Option<ServerHandle>,
    port: u16,
}

impl Fixture {
    fn start(write_timeout: Duration) -> Fixture {
        let log = Arc::new(Log::default());
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(2)
            .write_timeout(write_timeout)
            .drain_timeout(Duration::from_millis(300))
            .websocket(
                "/",
                App {
                    log: Arc::clone(&log),
                },
            );
        let rooms = server.rooms();
        let handle = server.spawn(|_req| text_response(404, "no")).unwrap();
        let port = handle.local_addr().port();
        Fixture {
            log,
            rooms,
            handle: Some(handle),
            port,
        }
    }

    fn connect(&self, name: &str, panic: &str) -> Client {
        Client::connect_to(self.port, &format!("/?name={name}&panic={panic}"))
    }

    /// What happened to `name`'s state; also checks it left its room.
    fn settled(&self, name: &str) -> Seen {
        let seen = self.log.settled(name);
        assert_eq!(
            self.rooms.members(&format!("room-{name}")),
            0,
            "{name} left its room"
        );
        seen
    }

    /// Another connection still works.
    fn others_unharmed(&self) {
        let mut other = self.connect(&unique("bystander"), "");
        other.send(&masked(0x81, b"still here"));
        assert_eq!(other.frame(), (0x81, b"still here".to_vec()));
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let _ = handle.shutdown();
        }
    }
}

fn unique(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{what}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn once(seen: &Seen, code: Option<u16>) {
    assert_eq!(
        seen,
        &Seen {
            closes: vec![code],
            drops: 1
        }
    );
}

/// A client frame (masked, as a client must send it).
fn close_frame(code: u16) -> Vec<u8> {
    masked(0x88, &code.to_be_bytes())
}

#[test]
fn the_peer_s_close_frame_hands_the_state_back_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("peer-close");
    let mut c = f.connect(&name, "");
    c.send(&close_frame(1000));
    assert_eq!(c.frame(), (0x88, 1000u16.to_be_bytes().to_vec()));
    c.expect_eof();
    once(&f.settled(&name), Some(1000));
}

#[test]
fn our_own_close_hands_the_state_back_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("own-close");
    let mut c = f.connect(&name, "");
    c.send(&masked(0x81, b"close:4000"));
    assert_eq!(c.frame(), (0x88, 4000u16.to_be_bytes().to_vec()));
    c.send(&close_frame(4000));
    c.expect_eof();
    once(&f.settled(&name), Some(4000));
}

#[test]
fn a_peer_going_away_idle_or_busy_hands_the_state_back_once() {
    let f = Fixture::start(Duration::from_secs(10));
    // Idle: nothing half-read, nothing to write.
    let idle = unique("gone-idle");
    drop(f.connect(&idle, ""));
    once(&f.settled(&idle), None);
    // In the middle of a frame (the decoder holds part of it).
    let busy = unique("gone-mid-frame");
    let mut c = f.connect(&busy, "");
    let frame = masked(0x81, b"cut short");
    c.send(&frame[..4]);
    std::thread::sleep(Duration::from_millis(50));
    drop(c);
    once(&f.settled(&busy), None);
}

#[test]
fn a_panic_in_open_hands_the_state_to_close_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("panic-open");
    // The 101 is written after `open`: the panic ends the connection before it.
    let mut conn = TcpStream::connect(("127.0.0.1", f.port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(&ws_handshake_request(
        "127.0.0.1",
        &format!("/?name={name}&panic=open"),
    ))
    .unwrap();
    let mut got = Vec::new();
    match conn.read_to_end(&mut got) {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    assert!(!got.starts_with(b"HTTP/1.1 101"), "{got:?}");
    once(&f.settled(&name), None);
    f.others_unharmed();
}

#[test]
fn a_panic_in_message_while_the_state_is_borrowed_hands_it_to_close_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("panic-message");
    let mut c = f.connect(&name, "");
    c.send(&masked(0x81, b"ping me"));
    assert_eq!(c.frame(), (0x81, b"ping me".to_vec()));
    c.send(&masked(0x81, b"panic"));
    c.expect_eof();
    once(&f.settled(&name), None);
    f.others_unharmed();
}

#[test]
fn a_panic_in_close_after_the_peer_s_close_frame_drops_the_state_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("panic-close-frame");
    let mut c = f.connect(&name, "close");
    c.send(&close_frame(1001));
    c.expect_eof();
    once(&f.settled(&name), Some(1001));
    f.others_unharmed();
}

#[test]
fn a_panic_in_close_after_the_peer_went_away_drops_the_state_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("panic-close-gone");
    drop(f.connect(&name, "close"));
    once(&f.settled(&name), None);
    f.others_unharmed();
}

#[test]
fn a_panic_in_close_after_a_panic_in_message_drops_the_state_once() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("panic-both");
    let mut c = f.connect(&name, "close");
    c.send(&masked(0x81, b"panic"));
    c.expect_eof();
    once(&f.settled(&name), None);
    f.others_unharmed();
}

#[test]
fn a_broken_rule_hands_the_state_back_once_with_its_code() {
    let f = Fixture::start(Duration::from_secs(10));
    let name = unique("broken");
    let mut c = f.connect(&name, "");
    // An unmasked client frame: 1002.
    let mut unmasked = Vec::new();
    write_frame(&mut unmasked, 0x81, b"bare", None);
    c.send(&unmasked);
    assert_eq!(c.frame(), (0x88, 1002u16.to_be_bytes().to_vec()));
    c.expect_eof();
    once(&f.settled(&name), Some(1002));
}

#[test]
fn a_peer_that_takes_no_output_is_closed_at_the_write_timeout_and_its_state_handed_back_once() {
    let f = Fixture::start(Duration::from_millis(300));
    let name = unique("write-timeout");
    let mut c = f.connect(&name, "");
    c.send(&masked(0x81, b"big"));
    // Read nothing: the socket's buffers fill and the write timeout ends the connection.
    once(&f.settled(&name), None);
    drop(c);
}

#[test]
fn the_drain_deadline_hands_back_the_state_of_a_peer_that_never_answers_our_close() {
    let mut f = Fixture::start(Duration::from_secs(10));
    let quiet = unique("drain-quiet");
    let panics = unique("drain-panic");
    let idle = unique("drain-idle");
    let mut a = f.connect(&quiet, "");
    let mut b = f.connect(&panics, "close");
    let c = f.connect(&idle, "");
    // Busy ones (half a frame read) and an idle one.
    let frame = masked(0x81, b"half");
    a.send(&frame[..3]);
    b.send(&frame[..3]);
    std::thread::sleep(Duration::from_millis(50));
    let handle = f.handle.take().unwrap();
    handle.shutdown().unwrap();
    // Our 1001 went out, no answer came: the drain deadline ended them (no code from the peer).
    for name in [&quiet, &panics, &idle] {
        once(&f.settled(name), None);
    }
    drop((a, b, c));
}

#[test]
fn a_close_code_kept_off_the_wire_is_sent_as_no_code() {
    let f = Fixture::start(Duration::from_secs(10));
    for code in [1005u16, 1006, 1015, 1004, 2000, 999] {
        let name = unique("reserved-close");
        let mut c = f.connect(&name, "");
        c.send(&masked(0x81, format!("close:{code}").as_bytes()));
        assert_eq!(c.frame(), (0x88, Vec::new()), "close({code})");
        c.send(&masked(0x88, b""));
        c.expect_eof();
    }
}
