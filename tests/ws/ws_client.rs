//! The blocking WebSocket client (`web::ws::connect`, `WsConnect`): against this library's
//! server (echo, headers, pings, a server's close, limits, a refusal, a writer on another
//! thread) and against a raw fake server for what a real one rarely does (fragments between
//! pings, a wrong accept key, a masked frame, a connection dropped without a close frame).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use web::http::{Request, Response, Server, ServerHandle, text_response};
use web::ws::{
    ConnId, Message, NORMAL, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT, Ws,
    WsConnect, WsHandler, accept_key, header_value, write_frame,
};

/// Echoes; greets with the request's cookie; `close 4000` makes the server close with 4000;
/// `big N` answers N bytes.
struct App;

impl WsHandler for App {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        if req.path().starts_with("/private") {
            return Err(text_response(403, "no\n"));
        }
        Ok(web::http::header(req, "cookie").to_owned())
    }

    fn open(&self, ws: &mut Ws<'_>, cookie: &mut String) {
        ws.send_text(&format!("cookie={cookie}"));
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut String, msg: Message) {
        match &msg {
            Message::Text(t) if t == "close 4000" => ws.close(4000),
            Message::Text(t) if t.starts_with("big ") => {
                let n = t[4..].parse().unwrap_or(0);
                ws.send(&Message::Binary(vec![7; n]));
            }
            _ => ws.send(&msg),
        }
    }

    fn close(&self, _id: ConnId, _state: String, _code: Option<u16>) {}
}

fn server(ping: Option<Duration>) -> (ServerHandle, String) {
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .ping_interval(ping)
        // Clients left open at the end of a test are not waited for long.
        .close_timeout(Duration::from_millis(300))
        .max_message(1 << 20)
        .websocket("/ws", App)
        .websocket("/private", App)
        .spawn(|_req| text_response(404, ""))
        .unwrap();
    let url = format!("ws://127.0.0.1:{}/ws", handle.local_addr().port());
    (handle, url)
}

fn text(msg: Option<Message>) -> String {
    match msg {
        Some(Message::Text(t)) => t,
        other => panic!("expected a text message, got {other:?}"),
    }
}

#[test]
fn messages_go_both_ways_and_a_close_is_answered_with_its_code() {
    let (handle, url) = server(None);
    let mut ws = WsConnect::new()
        .header("Cookie", "session=abc")
        .max_message(1 << 20)
        .connect(&url)
        .unwrap();
    assert_eq!(text(ws.recv().unwrap()), "cookie=session=abc");
    ws.send_text("hello").unwrap();
    assert_eq!(text(ws.recv().unwrap()), "hello");
    let blob: Vec<u8> = (0..200_000u32).map(|n| n as u8).collect();
    ws.send(&Message::Binary(blob.clone())).unwrap();
    assert_eq!(ws.recv().unwrap(), Some(Message::Binary(blob)));
    assert_eq!(ws.close(NORMAL, "bye").unwrap(), Some(NORMAL));
    assert_eq!(ws.recv().unwrap(), None, "and None from then on");
    handle.shutdown().unwrap();
}

#[test]
fn a_close_from_the_server_ends_recv_with_its_code() {
    let (handle, url) = server(None);
    let (mut reader, writer) = web::ws::connect(&url).unwrap().into_split();
    let _greeting = reader.recv().unwrap();
    writer.send_text("close 4000").unwrap();
    assert_eq!(reader.recv().unwrap(), None);
    assert_eq!(reader.close_code(), Some(4000));
    let err = writer.send_text("too late").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotConnected);
    handle.shutdown().unwrap();
}

#[test]
fn server_pings_are_answered_while_the_client_waits() {
    let (handle, url) = server(Some(Duration::from_millis(200)));
    let mut ws = WsConnect::new()
        .read_timeout(Some(Duration::from_millis(1500)))
        .connect(&url)
        .unwrap();
    let _greeting = ws.recv().unwrap();
    // Silent for 7 intervals: the server pings, the client answers, nothing else arrives.
    let err = ws.recv().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
    ws.send_text("still open").unwrap();
    assert_eq!(text(ws.recv().unwrap()), "still open");
    handle.shutdown().unwrap();
}

#[test]
fn a_message_past_max_message_is_refused_with_1009() {
    let (handle, url) = server(None);
    let mut ws = WsConnect::new().max_message(1000).connect(&url).unwrap();
    let _greeting = ws.recv().unwrap();
    ws.send_text("big 2000").unwrap();
    let err = ws.recv().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(err.to_string().contains("1009"), "{err}");
    handle.shutdown().unwrap();
}

#[test]
fn a_refused_upgrade_is_an_error_naming_the_status() {
    let (handle, url) = server(None);
    let err = web::ws::connect(&url.replace("/ws", "/private")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    assert!(err.to_string().contains("403"), "{err}");
    let err = web::ws::connect(&url.replace("/ws", "/none")).unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");
    let err = web::ws::connect("wss://127.0.0.1:1/").unwrap_err();
    // Without TLS the URL is refused before connecting; with it, nobody listens on port 1.
    let expected = match cfg!(feature = "tls") {
        false => ErrorKind::Unsupported,
        true => ErrorKind::ConnectionRefused,
    };
    assert_eq!(err.kind(), expected);
    let err = web::ws::connect("http://127.0.0.1/").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    handle.shutdown().unwrap();
}

#[test]
fn a_refused_upgrade_hands_over_its_status_headers_and_body() {
    let (handle, url) = server(None);
    let err = web::ws::connect(&url.replace("/ws", "/private")).unwrap_err();
    let refused = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<web::ws::UpgradeRefused>())
        .expect("the refusal inside the error");
    assert_eq!((refused.status, &refused.body[..]), (403, &b"no\n"[..]));
    assert!(refused.headers.iter().any(|h| h.name == "content-type"));
    handle.shutdown().unwrap();
    // A chunked refusal's body, de-chunked; a refusal cut short keeps what came.
    for (answer, body) in [
        (
            "HTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nwho\r\n1\r\n?\r\n0\r\n\r\n",
            &b"who?"[..],
        ),
        (
            "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 100\r\n\r\nslow down",
            &b"slow down"[..],
        ),
    ] {
        let (url, server) = fake(move |_| answer.to_owned(), |_| {});
        let err = web::ws::connect(&url).unwrap_err();
        server.join().unwrap();
        let refused = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<web::ws::UpgradeRefused>())
            .unwrap();
        assert_eq!(refused.body, body, "{answer}");
    }
}

#[test]
fn the_client_says_whether_deflate_was_agreed_and_its_read_timeout_can_change() {
    let (handle, url) = server(None);
    let mut plain = web::ws::connect(&url).unwrap();
    assert!(!plain.deflate(), "not offered");
    let _greeting = plain.recv().unwrap();
    plain.set_read_timeout(Some(Duration::from_millis(50)));
    assert_eq!(plain.recv().unwrap_err().kind(), ErrorKind::TimedOut);
    plain.set_read_timeout(None);
    plain.send_text("back").unwrap();
    assert_eq!(text(plain.recv().unwrap()), "back");
    handle.shutdown().unwrap();
    #[cfg(feature = "deflate")]
    {
        let (url, server) = fake(
            |key| {
                switching(key).replace(
                    "\r\n\r\n",
                    "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
                )
            },
            |_| {},
        );
        let agreed = WsConnect::new().deflate(true).connect(&url).unwrap();
        server.join().unwrap();
        assert!(agreed.deflate());
    }
}

#[test]
fn another_thread_sends_while_one_receives() {
    let (handle, url) = server(None);
    let mut ws = web::ws::connect(&url).unwrap();
    let _greeting = ws.recv().unwrap();
    let writer = ws.writer();
    let sender = std::thread::spawn(move || {
        for n in 0..100 {
            writer.send_text(&format!("m{n}")).unwrap();
        }
    });
    for n in 0..100 {
        assert_eq!(text(ws.recv().unwrap()), format!("m{n}"));
    }
    sender.join().unwrap();
    assert_eq!(ws.close(NORMAL, "").unwrap(), Some(NORMAL));
    handle.shutdown().unwrap();
}

/// A fake server: accepts one connection, answers the upgrade with `answer(key)`, then runs
/// `then` on the socket.
fn fake(
    answer: impl FnOnce(&str) -> String + Send + 'static,
    then: impl FnOnce(&mut std::net::TcpStream) + Send + 'static,
) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let thread = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            conn.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let key = header_value(&head, "sec-websocket-key");
        conn.write_all(answer(&key).as_bytes()).unwrap();
        then(&mut conn);
    });
    (url, thread)
}

fn switching(key: &str) -> String {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    )
}

fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, first, payload, None);
    out
}

/// Reads one masked client frame: (first byte, unmasked payload).
fn client_frame(conn: &mut std::net::TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    conn.read_exact(&mut head).unwrap();
    assert_eq!(head[1] & 0x80, 0x80, "client frames are masked");
    let len = usize::from(head[1] & 0x7f);
    assert!(len < 126);
    let mut mask = [0u8; 4];
    conn.read_exact(&mut mask).unwrap();
    let mut payload = vec![0u8; len];
    conn.read_exact(&mut payload).unwrap();
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
    (head[0], payload)
}

#[test]
fn fragments_are_put_together_around_a_ping_which_is_answered() {
    let (url, server) = fake(switching, |conn| {
        let mut wire = frame(OP_TEXT, b"hel");
        wire.extend(frame(0x80 | OP_PING, b"p1"));
        wire.extend(frame(OP_CONTINUATION, b"lo "));
        wire.extend(frame(0x80 | OP_CONTINUATION, b"world"));
        wire.extend(frame(0x80 | OP_BINARY, &[1, 2]));
        conn.write_all(&wire).unwrap();
        assert_eq!(client_frame(conn), (0x80 | OP_PONG, b"p1".to_vec()));
        conn.write_all(&frame(0x80 | OP_CLOSE, &1001u16.to_be_bytes()))
            .unwrap();
        assert_eq!(
            client_frame(conn),
            (0x80 | OP_CLOSE, 1001u16.to_be_bytes().to_vec())
        );
    });
    let mut ws = web::ws::connect(&url).unwrap();
    assert_eq!(text(ws.recv().unwrap()), "hello world");
    assert_eq!(ws.recv().unwrap(), Some(Message::Binary(vec![1, 2])));
    assert_eq!(ws.recv().unwrap(), None);
    server.join().unwrap();
}

#[test]
fn a_wrong_accept_key_fails_the_handshake() {
    let (url, server) = fake(|_key| switching("not the key"), |_| {});
    let err = web::ws::connect(&url).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(err.to_string().contains("Sec-WebSocket-Accept"), "{err}");
    server.join().unwrap();
}

#[test]
fn an_unoffered_subprotocol_or_extension_fails_the_handshake() {
    for (extra, says) in [
        ("Sec-WebSocket-Protocol: other\r\n", "subprotocol"),
        (
            "Sec-WebSocket-Extensions: permessage-deflate\r\n",
            "extension",
        ),
    ] {
        let (url, server) = fake(
            move |key| switching(key).replace("\r\n\r\n", &format!("\r\n{extra}\r\n")),
            |_| {},
        );
        let err = WsConnect::new().protocol("mine").connect(&url).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
        server.join().unwrap();
    }
}

#[test]
fn a_masked_frame_from_the_server_is_refused_with_1002() {
    let (url, server) = fake(switching, |conn| {
        let mut wire = Vec::new();
        write_frame(&mut wire, 0x80 | OP_TEXT, b"masked", Some([1, 2, 3, 4]));
        conn.write_all(&wire).unwrap();
        assert_eq!(
            client_frame(conn),
            (0x80 | OP_CLOSE, 1002u16.to_be_bytes().to_vec())
        );
    });
    let mut ws = web::ws::connect(&url).unwrap();
    let err = ws.recv().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(err.to_string().contains("1002"), "{err}");
    let cause = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<web::ws::WsError>());
    assert_eq!(cause, Some(&web::ws::WsError::Protocol));
    server.join().unwrap();
}

#[test]
fn a_connection_dropped_without_a_close_frame_is_unexpected_eof() {
    let (url, server) = fake(switching, |conn| {
        conn.write_all(&frame(0x80 | OP_TEXT, b"last")).unwrap();
    });
    let mut ws = web::ws::connect(&url).unwrap();
    assert_eq!(text(ws.recv().unwrap()), "last");
    server.join().unwrap();
    let err = ws.recv().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
}
