//! Parses a raw HTTP/1.1 request and prints what the library sees in it and the reply it would
//! send: the message layer, without any network.
//!
//! ```sh
//! cargo run --example parse                       # a built-in sample request
//! printf 'GET /a?b=1 HTTP/1.1\r\nHost: x\r\n\r\n' | cargo run --example parse -- -
//! ```

use std::io::Read;

use web::http::{
    cookie, header, param, parse_request, path_of, query_of, response_bytes, status_text,
    text_response,
};

const SAMPLE: &[u8] = b"POST /search?q=rust+http&page=2 HTTP/1.1\r\nHost: example.com\r\nCookie: session=abc123; theme=dark\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";

fn main() -> std::io::Result<()> {
    let raw = if std::env::args().nth(1).as_deref() == Some("-") {
        let mut raw = Vec::new();
        std::io::stdin().read_to_end(&mut raw)?;
        raw
    } else {
        SAMPLE.to_vec()
    };
    let reply = match parse_request(&raw) {
        Ok(req) => {
            println!("method  {}", req.method());
            println!(
                "path    {}  (path_of {:?}, query_of {:?})",
                req.path(),
                path_of(req.path()),
                query_of(req.path())
            );
            for h in req.headers() {
                println!(
                    "header  {}: {}",
                    h.name(),
                    String::from_utf8_lossy(h.value())
                );
            }
            println!("q       {:?}", param(query_of(req.path()), "q"));
            println!("cookie  session={:?}", cookie(&req, "session"));
            println!("host    {:?}", header(&req, "Host"));
            println!("body    {:?}", String::from_utf8_lossy(req.body()));
            text_response(200, format!("{} bytes received\n", req.body().len()))
        }
        Err(e) => {
            println!("refused: {e}");
            text_response(
                e.status(),
                format!(
                    "{} {}: {}\n",
                    e.status(),
                    status_text(e.status()),
                    e.reason()
                ),
            )
        }
    };
    println!(
        "\nreply:\n{}",
        String::from_utf8_lossy(&response_bytes(&reply, true))
    );
    Ok(())
}
