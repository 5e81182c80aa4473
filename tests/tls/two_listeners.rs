//! One server on a plain port and a TLS port (`Server::also_bind_tls`): the same rooms, ids,
//! figures and stop on both; each TLS listener with its own certificates.

#![cfg(feature = "tls")]

use crate::wire;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use web::http::{Request, Response, Server, header, text_response};
use web::sse::{Sse, SseHandler};
use web::tls::ServerTls;
use web::ws::History;
use wire::certs::TestCa;
use wire::wait_until;

/// Joins `news` after the `Last-Event-ID` the client gives (none: from now on).
struct News;

impl SseHandler for News {
    type State = u64;
    fn accept(&self, req: &Request) -> Result<u64, Response> {
        Ok(header(req, "last-event-id").parse().unwrap_or(u64::MAX))
    }
    fn open(&self, sse: &mut Sse<'_>, after: &mut u64) {
        if *after == u64::MAX {
            sse.join("news");
        } else {
            sse.join_after("news", *after);
        }
    }
}

fn tls_of(ca: &TestCa) -> ServerTls {
    let leaf = ca.leaf(&["localhost", "127.0.0.1"]);
    ServerTls::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes()).unwrap()
}

/// A plain HTTP/1.1 exchange on its own connection: the response's body.
fn plain(addr: SocketAddr, method: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    got.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// Reads `stream` until what came holds `want`; all of it.
fn read_until(stream: &mut impl Read, want: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).contains(want) {
        let n = stream.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "ended before {want:?}: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn an_event_stream_on_the_tls_port_gets_a_post_on_the_plain_port_and_resumes_across_ports() {
    let ca = TestCa::new();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .also_bind_tls("127.0.0.1:0", tls_of(&ca))
        .unwrap()
        .workers(2)
        .history(History::new(20))
        .sse("/events", News);
    let rooms = server.rooms();
    let addrs = server.local_addrs().unwrap();
    let control = server.control();
    let server = server
        .spawn(move |req: Request| match req.method() {
            "POST" => {
                let text = String::from_utf8_lossy(req.body()).into_owned();
                let id = rooms.post("news", move |_| text).unwrap_or(0);
                text_response(201, id.to_string())
            }
            _ => text_response(200, "plain or not, one server"),
        })
        .unwrap();
    assert_eq!(server.local_addrs(), addrs);
    let (plain_port, tls_port) = (addrs[0], addrs[1]);

    // An event stream over TLS.
    let mut tls = ca.stream(tls_port, rustls::DEFAULT_VERSIONS);
    tls.write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    read_until(&mut tls, "text/event-stream");
    wait_until(
        std::time::Duration::from_secs(10),
        "the stream is a member",
        || server.stats().event_streams == 1,
    );
    // A post on the plain port reaches it, with its id.
    let first: u64 = plain(plain_port, "POST", "/post", "one").parse().unwrap();
    let got = read_until(&mut tls, "data: one\n\n");
    assert!(got.contains(&format!("id: {first}\n")), "{got}");
    drop(tls);
    wait_until(
        std::time::Duration::from_secs(10),
        "the stream is gone",
        || server.stats().event_streams == 0,
    );

    // Another post meanwhile; a plain stream resuming by the TLS stream's last id gets it alone.
    let second: u64 = plain(plain_port, "POST", "/post", "two").parse().unwrap();
    let mut resumed = TcpStream::connect(plain_port).unwrap();
    write!(
        resumed,
        "GET /events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: {first}\r\n\r\n"
    )
    .unwrap();
    let got = read_until(&mut resumed, "data: two\n\n");
    assert!(got.contains(&format!("id: {second}\n")), "{got}");
    assert!(!got.contains("data: one"), "{got}");

    // One server's figures: both ports' connections, the TLS one's handshake (a worker
    // publishes its figures at the end of the turn that wrote what was just read: waited for).
    wait_until(
        std::time::Duration::from_secs(10),
        "both ports' connections counted",
        || control.stats().connections >= 4,
    );
    assert_eq!(control.stats().tls_handshakes, 1);
    assert_eq!(
        plain(plain_port, "GET", "/", ""),
        "plain or not, one server"
    );
    drop(resumed);
    server.shutdown().unwrap();
    for addr in addrs {
        assert!(
            TcpStream::connect(addr).is_err(),
            "{addr} served after the stop"
        );
    }
}

/// Whether a TLS handshake with `addr` trusting `ca` succeeds.
fn trusts(addr: SocketAddr, ca: &TestCa) -> bool {
    let mut tls = ca.stream(addr, rustls::DEFAULT_VERSIONS);
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_ok()
        && {
            let mut got = String::new();
            tls.read_to_string(&mut got).is_ok() && got.starts_with("HTTP/1.1 200")
        }
}

#[test]
fn each_tls_listener_presents_its_own_certificates_and_reloads_alone() {
    let (first_ca, second_ca, renewed_ca) = (TestCa::new(), TestCa::new(), TestCa::new());
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .tls(tls_of(&first_ca))
        .also_bind_tls("127.0.0.1:0", tls_of(&second_ca))
        .unwrap()
        .also_bind("127.0.0.1:0")
        .unwrap()
        .workers(1);
    let control = server.control();
    let server = server
        .spawn(|_req: Request| text_response(200, "hi"))
        .unwrap();
    let [first, second, plain_port] = server.local_addrs() else {
        panic!("three addresses: {:?}", server.local_addrs());
    };
    let (first, second, plain_port) = (*first, *second, *plain_port);
    assert!(trusts(first, &first_ca) && !trusts(first, &second_ca));
    assert!(trusts(second, &second_ca) && !trusts(second, &first_ca));
    assert_eq!(plain(plain_port, "GET", "/", ""), "hi");

    control.reload_tls_on(second, &tls_of(&renewed_ca)).unwrap();
    assert!(trusts(second, &renewed_ca) && !trusts(second, &second_ca));
    assert!(
        trusts(first, &first_ca),
        "the other listener kept its certificate"
    );
    assert_eq!(
        control
            .reload_tls_on(plain_port, &tls_of(&renewed_ca))
            .unwrap_err()
            .kind(),
        std::io::ErrorKind::NotFound
    );
    server.shutdown().unwrap();
}
