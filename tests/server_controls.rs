//! The server's controls: figures and stop from a `Control` taken before the start, a graceful
//! stop on SIGTERM/SIGINT in a real process, and an address another socket serves refused.

mod wire;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use web::http::{text_response, Server};

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

/// The child: a server that stops on signals, whose handler takes 700 ms, printing its port.
fn child() -> ! {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1);
    server.control().shutdown_on_signals().unwrap();
    println!("{}", server.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    server
        .run(|_req| {
            std::thread::sleep(Duration::from_millis(700));
            text_response(200, "answered")
        })
        .unwrap();
    std::process::exit(0);
}

#[test]
fn sigterm_and_sigint_stop_the_server_gracefully_and_the_process_exits_zero() {
    if std::env::var_os("SERVER_CONTROLS_CHILD").is_some() {
        child();
    }
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sigterm_and_sigint_stop_the_server_gracefully_and_the_process_exits_zero",
                "--nocapture",
            ])
            .env("SERVER_CONTROLS_CHILD", "1")
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
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        conn.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_millis(200)); // the request is in the handler
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: kill(2) with our own child's pid and a valid signal number.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
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
