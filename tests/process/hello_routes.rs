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
