//! Long-polls in the library (`Rooms::long_poll`, `defer_for`): answered at once with what the
//! room holds after the id asked, else by the next message, else 204 at the wait's end or at
//! once when the server stops — parked, with no thread of the application's.

use std::time::{Duration, Instant};

use crate::wire::{Client, wait_until};

use web::http::{
    LongPoll, Request, Server, ServerHandle, defer_for, handle_conn, param, query_of, text_response,
};
use web::ws::{History, Rooms};

/// A server whose `/poll?after=ID&wait=MS` long-polls room "r", answering the ids it got.
fn start() -> (ServerHandle, Rooms) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .history(History::new(10));
    let rooms = server.rooms();
    let polls = rooms.clone();
    let handle = server
        .spawn(move |req: Request| {
            let query = query_of(req.path());
            let after = param(query, "after").parse().unwrap_or(0);
            let wait = Duration::from_millis(param(query, "wait").parse().unwrap_or(10_000));
            polls.long_poll("r", after, wait, |messages| {
                let ids: Vec<String> = messages.iter().map(|(id, t)| format!("{id}:{t}")).collect();
                text_response(200, ids.join(","))
            })
        })
        .unwrap();
    (handle, rooms)
}

fn post(rooms: &Rooms, text: &str) -> u64 {
    let text = text.to_owned();
    rooms.post("r", move |_| text).unwrap()
}

#[test]
fn a_poll_after_an_older_id_gets_every_newer_message_at_once() {
    let (server, rooms) = start();
    let ids: Vec<u64> = ["a", "b", "c"].iter().map(|t| post(&rooms, t)).collect();
    let mut c = Client::connect(server.local_addr());
    let r = c.get(&format!("/poll?after={}", ids[0]));
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), format!("{}:b,{}:c", ids[1], ids[2]));
    server.shutdown().unwrap();
}

#[test]
fn a_poll_with_nothing_newer_waits_parked_for_the_next_message_and_gets_it_alone() {
    let (server, rooms) = start();
    let last = post(&rooms, "old");
    let mut polls: Vec<Client> = (0..50)
        .map(|_| {
            let mut c = Client::connect(server.local_addr());
            c.send(format!(
                "GET /poll?after={last} HTTP/1.1\r\nHost: x\r\n\r\n"
            ));
            c
        })
        .collect();
    // Every poll is parked before the message: each gets it, once.
    wait_until(Duration::from_secs(10), "every poll is parked", || {
        server.stats().replies_waiting == 50
    });
    let next = post(&rooms, "new");
    for c in &mut polls {
        let r = c.reply();
        assert_eq!((r.status, r.text()), (200, format!("{next}:new")));
        r.assert_keeps_alive();
    }
    // The next poll on the same connection waits for the message after.
    let c = &mut polls[0];
    c.send(format!(
        "GET /poll?after={next} HTTP/1.1\r\nHost: x\r\n\r\n"
    ));
    wait_until(Duration::from_secs(10), "the poll is parked", || {
        server.stats().replies_waiting == 1
    });
    let third = post(&rooms, "third");
    assert_eq!(c.reply().text(), format!("{third}:third"));
    server.shutdown().unwrap();
}

#[test]
fn a_poll_nothing_answers_gets_204_when_its_wait_ends_and_the_connection_serves_on() {
    let (server, rooms) = start();
    let last = post(&rooms, "only");
    let mut c = Client::connect(server.local_addr());
    let start = Instant::now();
    let r = c.get(&format!("/poll?after={last}&wait=150"));
    let took = start.elapsed();
    assert_eq!((r.status, r.body.len()), (204, 0));
    assert!(took >= Duration::from_millis(140), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // Not a reply timed out; the connection goes on.
    assert_eq!(server.stats().replies_timed_out, 0);
    assert_eq!(c.get("/poll?after=0").text(), format!("{last}:only"));
    // A message after the 204 reaches no one twice: the stale wait is gone.
    post(&rooms, "later");
    server.shutdown().unwrap();
}

#[test]
fn stopping_the_server_answers_every_waiting_poll_with_204_at_once() {
    let (server, rooms) = start();
    let last = post(&rooms, "x");
    let mut polls: Vec<Client> = (0..20)
        .map(|_| {
            let mut c = Client::connect(server.local_addr());
            c.send(format!(
                "GET /poll?after={last} HTTP/1.1\r\nHost: x\r\n\r\n"
            ));
            c
        })
        .collect();
    wait_until(Duration::from_secs(5), "the polls are parked", || {
        server.stats().requests >= 20
    });
    let start = Instant::now();
    let stopping = std::thread::spawn(move || server.shutdown());
    for c in &mut polls {
        assert_eq!(c.reply().status, 204);
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    stopping.join().unwrap().unwrap();
}

#[test]
fn polls_whose_clients_left_are_not_answered_and_hold_nothing_after_the_next_message() {
    let (server, rooms) = start();
    let last = post(&rooms, "x");
    for _ in 0..200 {
        let mut c = Client::connect(server.local_addr());
        c.send(format!(
            "GET /poll?after={last} HTTP/1.1\r\nHost: x\r\n\r\n"
        ));
        drop(c);
    }
    wait_until(
        Duration::from_secs(5),
        "the clients' leaving is seen",
        || {
            let stats = server.stats();
            stats.open_connections == 0 && stats.replies_waiting == 0
        },
    );
    post(&rooms, "y");
    let stats = server.stats();
    assert_eq!(
        stats.replies_dropped, 0,
        "a gone client's poll is not a dropped reply"
    );
    assert_eq!(stats.replies_timed_out, 0);
    server.shutdown().unwrap();
}

#[test]
fn under_handle_conn_a_long_poll_waits_on_its_thread_then_answers_204() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        handle_conn(conn, |_req| {
            let (reply, later) = defer_for(Duration::from_millis(100));
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                assert!(!reply.send(text_response(200, "too late")));
            });
            later
        })
    });
    let mut c = Client::connect(addr);
    assert_eq!(c.get("/").status, 204);
    drop(c);
    served.join().unwrap().unwrap();
}

#[test]
fn an_answer_that_panics_gets_its_poll_a_500_and_leaves_the_poster_alone() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .history(History::new(10));
    let rooms = server.rooms();
    let polls = rooms.clone();
    let server = server
        .spawn(move |_req: Request| {
            polls.long_poll("r", u64::MAX, Duration::from_secs(10), |messages| {
                assert!(
                    messages.iter().all(|(_, text)| &**text != "boom"),
                    "a bad answer"
                );
                text_response(200, "fine")
            })
        })
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    c.send("GET /poll HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_until(Duration::from_secs(5), "the poll is parked", || {
        server.stats().replies_waiting == 1
    });
    assert!(post(&rooms, "boom") > 0, "the post went through");
    assert_eq!(c.reply().status, 500);
    // The connection and the room go on.
    c.send("GET /poll HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_until(Duration::from_secs(5), "the next poll is parked", || {
        server.stats().replies_waiting == 1
    });
    post(&rooms, "calm");
    assert_eq!(c.reply().text(), "fine");
    server.shutdown().unwrap();
}
