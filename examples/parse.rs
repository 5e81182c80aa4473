//! Parses a raw HTTP/1.1 request and prints what the library sees in it and the reply it would
//! send: the message layer, without any network.
//!
//! ```sh
//! cargo run --example parse                       # a built-in sample request
//! printf 'GET /a?b=1 HTTP/1.1\r\nHost: x\r\n\r\n' | cargo run --example parse -- -
//! ```

use std::io::{Read, Write};

use web::http::{
    cookie, header, param, parse_request, path_of, query_of, response_bytes, status_text,
    text_response,
};

mod cli;

const SAMPLE: &[u8] = b"POST /search?q=rust+http&page=2 HTTP/1.1\r\nHost: example.com\r\nCookie: session=abc123; theme=dark\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";

fn main() -> std::process::ExitCode {
    cli::run("parse", parse)
}

fn parse() -> std::io::Result<()> {
    let options = cli::Options::parse_with_operands(
        &[],
        &[],
        "[-]",
        "Prints what the library sees in an HTTP/1.1 request and the reply it would send: a \
         built-in sample, or the request read from standard input with -.",
    )?;
    let raw = match options.operands() {
        [] => SAMPLE.to_vec(),
        [dash] if dash == "-" => {
            let mut raw = Vec::new();
            std::io::stdin().read_to_end(&mut raw)?;
            raw
        }
        [other, ..] => return Err(cli::usage(format!("unexpected argument {other}; use -"))),
    };
    let mut out = std::io::stdout().lock();
    let reply = match parse_request(&raw) {
        Ok(req) => {
            writeln!(out, "method  {}", req.method())?;
            writeln!(
                out,
                "path    {}  (path_of {:?}, query_of {:?})",
                req.path(),
                path_of(req.path()),
                query_of(req.path())
            )?;
            for h in req.headers() {
                writeln!(
                    out,
                    "header  {}: {}",
                    h.name(),
                    String::from_utf8_lossy(h.value())
                )?;
            }
            writeln!(out, "q       {:?}", param(query_of(req.path()), "q"))?;
            writeln!(out, "cookie  session={:?}", cookie(&req, "session"))?;
            writeln!(out, "host    {:?}", header(&req, "Host"))?;
            writeln!(out, "body    {:?}", String::from_utf8_lossy(req.body()))?;
            text_response(200, format!("{} bytes received\n", req.body().len()))
        }
        Err(e) => {
            writeln!(out, "refused: {e}")?;
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
    writeln!(
        out,
        "\nreply:\n{}",
        String::from_utf8_lossy(&response_bytes(&reply, true))
    )
}
