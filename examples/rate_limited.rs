//! `Hello, World!` behind the rate limiter: `wrap(vec![rate_limits(writes, reads, hops)], hello)`.
//! The target of the nginx interop check and of the limiter's overhead benchmark.
//!
//! ```sh
//! cargo run --release --example rate_limited -- --port 8080 --workers 2   # rate_limits(1, 100, 1)
//! curl -i -X POST -H 'X-Forwarded-For: 10.0.0.1' http://127.0.0.1:8080/  # 200
//! curl -i -X POST -H 'X-Forwarded-For: 10.0.0.1' http://127.0.0.1:8080/  # 429 in the same second
//! ```
//!
//! Options: `--port P` (default 8080), `--workers W` (default: available cores), `--writes N`
//! (1), `--reads N` (100), `--hops H` (1: one proxy in front), `--no-limit` (the same handler,
//! unwrapped: the benchmark's baseline).

use std::io::{Error, ErrorKind};

use web::http::{rate_limits, text_response, wrap, Request, Response, Server};

fn hello(_req: Request) -> Response {
    text_response(200, "Hello, World!")
}

fn main() -> std::io::Result<()> {
    let o = options()?;
    let mut server = Server::bind(("127.0.0.1", o.port))?;
    if let Some(w) = o.workers {
        server = server.workers(w);
    }
    let addr = server.local_addr()?;
    if o.limit {
        eprintln!(
            "rate_limited: listening on http://{addr}, rate_limits({}, {}, {})",
            o.writes, o.reads, o.hops
        );
        server.run(wrap(vec![rate_limits(o.writes, o.reads, o.hops)], hello))
    } else {
        eprintln!("rate_limited: listening on http://{addr}, no limit");
        server.run(hello)
    }
}

struct Options {
    port: u16,
    workers: Option<usize>,
    writes: u32,
    reads: u32,
    hops: usize,
    limit: bool,
}

fn options() -> std::io::Result<Options> {
    let mut o = Options {
        port: 8080,
        workers: None,
        writes: 1,
        reads: 100,
        hops: 1,
        limit: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--no-limit" {
            o.limit = false;
            continue;
        }
        let value = args.next().unwrap_or_default();
        let bad = || {
            Error::new(
                ErrorKind::InvalidInput,
                format!("bad value {value:?} for {flag}"),
            )
        };
        match flag.as_str() {
            "--port" => o.port = value.parse().map_err(|_| bad())?,
            "--workers" => o.workers = Some(value.parse().map_err(|_| bad())?),
            "--writes" => o.writes = value.parse().map_err(|_| bad())?,
            "--reads" => o.reads = value.parse().map_err(|_| bad())?,
            "--hops" => o.hops = value.parse().map_err(|_| bad())?,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "unknown option {flag}; use --port P --workers W --writes N --reads N \
                         --hops H --no-limit"
                    ),
                ))
            }
        }
    }
    Ok(o)
}
