//! `Hello, World!` as `text/plain` on any path: the benchmark target.
//!
//! ```sh
//! cargo run --release --example hello -- --port 8080 --workers 1
//! curl -i http://127.0.0.1:8080/
//! ```

use web::http::{text_response, Server};

fn main() -> std::io::Result<()> {
    let (port, workers) = options()?;
    let mut server = Server::bind(("127.0.0.1", port))?;
    if let Some(w) = workers {
        server = server.workers(w);
    }
    eprintln!("hello: listening on http://{}", server.local_addr()?);
    server.run(|_req| text_response(200, "Hello, World!"))
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
