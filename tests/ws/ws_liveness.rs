//! Liveness of WebSocket peers (`Server::ping_interval`): a silent peer is pinged; one that
//! does not answer is closed within the bound and the application told with no code; one that
//! answers stays; an active one is never pinged; `None` turns it off; pings cost no memory.

use crate::wire;

use std::io::Read;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use web::http::{Server, ServerHandle, text_response};
use web::ws::{ConnId, FIXED_MASK, Message, OP_PING, OP_PONG, OP_TEXT, Ws, WsHandler, write_frame};
use wire::wait_until;
use wire::ws::Client;

/// Echoes, and reports each close (with its code) to the test.
struct Watched {
    closes: Mutex<mpsc::Sender<Option<u16>>>,
}

impl WsHandler for Watched {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        ws.send(&msg);
    }

    fn close(&self, _id: ConnId, _state: (), code: Option<u16>) {
        let _ = self.closes.lock().unwrap().send(code);
    }
}

/// A masked client frame.
fn client_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, first, payload, Some(FIXED_MASK));
    out
}

const INTERVAL: Duration = Duration::from_millis(200);

fn start(every: Option<Duration>) -> (ServerHandle, mpsc::Receiver<Option<u16>>) {
    start_with(every, web::ws::Liveness::Pings)
}

fn start_with(
    every: Option<Duration>,
    liveness: web::ws::Liveness,
) -> (ServerHandle, mpsc::Receiver<Option<u16>>) {
    let (tx, rx) = mpsc::channel();
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .ping_interval(every)
        .liveness(liveness)
        // Peers left open at the end of a test are not waited for long.
        .close_timeout(Duration::from_millis(300))
        .websocket(
            "/",
            Watched {
                closes: Mutex::new(tx),
            },
        )
        .spawn(|_req| text_response(404, ""))
        .unwrap();
    (handle, rx)
}

#[test]
fn a_peer_that_never_answers_is_pinged_then_closed_within_two_intervals() {
    let (handle, closes) = start(Some(INTERVAL));
    let mut peer = Client::connect(handle.local_addr().port());
    let connected = Instant::now();
    let (first, payload) = peer.frame();
    assert_eq!((first, payload), (0x80 | OP_PING, Vec::new()));
    let pinged = connected.elapsed();
    assert!(pinged <= INTERVAL * 2, "pinged after {pinged:?}");
    // No answer: the server closes the connection, sending nothing more (the peer is gone).
    let mut rest = Vec::new();
    let _ = peer.conn.read_to_end(&mut rest);
    let closed = connected.elapsed();
    assert!(rest.is_empty(), "sent after the ping: {rest:?}");
    assert!(closed <= INTERVAL * 3, "closed after {closed:?}");
    assert!(
        closed >= INTERVAL + INTERVAL / 2,
        "closed too soon: {closed:?}"
    );
    let code = closes.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(code, None, "the application is told with no code");
    handle.shutdown().unwrap();
}

#[test]
fn a_peer_that_answers_pings_stays_open_and_costs_no_memory_between_them() {
    let (handle, closes) = start(Some(INTERVAL));
    let mut peer = Client::connect(handle.local_addr().port());
    let until = Instant::now() + INTERVAL * 10;
    let mut pings = 0;
    while Instant::now() < until {
        let (first, payload) = peer.frame();
        assert_eq!(first, 0x80 | OP_PING);
        peer.send(&client_frame(0x80 | OP_PONG, &payload));
        pings += 1;
    }
    assert!((5..=12).contains(&pings), "{pings} pings in 10 intervals");
    assert!(closes.try_recv().is_err(), "closed although it answered");
    wait_until(Duration::from_secs(2), "nothing held", || {
        handle.stats().held_bytes == 0
    });
    peer.send(&client_frame(0x80 | OP_TEXT, b"still here"));
    assert_eq!(peer.frame(), (0x80 | OP_TEXT, b"still here".to_vec()));
    handle.shutdown().unwrap();
}

#[test]
fn an_active_peer_is_never_pinged() {
    let (handle, _closes) = start(Some(INTERVAL));
    let mut peer = Client::connect(handle.local_addr().port());
    let until = Instant::now() + INTERVAL * 6;
    while Instant::now() < until {
        peer.send(&client_frame(0x80 | OP_TEXT, b"tick"));
        let (first, payload) = peer.frame();
        assert_eq!((first, payload.as_slice()), (0x80 | OP_TEXT, &b"tick"[..]));
        std::thread::sleep(INTERVAL / 4);
    }
    handle.shutdown().unwrap();
}

#[test]
fn without_a_ping_interval_a_silent_peer_is_left_alone() {
    let (handle, closes) = start(None);
    let mut peer = Client::connect(handle.local_addr().port());
    peer.conn
        .set_read_timeout(Some(Duration::from_millis(1200)))
        .unwrap();
    let mut byte = [0u8; 1];
    let got = peer.conn.read(&mut byte);
    assert!(
        matches!(&got, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "{got:?}"
    );
    assert!(closes.try_recv().is_err());
    handle.shutdown().unwrap();
}

/// The timer the kernel has armed for the server's end of a connection, from
/// `/proc/net/tcp`: 2 is the keep-alive timer (Linux).
#[cfg(target_os = "linux")]
fn kernel_timer(server_port: u16, client_port: u16) -> Option<u8> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let port = |field: &str| u16::from_str_radix(field.rsplit(':').next()?, 16).ok();
        let ours = port(fields.get(1)?)? == server_port && port(fields.get(2)?)? == client_port;
        ours.then(|| u8::from_str_radix(fields.get(5)?.split(':').next()?, 16).ok())?
    })
}

/// `Liveness::Kernel`: no ping and no sweep; the server's socket has the kernel's keep-alive
/// timer armed instead (the kernel probes the silent peer, answered by the peer's kernel).
#[cfg(target_os = "linux")]
#[test]
fn kernel_liveness_sends_no_ping_and_arms_the_kernels_probes() {
    let every = Duration::from_secs(2);
    let (handle, _closes) = start_with(Some(every), web::ws::Liveness::Kernel);
    let port = handle.local_addr().port();
    let mut c = Client::connect(port);
    let client_port = c.conn.local_addr().unwrap().port();
    wait_until(
        Duration::from_secs(10),
        "the keep-alive timer armed",
        || kernel_timer(port, client_port) == Some(2),
    );
    // With pings, a silent peer would be pinged within an interval: nothing comes here (the
    // kernel's probes carry no data).
    c.conn.set_read_timeout(Some(every * 3 / 2)).unwrap();
    let mut byte = [0u8; 1];
    let read = c.conn.read(&mut byte);
    assert!(
        matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no ping: {read:?}"
    );
    assert_eq!(
        handle.stats().websockets,
        1,
        "the peer answers the probes: kept"
    );
    handle.shutdown().unwrap();
}
