//! A WebSocket echo server at path `/`, kept inside the reactor: text comes back as text,
//! binary as binary.
//!
//! ```sh
//! cargo run --release --example ws_echo -- --port 9001 --max-message 16777216 --workers 1
//! ```

use web::http::{text_response, Server};
use web::ws::{Message, Ws, WsHandler};

/// Echoes every message on the connection it came from.
struct Echo;

impl WsHandler for Echo {
    fn message(&self, ws: &mut Ws<'_>, msg: Message) {
        ws.send(&msg);
    }
}

fn main() -> std::io::Result<()> {
    let mut port = 9001u16;
    let mut max_message = web::ws::MAX_MESSAGE;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        let bad = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("bad value {value:?} for {flag}"),
            )
        };
        match flag.as_str() {
            "--port" => port = value.parse().map_err(|_| bad())?,
            "--max-message" => max_message = value.parse().map_err(|_| bad())?,
            "--workers" => workers = Some(value.parse().map_err(|_| bad())?),
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("unknown option {flag}; use --port P --max-message BYTES --workers W"),
                ))
            }
        }
    }
    let mut server = Server::bind(("127.0.0.1", port))?
        .websocket("/", Echo)
        .max_message(max_message);
    if let Some(w) = workers {
        server = server.workers(w);
    }
    eprintln!("ws_echo: listening on ws://{}/", server.local_addr()?);
    server.run(|_req| text_response(426, "this server speaks WebSocket at /\n"))
}
