//! `Hello, World!` as `text/plain` on any path: the benchmark target.
//!
//! ```sh
//! cargo run --release --example hello -- --port 8080 --workers 1
//! curl -i http://127.0.0.1:8080/
//! ```
//!
//! `--requests N` serves N requests, then exits cleanly (the reply to the last says
//! `Connection: close`): a bounded run for profiling and allocation counting.
//! `--tls-cert FILE --tls-key FILE` (PEM; build with `--features tls`) serve HTTPS only.
//! `--async` answers from an `async` block on a tokio runtime of one thread
//! (`web::http::answer_async`): what the async path costs beside the synchronous one.
//! HTTP/2 is served too: h2c by prior knowledge on the same port, h2 by ALPN with TLS
//! (`curl --http2-prior-knowledge http://127.0.0.1:8080/`); `--h2-table BYTES` sets the HPACK
//! table its clients may fill (default `web::http::HEADER_TABLE_SIZE`). `--events ROOM` also
//! serves an event stream at `/events` whose every stream joins room `ROOM` and keeps no state
//! of its own: what an idle event stream costs the library (over HTTP/1.1, or as one stream of
//! an HTTP/2 connection) can then be measured; and `POST /events` publishes its body to `ROOM`
//! as one event (`data: <body>`). A WebSocket upgrade at `/events` is a member of `ROOM` too
//! (a publish reaches it as a text message): `web-bench fanout` measures a publish to many. `--download BYTES` adds `GET /download`, answered with BYTES
//! bytes as a streamed body: with both, one HTTP/2 connection can carry a download beside the
//! event streams of a page (is the connection fair to them?). Built with `--features
//! io-uring` (Linux), a publish's frames go to the kernel in io_uring batches;
//! `--no-io-uring` sends each with its own system call, for comparison.

use std::io::Write;

use web::http::{Request, Response, text_response};

mod cli;

fn main() -> std::process::ExitCode {
    cli::run("hello", serve)
}

fn serve() -> std::io::Result<()> {
    let options = cli::Options::parse(
        &[
            "--port",
            "--workers",
            "--max-connections",
            "--requests",
            "--tls-cert",
            "--tls-key",
            "--h2-table",
            "--events",
            "--download",
        ],
        &["--async", "--no-io-uring"],
        "Answers Hello, World! on any path (the benchmark target). --requests N: serve N \
         requests, then exit. --tls-cert FILE --tls-key FILE (PEM): serve HTTPS only. \
         --async: answer from async code on a tokio runtime of one thread. HTTP/2: h2c on \
         the same port, h2 by ALPN; --h2-table BYTES: the HPACK table clients may fill. \
         --events ROOM: also an event stream at /events (a WebSocket by an upgrade), each \
         in room ROOM, and POST /events publishes its body to ROOM as one event (a text \
         message to WebSocket members). --download BYTES: GET /download \
         answers BYTES bytes as a streamed body. --no-io-uring: send each publish's frames \
         with a system call each (built with the feature io-uring, they go to the kernel in \
         batches).",
    )?;
    let mut server = options
        .server(8080)?
        .io_uring(!options.flag("--no-io-uring"));
    if let Some(bytes) = options.get::<u32>("--h2-table")? {
        server = server.http2_config(web::http::Http2Config {
            header_table_size: bytes,
            ..Default::default()
        });
    }
    let mut routes = Routes {
        events: None,
        download: options.get::<u64>("--download")?,
    };
    if let Some(room) = options.get::<String>("--events")? {
        routes.events = Some((server.rooms(), room.clone()));
        server = server
            .sse("/events", Events { room: room.clone() })
            .websocket("/events", Events { room });
    }
    if let Some(n) = options.get::<u64>("--requests")? {
        server = server.requests(n);
    }
    eprintln!(
        "hello: listening on {}://{}",
        options.scheme("http"),
        server.local_addr()?
    );
    if options.flag("--async") {
        return serve_async(server, routes);
    }
    // A `'static` body: answering allocates nothing.
    if routes.events.is_none() && routes.download.is_none() {
        // The benchmark's handler: nothing of the request looked at.
        return server.run(|_req| hello());
    }
    server.run(move |req| routes.answer(&req).unwrap_or_else(hello))
}

fn hello() -> Response {
    text_response(200, "Hello, World!")
}

/// What hello answers beside `Hello, World!`, when asked to.
struct Routes {
    /// `--events ROOM`: `POST /events` publishes to the room.
    events: Option<(web::ws::Rooms, String)>,
    /// `--download BYTES`: `GET /download`.
    download: Option<u64>,
}

impl Routes {
    fn answer(&self, req: &Request) -> Option<Response> {
        match (req.method(), req.path()) {
            ("POST", "/events") => {
                let (rooms, room) = self.events.as_ref()?;
                let data = String::from_utf8_lossy(req.body());
                rooms.publish_event(room, &web::sse::Event::new(data));
                Some(text_response(200, "published"))
            }
            ("GET", "/download") => Some(download(self.download?)),
            _ => None,
        }
    }
}

/// `bytes` bytes as a streamed body (`d` each), written by a thread of its own that waits
/// while the client is behind.
fn download(bytes: u64) -> Response {
    let (reply, later) = web::http::defer();
    std::thread::spawn(move || {
        let Ok(mut body) = reply.stream_sized(text_response(200, ""), bytes) else {
            return; // the client left
        };
        let piece = [b'd'; 64 * 1024];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(piece.len() as u64) as usize;
            if body.write_all(&piece[..n]).is_err() {
                return;
            }
            left -= n as u64;
        }
        let _ = body.finish();
    });
    later
}

/// `--async`: each request answered by a task of a one-thread tokio runtime.
#[cfg(feature = "tokio")]
fn serve_async(server: web::http::Server, routes: Routes) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()?;
    let tasks = runtime.handle().clone();
    server.run(move |req| match routes.answer(&req) {
        Some(res) => res,
        None => web::http::answer_async(&tasks, async { hello() }),
    })
}

#[cfg(not(feature = "tokio"))]
fn serve_async(_server: web::http::Server, _routes: Routes) -> std::io::Result<()> {
    Err(cli::usage(
        "--async needs the tokio feature (on by default)",
    ))
}

/// `--events ROOM`: event streams that join `ROOM` and keep nothing else.
struct Events {
    room: String,
}

impl web::sse::SseHandler for Events {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn open(&self, sse: &mut web::sse::Sse<'_>, _: &mut ()) {
        sse.join(&self.room);
    }
}

/// `--events ROOM`: WebSocket members at `/events` too (an upgrade), in `ROOM`, keeping
/// nothing; what they send is dropped. A publish reaches them as a text message.
impl web::ws::WsHandler for Events {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn open(&self, ws: &mut web::ws::Ws<'_>, _: &mut ()) {
        ws.join(&self.room);
    }

    fn message(&self, _ws: &mut web::ws::Ws<'_>, _: &mut (), _msg: web::ws::Message) {}
}
