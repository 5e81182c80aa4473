//! A room's publish and a liveness sweep reaching many WebSocket members of one worker: with
//! the feature `io-uring` (Linux) their frames go to the kernel in io_uring batches (the
//! server's figures count them), without it a system call each; either way every member gets
//! every frame, whole and in order.

use crate::wire;

use std::time::Duration;

use web::http::{Server, ServerHandle, text_response};
use web::ws::{Message, Rooms, Ws, WsHandler};
use wire::wait_until;
use wire::ws::Client;

/// Members of room `news`, silent.
struct News;

impl WsHandler for News {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join("news");
    }

    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

const MEMBERS: usize = 40;

fn gathers() -> bool {
    cfg!(all(feature = "io-uring", target_os = "linux"))
}

/// `server` serving room `news` at `/`, started, with `MEMBERS` members in the room.
fn room_of(server: Server) -> (ServerHandle, Rooms, Vec<Client>) {
    let server = server.workers(1).websocket("/", News);
    let rooms = server.rooms();
    let handle = server.spawn(|_req| text_response(200, "")).unwrap();
    let port = handle.local_addr().port();
    let members: Vec<Client> = (0..MEMBERS).map(|_| Client::connect(port)).collect();
    wait_until(Duration::from_secs(10), "every member in the room", || {
        rooms.members("news") == MEMBERS
    });
    (handle, rooms, members)
}

#[test]
fn a_publish_to_many_members_reaches_each_whole_and_in_order() {
    let (handle, rooms, mut members) = room_of(Server::bind("127.0.0.1:0").unwrap());
    let before = handle.stats();
    // Short frames and one of 100 KiB (more than a socket may take at once).
    let big = "b".repeat(100 * 1024);
    let sent = ["first", big.as_str(), "third"];
    for text in sent {
        rooms.publish("news", &Message::Text(text.to_owned()));
    }
    for member in &mut members {
        for text in sent {
            let (first, payload) = member.frame();
            assert_eq!(first, 0x81, "a text frame");
            assert!(payload == text.as_bytes(), "each frame whole, in order");
        }
    }
    if gathers() {
        assert_eq!(handle.stats().io_uring_workers, 1);
        wait_until(Duration::from_secs(10), "the figures of the pass", || {
            handle.stats().gathered_sends - before.gathered_sends >= MEMBERS as u64
        });
        let after = handle.stats();
        assert!(
            after.send_submissions - before.send_submissions
                < (after.gathered_sends - before.gathered_sends) / 8,
            "many sends to each system call: {after:?}"
        );
    } else {
        assert_eq!(handle.stats().gathered_sends, 0);
    }
    handle.shutdown().unwrap();
}

#[test]
fn a_liveness_sweep_pings_every_silent_member() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .ping_interval(Some(Duration::from_millis(200)));
    let (handle, _rooms, mut members) = room_of(server);
    for member in &mut members {
        let (first, payload) = member.frame();
        assert_eq!((first, payload.len()), (0x89, 0), "a ping, empty");
    }
    if gathers() {
        wait_until(
            Duration::from_secs(10),
            "the sweep's pings gathered",
            || handle.stats().gathered_sends >= MEMBERS as u64,
        );
    }
    handle.shutdown().unwrap();
}
