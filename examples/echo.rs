//! Echoes each request back as `text/plain`: `<method> <target as sent>\n`, then one
//! `<name>: <value>\n` per received header in order (name lower-cased, value trimmed), then
//! `\n`, then the body (de-chunked when it was sent chunked).
//!
//! ```sh
//! cargo run --release --example echo -- --port 8080 --workers 1
//! curl -d 'hi' http://127.0.0.1:8080/x?y=1
//! ```

use web::http::{text_response, Request, Response, Server};

fn echo(req: Request) -> Response {
    let mut body = format!("{} {}\n", req.method, req.path).into_bytes();
    for h in &req.headers {
        body.extend_from_slice(h.name.as_bytes());
        body.extend_from_slice(b": ");
        body.extend_from_slice(h.value.as_bytes());
        body.push(b'\n');
    }
    body.push(b'\n');
    body.extend_from_slice(&req.body);
    text_response(200, body)
}

fn main() -> std::io::Result<()> {
    let (port, workers) = options()?;
    let mut server = Server::bind(("127.0.0.1", port))?;
    if let Some(w) = workers {
        server = server.workers(w);
    }
    eprintln!("echo: listening on http://{}", server.local_addr()?);
    server.run(echo)
}

/// `--port P` (default 8080) and `--workers W` (default: available cores).
fn options() -> std::io::Result<(u16, Option<usize>)> {
    let mut port = 8080;
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
            "--workers" => workers = Some(value.parse().map_err(|_| bad())?),
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("unknown option {flag}; use --port P --workers W"),
                ))
            }
        }
    }
    Ok((port, workers))
}
