//! The server's controls: figures and stop from a `Control` taken before the start, a graceful
//! stop on SIGTERM/SIGINT in a real process, and an address another socket serves refused.

use crate::wire;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStdout, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use web::http::{Server, text_response};

#[test]
fn a_control_taken_before_the_start_reads_the_figures_of_its_own_server() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    let control = server.control();
    assert_eq!(control.stats().requests, 0, "zeros before the start");
    let seen = control.clone();
    let handle = server
        .spawn(move |_req| text_response(200, seen.stats().requests.to_string()))
        .unwrap();
    let mut c = wire::Client::connect(handle.local_addr());
    for i in 0..3u64 {
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        let reply = c.reply();
        let before_this: u64 = String::from_utf8(reply.body).unwrap().parse().unwrap();
        assert_eq!(
            before_this, i,
            "the handler reads the requests answered before it"
        );
    }
    wire::wait_until(Duration::from_secs(5), "the stats count 3", || {
        control.stats().requests == 3 && control.stats().open_connections == 1
    });
    control.shutdown();
    assert!(control.is_shutting_down());
    handle.join().unwrap();
}

#[test]
fn a_shutdown_asked_before_the_start_stops_the_server_as_it_starts() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    let control = server.control();
    control.shutdown();
    let started = Instant::now();
    server.run(|_req| text_response(200, "never")).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn binding_an_address_another_socket_serves_fails_with_addr_in_use_unless_shared() {
    let first = Server::bind("127.0.0.1:0").unwrap();
    let addr = first.local_addr().unwrap();
    let err = Server::bind(addr).err().expect("the port is taken");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    // A plain listener elsewhere (another program) is refused too.
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = Server::bind(plain.local_addr().unwrap()).err().unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    // Sharing on purpose: both servers bound with SO_REUSEPORT serve the port.
    let a = Server::bind_shared("127.0.0.1:0").unwrap();
    let shared = a.local_addr().unwrap();
    let b = Server::bind_shared(shared).unwrap();
    assert_eq!(b.local_addr().unwrap(), shared);
    drop((first, a, b));
}

#[test]
fn two_servers_binding_one_port_at_the_same_moment_never_both_succeed() {
    // Regression: a probe bind dropped before the real SO_REUSEPORT bind let both of two
    // simultaneous binds pass (39 of 300 rounds here) and then share the port silently.
    for round in 0..300 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let start = Arc::new(Barrier::new(2));
        let binds: Vec<_> = (0..2)
            .map(|_| {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    Server::bind(("127.0.0.1", port)).map_err(|e| e.kind())
                })
            })
            .collect();
        let results: Vec<_> = binds.into_iter().map(|b| b.join().unwrap()).collect();
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert!(
            won <= 1,
            "round {round}: both binds of port {port} succeeded"
        );
        for r in &results {
            if let Err(kind) = r {
                assert_eq!(*kind, std::io::ErrorKind::AddrInUse, "round {round}");
            }
        }
    }
}

#[test]
fn a_server_bound_alone_still_spreads_connections_over_all_its_workers() {
    // The handler answers with the name of the worker thread it runs on.
    let handle = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|_req| {
            let name = std::thread::current().name().unwrap_or("").to_owned();
            text_response(200, name)
        })
        .unwrap();
    // Each worker has its own socket in one SO_REUSEPORT group: the kernel hashes connections
    // (by their source ports) across both.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let mut c = wire::Client::connect(handle.local_addr());
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        seen.insert(c.reply().text());
    }
    assert_eq!(seen.len(), 2, "64 connections reached only {seen:?}");
    handle.shutdown().unwrap();
}

/// The child process's side: a server on 127.0.0.1 that stops on signals, printing its port.
/// `mode` names what its handler does and what it does after the server stopped.
fn child(mode: &str) -> ! {
    let mut server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    if mode == "one_request_then_wait" {
        server = server.requests(1);
    }
    let control = server.control();
    control.shutdown_on_signals().unwrap();
    // Says when the graceful stop begins (what a second signal waits for).
    std::thread::spawn(move || {
        while !control.is_shutting_down() {
            std::thread::sleep(Duration::from_millis(2));
        }
        say("stopping");
    });
    println!("{}", server.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    let handler_takes = match mode {
        "answer_after_10s" => Duration::from_secs(10),
        "answer_after_700ms" => Duration::from_millis(700),
        _ => Duration::ZERO,
    };
    server
        .run(move |_req| {
            say("handling");
            std::thread::sleep(handler_takes);
            text_response(200, "answered")
        })
        .unwrap();
    if mode == "one_request_then_wait" {
        say("stopped");
        std::thread::sleep(Duration::from_secs(30));
    }
    std::process::exit(0);
}

/// A line to the test, from the child.
fn say(what: &str) {
    println!("{what}");
    std::io::stdout().flush().unwrap();
}

/// Waits until the child says `what`.
fn wait_for(out: &mut BufReader<ChildStdout>, what: &str) {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended before saying {what:?}"
        );
        if line.trim() == what {
            return;
        }
    }
}

/// This test binary started again as a child running `child(mode)` for test `test`; returns
/// the process, its output after the port, and the port.
fn spawn_child(test: &str, mode: &str) -> (std::process::Child, BufReader<ChildStdout>, u16) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &wire::harness_name(module_path!(), test),
            "--nocapture",
        ])
        .env("SERVER_CONTROLS_CHILD", mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The test harness prints its own lines first: the port is the first number.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let port: u16 = loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child printed no port"
        );
        if let Ok(port) = line.trim().parse() {
            break port;
        }
    };
    (child, out, port)
}

/// In the child process, runs the child's side of the test and never returns.
fn be_the_child_if_asked() {
    if let Some(mode) = std::env::var_os("SERVER_CONTROLS_CHILD") {
        child(&mode.to_string_lossy());
    }
}

fn send_signal(child: &std::process::Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with our own child's pid and a valid signal number.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// A connection with a request sent and in the child's handler.
fn request_in_flight(port: u16, out: &mut BufReader<ChildStdout>) -> TcpStream {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    wait_for(out, "handling");
    conn
}

#[test]
fn sigterm_and_sigint_stop_the_server_gracefully_and_the_process_exits_zero() {
    be_the_child_if_asked();
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let (mut child, mut out, port) = spawn_child(
            "sigterm_and_sigint_stop_the_server_gracefully_and_the_process_exits_zero",
            "answer_after_700ms",
        );
        let mut conn = request_in_flight(port, &mut out);
        send_signal(&child, signal);
        let mut reply = String::new();
        conn.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(
            reply.contains("Connection: close"),
            "the last reply: {reply}"
        );
        assert!(reply.ends_with("answered"), "{reply}");
        drop(conn); // the server lingers until the client closes
        let status = child.wait().unwrap();
        drop(out);
        assert!(status.success(), "signal {signal}: {status:?}");
    }
}

#[test]
fn a_second_signal_while_requests_drain_ends_the_process_at_once() {
    be_the_child_if_asked();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (mut child, mut out, port) = spawn_child(
            "a_second_signal_while_requests_drain_ends_the_process_at_once",
            "answer_after_10s",
        );
        let mut conn = request_in_flight(port, &mut out);
        send_signal(&child, signal); // the graceful stop begins: it would wait for the handler
        wait_for(&mut out, "stopping");
        send_signal(&child, signal); // nothing more to stop gracefully: the default action
        let status = child.wait().unwrap();
        drop(out);
        // Killed by the signal, not a clean exit 10 s later.
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        let mut reply = Vec::new();
        let _ = conn.read_to_end(&mut reply); // closed (or reset) by the dying process
        assert!(reply.is_empty(), "{}", String::from_utf8_lossy(&reply));
    }
}

#[test]
fn a_signal_after_the_server_stopped_acts_as_without_the_library() {
    be_the_child_if_asked();
    let (mut child, mut out, port) = spawn_child(
        "a_signal_after_the_server_stopped_acts_as_without_the_library",
        "one_request_then_wait",
    );
    let reply = web::http::get("127.0.0.1", port, "/").unwrap();
    assert_eq!(web::http::status_of(&reply), Some(200));
    // The server stopped after its one request.
    wait_for(&mut out, "stopped");
    send_signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    // Ctrl-C ends the process, as it would without the library's handler, instead of being
    // swallowed for the 30 s the program still had to run.
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
}
