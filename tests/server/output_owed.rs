//! Every byte owed to a peer counts against the server's one output budget, checked when it is
//! queued: HTTP replies (direct and deferred) to clients that never read them, and the history
//! a member is sent when it joins — which is shared by every member, not copied per member.

use crate::wire;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use web::http::{Request, Response, Server, defer, text_response};
use web::sse::{Sse, SseHandler};
use web::ws::{History, Message, Ws, WsHandler};
use wire::wait_until;

/// A request sent on a fresh connection whose reply is never read.
fn never_reads(port: u16, path: &str) -> TcpStream {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    c
}

/// Whether the server closed `c` (its unread reply dropped with it): reads what is there
/// until the end, a reset, or 5 s of silence (`false`).
fn closed_by_server(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0; 1 << 20];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[test]
fn replies_clients_never_read_count_against_the_budget_and_past_it_are_shed() {
    const BUDGET: usize = 4 << 20;
    const REPLY: usize = 6 << 20;
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .max_queued_output(BUDGET)
        .spawn(|req: Request| {
            let body = "x".repeat(REPLY);
            if req.path() == "/later" {
                let (reply, deferred) = defer();
                std::thread::spawn(move || reply.send(text_response(200, body)));
                return deferred;
            }
            if req.path() == "/probe" {
                return text_response(200, "ok");
            }
            text_response(200, body)
        })
        .unwrap();
    let port = server.local_addr().port();
    let crowd: Vec<TcpStream> = (0..8)
        .map(|i| never_reads(port, if i % 2 == 0 { "/now" } else { "/later" }))
        .collect();
    wait_until(Duration::from_secs(10), "replies shed", || {
        server.stats().lagging_closed >= 1
    });
    let stats = server.stats();
    assert!(
        stats.queued_output <= BUDGET + 2 * REPLY,
        "{} bytes held for replies nobody reads",
        stats.queued_output
    );
    // The server answers everyone else as before.
    let mut probe = wire::Client::connect(server.local_addr());
    assert_eq!(probe.get("/probe").text(), "ok");
    drop(crowd);
    wait_until(Duration::from_secs(10), "the budget given back", || {
        server.stats().queued_output == 0
    });
    server.shutdown().unwrap();
}

const LINES: usize = 20;
const LINE: usize = 400 * 1024;

/// Readers of room `r` from its start; `/ws` members join it with its history.
struct Readers;

impl SseHandler for Readers {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
        sse.join_after("r", 0);
    }
}

impl WsHandler for Readers {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join_with_history("r");
    }
    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

fn history_server(budget: usize) -> (web::http::ServerHandle, web::ws::Rooms) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .max_queued_output(budget)
        .history(History::new(LINES).bytes(256 << 20))
        .sse("/sse", Readers)
        .websocket("/ws", Readers);
    let rooms = server.rooms();
    let server = server.spawn(|_req| text_response(404, "")).unwrap();
    for i in 0..LINES {
        let fill = char::from(b'a' + i as u8).to_string().repeat(LINE);
        rooms.post("r", move |id| format!("{id} {fill}"));
    }
    (server, rooms)
}

fn ws_upgrade(port: u16) -> TcpStream {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(&web::ws::ws_handshake_request("127.0.0.1", "/ws"))
        .unwrap();
    c
}

#[test]
fn a_history_replay_is_held_once_for_every_member_that_does_not_read() {
    let (server, _rooms) = history_server(256 << 20);
    let port = server.local_addr().port();
    let replay = LINES * LINE;
    // Copied per member, 30 replays of 8 MB would pass the 256 MiB budget and be shed.
    let readers: Vec<TcpStream> = (0..30)
        .map(|i| match i % 2 {
            0 => never_reads(port, "/sse"),
            _ => ws_upgrade(port),
        })
        .collect();
    wait_until(Duration::from_secs(10), "every reader joined", || {
        let s = server.stats();
        s.event_streams + s.websockets == 30
    });
    std::thread::sleep(Duration::from_millis(300));
    let stats = server.stats();
    assert_eq!(stats.lagging_closed, 0, "nobody shed");
    // Each worker holds each line's event and frame once.
    assert!(
        stats.queued_output < 2 * 2 * 2 * replay,
        "{} bytes held for 30 replays of {replay}",
        stats.queued_output
    );
    drop(readers);
    wait_until(Duration::from_secs(10), "the budget given back", || {
        server.stats().queued_output == 0
    });
    server.shutdown().unwrap();
}

#[test]
fn a_replay_past_the_budget_is_shed_as_it_is_queued() {
    let (server, _rooms) = history_server(2 << 20);
    let port = server.local_addr().port();
    let mut reader = never_reads(port, "/sse");
    // No message follows the join: the replay alone is past the budget.
    wait_until(Duration::from_secs(10), "the reader shed", || {
        server.stats().lagging_closed == 1
    });
    assert!(closed_by_server(&mut reader));
    assert_eq!(server.stats().event_streams, 0);
    server.shutdown().unwrap();
}

#[test]
fn a_reader_gets_the_shared_replay_whole_and_in_order() {
    let (server, rooms) = history_server(256 << 20);
    let port = server.local_addr().port();
    let mut c = never_reads(port, "/sse");
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 20];
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let want_events = LINES;
    while got.windows(2).filter(|w| w == b"\n\n").count() < want_events {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "ended early");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(got).unwrap();
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let ids: Vec<u64> = body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let id = e.lines().next().unwrap().strip_prefix("id: ").unwrap();
            let data = e.lines().nth(1).unwrap().strip_prefix("data: ").unwrap();
            assert!(data.starts_with(&format!("{id} ")), "{}", &data[..20]);
            assert_eq!(data.len(), id.len() + 1 + LINE);
            id.parse().unwrap()
        })
        .collect();
    let posted: Vec<u64> = rooms.since("r", 0, || {}).iter().map(|l| l.0).collect();
    assert_eq!(posted.len(), LINES);
    assert_eq!(ids, posted, "every posted line, once, in order");
    drop(rooms);
    server.shutdown().unwrap();
}
