//! What an idle event-stream subscriber costs the server's heap, by how its subscribers are
//! spread over rooms (asserts nothing; `cargo bench --bench idle_rooms`): 5 000 streams of a
//! chat-like service (`History::new(200)`, the room and a resume id kept per stream, joined
//! with `join_after`) in one room, in rooms of 10, and in a room each — a fresh server for
//! each. Prints live heap bytes and heap blocks per subscriber (a counting allocator in the
//! server; `malloc`'s own headers and slack are not in it) and RSS growth per subscriber.
//!
//! The server runs in a child process (this program, re-run with `IDLE_ROOMS_SERVER=1`).
//! Everything talks to 127.0.0.1 only; the child ends when the parent closes its stdin.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, header, param, query_of, text_response};
use web::sse::{Sse, SseHandler};
use web::ws::History;

mod child;

#[global_allocator]
static GLOBAL: child::Counting = child::Counting;

/// Subscribers per run (`IDLE_ROOMS_SUBSCRIBERS` to change it).
fn subscribers() -> usize {
    std::env::var("IDLE_ROOMS_SUBSCRIBERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000)
}

/// A chat's reader: its room and the id it resumes after, kept while it is open.
struct Reader {
    room: String,
    after: u64,
}

struct Feed;

impl SseHandler for Feed {
    type State = Reader;
    fn accept(&self, req: &Request) -> Result<Reader, Response> {
        Ok(Reader {
            room: param(query_of(req.path()), "room").to_owned(),
            after: header(req, "last-event-id").parse().unwrap_or(0),
        })
    }
    fn open(&self, sse: &mut Sse<'_>, me: &mut Reader) {
        sse.join_after(&me.room, me.after);
    }
}

fn serve() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .history(History::new(200))
        .sse("/events", Feed);
    let port = server.local_addr().unwrap().port();
    let control = server.control();
    let handle = server
        .spawn(move |_req: Request| {
            text_response(
                200,
                format!(
                    "{} {} {}",
                    child::stats_line(),
                    child::live_blocks(),
                    control.stats().event_streams
                ),
            )
        })
        .unwrap();
    child::serve_until_stdin_closes(port);
    drop(handle);
}

/// `stats_line`, heap blocks and open event streams, from the child.
fn read(port: u16) -> (child::ProcessStats, i64, usize) {
    let line = child::http(
        port,
        "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let fields: Vec<&str> = line.split_whitespace().collect();
    (
        child::ProcessStats::parse(&line),
        fields[4].parse().unwrap(),
        fields[5].parse().unwrap(),
    )
}

/// Opens `n` streams, stream `i` to room `room(i)`; returns them once the server counts all.
fn subscribe(port: u16, n: usize, room: impl Fn(usize) -> usize) -> Vec<TcpStream> {
    let mut streams = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "GET /events?room=r{} HTTP/1.1\r\nHost: t\r\n\r\n",
            room(i)
        )
        .unwrap();
        streams.push(s);
    }
    for s in &mut streams {
        // The head: the stream is open.
        child::read_until(s, b"\r\n\r\n");
    }
    let start = Instant::now();
    while read(port).2 < n {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "streams not counted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    streams
}

/// The room of subscriber `i`.
type RoomOf = fn(usize) -> usize;

fn main() {
    if std::env::var_os("IDLE_ROOMS_SERVER").is_some() {
        serve();
        return;
    }
    child::raise_open_files();
    let n = subscribers();
    println!("idle event-stream subscribers: {n} per run, 2 workers, History::new(200)");
    println!(
        "{:<14} {:>12} {:>12} {:>12}",
        "rooms", "heap B/sub", "blocks/sub", "RSS B/sub"
    );
    let modes: [(&str, RoomOf); 3] = [
        ("one", |_| 0),
        ("of 10 each", |i| i / 10),
        ("one each", |i| i),
    ];
    for (name, room) in modes {
        child::run("IDLE_ROOMS_SERVER", serve, |port, _child| {
            let (before, blocks_before, _) = read(port);
            let streams = subscribe(port, n, room);
            let after = child::settled(|| read(port).0);
            let (_, blocks_after, _) = read(port);
            let per = |x: i64| x as f64 / n as f64;
            println!(
                "{:<14} {:>12.1} {:>12.2} {:>12.1}",
                name,
                per(after.heap - before.heap),
                per(blocks_after - blocks_before),
                per((after.rss_kib as i64 - before.rss_kib as i64) * 1024),
            );
            drop(streams);
        });
    }
}
