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

use web::http::{Request, Response, rate_limits, text_response, wrap};

mod cli;

fn hello(_req: Request) -> Response {
    text_response(200, "Hello, World!")
}

fn main() -> std::process::ExitCode {
    cli::run("rate_limited", serve)
}

fn serve() -> std::io::Result<()> {
    let options = cli::Options::parse(
        &[
            "--port",
            "--workers",
            "--max-connections",
            "--writes",
            "--reads",
            "--hops",
        ],
        &["--no-limit"],
        "Hello behind rate_limits(--writes, --reads, --hops); --no-limit for the baseline.",
    )?;
    let writes = options.get("--writes")?.unwrap_or(1);
    let reads = options.get("--reads")?.unwrap_or(100);
    let hops = options.get("--hops")?.unwrap_or(1);
    let server = options.server(8080)?;
    let addr = server.local_addr()?;
    if options.flag("--no-limit") {
        eprintln!("rate_limited: listening on http://{addr}, no limit");
        server.run(hello)
    } else {
        eprintln!(
            "rate_limited: listening on http://{addr}, rate_limits({writes}, {reads}, {hops})"
        );
        server.run(wrap(vec![rate_limits(writes, reads, hops)], hello))
    }
}
