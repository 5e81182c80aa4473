//! Rooms' recent messages (`Server::history`, `Rooms::post`): a member joining with history
//! gets the room's last messages and then every new one, each exactly once and in order, over
//! WebSocket and Server-Sent Events alike, even while messages are being posted from other
//! threads; `Rooms::since` and `Rooms::watch` see the same messages.

use crate::wire;

use std::io::Read;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use web::http::{Request, Response, Server, ServerHandle, param, query_of, text_response};
use web::sse::{Sse, SseHandler};
use web::ws::{History, Message, Rooms, Ws, WsHandler};
use wire::wait_until;
use wire::ws::Client;

/// Members of `?room=` with the room's history; readers of it resuming after `?after=`.
struct Chat;

impl WsHandler for Chat {
    type State = (String, u64);

    fn accept(&self, req: &Request) -> Result<(String, u64), Response> {
        let query = query_of(req.path());
        Ok((
            param(query, "room"),
            param(query, "after").parse().unwrap_or(0),
        ))
    }

    fn open(&self, ws: &mut Ws<'_>, (room, after): &mut (String, u64)) {
        match after {
            0 => assert!(ws.join_with_history(room)),
            after => assert!(ws.join_after(room, *after)),
        }
    }

    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (String, u64), _msg: Message) {}
}

impl SseHandler for Chat {
    type State = (String, u64);

    fn accept(&self, req: &Request) -> Result<(String, u64), Response> {
        let query = query_of(req.path());
        let after = param(query, "after").parse().unwrap_or(0);
        Ok((param(query, "room"), after))
    }

    fn open(&self, sse: &mut Sse<'_>, (room, after): &mut (String, u64)) {
        sse.join_after(room, *after);
    }
}

fn start(per_room: usize) -> (ServerHandle, Rooms) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .history(History::new(per_room))
        .websocket("/ws", Arc::new(Chat))
        .sse("/sse", Arc::new(Chat));
    let rooms = server.rooms();
    (server.spawn(|_req| text_response(404, "")).unwrap(), rooms)
}

fn post(rooms: &Rooms, room: &str, n: usize) -> u64 {
    rooms
        .post(room, move |id| format!("{n}:{id}"))
        .expect("a server alone knows the id at once")
}

/// The texts of the next `n` text frames.
fn texts(c: &mut Client, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let (op, payload) = c.frame();
            assert_eq!(op, 0x81, "a whole text frame");
            String::from_utf8(payload).unwrap()
        })
        .collect()
}

#[test]
fn a_member_joining_gets_the_last_messages_then_every_new_one() {
    let (server, rooms) = start(3);
    let port = server.local_addr().port();
    let ids: Vec<u64> = (0..5).map(|n| post(&rooms, "r", n)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids grow: {ids:?}");
    let mut c = Client::connect_to(port, "/ws?room=r");
    let last3: Vec<String> = (2..5).map(|n| format!("{n}:{}", ids[n])).collect();
    assert_eq!(texts(&mut c, 3), last3);
    wait_until(Duration::from_secs(5), "the member counted", || {
        rooms.members("r") == 1
    });
    let six = post(&rooms, "r", 5);
    assert_eq!(texts(&mut c, 1), [format!("5:{six}")]);
    // Another room's history is its own; the server's one counter goes on.
    let mut other = Client::connect_to(port, "/ws?room=empty");
    let seven = post(&rooms, "empty", 9);
    assert!(seven > six);
    assert_eq!(texts(&mut other, 1), [format!("9:{seven}")]);
    drop((c, other)); // gone first: the shutdown waits for no closing handshake
    server.shutdown().unwrap();
}

#[test]
fn members_joining_while_messages_are_posted_get_each_once_in_order() {
    let (server, rooms) = start(20);
    let port = server.local_addr().port();
    const POSTS: usize = 400;
    let poster = {
        let rooms = rooms.clone();
        std::thread::spawn(move || {
            for n in 0..POSTS {
                post(&rooms, "busy", n);
                if n % 16 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    let mut members = Vec::new();
    while members.len() < 8 {
        members.push(Client::connect_to(port, "/ws?room=busy"));
        std::thread::sleep(Duration::from_millis(2));
    }
    poster.join().unwrap();
    for (i, c) in members.iter_mut().enumerate() {
        let first: usize = texts(c, 1)[0].split(':').next().unwrap().parse().unwrap();
        let rest = texts(c, POSTS - 1 - first);
        let got: Vec<usize> = std::iter::once(first)
            .chain(
                rest.iter()
                    .map(|t| t.split(':').next().unwrap().parse().unwrap()),
            )
            .collect();
        let want: Vec<usize> = (first..POSTS).collect();
        assert_eq!(
            got, want,
            "member {i}: from its first message on, each once, in order"
        );
        c.conn
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        assert!(
            c.buf.is_empty() && c.conn.read(&mut [0u8; 1]).is_err(),
            "member {i} got more than each message once"
        );
    }
    drop(members);
    server.shutdown().unwrap();
}

#[test]
fn an_event_stream_resumes_after_the_last_id_it_saw() {
    let (server, rooms) = start(10);
    let port = server.local_addr().port();
    let ids: Vec<u64> = (0..4).map(|n| post(&rooms, "feed", n)).collect();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    use std::io::Write;
    s.write_all(
        format!(
            "GET /sse?room=feed&after={} HTTP/1.1\r\nHost: x\r\n\r\n",
            ids[1]
        )
        .as_bytes(),
    )
    .unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    let last = format!("data: 3:{}\n", ids[3]);
    while !got.contains(&last) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let event = |n: usize| format!("id: {id}\ndata: {n}:{id}\n\n", id = ids[n]);
    assert!(got.contains(&event(2)) && got.contains(&event(3)), "{got}");
    assert!(!got.contains(&format!("data: 1:{}", ids[1])), "{got}");
    drop(s);
    server.shutdown().unwrap();
}

#[test]
fn since_and_watch_see_what_was_posted() {
    let (server, rooms) = start(3);
    let seen = Arc::new(Mutex::new(Vec::new()));
    {
        let seen = Arc::clone(&seen);
        rooms.watch(move |room, id, text| seen.lock().unwrap().push(format!("{room} {id} {text}")));
    }
    let ids: Vec<u64> = (0..4).map(|n| post(&rooms, "w", n)).collect();
    let since: Vec<(u64, String)> = rooms
        .since("w", ids[1], || panic!("there are newer messages"))
        .into_iter()
        .map(|(id, text)| (id, text.to_string()))
        .collect();
    let want: Vec<(u64, String)> = (2..4)
        .map(|n| (ids[n], format!("{n}:{}", ids[n])))
        .collect();
    assert_eq!(since, want);
    let mut waited = false;
    assert!(rooms.since("w", ids[3], || waited = true).is_empty());
    assert!(
        waited,
        "nothing newer: the caller waits, in the critical section"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        (0..4)
            .map(|n| format!("w {id} {n}:{id}", id = ids[n]))
            .collect::<Vec<_>>()
    );
    server.shutdown().unwrap();
}

#[test]
fn a_room_followed_before_the_server_runs_still_reaches_members_on_every_worker() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .history(History::new(5))
        .websocket("/ws", Arc::new(Chat));
    let rooms = server.rooms();
    let follow = rooms.follow("early");
    let server = server.spawn(|_req| text_response(404, "")).unwrap();
    let port = server.local_addr().port();
    let mut members: Vec<Client> = (0..8)
        .map(|_| Client::connect_to(port, "/ws?room=early"))
        .collect();
    wait_until(Duration::from_secs(5), "all eight counted", || {
        rooms.members("early") == 8
    });
    let id = post(&rooms, "early", 0);
    for c in &mut members {
        assert_eq!(texts(c, 1), [format!("0:{id}")]);
    }
    drop(follow);
    assert_eq!(
        rooms.members("early"),
        8,
        "the follow gone, the members stay"
    );
    drop(members);
    server.shutdown().unwrap();
}

#[test]
fn a_server_without_history_keeps_nothing_but_still_numbers_its_posts() {
    let server = Server::bind("127.0.0.1:0").unwrap();
    let rooms = server.rooms();
    let handle = server.spawn(|_req| text_response(404, "")).unwrap();
    let first = post(&rooms, "r", 0);
    assert!(post(&rooms, "r", 1) > first);
    assert!(rooms.since("r", 0, || {}).is_empty());
    handle.shutdown().unwrap();
}

/// A browser reconnecting with the `Last-Event-ID` it had before the server restarted misses
/// nothing posted since: ids of a server alone keep growing across a restart.
#[test]
fn ids_keep_growing_across_a_restart_so_a_resume_from_before_it_misses_nothing() {
    let (first, rooms) = start(5);
    let before = post(&rooms, "news", 0);
    first.shutdown().unwrap();
    let (second, rooms) = start(5);
    let after = post(&rooms, "news", 1);
    assert!(after > before, "{after} after a restart, {before} before");
    // A resume from before the restart gets what was posted since.
    let resumed = rooms.since("news", before, || panic!("the new message is newer"));
    assert_eq!(resumed, [(after, format!("1:{after}").into())]);
    second.shutdown().unwrap();
}

#[test]
fn a_websocket_resumes_after_the_last_id_it_saw_then_gets_every_new_message() {
    let (server, rooms) = start(5);
    let port = server.local_addr().port();
    let ids: Vec<u64> = (0..4).map(|n| post(&rooms, "feed", n)).collect();
    let mut c = Client::connect_to(port, &format!("/ws?room=feed&after={}", ids[1]));
    let missed: Vec<String> = (2..4).map(|n| format!("{n}:{}", ids[n])).collect();
    assert_eq!(texts(&mut c, 2), missed, "what it missed, once, in order");
    wait_until(Duration::from_secs(5), "the member counted", || {
        rooms.members("feed") == 1
    });
    let next = post(&rooms, "feed", 4);
    assert_eq!(texts(&mut c, 1), [format!("4:{next}")]);
    // An id past every message resumes with nothing missed and nothing repeated.
    let mut late = Client::connect_to(port, &format!("/ws?room=feed&after={next}"));
    wait_until(Duration::from_secs(5), "the second member counted", || {
        rooms.members("feed") == 2
    });
    let last = post(&rooms, "feed", 5);
    assert_eq!(texts(&mut late, 1), [format!("5:{last}")]);
    drop((c, late));
    server.shutdown().unwrap();
}
