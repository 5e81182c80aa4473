//! Server-Sent Events streams (`Server::sse`) over raw sockets: the head, events from the
//! stream's callbacks, from other threads and from rooms shared with WebSocket members, the
//! heartbeat, refusals, and every way a stream ends.

use crate::wire;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, ServerHandle, text_response};
use web::sse::{Event, Sse, SseHandler, SseSender};
use web::ws::{ConnId, Message};
use wire::wait_until;

/// Joins `?room=`, greets, hands its sender to the test; `?room=` empty is refused.
struct Feed {
    senders: Mutex<mpsc::Sender<SseSender>>,
    closed: Mutex<mpsc::Sender<String>>,
}

impl SseHandler for Feed {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        let room = web::http::param(web::http::query_of(req.path()), "room");
        if room.is_empty() {
            return Err(text_response(400, "which room?\n"));
        }
        Ok(room)
    }

    fn open(&self, sse: &mut Sse<'_>, room: &mut String) {
        sse.send(&Event::new(format!("welcome to {room}")).event("hello"));
        sse.join(room);
        if room == "closing" {
            sse.close();
        }
        let _ = self.senders.lock().unwrap().send(sse.sender());
    }

    fn close(&self, _id: ConnId, room: String) {
        let _ = self.closed.lock().unwrap().send(room);
    }
}

/// A WebSocket member of room "news".
struct WsMember;

impl web::ws::WsHandler for WsMember {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut web::ws::Ws<'_>, _state: &mut ()) {
        ws.join("news");
    }
    fn message(&self, _ws: &mut web::ws::Ws<'_>, _state: &mut (), _msg: Message) {}
}

struct Setup {
    server: ServerHandle,
    senders: mpsc::Receiver<SseSender>,
    closed: mpsc::Receiver<String>,
    rooms: web::ws::Rooms,
}

fn start(server: Server) -> Setup {
    let (stx, senders) = mpsc::channel();
    let (ctx, closed) = mpsc::channel();
    let server = server
        .sse(
            "/events",
            Feed {
                senders: Mutex::new(stx),
                closed: Mutex::new(ctx),
            },
        )
        .websocket("/ws", WsMember);
    let rooms = server.rooms();
    let server = server
        .spawn(|req| text_response(200, format!("plain {}", req.path())))
        .unwrap();
    Setup {
        server,
        senders,
        closed,
        rooms,
    }
}

fn one_worker() -> Server {
    Server::bind("127.0.0.1:0").unwrap().workers(1)
}

/// A stream's client: the head, then what arrives.
struct Stream {
    conn: TcpStream,
    got: Vec<u8>,
}

impl Stream {
    fn open(port: u16, target: &str) -> Stream {
        Stream::request(
            port,
            &format!("GET {target} HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n"),
        )
    }

    fn request(port: u16, request: &str) -> Stream {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        conn.write_all(request.as_bytes()).unwrap();
        Stream {
            conn,
            got: Vec::new(),
        }
    }

    /// Reads until `what` has arrived; everything up to its end, taken.
    fn until(&mut self, what: &str) -> String {
        let began = Instant::now();
        loop {
            if let Some(at) = find(&self.got, what.as_bytes()) {
                let rest = self.got.split_off(at + what.len());
                let taken = std::mem::replace(&mut self.got, rest);
                return String::from_utf8(taken).unwrap();
            }
            assert!(
                began.elapsed() < Duration::from_secs(5),
                "no {what:?} in {:?}",
                String::from_utf8_lossy(&self.got)
            );
            let mut buf = [0u8; 4096];
            match self.conn.read(&mut buf) {
                Ok(0) => panic!(
                    "end of stream before {what:?}: {:?}",
                    String::from_utf8_lossy(&self.got)
                ),
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(e) => panic!(
                    "{e} before {what:?}: {:?}",
                    String::from_utf8_lossy(&self.got)
                ),
            }
        }
    }

    /// Reads to the end of the stream; what came before it.
    fn read_to_end(&mut self) -> String {
        if let Err(e) = self.conn.read_to_end(&mut self.got) {
            panic!(
                "{e} before the end: {:?}",
                String::from_utf8_lossy(&self.got)
            );
        }
        String::from_utf8(std::mem::take(&mut self.got)).unwrap()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn sender(setup: &Setup) -> SseSender {
    setup
        .senders
        .recv_timeout(Duration::from_secs(5))
        .expect("a stream opened")
}

#[test]
fn a_stream_opens_with_its_head_and_the_events_its_callbacks_send() {
    let setup = start(one_worker());
    let mut s = Stream::open(setup.server.local_addr().port(), "/events?room=a");
    let head = s.until("\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/event-stream\r\n"),
        "{head}"
    );
    assert!(head.contains("Cache-Control: no-store\r\n"), "{head}");
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert!(
        !head.contains("Content-Length") && !head.contains("Transfer-Encoding"),
        "{head}"
    );
    assert_eq!(s.until("\n\n"), "event: hello\ndata: welcome to a\n\n");
    let tx = sender(&setup);
    assert_eq!(setup.server.stats().event_streams, 1);
    std::thread::spawn(move || assert!(tx.send(&Event::new("one\ntwo").id("7"))));
    assert_eq!(s.until("\n\n"), "id: 7\ndata: one\ndata: two\n\n");
}

#[test]
fn a_room_publish_reaches_websocket_and_sse_members_alike() {
    let setup = start(Server::bind("127.0.0.1:0").unwrap().workers(2));
    let port = setup.server.local_addr().port();
    let mut streams: Vec<Stream> = (0..4)
        .map(|_| {
            let mut s = Stream::open(port, "/events?room=news");
            s.until("welcome to news\n\n");
            s
        })
        .collect();
    for _ in 0..4 {
        sender(&setup);
    }
    let mut ws = wire::ws::Client::connect_to(port, "/ws");
    wait_until(Duration::from_secs(2), "five members", || {
        setup.rooms.members("news") == 5
    });
    assert!(
        setup
            .rooms
            .publish("news", &Message::Text("plain\ntext".into()))
            >= 1
    );
    for s in &mut streams {
        assert_eq!(s.until("\n\n"), "data: plain\ndata: text\n\n");
    }
    setup
        .rooms
        .publish_event("news", &Event::new("with id").id("42").event("chat"));
    for s in &mut streams {
        assert_eq!(s.until("\n\n"), "id: 42\nevent: chat\ndata: with id\n\n");
    }
    // A binary message is not for event streams; the next text one still arrives once.
    setup.rooms.publish("news", &Message::Binary(vec![1, 2, 3]));
    setup.rooms.publish("news", &Message::Text("after".into()));
    for s in &mut streams {
        assert_eq!(s.until("\n\n"), "data: after\n\n");
    }
    for expected in [&b"plain\ntext"[..], b"with id", &[1, 2, 3], b"after"] {
        assert_eq!(ws.frame().1, expected);
    }
}

#[test]
fn idle_streams_get_a_heartbeat_comment() {
    let setup = start(one_worker().heartbeat(Duration::from_millis(100)));
    let mut s = Stream::open(setup.server.local_addr().port(), "/events?room=quiet");
    s.until("welcome to quiet\n\n");
    let began = Instant::now();
    assert_eq!(s.until(":\n\n"), ":\n\n");
    assert_eq!(s.until(":\n\n"), ":\n\n");
    assert!(began.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_refused_request_gets_the_applications_response_and_other_methods_go_to_the_handler() {
    let setup = start(one_worker());
    let port = setup.server.local_addr().port();
    let mut s = Stream::open(port, "/events");
    let reply = s.read_to_end();
    assert!(reply.starts_with("HTTP/1.1 400 "), "{reply}");
    assert!(reply.ends_with("which room?\n"), "{reply}");
    let mut s = Stream::request(
        port,
        "POST /events HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(s.read_to_end().ends_with("plain /events"));
    let mut s = Stream::request(port, "HEAD /events?room=h HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = s.read_to_end();
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    assert!(head.contains("text/event-stream"), "{head}");
}

#[test]
fn a_client_that_leaves_ends_its_stream_and_its_rooms() {
    let setup = start(one_worker());
    let s = Stream::open(setup.server.local_addr().port(), "/events?room=gone");
    let tx = sender(&setup);
    assert_eq!(setup.rooms.members("gone"), 1);
    drop(s);
    assert_eq!(
        setup.closed.recv_timeout(Duration::from_secs(5)).unwrap(),
        "gone"
    );
    assert_eq!(setup.rooms.members("gone"), 0);
    wait_until(Duration::from_secs(2), "no stream left", || {
        setup.server.stats().event_streams == 0
    });
    // The stream is gone: what is still sent to it is dropped.
    tx.send(&Event::new("late"));
}

#[test]
fn a_stream_ends_when_the_application_closes_it_or_the_server_stops() {
    let setup = start(one_worker());
    let port = setup.server.local_addr().port();
    let mut s = Stream::open(port, "/events?room=closing");
    let all = s.read_to_end();
    assert!(all.ends_with("welcome to closing\n\n"), "{all}");
    assert_eq!(
        setup.closed.recv_timeout(Duration::from_secs(5)).unwrap(),
        "closing"
    );

    let _closed_one = sender(&setup);
    let mut s = Stream::open(port, "/events?room=r");
    s.until("welcome to r\n\n");
    let tx = sender(&setup);
    assert!(tx.send(&Event::new("last words")));
    assert!(tx.close());
    assert_eq!(s.read_to_end(), "data: last words\n\n");

    let mut s = Stream::open(port, "/events?room=stop");
    s.until("welcome to stop\n\n");
    let began = Instant::now();
    setup.server.control().shutdown();
    assert_eq!(s.read_to_end(), "");
    assert!(began.elapsed() < Duration::from_secs(3));
    setup.server.join().unwrap();
}

#[test]
fn a_stop_does_not_wait_for_stream_clients_that_keep_their_connections() {
    // Readers that got the stream's end but never close their side (a browser may keep the
    // connection for its next request): the stop closes once they have everything, instead of
    // lingering the 2 s a connection waits for a client's end at other times.
    let setup = start(one_worker());
    let port = setup.server.local_addr().port();
    let mut streams: Vec<Stream> = (0..20)
        .map(|i| {
            let mut s = Stream::open(port, &format!("/events?room=keep{i}"));
            s.until(&format!("welcome to keep{i}\n\n"));
            s
        })
        .collect();
    let began = Instant::now();
    setup.server.shutdown().unwrap();
    let took = began.elapsed();
    for s in &mut streams {
        assert_eq!(s.read_to_end(), "");
    }
    // (It takes milliseconds; the bound only tells it from the 2 s linger it replaced.)
    assert!(took < Duration::from_millis(1500), "the stop took {took:?}");
}

#[test]
fn an_sse_member_that_does_not_read_is_dropped_not_grown_without_bound() {
    let setup = start(one_worker().max_queued_output(1 << 20));
    let port = setup.server.local_addr().port();
    let s = Stream::open(port, "/events?room=flood");
    let _tx = sender(&setup);
    let big = "x".repeat(64 * 1024);
    let began = Instant::now();
    while setup.rooms.members("flood") > 0 {
        assert!(began.elapsed() < Duration::from_secs(10), "never dropped");
        setup.rooms.publish("flood", &Message::Text(big.clone()));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(setup.server.stats().lagging_closed >= 1);
    drop(s);
}
