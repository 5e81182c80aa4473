//! WebSocket applications: rooms fanned out per worker, per-connection state, the decision
//! before the upgrade, and several routes — over real sockets, with two workers.

use crate::wire;

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use web::http::{
    Client as HttpClient, Request, Response, Server, ServerHandle, param, query_of, text_response,
};
use web::ws::{ConnId, Message, Ws, WsHandler, client_frame};
use wire::wait_until;
use wire::ws::{Client, Echo};

/// A chat: `?name=` is required (401 without), a foreign `Origin` is refused (403); members
/// start in `?room=` and understand `join R`, `leave R`, `say R text` and `who R`.
#[derive(Default)]
struct Chat {
    /// What `close` was handed back: the member's name and the code.
    closed: Mutex<Vec<(String, Option<u16>)>>,
}

struct Member {
    name: String,
    room: String,
}

impl WsHandler for Chat {
    type State = Member;

    fn accept(&self, req: &Request) -> Result<Member, Response> {
        let origin = req.header("origin");
        if !origin.is_empty() && origin != "http://127.0.0.1" {
            return Err(text_response(403, "foreign origin\n"));
        }
        let query = query_of(req.path());
        let name = param(query, "name");
        if name.is_empty() {
            return Err(text_response(401, "a name, please\n"));
        }
        Ok(Member {
            name,
            room: param(query, "room"),
        })
    }

    fn open(&self, ws: &mut Ws<'_>, me: &mut Member) {
        if !me.room.is_empty() {
            ws.join(&me.room);
        }
        ws.send_text(&format!("hello {} w{}", me.name, ws.id().worker()));
    }

    fn message(&self, ws: &mut Ws<'_>, me: &mut Member, msg: Message) {
        let Message::Text(text) = msg else { return };
        let mut words = text.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("join"), Some(room), None) => {
                ws.join(room);
                ws.send_text(&format!("joined {room}"));
            }
            (Some("leave"), Some(room), None) => {
                ws.leave(room);
                ws.send_text(&format!("left {room}"));
            }
            (Some("say"), Some(room), Some(words)) => {
                ws.publish(room, &Message::Text(format!("{}: {words}", me.name)));
            }
            (Some("who"), Some(room), None) => {
                let n = ws.rooms().members(room);
                ws.send_text(&format!("{room} has {n}"));
            }
            _ => ws.send_text("?"),
        }
    }

    fn close(&self, _id: ConnId, me: Member, code: Option<u16>) {
        self.closed.lock().unwrap().push((me.name, code));
    }
}

/// The chat at `/chat`, an echo at `/echo`, and HTTP: `POST /publish?room=R` publishes its
/// body, `GET /members?room=R` answers the count, anything else `http <path>`.
fn start(chat: &Arc<Chat>) -> ServerHandle {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        // Members left open at the end of a test are not waited for long.
        .close_timeout(Duration::from_millis(300))
        .websocket("/chat", Arc::clone(chat))
        .websocket("/echo", Echo); // a second application, on its own route
    let rooms = server.rooms();
    server
        .spawn(move |req| {
            let room = param(query_of(req.path()), "room");
            match (req.method(), web::http::path_of(req.path())) {
                ("POST", "/publish") => {
                    let text = String::from_utf8_lossy(req.body()).into_owned();
                    let workers = rooms.publish(&room, &Message::Text(text));
                    text_response(200, workers.to_string())
                }
                ("GET", "/members") => text_response(200, rooms.members(&room).to_string()),
                _ => text_response(200, format!("http {}", req.path())),
            }
        })
        .unwrap()
}

fn text(c: &mut Client) -> String {
    let (first, payload) = c.frame();
    assert_eq!(first, 0x81, "a text frame");
    String::from_utf8(payload).unwrap()
}

/// Joins `/chat` as `name` in `room`; the client and the worker it landed on.
fn member(port: u16, name: &str, room: &str) -> (Client, String) {
    let mut c = Client::connect_to(port, &format!("/chat?name={name}&room={room}"));
    let hello = text(&mut c);
    let worker = hello.rsplit(' ').next().unwrap_or_default().to_owned();
    assert!(hello.starts_with(&format!("hello {name} w")), "{hello}");
    (c, worker)
}

fn say(c: &mut Client, line: &str) {
    c.send(&client_frame(line));
}

/// One request through the library's HTTP client; the body of the 200 reply.
fn request(port: u16, method: &str, target: &str, body: &str) -> String {
    request_with(&HttpClient::new(), port, method, target, body)
}

/// [`request`] through `client` (which keeps its connection for the next one).
fn request_with(client: &HttpClient, port: u16, method: &str, target: &str, body: &str) -> String {
    let res = client
        .request(method, &format!("http://127.0.0.1:{port}{target}"))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text());
    res.text()
}

fn members(port: u16, room: &str) -> usize {
    request(port, "GET", &format!("/members?room={room}"), "")
        .parse()
        .unwrap()
}

/// Every member of `clients` has nothing more queued than `frames` before the answer to
/// `who R`: asking proves nothing else arrived (exactly once, and no one else).
fn expect_then_nothing_else(clients: &mut [Client], frames: &[&str]) {
    for c in clients.iter_mut() {
        for want in frames {
            assert_eq!(text(c), *want);
        }
        say(c, "who zz");
        assert_eq!(
            text(c),
            "zz has 0",
            "nothing else was queued before the answer"
        );
    }
}

#[test]
fn a_message_published_to_a_room_reaches_each_member_once_across_workers_and_no_one_else() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let mut a = Vec::new();
    let mut workers = std::collections::BTreeSet::new();
    for i in 0..12 {
        let (c, worker) = member(port, &format!("a{i}"), "a");
        workers.insert(worker);
        a.push(c);
    }
    assert_eq!(workers.len(), 2, "room a has members on both workers");
    let mut b: Vec<Client> = (0..6)
        .map(|i| member(port, &format!("b{i}"), "b").0)
        .collect();
    say(&mut a[0], "say a hi there");
    expect_then_nothing_else(&mut a, &["a0: hi there"]);
    expect_then_nothing_else(&mut b, &[]);
    assert_eq!(members(port, "a"), 12);
    assert_eq!(members(port, "b"), 6);
    server.shutdown().unwrap();
}

#[test]
fn publish_from_an_http_handler_reaches_every_member() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let mut a: Vec<Client> = (0..8)
        .map(|i| member(port, &format!("m{i}"), "news").0)
        .collect();
    let queued = request(port, "POST", "/publish?room=news", "extra");
    assert_eq!(queued, "8", "publish counts the members it was queued for");
    expect_then_nothing_else(&mut a, &["extra"]);
    let none = request(port, "POST", "/publish?room=empty", "x");
    assert_eq!(none, "0", "a room without members reaches no one");
    server.shutdown().unwrap();
}

#[test]
fn presence_counts_follow_joins_leaves_and_closes() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let mut clients: Vec<Client> = (0..10)
        .map(|i| member(port, &format!("p{i}"), "p").0)
        .collect();
    assert_eq!(members(port, "p"), 10);
    say(&mut clients[0], "join q");
    assert_eq!(text(&mut clients[0]), "joined q");
    say(&mut clients[0], "join q");
    assert_eq!(text(&mut clients[0]), "joined q");
    assert_eq!(members(port, "q"), 1, "joining twice is one membership");
    say(&mut clients[1], "leave p");
    assert_eq!(text(&mut clients[1]), "left p");
    assert_eq!(members(port, "p"), 9);
    // Members that go away leave their rooms, with or without a close frame.
    let mut closing = clients.pop().unwrap();
    closing.send(&[0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8]);
    drop(clients.pop());
    drop(clients.remove(0));
    wait_until(Duration::from_secs(5), "members leave on close", || {
        members(port, "p") == 6 && members(port, "q") == 0
    });
    server.shutdown().unwrap();
}

#[test]
fn joining_and_leaving_while_publishes_flow_keeps_order_and_membership() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let (mut listener, _) = member(port, "listener", "");
    // The publisher goes on until the listener has done its rounds (a fixed count could run
    // out first on a loaded machine, leaving the listener waiting for messages that never come),
    // bounded in count and time.
    let done = Arc::new(AtomicBool::new(false));
    let publishing = Arc::clone(&done);
    let publisher = std::thread::spawn(move || {
        let client = HttpClient::new(); // one kept-alive connection for all of them
        let until = std::time::Instant::now() + Duration::from_secs(60);
        let mut i = 0u32;
        while !publishing.load(Ordering::Relaxed)
            && i < 1_000_000
            && std::time::Instant::now() < until
        {
            request_with(&client, port, "POST", "/publish?room=c", &i.to_string());
            i += 1;
        }
    });
    let mut last = None;
    for _round in 0..5 {
        say(&mut listener, "join c");
        // Frames of room c may come before the acknowledgement only once joined: none here.
        assert_eq!(text(&mut listener), "joined c");
        let mut got = 0;
        while got < 3 {
            let t = text(&mut listener);
            let n: u32 = t.parse().unwrap_or_else(|_| panic!("unexpected {t:?}"));
            assert!(
                last.is_none_or(|l| n > l),
                "in publish order: {n} after {last:?}"
            );
            last = Some(n);
            got += 1;
        }
        say(&mut listener, "leave c");
        loop {
            let t = text(&mut listener);
            if t == "left c" {
                break;
            }
            // Published before the leave was processed: still in order.
            let n: u32 = t.parse().unwrap();
            assert!(last.is_none_or(|l| n > l));
            last = Some(n);
        }
        // After leaving, nothing of room c arrives.
        say(&mut listener, "who zz");
        assert_eq!(text(&mut listener), "zz has 0");
    }
    done.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    assert_eq!(members(port, "c"), 0);
    server.shutdown().unwrap();
}

#[test]
fn a_refused_upgrade_gets_its_status_and_never_a_101() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    for (path, extra, status) in [
        ("/chat?room=a", None, "HTTP/1.1 401 "),
        (
            "/chat?name=x",
            Some("Origin: http://evil.example"),
            "HTTP/1.1 403 ",
        ),
    ] {
        let extra: Vec<&str> = extra.into_iter().collect();
        let (mut c, head) = Client::try_connect(port, path, &extra);
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with(status), "{head}");
        assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
        let mut rest = Vec::new();
        let _ = c.conn.read_to_end(&mut rest);
        let all = format!("{head}{}", String::from_utf8_lossy(&rest));
        assert!(!all.contains("101"), "never a 101: {all}");
    }
    assert!(
        chat.closed.lock().unwrap().is_empty(),
        "refused: never opened"
    );
    server.shutdown().unwrap();
}

#[test]
fn the_state_made_at_accept_comes_back_in_close() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let (mut c, _) = member(port, "zed", "z");
    // A close frame with code 1000; the server answers it and closes.
    c.send(&[0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xe8 ^ 2]);
    let (first, payload) = c.frame();
    assert_eq!((first, payload.as_slice()), (0x88, &[0x03, 0xe8][..]));
    wait_until(Duration::from_secs(5), "close is told", || {
        !chat.closed.lock().unwrap().is_empty()
    });
    assert_eq!(
        chat.closed.lock().unwrap().as_slice(),
        [("zed".to_owned(), Some(1000))]
    );
    assert_eq!(members(port, "z"), 0);
    server.shutdown().unwrap();
}

#[test]
fn several_routes_each_get_their_application_and_other_paths_go_to_http() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let mut echo = Client::connect_to(port, "/echo");
    echo.send(&client_frame("ping"));
    assert_eq!(text(&mut echo), "ping");
    let (mut chat_client, _) = member(port, "r", "");
    say(&mut chat_client, "who x");
    assert_eq!(text(&mut chat_client), "x has 0");
    let body = request(port, "GET", "/elsewhere", "");
    assert_eq!(body, "http /elsewhere");
    let (_, head) = Client::try_connect(port, "/nowhere", &[]);
    assert!(
        head.starts_with(b"HTTP/1.1 200 "),
        "an upgrade to a path with no route is the HTTP handler's: {}",
        String::from_utf8_lossy(&head)
    );
    server.shutdown().unwrap();
}

#[test]
fn shutdown_tells_every_member_and_empties_the_rooms() {
    let chat = Arc::new(Chat::default());
    let server = start(&chat);
    let port = server.local_addr().port();
    let mut clients: Vec<Client> = (0..4)
        .map(|i| member(port, &format!("s{i}"), "s").0)
        .collect();
    server.shutdown().unwrap();
    for c in &mut clients {
        let (first, payload) = c.frame();
        assert_eq!(
            (first, payload.as_slice()),
            (0x88, &[0x03, 0xe9][..]),
            "1001"
        );
    }
    let closed = chat.closed.lock().unwrap();
    assert_eq!(closed.len(), 4, "{closed:?}");
}

/// Joins room `o` and hands its sender out (for the test below).
#[derive(Default)]
struct Mixed {
    senders: Mutex<Vec<web::ws::WsSender>>,
}

impl WsHandler for Mixed {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join("o");
        self.senders.lock().unwrap().push(ws.sender());
        ws.send_text("in");
    }

    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

#[test]
fn publishes_sends_and_broadcasts_of_one_turn_arrive_whole_and_in_order() {
    // What a turn hands a member is written at the end of the turn, in one write: a shared
    // frame held by reference, then copied behind when more comes. Mix the three kinds so
    // every order of shared and own bytes occurs, for members on both workers.
    let app = Arc::new(Mixed::default());
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .websocket("/", Arc::clone(&app));
    let rooms = server.rooms();
    let senders = Arc::clone(&app);
    let server = server
        .spawn(move |_req| {
            let all = senders.senders.lock().unwrap().clone();
            for i in 0..60 {
                let text = format!("{i}");
                match i % 3 {
                    0 => {
                        rooms.publish("o", &Message::Text(text));
                    }
                    1 => {
                        for s in &all {
                            s.send_text(text.clone());
                        }
                    }
                    _ => {
                        web::ws::broadcast(&all, &Message::Text(text));
                    }
                }
            }
            text_response(200, "sent")
        })
        .unwrap();
    let port = server.local_addr().port();
    let mut members: Vec<Client> = (0..6)
        .map(|_| {
            let mut c = Client::connect_to(port, "/");
            assert_eq!(text(&mut c), "in");
            c
        })
        .collect();
    wait_until(Duration::from_secs(5), "every member counted", || {
        app.senders.lock().unwrap().len() == 6
    });
    for round in 0..3 {
        let body = request(port, "GET", "/mix", "");
        assert_eq!(body, "sent");
        for (m, c) in members.iter_mut().enumerate() {
            for i in 0..60 {
                assert_eq!(text(c), i.to_string(), "member {m}, round {round}");
            }
        }
    }
    drop(members);
    server.shutdown().unwrap();
}

/// `join N`: joins rooms `r0` … `r{N-1}` in one callback and answers how many joins took.
struct ManyRooms;

impl WsHandler for ManyRooms {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        let Message::Text(text) = msg else { return };
        if let Some(n) = text
            .strip_prefix("join ")
            .and_then(|n| n.parse::<usize>().ok())
        {
            let took = (0..n).filter(|i| ws.try_join(&format!("r{i}"))).count();
            ws.send_text(&format!("joined {took} of {n}, in {}", ws.joined().count()));
        } else if let Some(n) = text
            .strip_prefix("leave ")
            .and_then(|n| n.parse::<usize>().ok())
        {
            (0..n).for_each(|i| ws.leave(&format!("r{i}")));
            ws.send_text(&format!("in {}", ws.joined().count()));
        }
    }
}

#[test]
fn a_connection_joins_thousands_of_rooms_and_the_limit_holds() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_rooms(16_000)
        .websocket("/", ManyRooms);
    let rooms_of = server.rooms();
    let server = server.spawn(|_req| text_response(200, "ok")).unwrap();
    let mut c = Client::connect(server.local_addr().port());
    c.send(&client_frame("join 16500"));
    assert_eq!(text(&mut c), "joined 16000 of 16500, in 16000");
    // Every join took effect in the worker's lists: a publish to the last room reaches it.
    wait_until(Duration::from_secs(10), "the last join arrived", || {
        rooms_of.publish("r15999", &Message::Text("last".into())) > 0
    });
    assert_eq!(text(&mut c), "last");
    assert_eq!(rooms_of.members("r15999"), 1);
    c.send(&client_frame("leave 15990"));
    assert_eq!(text(&mut c), "in 10");
    assert_eq!(rooms_of.members("r0"), 0);
    assert_eq!(rooms_of.members("r15995"), 1);
    drop(c);
    server.shutdown().unwrap();
}
