//! Room membership after joins, leaves and closes in any order within one callback: a member
//! receives exactly the publishes sent while it was a member — after its *last* join, none sent
//! between a leave and a join again, even when they reach its worker before its entry does —
//! and leaving or closing before its entry arrives leaves nothing behind.

use crate::wire;

use std::time::Duration;

use web::http::{Request, Response, Server, ServerHandle, text_response};
use web::ws::{Message, Ws, WsHandler, write_frame};
use wire::wait_until;
use wire::ws::Client;

/// Each text message is a list of steps separated by `;`: `join R`, `leave R`, `say R text`,
/// `close`; then `done` is sent back (before any publish reaches this connection; not after a
/// `close`).
struct Steps;

impl WsHandler for Steps {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        let Message::Text(text) = msg else { return };
        for step in text.split(';') {
            let mut words = step.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("join"), Some(room), None) => ws.join(room),
                (Some("leave"), Some(room), None) => ws.leave(room),
                (Some("say"), Some(room), Some(text)) => {
                    ws.publish(room, &Message::Text(text.to_owned()));
                }
                (Some("close"), None, None) => ws.close(1000),
                _ => ws.send_text("?"),
            }
        }
        ws.send_text("done");
    }
}

/// One worker: every connection's entry and every publish go through the same queue.
fn start() -> (ServerHandle, web::ws::Rooms) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .websocket("/", Steps);
    let rooms = server.rooms();
    (
        server.spawn(|_req| text_response(404, "no")).unwrap(),
        rooms,
    )
}

fn say(c: &mut Client, text: &str) {
    let mut frame = Vec::new();
    write_frame(&mut frame, 0x81, text.as_bytes(), Some([1, 2, 3, 4]));
    c.send(&frame);
}

fn text(c: &mut Client) -> String {
    let (first, payload) = c.frame();
    assert_eq!(first, 0x81, "a text frame");
    String::from_utf8(payload).unwrap()
}

/// The next text frames, until `last` (included).
fn texts_until(c: &mut Client, last: &str) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let t = text(c);
        let end = t == last;
        got.push(t);
        if end {
            return got;
        }
    }
}

#[test]
fn a_publish_sent_between_a_leave_and_a_join_again_is_not_received() {
    let (server, rooms) = start();
    let port = server.local_addr().port();
    // A member that stays: publishes to the room reach the worker throughout.
    let mut stays = Client::connect(port);
    say(&mut stays, "join r");
    assert_eq!(text(&mut stays), "done");
    wait_until(Duration::from_secs(5), "one member", || {
        rooms.members("r") == 1
    });

    let mut cycles = Client::connect(port);
    say(
        &mut cycles,
        "join r;leave r;say r between;join r;say r after;say r end",
    );
    assert_eq!(texts_until(&mut cycles, "end"), ["done", "after", "end"]);
    assert_eq!(
        texts_until(&mut stays, "end"),
        ["between", "after", "end"],
        "the member that stayed hears everything"
    );
    assert_eq!(rooms.members("r"), 2);

    // Once more, now that it is a member: leave and join again in one callback.
    say(&mut cycles, "leave r;say r gap;join r;say r back");
    assert_eq!(texts_until(&mut cycles, "back"), ["done", "back"]);
    assert_eq!(texts_until(&mut stays, "back"), ["gap", "back"]);
    assert_eq!(rooms.members("r"), 2);
    drop((stays, cycles));
    drop(server);
}

#[test]
fn joining_then_leaving_before_the_entry_arrives_leaves_no_membership() {
    let (server, rooms) = start();
    let port = server.local_addr().port();
    let mut stays = Client::connect(port);
    say(&mut stays, "join r");
    assert_eq!(text(&mut stays), "done");

    let mut c = Client::connect(port);
    say(&mut c, "join r;join r;leave r;say r missed");
    assert_eq!(text(&mut c), "done");
    assert_eq!(texts_until(&mut stays, "missed"), ["missed"]);
    assert_eq!(rooms.members("r"), 1);
    // Its entry, arriving after it left, did not make it a member after all.
    say(&mut stays, "say r later");
    assert_eq!(texts_until(&mut stays, "done"), ["done"]);
    assert_eq!(texts_until(&mut stays, "later"), ["later"]);
    say(&mut c, "join q");
    assert_eq!(text(&mut c), "done", "nothing of room r came first");
    drop((stays, c));
    drop(server);
}

#[test]
fn closing_before_the_entry_arrives_leaves_the_room_empty() {
    let (server, rooms) = start();
    let port = server.local_addr().port();
    let mut c = Client::connect(port);
    say(&mut c, "join gone;join r;close");
    // Nothing is sent after a close is asked for: our close frame comes first.
    assert_eq!(c.frame().0, 0x88, "our close frame");
    drop(c);
    wait_until(Duration::from_secs(5), "the rooms empty", || {
        rooms.list().is_empty()
    });
    // A new member of the same rooms on the same worker hears only what it should.
    let mut next = Client::connect(port);
    say(&mut next, "join r;say r hi");
    assert_eq!(texts_until(&mut next, "hi"), ["done", "hi"]);
    assert_eq!(rooms.members("r"), 1);
    assert_eq!(rooms.members("gone"), 0);
    drop(next);
    drop(server);
}
