//! WebSocket connections kept in the reactor (`Server::websocket`): callbacks, senders from
//! other threads, broadcast, the closing handshake, the close codes of broken rules,
//! backpressure, and 10 000 idle connections reached by one broadcast.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::wire;

use web::http::{Server, ServerHandle, text_response};
use web::ws::{
    Message, Ws, WsHandler, WsSender, broadcast, client_frame, client_frame_bin,
    ws_handshake_request,
};
use wire::ws::{Client, masked};

/// Echoes; `broadcast:<text>` sends `<text>` to every open connection; `close:<code>` closes;
/// `count` answers how many connections are open.
#[derive(Default)]
struct Room {
    members: Mutex<Vec<WsSender>>,
    closed: Mutex<Vec<Option<u16>>>,
}

impl WsHandler for Room {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        self.members.lock().unwrap().push(ws.sender());
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        match &msg {
            Message::Text(t) if t.starts_with("broadcast:") => {
                let members = self.members.lock().unwrap().clone();
                broadcast(&members, &Message::Text(t["broadcast:".len()..].to_owned()));
            }
            Message::Text(t) if t.starts_with("close:") => {
                ws.close(t["close:".len()..].parse().unwrap())
            }
            Message::Text(t) if t == "count" => {
                let n = self.members.lock().unwrap().len();
                ws.send_text(&n.to_string());
            }
            _ => ws.send(&msg),
        }
    }

    fn close(&self, id: web::ws::ConnId, _state: (), code: Option<u16>) {
        self.members.lock().unwrap().retain(|s| s.id() != id);
        self.closed.lock().unwrap().push(code);
    }
}

fn start(room: &Arc<Room>, max_message: usize) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        // Clients left open at the end of a test are not waited for long.
        .close_timeout(Duration::from_millis(300))
        .websocket("/", Arc::clone(room))
        .max_message(max_message)
        .spawn(|_req| text_response(404, "not here"))
        .unwrap()
}

#[test]
fn text_and_binary_echo_through_the_strand() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let mut c = Client::connect(server.local_addr().port());
    c.send(&client_frame("hello"));
    assert_eq!(c.frame(), (0x81, b"hello".to_vec()));
    c.send(&client_frame_bin(&[0, 1, 2, 255]));
    assert_eq!(c.frame(), (0x82, vec![0, 1, 2, 255]));
    // Several frames in one write, and one frame a byte at a time.
    c.send(&[client_frame("a"), client_frame("b"), client_frame("c")].concat());
    for want in ["a", "b", "c"] {
        assert_eq!(c.frame().1, want.as_bytes());
    }
    c.conn.set_nodelay(true).unwrap();
    for byte in client_frame("split") {
        c.send(&[byte]);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(c.frame().1, b"split");
    server.shutdown().unwrap();
}

#[test]
fn fragmented_messages_with_a_ping_between_are_reassembled() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let mut c = Client::connect(server.local_addr().port());
    c.send(
        &[
            masked(0x01, "κό".as_bytes()),
            masked(0x89, b"ping!"),
            masked(0x80, "σμε".as_bytes()),
        ]
        .concat(),
    );
    assert_eq!(
        c.frame(),
        (0x8a, b"ping!".to_vec()),
        "the pong comes first, same payload"
    );
    assert_eq!(c.frame(), (0x81, "κόσμε".as_bytes().to_vec()));
    server.shutdown().unwrap();
}

#[test]
fn close_handshake_echoes_the_code_then_closes_tcp() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let mut c = Client::connect(server.local_addr().port());
    c.send(&masked(0x88, &[0x0b, 0xb8, b'b', b'y', b'e'])); // 3000 "bye"
    assert_eq!(c.frame(), (0x88, vec![0x0b, 0xb8]));
    c.expect_eof();
    let deadline = Instant::now() + Duration::from_secs(5);
    while room.closed.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*room.closed.lock().unwrap(), vec![Some(3000)]);
    server.shutdown().unwrap();
}

#[test]
fn broken_rules_close_with_their_codes() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1000);
    let port = server.local_addr().port();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("unmasked frame", vec![0x81, 0x02, b'h', b'i'], 1002),
        ("RSV bit", masked(0xc1, b"x"), 1002),
        ("unknown opcode", masked(0x83, b"x"), 1002),
        ("fragmented ping", masked(0x09, b"x"), 1002),
        ("continuation first", masked(0x80, b"x"), 1002),
        ("invalid close code", masked(0x88, &[0x03, 0xed]), 1002),
        ("text not UTF-8", masked(0x81, b"\xc0\xaf"), 1007),
        (
            "close reason not UTF-8",
            masked(0x88, &[0x03, 0xe8, 0xff]),
            1007,
        ),
        ("message too big", masked(0x82, &[0; 1001]), 1009),
        (
            "fragments too big",
            [masked(0x02, &[0; 600]), masked(0x80, &[0; 401])].concat(),
            1009,
        ),
    ];
    for (what, wire, code) in cases {
        let mut c = Client::connect(port);
        c.send(&wire);
        let (first, payload) = c.frame();
        assert_eq!(first, 0x88, "{what}");
        assert_eq!(payload[..2], code.to_be_bytes(), "{what}");
        c.expect_eof();
    }
    server.shutdown().unwrap();
}

#[test]
fn a_client_still_sending_after_the_limit_still_reads_the_1009() {
    // Regression: the server closed the socket right after its close frame, and a client still
    // writing got a reset that destroyed the frame. Now it shuts its side and lingers.
    let room = Arc::new(Room::default());
    let server = start(&room, 32 * 1024);
    let mut c = Client::connect(server.local_addr().port());
    for i in 0..15 {
        // A binary message in 16 KiB fragments: the limit is crossed at the third; the client
        // goes on writing (errors ignored) as a client that does not read yet would.
        let _ = c.conn.write_all(&masked(
            if i == 0 { 0x02 } else { 0x00 },
            &[b'x'; 16 * 1024],
        ));
        std::thread::sleep(Duration::from_millis(15));
    }
    let (first, payload) = c.frame();
    assert_eq!((first, &payload[..2]), (0x88, &1009u16.to_be_bytes()[..]));
    // The server ends cleanly (FIN), not with a reset that could destroy its close frame.
    c.conn.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    let end = c.conn.read_to_end(&mut rest);
    assert!(
        end.is_ok(),
        "the connection ended with {end:?}, not a clean close"
    );
    server.shutdown().unwrap();
}

#[test]
fn bad_upgrades_get_http_errors() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let port = server.local_addr().port();
    let request = String::from_utf8(ws_handshake_request("127.0.0.1", "/")).unwrap();
    let cases = [
        (
            request.replace("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8"),
            "HTTP/1.1 426 ",
        ),
        (
            request.replace("Connection: Upgrade", "Connection: keep-alive"),
            "HTTP/1.1 400 ",
        ),
        (
            request.replace("GET / ", "GET /elsewhere "),
            "HTTP/1.1 404 ",
        ),
        // Asking for WebSocket on its route, but not a valid upgrade: the route refuses with
        // 400 (RFC 6455 §4.2.1), the HTTP handler never sees it.
        (request.replace("GET / ", "POST / "), "HTTP/1.1 400 "),
        (
            request
                .lines()
                .filter(|l| !l.starts_with("Sec-WebSocket-Key"))
                .map(|l| format!("{l}\r\n"))
                .collect::<String>(),
            "HTTP/1.1 400 ",
        ),
        // An ordinary request to the route is the HTTP handler's.
        (
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_owned(),
            "HTTP/1.1 404 ",
        ),
    ];
    for (raw, status) in cases {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        conn.write_all(raw.as_bytes()).unwrap();
        let mut reply = vec![0u8; 512];
        let n = conn.read(&mut reply).unwrap();
        let reply = String::from_utf8_lossy(&reply[..n]);
        assert!(reply.starts_with(status), "{reply}");
        if status.contains("426") {
            assert!(reply.contains("Sec-WebSocket-Version: 13\r\n"));
        }
    }
    server.shutdown().unwrap();
}

#[test]
fn a_sender_works_from_another_thread_and_broadcast_reaches_everyone() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let port = server.local_addr().port();
    let mut clients: Vec<Client> = (0..20).map(|_| Client::connect(port)).collect();
    clients[0].send(&client_frame("count"));
    assert_eq!(clients[0].frame().1, b"20");
    let sender = room.members.lock().unwrap()[3].clone();
    let id = sender.id();
    std::thread::spawn(move || assert!(sender.send_text("from a thread")))
        .join()
        .unwrap();
    assert!(room.members.lock().unwrap().iter().any(|s| s.id() == id));
    // Which client is member 3 is not known; a broadcast, though, reaches all of them.
    clients[5].send(&client_frame("broadcast:to all"));
    let mut from_thread = 0;
    for c in &mut clients {
        loop {
            let (_, payload) = c.frame();
            if payload == b"from a thread" {
                from_thread += 1;
                continue;
            }
            assert_eq!(payload, b"to all");
            break;
        }
    }
    assert_eq!(from_thread, 1);
    server.shutdown().unwrap();
}

#[test]
fn shutdown_closes_websockets_with_1001() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let mut c = Client::connect(server.local_addr().port());
    c.send(&client_frame("x"));
    assert_eq!(c.frame().1, b"x");
    let stopper = std::thread::spawn(move || server.shutdown());
    let (first, payload) = c.frame();
    assert_eq!((first, &payload[..2]), (0x88, &1001u16.to_be_bytes()[..]));
    c.send(&masked(0x88, &1001u16.to_be_bytes()));
    c.expect_eof();
    stopper.join().unwrap().unwrap();
}

#[test]
fn a_peer_that_does_not_read_is_dropped_not_buffered_without_bound() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let c = Client::connect(server.local_addr().port());
    let sender = room.members.lock().unwrap()[0].clone();
    // 40 MB queued by another thread to a client that reads nothing.
    let block = vec![7u8; 1 << 20];
    for _ in 0..40 {
        sender.send_binary(block.clone());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while room.closed.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(*room.closed.lock().unwrap(), vec![Some(1008)]);
    assert!(server.stats().held_bytes < 64 << 20, "{:?}", server.stats());
    drop(c);
    server.shutdown().unwrap();
}

#[test]
fn an_idle_websocket_holds_no_buffer() {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    let mut clients: Vec<Client> = (0..50)
        .map(|_| Client::connect(server.local_addr().port()))
        .collect();
    for c in &mut clients {
        c.send(&client_frame_bin(&[1; 3000]));
        assert_eq!(c.frame().1.len(), 3000);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.stats().held_bytes != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.stats().held_bytes, 0);
    assert_eq!(server.stats().open_connections, 50);
    server.shutdown().unwrap();
}

/// The server side of `ten_thousand_idle_websockets_all_get_a_broadcast`, run in a child
/// process so that client and server sockets do not share one descriptor limit.
fn child_server() -> ! {
    let room = Arc::new(Room::default());
    let server = start(&room, 1 << 16);
    println!("{}", server.local_addr().port());
    std::io::stdout().flush().unwrap();
    // Serve until the parent closes our stdin.
    let _ = std::io::stdin().read(&mut [0u8; 1]);
    server.shutdown().unwrap();
    std::process::exit(0);
}

#[test]
fn ten_thousand_idle_websockets_all_get_a_broadcast() {
    if std::env::var_os("WS_STRAND_CHILD").is_some() {
        child_server();
    }
    const N: usize = 10_000;
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &wire::harness_name(
                module_path!(),
                "ten_thousand_idle_websockets_all_get_a_broadcast",
            ),
            "--nocapture",
        ])
        .env("WS_STRAND_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap() == 1 {
        if byte[0] == b'\n' {
            if let Ok(port) = String::from_utf8_lossy(&line).trim().parse::<u16>() {
                let result = std::panic::catch_unwind(|| run_ten_thousand(port, N));
                drop(child.stdin.take());
                let _ = child.wait();
                if let Err(e) = result {
                    std::panic::resume_unwind(e);
                }
                return;
            }
            line.clear();
        } else {
            line.push(byte[0]);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server process printed no port");
}

fn run_ten_thousand(port: u16, n: usize) {
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(Client::connect(port));
    }
    clients[0].send(&client_frame("count"));
    assert_eq!(clients[0].frame().1, n.to_string().as_bytes());
    let started = Instant::now();
    clients[n - 1].send(&client_frame("broadcast:everyone"));
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(c.frame(), (0x81, b"everyone".to_vec()), "client {i}");
    }
    eprintln!(
        "broadcast reached {n} idle connections in {:?}",
        started.elapsed()
    );
}
