//! A tiny command-line client on `web::http`'s blocking client: fetches paths and prints each
//! reply's status, body length and body (de-chunked).
//!
//! ```sh
//! cargo run --example fetch -- 127.0.0.1 8080 /a /b      # GET both over one keep-alive connection
//! cargo run --example fetch -- --raw 127.0.0.1 8080 /    # print the raw reply as received
//! cargo run --example fetch -- --head 127.0.0.1 8080 /   # HEAD
//! ```

use std::io::Write;

use web::http::{ask, content_length, get_all, response_body, status_of};

fn main() {
    if let Err(e) = run() {
        eprintln!("fetch: {e} ({:?})", e.kind());
        std::process::exit(1);
    }
}

fn run() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let raw = take_flag(&mut args, "--raw");
    let head = take_flag(&mut args, "--head");
    let [host, port, paths @ ..] = args.as_slice() else {
        return Err(usage());
    };
    if paths.is_empty() {
        return Err(usage());
    }
    let port: u16 = port
        .parse()
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad port"))?;
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

fn usage() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "usage: fetch [--raw] [--head] HOST PORT PATH...",
    )
}

fn take_flag(args: &mut Vec<String>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}
