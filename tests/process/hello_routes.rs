//! `examples/hello`'s optional routes (a contract other tests and tools run against): with
//! `--events ROOM`, `POST /events` publishes its body to ROOM as one event; `--download BYTES`
//! answers `GET /download` with BYTES bytes, streamed; without them, `Hello, World!` as ever.

use std::io::Read;
use std::process::Child;

use crate::wire;
use wire::Client;
use wire::examples::serving;

/// `hello` with `args`, on a port of its choosing; stopped when dropped.
struct Hello {
    child: Child,
    addr: std::net::SocketAddr,
}

impl Hello {
    fn start(args: &[&str]) -> Hello {
        let args = [&["--workers", "1"][..], args].concat();
        let (child, port, _) = serving("hello", &args, "hello: listening on http://127.0.0.1:");
        Hello {
            child,
            addr: ([127, 0, 0, 1], port).into(),
        }
    }
}

impl Drop for Hello {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn post_events_publishes_to_the_room_and_download_streams_its_bytes() {
    let hello = Hello::start(&["--events", "news", "--download", "200000"]);
    let mut stream = Client::connect(hello.addr);
    stream.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    let mut read_until = |got: &mut Vec<u8>, what: &[u8]| {
        while !got.windows(what.len()).any(|w| w == what) {
            let n = stream.stream.read(&mut buf).expect("the event stream");
            assert!(
                n > 0,
                "the event stream ended: {:?}",
                String::from_utf8_lossy(got)
            );
            got.extend_from_slice(&buf[..n]);
        }
    };
    read_until(&mut got, b"\r\n\r\n");
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    let mut poster = Client::connect(hello.addr);
    poster.send("POST /events HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\n\r\nhi there");
    assert_eq!(poster.reply().status, 200);
    read_until(&mut got, b"data: hi there\n\n");
    let mut c = Client::connect(hello.addr);
    let r = c.get("/download");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 200_000);
    assert!(r.body.iter().all(|&b| b == b'd'));
    assert_eq!(c.get("/other").text(), "Hello, World!");
}

#[test]
fn without_the_options_every_path_and_method_is_hello() {
    let hello = Hello::start(&[]);
    let mut c = Client::connect(hello.addr);
    assert_eq!(c.get("/download").text(), "Hello, World!");
    c.send("POST /events HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi");
    assert_eq!(c.reply().text(), "Hello, World!");
}

/// `--max-connections N` (every serving example takes it): past N open connections a new one
/// waits in the listen backlog, and is served once one closes.
#[test]
fn past_max_connections_the_next_connection_waits_until_one_closes() {
    let hello = Hello::start(&["--max-connections", "2"]);
    let mut first = Client::connect(hello.addr);
    let mut second = Client::connect(hello.addr);
    assert_eq!(first.get("/").text(), "Hello, World!");
    assert_eq!(second.get("/").text(), "Hello, World!");
    let mut third = Client::connect(hello.addr);
    third.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    third
        .stream
        .set_read_timeout(Some(std::time::Duration::from_millis(300)))
        .unwrap();
    let mut byte = [0u8; 1];
    let waited = third.stream.read(&mut byte);
    assert!(
        matches!(&waited, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "the third was answered at once: {waited:?}"
    );
    drop(first);
    third.stream.set_read_timeout(None).unwrap();
    assert_eq!(third.reply().status, 200);
}
