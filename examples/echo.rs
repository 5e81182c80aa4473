//! Echoes each request back as `text/plain`: `<method> <target as sent>\n`, then one
//! `<name>: <value>\n` per received header in order (name lower-cased, value trimmed), then
//! `\n`, then the body (de-chunked when it was sent chunked).
//!
//! ```sh
//! cargo run --release --example echo -- --port 8080 --workers 1
//! curl -d 'hi' http://127.0.0.1:8080/x?y=1
//! ```

use web::http::{Request, Response, text_response};

mod cli;

fn echo(req: Request) -> Response {
    let mut body = format!("{} {}\n", req.method(), req.path()).into_bytes();
    for h in req.headers() {
        body.extend_from_slice(h.name().as_bytes());
        body.extend_from_slice(b": ");
        // Values are bytes: obs-text (0x80-0xFF) is echoed exactly as received.
        body.extend_from_slice(h.value());
        body.push(b'\n');
    }
    body.push(b'\n');
    body.extend_from_slice(req.body());
    text_response(200, body)
}

fn main() -> std::process::ExitCode {
    cli::run("echo", serve)
}

fn serve() -> std::io::Result<()> {
    let server = cli::Options::parse(
        &["--port", "--workers", "--max-connections"],
        &[],
        "Echoes each request back: method and target, one line per header, a blank line, the body.",
    )?
    .server(8080)?;
    eprintln!("echo: listening on http://{}", server.local_addr()?);
    server.run(echo)
}
