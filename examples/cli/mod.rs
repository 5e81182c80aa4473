//! The command line of the examples: `--name value` options, bare flags, operands where an
//! example takes them, `--help`, readable errors, and the server every example binds
//! (127.0.0.1, `--port P`, `--workers W`, `--max-connections N`: past N open connections new
//! ones wait in the listen backlog; the library's default is 100 000).
//!
//! Exit codes: 0 after `--help` or a clean run, 2 for a usage error (an unknown option, a
//! missing or bad value, missing operands), 1 for any other failure (a port in use, ...).

use std::fmt;
use std::io::{Error, ErrorKind, Result};
use std::process::ExitCode;
use std::str::FromStr;

/// Runs an example's `main` body: an error is printed as one readable line (with a pointer to
/// `--help` for a usage error), and the exit code says which kind of failure it was.
pub fn run(name: &str, body: impl FnOnce() -> Result<()>) -> ExitCode {
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_usage(&e) => {
            eprintln!("{name}: {e}\n(try {name} --help)");
            ExitCode::from(2)
        }
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            eprintln!(
                "{name}: that port is already in use by another program; pick another with --port"
            );
            ExitCode::from(1)
        }
        // The reader of our output went away (`| head`): nothing left to say.
        Err(e) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::from(1)
        }
    }
}

/// A usage error: the command line asked for something the example does not understand.
#[derive(Debug)]
struct Usage(String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// An [`io::Error`](Error) that [`run`] reports as a usage error (exit code 2).
pub fn usage(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidInput, Usage(message.into()))
}

fn is_usage(e: &Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Usage>())
}

/// The options given on the command line.
pub struct Options {
    given: Vec<(String, Option<String>)>,
    operands: Vec<String>,
}

impl Options {
    /// Reads the command line of an example that takes no operands: each of `valued` takes a
    /// value, each of `flags` stands alone; anything else is a usage error that lists what is
    /// understood.
    ///
    /// `--help` (or `-h`) prints the options and `about` (the example's own description), then
    /// exits with code 0.
    #[allow(dead_code)] // the examples that take operands use parse_with_operands
    pub fn parse(valued: &[&str], flags: &[&str], about: &str) -> Result<Options> {
        Options::parse_with_operands(valued, flags, "", about)
    }

    /// As [`parse`](Options::parse), for an example that also takes operands (arguments that
    /// are not options), described by `operands` in the usage line (`"HOST PORT PATH..."`).
    #[allow(dead_code)] // not every example takes operands
    pub fn parse_with_operands(
        valued: &[&str],
        flags: &[&str],
        operands: &str,
        about: &str,
    ) -> Result<Options> {
        let mut given = Vec::new();
        let mut rest = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(name) = args.next() {
            if name == "--help" || name == "-h" {
                println!("{}\n{about}", usage_line(valued, flags, operands));
                std::process::exit(0);
            }
            if flags.contains(&name.as_str()) {
                given.push((name, None));
            } else if valued.contains(&name.as_str()) {
                let value = args
                    .next()
                    .ok_or_else(|| usage(format!("{name} needs a value")))?;
                given.push((name, Some(value)));
            } else if !operands.is_empty() && (name == "-" || !name.starts_with('-')) {
                rest.push(name);
            } else {
                let known: Vec<&str> = valued.iter().chain(flags).copied().collect();
                let what = if name.starts_with('-') {
                    "unknown option"
                } else {
                    "unexpected argument"
                };
                return Err(usage(format!("{what} {name}; use {}", known.join(" "))));
            }
        }
        Ok(Options {
            given,
            operands: rest,
        })
    }

    /// The operands, in order.
    #[allow(dead_code)] // not every example takes operands
    pub fn operands(&self) -> &[String] {
        &self.operands
    }

    /// The value of option `name`, if given.
    pub fn get<T: FromStr>(&self, name: &str) -> Result<Option<T>> {
        match self.given.iter().rev().find(|(n, _)| n == name) {
            Some((_, Some(value))) => value
                .parse()
                .map(Some)
                .map_err(|_| usage(format!("bad value {value:?} for {name}"))),
            _ => Ok(None),
        }
    }

    /// Whether flag `name` was given.
    #[allow(dead_code)] // not every example has flags
    pub fn flag(&self, name: &str) -> bool {
        self.given.iter().any(|(n, _)| n == name)
    }

    /// The server on 127.0.0.1 at `--port` (else `default_port`), with `--workers` and
    /// `--max-connections` if given.
    #[allow(dead_code)] // not every example serves
    pub fn server(&self, default_port: u16) -> Result<web::http::Server> {
        let port: u16 = self.get("--port")?.unwrap_or(default_port);
        let workers = match self.get::<usize>("--workers")? {
            Some(0) => return Err(usage("--workers must be at least 1")),
            workers => workers,
        };
        let server = web::http::Server::bind(("127.0.0.1", port))?;
        let server = match workers {
            Some(w) => server.workers(w),
            None => server,
        };
        let server = match self.get::<usize>("--max-connections")? {
            Some(0) => return Err(usage("--max-connections must be at least 1")),
            Some(n) => server.max_connections(n),
            None => server,
        };
        self.tls(server)
    }

    /// The server over TLS when `--tls-cert FILE --tls-key FILE` (PEM) are given: on
    /// `--tls-port P` beside the plain `--port` (one server on both), else on `--port` alone.
    fn tls(&self, server: web::http::Server) -> Result<web::http::Server> {
        let cert = self.get::<String>("--tls-cert")?;
        let key = self.get::<String>("--tls-key")?;
        let tls_port = self.get::<u16>("--tls-port")?;
        match (cert, key) {
            (None, None) if tls_port.is_some() => {
                Err(usage("--tls-port needs --tls-cert and --tls-key"))
            }
            (None, None) => Ok(server),
            #[cfg(feature = "tls")]
            (Some(cert), Some(key)) => {
                let tls = web::tls::ServerTls::from_pem_files(cert, key)?;
                match tls_port {
                    Some(port) => Ok(server.also_bind_tls(("127.0.0.1", port), tls)?),
                    None => Ok(server.tls(tls)),
                }
            }
            #[cfg(not(feature = "tls"))]
            (Some(_), Some(_)) => Err(usage(
                "--tls-cert needs TLS, which this build lacks: build with --features tls",
            )),
            _ => Err(usage("--tls-cert and --tls-key go together")),
        }
    }

    /// `https` when the server's first port speaks TLS, else `http` (for the line saying
    /// where it listens).
    #[allow(dead_code)] // the examples that serve use it
    pub fn scheme(&self, plain: &'static str) -> &'static str {
        let tls = self.flag("--tls-cert") && !self.flag("--tls-port");
        match (tls, plain) {
            (true, "ws") => "wss",
            (true, _) => "https",
            (false, plain) => plain,
        }
    }
}

/// The server with permessage-deflate offered when `wanted` (a usage error when this build
/// lacks the `deflate` feature).
#[allow(dead_code)] // the WebSocket servers use it
pub fn deflate(server: web::http::Server, wanted: bool) -> Result<web::http::Server> {
    match wanted {
        false => Ok(server),
        #[cfg(feature = "deflate")]
        true => Ok(server.deflate(Some(web::ws::Deflate::default()))),
        #[cfg(not(feature = "deflate"))]
        true => Err(usage(
            "--deflate needs the deflate feature, which this build lacks (it is on by default)",
        )),
    }
}

/// `usage: PROGRAM [--name NAME]... [--flag]... OPERANDS`.
fn usage_line(valued: &[&str], flags: &[&str], operands: &str) -> String {
    let program = std::env::args().next().unwrap_or_default();
    let program = program.rsplit('/').next().unwrap_or("example");
    let mut line = format!("usage: {program}");
    for v in valued {
        line.push_str(&format!(
            " [{v} {}]",
            v.trim_start_matches('-').to_uppercase()
        ));
    }
    for f in flags {
        line.push_str(&format!(" [{f}]"));
    }
    if !operands.is_empty() {
        line.push(' ');
        line.push_str(operands);
    }
    line
}
