//! A WebSocket client on the command line, on `web::ws::connect`.
//!
//! ```sh
//! cargo run --release --example ws_client -- ws://127.0.0.1:9001/
//! cargo run --release --example ws_client -- --echo ws://127.0.0.1:9001/runCase?case=1&agent=web
//! ```
//!
//! `ws_client URL` sends each line of standard input as a text message and prints each message
//! received on its own line (a binary one as its bytes, lossily as UTF-8); at the end of the
//! input, once the server has sent nothing for 0.3 s (replies to the last lines may still be
//! on their way; 5 s at most), it closes (1000) and exits 0 when the server has answered. `ws_client --echo URL`
//! sends every message it receives straight back until the server closes, exiting 0 after a
//! clean close (what Autobahn's fuzzingserver expects of a client). `--header "Name: value"`
//! adds a header to the upgrade request, `--protocol NAME` offers a subprotocol,
//! `--max-message BYTES` (default 16 MiB) is the largest message accepted. `wss://` URLs need a
//! build with `--features tls`; the server's certificate is checked against the system's roots,
//! or against the PEM file `--ca FILE` names. Exit code 1 for a
//! failure (refused, broken protocol, a connection dropped without a close frame), 2 for a
//! usage error.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::process::ExitCode;

use web::ws::{Message, NORMAL, WsConnect, WsReader};

mod cli;

/// Trusts the roots in the PEM file `ca` for `wss://`.
#[cfg(feature = "tls")]
fn with_roots(connect: WsConnect, ca: &str) -> std::io::Result<WsConnect> {
    Ok(connect.tls(web::tls::ClientTls::roots_pem_file(ca)?))
}

#[cfg(not(feature = "tls"))]
fn with_roots(_connect: WsConnect, _ca: &str) -> std::io::Result<WsConnect> {
    Err(cli::usage(
        "--ca needs TLS, which this build lacks: build with --features tls",
    ))
}

fn main() -> ExitCode {
    cli::run("ws_client", client)
}

fn client() -> std::io::Result<()> {
    let options = cli::Options::parse_with_operands(
        &["--header", "--protocol", "--max-message", "--ca"],
        &["--echo", "--deflate"],
        "URL",
        "Sends each line of standard input to the WebSocket at URL as a text message and prints \
         each message received on its own line. --echo sends every message received back until \
         the server closes. --header \"Name: value\" adds a request header, --protocol NAME \
         offers a subprotocol, --max-message BYTES (default 16777216). wss:// (a build with \
         --features tls) trusts the system's roots, or those in the PEM file --ca FILE. \
         --deflate offers permessage-deflate (the default `deflate` feature).",
    )?;
    let [url] = options.operands() else {
        return Err(cli::usage("one URL is needed"));
    };
    let mut connect =
        WsConnect::new().max_message(options.get("--max-message")?.unwrap_or(16 << 20));
    if let Some(header) = options.get::<String>("--header")? {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| cli::usage(format!("bad header {header:?}: use \"Name: value\"")))?;
        connect = connect.header(name.trim(), value.trim());
    }
    if let Some(protocol) = options.get::<String>("--protocol")? {
        connect = connect.protocol(&protocol);
    }
    if let Some(ca) = options.get::<String>("--ca")? {
        connect = with_roots(connect, &ca)?;
    }
    if options.flag("--deflate") {
        connect = offer_deflate(connect)?;
    }
    let ws = connect.connect(url)?;
    let (reader, writer) = ws.into_split();
    if options.flag("--echo") {
        return echo(reader, &writer);
    }
    // Standard input is read on a thread of its own: the program ends when the conversation
    // does — after the server answered our close at the end of the input, or when it closed.
    let heard = Arc::new(Mutex::new(Instant::now()));
    let last_heard = Arc::clone(&heard);
    std::thread::spawn(move || -> std::io::Result<()> {
        for line in std::io::stdin().lock().lines() {
            if writer.send_text(&line?).is_err() {
                return Ok(()); // the server is closing: the printer says how it ends
            }
        }
        // Replies to the last lines may still be on their way: close once the server has been
        // quiet for a moment (a server that answers a close frame stops sending).
        let started = Instant::now();
        while started.elapsed() < LONGEST_WAIT {
            let quiet = last_heard.lock().map_or(QUIET, |at| at.elapsed());
            if quiet >= QUIET {
                break;
            }
            std::thread::sleep(QUIET - quiet);
        }
        writer.close(NORMAL, "")
    });
    print_all(reader, &heard)
}

/// How long the server must have sent nothing before the client closes at the end of input.
const QUIET: Duration = Duration::from_millis(300);
/// The longest the client waits for that at the end of input.
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// Prints every message until the closing handshake is done, noting when each came.
fn print_all(mut reader: WsReader, heard: &Mutex<Instant>) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    while let Some(msg) = reader.recv()? {
        if let Ok(mut at) = heard.lock() {
            *at = Instant::now();
        }
        let mut out = stdout.lock();
        match msg {
            Message::Text(t) => writeln!(out, "{t}")?,
            Message::Binary(b) => writeln!(out, "{}", String::from_utf8_lossy(&b))?,
        }
        out.flush()?;
    }
    Ok(())
}

/// Sends every message back until the server closes.
fn echo(mut reader: WsReader, writer: &web::ws::WsWriter) -> std::io::Result<()> {
    while let Some(msg) = reader.recv()? {
        writer.send(&msg)?;
    }
    Ok(())
}

/// The connection offering permessage-deflate (a usage error without the `deflate` feature).
fn offer_deflate(connect: WsConnect) -> std::io::Result<WsConnect> {
    #[cfg(feature = "deflate")]
    return Ok(connect.deflate(true));
    #[cfg(not(feature = "deflate"))]
    {
        let _ = connect;
        Err(cli::usage(
            "--deflate needs the deflate feature, which this build lacks (it is on by default)",
        ))
    }
}
