//! A tiny command-line client on `web::http`'s blocking client: fetches paths and prints each
//! reply's status, body length and body (de-chunked).
//!
//! ```sh
//! cargo run --example fetch -- 127.0.0.1 8080 /a /b      # GET both over one keep-alive connection
//! cargo run --example fetch -- --raw 127.0.0.1 8080 /    # print the raw reply as received
//! cargo run --example fetch -- --head 127.0.0.1 8080 /   # HEAD
//! ```

use std::io::Write;
use std::process::ExitCode;

use web::http::{ask, content_length, get_all, response_body, status_of};

mod cli;

fn main() -> ExitCode {
    cli::run("fetch", fetch)
}

fn fetch() -> std::io::Result<()> {
    let options = cli::Options::parse_with_operands(
        &[],
        &["--raw", "--head"],
        "HOST PORT PATH...",
        "GETs each PATH from HOST:PORT over one keep-alive connection and prints each reply's \
         status, length and body. --raw prints the replies as received; --head asks HEAD.",
    )?;
    let (raw, head) = (options.flag("--raw"), options.flag("--head"));
    let [host, port, paths @ ..] = options.operands() else {
        return Err(cli::usage("HOST, PORT and at least one PATH are needed"));
    };
    if paths.is_empty() {
        return Err(cli::usage("at least one PATH is needed"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| cli::usage(format!("bad port {port:?}")))?;
    let replies = if head {
        paths
            .iter()
            .map(|p| ask(host, port, "HEAD", p, &[], b""))
            .collect::<std::io::Result<Vec<_>>>()?
    } else {
        get_all(host, port, paths)?
    };
    let mut out = std::io::stdout().lock();
    for reply in replies {
        if raw {
            out.write_all(&reply)?;
            continue;
        }
        let body = response_body(&reply)?;
        writeln!(
            out,
            "status {} content-length {} body {} bytes",
            status_of(&reply).unwrap_or(0),
            content_length(&reply).map_or("-".to_owned(), |n| n.to_string()),
            body.len()
        )?;
        out.write_all(&body)?;
        writeln!(out)?;
    }
    Ok(())
}
