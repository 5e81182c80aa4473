//! `Hello, World!` as `text/plain` on any path: the benchmark target.
//!
//! ```sh
//! cargo run --release --example hello -- --port 8080 --workers 1
//! curl -i http://127.0.0.1:8080/
//! ```

use web::http::text_response;

mod cli;

fn main() -> std::io::Result<()> {
    let server = cli::Options::parse(&["--port", "--workers"], &[])?.server(8080)?;
    eprintln!("hello: listening on http://{}", server.local_addr()?);
    server.run(|_req| text_response(200, "Hello, World!"))
}
