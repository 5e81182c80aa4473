//! The examples' command lines: `--help` prints usage and exits 0, a usage error is one readable
//! line and exit code 2, any other failure (a port in use, a refused connection) one readable
//! line and exit code 1 — never a `Debug` dump such as `Custom { kind: InvalidInput, .. }`.

use crate::wire;

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use wire::examples::examples_dir;

use wire::examples::EXAMPLES;

/// Runs example `name` with `args`; it must end by itself within 30 seconds.
fn run(name: &str, args: &[&str]) -> Output {
    let mut child = Command::new(examples_dir().join(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("{name} {args:?} did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One readable line (two with the pointer to `--help`), naming the example, no `Debug` dump.
fn assert_readable(name: &str, stderr: &str) {
    assert!(stderr.starts_with(&format!("{name}: ")), "{stderr:?}");
    assert!(stderr.lines().count() <= 2, "{stderr:?}");
    for dump in ["Custom {", "kind:", "Os {", "InvalidInput", "panicked"] {
        assert!(!stderr.contains(dump), "{stderr:?}");
    }
}

#[test]
fn every_example_prints_its_usage_for_help_and_exits_0() {
    for name in EXAMPLES {
        for flag in ["--help", "-h"] {
            let out = run(name, &[flag]);
            let stdout = text(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{name} {flag}: {out:?}");
            assert!(
                stdout.starts_with(&format!("usage: {name}")),
                "{name}: {stdout:?}"
            );
            assert!(
                stdout.lines().count() >= 2,
                "usage and a description: {stdout:?}"
            );
            assert!(out.stderr.is_empty(), "{name}: {}", text(&out.stderr));
        }
    }
    let out = run("hello", &["--help"]);
    assert!(text(&out.stdout).contains("[--port PORT] [--workers WORKERS]"));
    let out = run("fetch", &["--help"]);
    assert!(text(&out.stdout).contains("HOST PORT PATH..."));
}

#[test]
fn a_usage_error_is_one_readable_line_and_exit_code_2() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "hello",
            &["--bogus"],
            "unknown option --bogus; use --port --workers",
        ),
        ("hello", &["--port", "x"], "bad value \"x\" for --port"),
        (
            "hello",
            &["--port", "70000"],
            "bad value \"70000\" for --port",
        ),
        ("hello", &["--port"], "--port needs a value"),
        ("hello", &["--workers", "0"], "--workers must be at least 1"),
        ("echo", &["extra"], "unexpected argument extra"),
        (
            "ws_echo",
            &["--max-message", "lots"],
            "bad value \"lots\" for --max-message",
        ),
        (
            "ws_echo",
            &["--ping-interval", "soon"],
            "bad value \"soon\" for --ping-interval",
        ),
        (
            "ws_echo",
            &["--ping-interval", "-1"],
            "bad value -1 for --ping-interval",
        ),
        (
            "rate_limited",
            &["--writes", "-1"],
            "bad value \"-1\" for --writes",
        ),
        ("chat", &["--port", ""], "bad value \"\" for --port"),
        ("chat", &["--redis"], "--redis needs a value"),
        #[cfg(not(feature = "redis"))]
        (
            "chat",
            &["--redis", "redis://127.0.0.1:6379/"],
            "--redis needs the chat built with the redis feature: cargo run --release --features redis",
        ),
        #[cfg(feature = "redis")]
        (
            "chat",
            &["--redis", "http://127.0.0.1/"],
            "not a Redis URL (http://127.0.0.1/)",
        ),
        ("fetch", &[], "HOST, PORT and at least one PATH are needed"),
        ("fetch", &["127.0.0.1", "80"], "at least one PATH is needed"),
        ("fetch", &["127.0.0.1", "http", "/"], "bad port \"http\""),
        (
            "fetch",
            &["--get", "127.0.0.1", "80", "/"],
            "unknown option --get",
        ),
        ("parse", &["request.txt"], "unexpected argument request.txt"),
        ("ws_client", &[], "one URL is needed"),
        (
            "ws_client",
            &["--header", "nocolon", "ws://127.0.0.1:1/"],
            "bad header \"nocolon\"",
        ),
    ];
    for (name, args, says) in cases {
        let out = run(name, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {stderr}");
        assert_readable(name, &stderr);
        assert!(stderr.contains(says), "{name} {args:?}: {stderr:?}");
        assert!(
            stderr.contains(&format!("(try {name} --help)")),
            "{stderr:?}"
        );
        assert!(out.stdout.is_empty(), "{name} {args:?}");
    }
}

#[test]
fn a_port_another_program_serves_is_a_readable_error_and_exit_code_1() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    for name in ["hello", "echo", "ws_echo", "rate_limited", "chat"] {
        let out = run(name, &["--port", &port]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert_readable(name, &stderr);
        assert!(stderr.contains("already in use"), "{stderr:?}");
    }
}

#[test]
fn a_refused_connection_is_a_readable_error_and_exit_code_1() {
    let (port, _held) = wire::closed_port();
    let out = run("fetch", &["127.0.0.1", &port.to_string(), "/"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_readable("fetch", &stderr);
    assert!(stderr.contains("refused"), "{stderr:?}");
}

#[test]
fn ws_echo_pings_silent_peers_at_the_interval_given_and_closes_those_that_never_answer() {
    use std::io::{BufRead, Read, Write};
    let mut child = Command::new(examples_dir().join("ws_echo"))
        .args(["--port", "0", "--ping-interval", "0.2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("ws_echo: listening on ws://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(&web::ws::ws_handshake_request("127.0.0.1", "/"))
        .unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let _ = conn.read_to_end(&mut got); // until the server closes: it pings, we never answer
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(got.starts_with(b"HTTP/1.1 101 "), "{}", text(&got));
    assert_eq!(&got[head_end..], [0x89, 0x00], "one ping, then the close");
    assert!(took < Duration::from_secs(2), "closed after {took:?}");
}

/// A WebSocket server for the client example: echoes; `bye` makes it close with 1000; it
/// greets with `hello`.
struct Greeter;

impl web::ws::WsHandler for Greeter {
    type State = ();

    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }

    fn open(&self, ws: &mut web::ws::Ws<'_>, _state: &mut ()) {
        ws.send_text("hello");
    }

    fn message(&self, ws: &mut web::ws::Ws<'_>, _state: &mut (), msg: web::ws::Message) {
        match &msg {
            web::ws::Message::Text(t) if t == "bye" => ws.close(1000),
            _ => ws.send(&msg),
        }
    }
}

fn greeter() -> web::http::ServerHandle {
    web::http::Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .websocket("/", Greeter)
        .spawn(|_req| web::http::text_response(404, ""))
        .unwrap()
}

/// Runs `ws_client args` with `input` on its standard input; it must end within 30 s.
fn run_with_input(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(examples_dir().join("ws_client"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("ws_client {args:?} did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn ws_client_sends_each_line_prints_each_message_and_closes_at_the_end_of_input() {
    let server = greeter();
    let url = format!("ws://{}/", server.local_addr());
    let out = run_with_input(&[&url], "one\ntwo words\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello\none\ntwo words\n");
    // The server closing first ends it too, cleanly.
    let out = run_with_input(&[&url], "x\nbye\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello\nx\n");
    server.shutdown().unwrap();
}

#[test]
fn ws_client_echo_sends_every_message_back_until_the_server_closes() {
    let server = greeter();
    let url = format!("ws://{}/", server.local_addr());
    // The server greets with `hello`, the client echoes it, the server echoes that back, ...
    // until the server is stopped: a clean close (1001) ends the client with 0.
    let child = Command::new(examples_dir().join("ws_client"))
        .args(["--echo", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wire::wait_until(Duration::from_secs(10), "the client is connected", || {
        server.stats().websockets == 1
    });
    std::thread::sleep(Duration::from_millis(200)); // messages go back and forth meanwhile
    server.shutdown().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
}

#[test]
fn ws_client_failures_are_one_readable_line_and_exit_code_1() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("ws://{}/", listener.local_addr().unwrap());
    drop(listener);
    let out = run_with_input(&[&refused], "");
    assert_eq!(out.status.code(), Some(1));
    assert_readable("ws_client", &text(&out.stderr));
    let server = greeter();
    let out = run_with_input(&[&format!("ws://{}/nowhere", server.local_addr())], "");
    // The greeter serves WebSocket at / only: elsewhere the upgrade is answered 404.
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("404"), "{}", text(&out.stderr));
    assert_readable("ws_client", &text(&out.stderr));
    server.shutdown().unwrap();
}
