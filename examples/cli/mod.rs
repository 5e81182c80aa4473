//! The command line of the example servers: `--name value` options and bare flags, `--help`,
//! readable errors, and the server every example binds (127.0.0.1, `--port P`, `--workers W`).

use std::io::{Error, ErrorKind, Result};
use std::process::ExitCode;
use std::str::FromStr;

/// Runs an example's `serve`: an error is printed as one readable line, and the exit code is 2
/// for a usage error (a bad option), 1 for any other failure (a port in use, ...).
pub fn run(name: &str, serve: impl FnOnce() -> Result<()>) -> ExitCode {
    match serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            eprintln!("{name}: {e}\n(try {name} --help)");
            ExitCode::from(2)
        }
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            eprintln!(
                "{name}: that port is already in use by another program; pick another with --port"
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::from(1)
        }
    }
}

/// The options given on the command line.
pub struct Options {
    given: Vec<(String, Option<String>)>,
}

impl Options {
    /// Reads the command line: each of `valued` takes a value, each of `flags` stands alone;
    /// anything else is an error that lists what is understood.
    ///
    /// `--help` prints the options and `about` (the example's own description), then exits.
    pub fn parse(valued: &[&str], flags: &[&str], about: &str) -> Result<Options> {
        let mut given = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(name) = args.next() {
            if name == "--help" || name == "-h" {
                let program = std::env::args().next().unwrap_or_default();
                let program = program.rsplit('/').next().unwrap_or("example");
                let mut usage = format!("usage: {program}");
                for v in valued {
                    usage.push_str(&format!(
                        " [{v} {}]",
                        v.trim_start_matches('-').to_uppercase()
                    ));
                }
                for f in flags {
                    usage.push_str(&format!(" [{f}]"));
                }
                println!("{usage}\n{about}");
                std::process::exit(0);
            }
            if flags.contains(&name.as_str()) {
                given.push((name, None));
            } else if valued.contains(&name.as_str()) {
                let value = args
                    .next()
                    .ok_or_else(|| invalid(format!("{name} needs a value")))?;
                given.push((name, Some(value)));
            } else {
                let known: Vec<&str> = valued.iter().chain(flags).copied().collect();
                return Err(invalid(format!(
                    "unknown option {name}; use {}",
                    known.join(" ")
                )));
            }
        }
        Ok(Options { given })
    }

    /// The value of option `name`, if given.
    pub fn get<T: FromStr>(&self, name: &str) -> Result<Option<T>> {
        match self.given.iter().rev().find(|(n, _)| n == name) {
            Some((_, Some(value))) => value
                .parse()
                .map(Some)
                .map_err(|_| invalid(format!("bad value {value:?} for {name}"))),
            _ => Ok(None),
        }
    }

    /// Whether flag `name` was given.
    #[allow(dead_code)] // not every example has flags
    pub fn flag(&self, name: &str) -> bool {
        self.given.iter().any(|(n, _)| n == name)
    }

    /// The server on 127.0.0.1 at `--port` (else `default_port`), with `--workers` if given.
    pub fn server(&self, default_port: u16) -> Result<web::http::Server> {
        let port: u16 = self.get("--port")?.unwrap_or(default_port);
        let server = web::http::Server::bind(("127.0.0.1", port))?;
        Ok(match self.get::<usize>("--workers")? {
            Some(w) => server.workers(w),
            None => server,
        })
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidInput, message)
}
