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

use web::http::text_response;

mod cli;

fn main() -> std::process::ExitCode {
    cli::run("hello", serve)
}

fn serve() -> std::io::Result<()> {
    let options = cli::Options::parse(
        &[
            "--port",
            "--workers",
            "--requests",
            "--tls-cert",
            "--tls-key",
        ],
        &[],
        "Answers Hello, World! on any path (the benchmark target). --requests N: serve N \
         requests, then exit. --tls-cert FILE --tls-key FILE (PEM): serve HTTPS only.",
    )?;
    let mut server = options.server(8080)?;
    if let Some(n) = options.get::<u64>("--requests")? {
        server = server.requests(n);
    }
    eprintln!(
        "hello: listening on {}://{}",
        options.scheme("http"),
        server.local_addr()?
    );
    // A `'static` body: answering allocates nothing.
    server.run(|_req| text_response(200, "Hello, World!"))
}
