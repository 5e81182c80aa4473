//! Output queued for WebSocket peers is bounded server-wide: a crowd that never reads is closed
//! (1008, counted) once the server's output budget is spent, furthest behind first, while a
//! member that reads keeps its connection and gets every message; what the server holds stays
//! near the budget, and a room's frames are held once, not once per member.

use crate::wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use web::http::{Server, text_response};
use web::ws::{ConnId, Message, Ws, WsHandler};
use wire::wait_until;
use wire::ws::Client;

const BUDGET: usize = 8 << 20;
const FRAME: usize = 64 * 1024;
/// Members that never read.
const CROWD: usize = 20;

/// Members join `room`; `close` records the codes.
#[derive(Default)]
struct Room {
    closed: Mutex<Vec<Option<u16>>>,
}

impl WsHandler for Room {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join("room");
        ws.send_text("in");
    }

    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}

    fn close(&self, _id: ConnId, _state: (), code: Option<u16>) {
        self.closed.lock().unwrap().push(code);
    }
}

#[test]
fn a_crowd_that_never_reads_is_closed_at_the_budget_and_a_reader_is_not() {
    let room = Arc::new(Room::default());
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .max_queued_output(BUDGET)
        .websocket("/", Arc::clone(&room));
    let rooms = server.rooms();
    let server = server.spawn(|_req| text_response(404, "")).unwrap();
    let port = server.local_addr().port();
    let mut reader = Client::connect(port);
    assert_eq!(reader.frame().1, b"in");
    let crowd: Vec<Client> = (0..CROWD)
        .map(|_| {
            let mut c = Client::connect(port);
            assert_eq!(c.frame().1, b"in");
            c
        })
        .collect();
    let reading = std::thread::spawn(move || {
        let mut got = 0;
        while got < 400 {
            let (first, payload) = reader.frame();
            assert_eq!((first, payload.len()), (0x81, FRAME));
            got += 1;
        }
        reader
    });
    let payload = "x".repeat(FRAME);
    let mut most_queued = 0;
    for _ in 0..400 {
        rooms.publish("room", &Message::Text(payload.clone()));
        most_queued = most_queued.max(server.stats().queued_output);
        std::thread::sleep(Duration::from_millis(5));
    }
    let reader = reading.join().expect("the reader got all 400 messages");
    wait_until(Duration::from_secs(10), "the crowd is closed", || {
        server.stats().lagging_closed == CROWD as u64
    });
    let closed = room.closed.lock().unwrap().clone();
    assert_eq!(closed.len(), CROWD, "{closed:?}");
    assert!(closed.iter().all(|c| *c == Some(1008)), "{closed:?}");
    // The budget plus one frame per worker and the pieces of one turn's publishes.
    assert!(
        most_queued <= BUDGET + 4 * FRAME + (64 << 10),
        "queued {most_queued} with a budget of {BUDGET}"
    );
    wait_until(Duration::from_secs(5), "the queue is empty", || {
        server.stats().queued_output == 0
    });
    drop((crowd, reader));
    server.shutdown().unwrap();
}
