//! The publisher's reply beside a large fan-out (asserts nothing; `cargo bench --bench
//! publisher`): a `POST /publish` whose handler answers later from another thread — as an async
//! handler does — after publishing one event to a room of N idle event-stream subscribers.
//! Prints, for N = 0 and 5 000 and for one and two workers, the POST's round trip (p50, p99
//! over 100 posts, one every 40 ms) and the time until the last subscriber has read each event
//! (p50, max).
//!
//! The server runs in a child process (this program, re-run with `PUBLISHER_BENCH_SERVER=1`);
//! everything talks to 127.0.0.1 only; the child ends when the parent closes its standard input.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, defer, text_response};
use web::sse::{Event, Sse, SseHandler};

mod child;

const SUBSCRIBERS: usize = 5_000;
const POSTS: usize = 100;
const SPACING: Duration = Duration::from_millis(40);

/// Event streams in room `r`.
struct Subscribe;

impl SseHandler for Subscribe {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _: &mut ()) {
        sse.join("r");
        sse.send(&Event::new("in"));
    }
}

fn serve() {
    let workers: usize = std::env::var("PUBLISHER_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(workers)
        .max_connections(20_000)
        .sse("/events", Subscribe);
    let rooms = server.rooms();
    let handle = server
        .spawn(move |req| {
            if req.path() != "/publish" {
                return text_response(404, "");
            }
            let (reply, later) = defer();
            let rooms = rooms.clone();
            let text = String::from_utf8_lossy(req.body()).into_owned();
            // As an async handler would: the work and the reply on another thread.
            std::thread::spawn(move || {
                rooms.publish_event("r", &Event::new(text));
                reply.send(text_response(201, "published"));
            });
            later
        })
        .unwrap();
    child::serve_until_stdin_closes(handle.local_addr().port());
}

fn subscriber(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    child::read_until(&mut s, b"data: in\n\n");
    s
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn measure(port: u16, subscribers: usize) -> (Vec<Duration>, Vec<Duration>) {
    let mut subs: Vec<TcpStream> = (0..subscribers).map(|_| subscriber(port)).collect();
    let mut poster = TcpStream::connect(("127.0.0.1", port)).unwrap();
    poster.set_nodelay(true).unwrap();
    let (mut trips, mut deliveries) = (Vec::new(), Vec::new());
    for i in 0..POSTS {
        let text = format!("post{i:04}");
        let begun = Instant::now();
        write!(
            poster,
            "POST /publish HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        )
        .unwrap();
        child::read_until(&mut poster, b"published");
        trips.push(begun.elapsed());
        let needle = format!("data: {text}\n\n");
        for s in &mut subs {
            child::read_until(s, needle.as_bytes());
        }
        if subscribers > 0 {
            deliveries.push(begun.elapsed());
        }
        std::thread::sleep(SPACING.saturating_sub(begun.elapsed()));
    }
    trips.sort();
    deliveries.sort();
    (trips, deliveries)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if std::env::var_os("PUBLISHER_BENCH_SERVER").is_none() {
        println!(
            "publisher: a POST answered from another thread after it published to N event streams"
        );
    }
    for workers in ["1", "2"] {
        for subscribers in [0, SUBSCRIBERS] {
            let vars = [("PUBLISHER_WORKERS", workers)];
            let (trips, deliveries) =
                child::run_with("PUBLISHER_BENCH_SERVER", &vars, serve, |port, _| {
                    measure(port, subscribers)
                });
            let delivered = match deliveries.is_empty() {
                true => String::new(),
                false => format!(
                    "; last subscriber p50 {:.1} ms, max {:.1} ms",
                    ms(percentile(&deliveries, 0.5)),
                    ms(percentile(&deliveries, 1.0))
                ),
            };
            println!(
                "  {workers} worker(s), {subscribers:>5} subscribers: POST round trip p50 {:.2} ms, p99 {:.2} ms{delivered}",
                ms(percentile(&trips, 0.5)),
                ms(percentile(&trips, 0.99)),
            );
        }
    }
}
