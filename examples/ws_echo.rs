//! A WebSocket echo server at path `/`, kept inside the reactor: text comes back as text,
//! binary as binary.
//!
//! ```sh
//! cargo run --release --example ws_echo -- --port 9001 --max-message 16777216 --workers 1
//! ```
//!
//! With `--room NAME` every connection also joins room `NAME` when it opens (still with a
//! zero-sized state): what one room membership costs an idle connection can then be measured
//! against the same server without it. `--ping-interval SECONDS` (fractions allowed; 0 turns
//! pings off) sets how often silent peers are pinged (default 30; see `Server::ping_interval`).
//! `--tls-cert FILE --tls-key FILE` (PEM; build with `--features tls`) serve `wss://` only.
//! `--deflate` offers permessage-deflate (`Server::deflate`, no state per connection) to
//! clients that ask for it; `--max-message` then limits a message's inflated size.

use web::http::{Request, Response, text_response, with_header};
use web::ws::{Message, Ws, WsHandler};

mod cli;

/// Echoes every message on the connection it came from; each connection joins `room`, if any.
struct Echo {
    room: Option<String>,
}

impl WsHandler for Echo {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        if let Some(room) = &self.room {
            ws.join(room);
        }
    }

    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        ws.send_owned(msg);
    }
}

fn main() -> std::process::ExitCode {
    cli::run("ws_echo", serve)
}

fn serve() -> std::io::Result<()> {
    let options = cli::Options::parse(
        &[
            "--port",
            "--max-message",
            "--workers",
            "--max-connections",
            "--room",
            "--ping-interval",
            "--tls-cert",
            "--tls-key",
        ],
        &["--deflate"],
        "WebSocket echo at /: text as text, binary as binary. --max-message BYTES (default 65536); \
         --room NAME: every connection joins room NAME (to measure what a membership costs); \
         --ping-interval SECONDS: ping silent peers, close those that do not answer (default 30, \
         fractions allowed, 0 = off). --tls-cert FILE --tls-key FILE (PEM): serve wss:// only \
         (needs a build with --features tls). --deflate: compress messages for clients that \
         offer permessage-deflate (the default `deflate` feature).",
    )?;
    let ping_interval = match options.get::<f64>("--ping-interval")? {
        None => Some(web::http::PING_INTERVAL),
        Some(s) if (0.0..=1e9).contains(&s) => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => return Err(cli::usage(format!("bad value {s} for --ping-interval"))),
    };
    let room = options.get::<String>("--room")?;
    let max_message = options
        .get("--max-message")?
        .unwrap_or(web::ws::MAX_MESSAGE);
    let server = options
        .server(9001)?
        .websocket("/", Echo { room })
        .max_message(max_message)
        .ping_interval(ping_interval);
    let server = cli::deflate(server, options.flag("--deflate"))?;
    eprintln!(
        "ws_echo: listening on {}://{}/",
        options.scheme("ws"),
        server.local_addr()?
    );
    // Plain HTTP gets 426 Upgrade Required, naming the protocol (RFC 9110 §15.5.22).
    server.run(|_req| {
        let res = text_response(426, "this server speaks WebSocket at /\n");
        with_header(res, "Upgrade", "websocket")
    })
}
