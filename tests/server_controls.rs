//! The server's controls: figures and stop from a `Control` taken before the start, a graceful
//! stop on SIGTERM/SIGINT in a real process, and an address another socket serves refused.

mod wire;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
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
