//! A server in a child process, for the load benchmarks: the benchmark program re-runs itself
//! with an environment variable set, the child serves and prints its port, the parent measures
//! it (its memory and CPU are its own, and each process has its own descriptor limit), and the
//! child ends when the parent closes its standard input.

#![allow(dead_code)] // each benchmark uses a different part of it

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

/// In the child (`env` set): runs `serve`, which must call [`serve_until_stdin_closes`].
/// In the parent: starts the child, runs `measure` with its port and process, stops the child;
/// returns what `measure` returned (a panic in it is passed on after the child is stopped).
pub fn run<T>(env: &str, serve: impl FnOnce(), measure: impl FnOnce(u16, &mut Child) -> T) -> T {
    if std::env::var_os(env).is_some() {
        serve();
        std::process::exit(0);
    }
    let mut child = Command::new(std::env::current_exe().expect("this program's path"))
        .env(env, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the child server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("the child prints its port");
    let port: u16 = line.trim().parse().expect("a port");
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| measure(port, &mut child)));
    drop(child.stdin.take());
    let _ = child.wait();
    result.unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// In the child: prints the port, then serves until the parent closes standard input.
pub fn serve_until_stdin_closes(port: u16) {
    println!("{port}");
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

/// A `kB` figure of `/proc/<pid>/status` (`"VmRSS:"`, `"RssAnon:"`, ...); 0 when unreadable.
pub fn status_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0)
}

/// This process's CPU time (user + system), in microseconds.
pub fn cpu_micros() -> i64 {
    // SAFETY: getrusage(2) writes into the zeroed struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let micros = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    micros(u.ru_utime) + micros(u.ru_stime)
}
