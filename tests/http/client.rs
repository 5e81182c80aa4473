//! The blocking client against the library's own server and against hand-written servers that
//! misbehave on purpose.

use crate::wire;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use web::http::{
    Client, Header, Response, Server, ask, content_length, get, get_all, read_response,
    response_body, status_of, text_response,
};

/// A server that reads one request head and answers with `reply`, written in pieces of
/// `piece` bytes with a pause between them, then does what `after` says.
fn scripted(reply: &'static [u8], piece: usize, close_after: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match conn.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            for part in reply.chunks(piece) {
                if conn.write_all(part).is_err() {
                    break;
                }
                let _ = conn.flush();
                if piece < reply.len() {
                    thread::sleep(Duration::from_millis(1));
                }
            }
            if !close_after {
                thread::sleep(Duration::from_secs(3));
            }
        }
    });
    port
}

#[test]
fn get_all_of_100_paths_uses_one_connection() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|req| text_response(200, req.path().to_owned()))
        .unwrap();
    let port = server.local_addr().port();
    let paths: Vec<String> = (0..100).map(|i| format!("/item/{i}")).collect();
    let replies = get_all("127.0.0.1", port, &paths).unwrap();
    assert_eq!(replies.len(), 100);
    for (reply, path) in replies.iter().zip(&paths) {
        assert_eq!(status_of(reply), Some(200));
        assert_eq!(response_body(reply).unwrap(), path.as_bytes());
    }
    let stats = server.stats();
    assert_eq!((stats.connections, stats.requests), (1, 100), "{stats:?}");
    server.shutdown().unwrap();
}

#[test]
fn get_all_reconnects_when_the_server_closes_between_replies() {
    // Every third reply closes the connection.
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .spawn(move |req| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let res = text_response(200, req.path().to_owned());
            if n % 3 == 2 {
                web::http::with_header(res, "Connection", "close")
            } else {
                res
            }
        })
        .unwrap();
    let paths: Vec<String> = (0..9).map(|i| format!("/{i}")).collect();
    let replies = get_all("127.0.0.1", server.local_addr().port(), &paths).unwrap();
    let bodies: Vec<Vec<u8>> = replies.iter().map(|r| response_body(r).unwrap()).collect();
    let want: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    assert_eq!(bodies, want);
    assert_eq!(server.stats().connections, 3);
    server.shutdown().unwrap();
}

#[test]
fn get_all_sends_again_on_a_new_connection_when_a_kept_alive_one_was_closed() {
    // The race of a server closing an idle keep-alive connection just as the next request
    // arrives: the first connection answers /1 (keep-alive), then closes on /2 without a reply;
    // the second connection answers /2.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let read_head = |conn: &mut TcpStream| {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            String::from_utf8(head).unwrap()
        };
        let (mut first, _) = listener.accept().unwrap();
        assert!(read_head(&mut first).starts_with("GET /1 "));
        first
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
            .unwrap();
        assert!(read_head(&mut first).starts_with("GET /2 "));
        drop(first);
        let (mut second, _) = listener.accept().unwrap();
        assert!(read_head(&mut second).starts_with("GET /2 "));
        second
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")
            .unwrap();
    });
    let replies = get_all("127.0.0.1", port, &["/1", "/2"]).unwrap();
    let bodies: Vec<Vec<u8>> = replies.iter().map(|r| response_body(r).unwrap()).collect();
    assert_eq!(bodies, [b"one".to_vec(), b"two".to_vec()]);
    server.join().unwrap();
}

#[test]
fn read_response_on_a_connection_the_server_closed_is_unexpected_eof() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .idle_timeout(Duration::from_millis(100))
        .spawn(|req| text_response(200, req.path().to_owned()))
        .unwrap();
    let mut conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.write_all(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let reply = read_response(&mut conn, Vec::new()).unwrap();
    assert_eq!(response_body(&reply).unwrap(), b"/b");
    thread::sleep(Duration::from_millis(400)); // past the idle timeout: the server closed it
    conn.write_all(b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n").ok();
    let err = read_response(&mut conn, Vec::new()).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
        ),
        "{err:?}"
    );
    server.shutdown().unwrap();
}

#[test]
fn ask_sends_headers_and_body_and_reads_the_reply() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .spawn(|req| {
            let seen = format!(
                "{} {} host={} ct={} len={} body={}",
                req.method(),
                req.path(),
                web::http::header(&req, "host"),
                web::http::header(&req, "content-type"),
                web::http::header(&req, "content-length"),
                String::from_utf8_lossy(req.body())
            );
            text_response(201, seen)
        })
        .unwrap();
    let port = server.local_addr().port();
    let reply = ask(
        "127.0.0.1",
        port,
        "POST",
        "/notes?x=1",
        &[Header::new("Content-Type", "text/plain")],
        b"remember",
    )
    .unwrap();
    assert_eq!(status_of(&reply), Some(201));
    let want = format!("POST /notes?x=1 host=127.0.0.1:{port} ct=text/plain len=8 body=remember");
    assert_eq!(response_body(&reply).unwrap(), want.as_bytes());
    let reply = ask("127.0.0.1", port, "PUT", "/empty", &[], b"").unwrap();
    assert!(String::from_utf8_lossy(&reply).ends_with("len=0 body="));
    server.shutdown().unwrap();
}

#[test]
fn head_reply_has_no_body_and_the_next_reply_is_intact() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .spawn(|_req| text_response(200, "twelve bytes"))
        .unwrap();
    let port = server.local_addr().port();
    let reply = ask("127.0.0.1", port, "HEAD", "/", &[], b"").unwrap();
    assert_eq!(content_length(&reply), Some(12));
    assert!(reply.ends_with(b"\r\n\r\n"));

    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let head = Client::new()
        .read_response_to(&mut conn, Vec::new(), "HEAD")
        .unwrap();
    assert!(head.ends_with(b"\r\n\r\n"));
    let get = read_response(&mut conn, Vec::new()).unwrap();
    assert_eq!(response_body(&get).unwrap(), b"twelve bytes");
    server.shutdown().unwrap();
}

#[test]
fn pipelined_replies_are_read_one_at_a_time_without_reading_past() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .spawn(|req| text_response(200, req.path().to_owned()))
        .unwrap();
    let mut conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.write_all(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /22 HTTP/1.1\r\nHost: x\r\n\r\nGET /333 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    thread::sleep(Duration::from_millis(100)); // all three replies are in the socket buffer
    for want in [&b"/1"[..], b"/22", b"/333"] {
        let reply = read_response(&mut conn, Vec::new()).unwrap();
        assert_eq!(response_body(&reply).unwrap(), want);
        assert_eq!(
            reply.len() as u64,
            reply.iter().position(|_| true).map_or(0, |_| {
                let head = web::http::parse_reply_head(&reply).unwrap().unwrap();
                head.len as u64 + content_length(&reply).unwrap()
            })
        );
    }
    server.shutdown().unwrap();
}

#[test]
fn chunked_reply_is_returned_as_received_and_de_chunked_by_response_body() {
    const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\nJUNK AFTER";
    let port = scripted(REPLY, REPLY.len(), false);
    let reply = get("127.0.0.1", port, "/").unwrap();
    assert_eq!(reply, &REPLY[..REPLY.len() - 10]);
    assert_eq!(response_body(&reply).unwrap(), b"hello, world");
}

#[test]
fn close_delimited_reply_reads_to_the_end() {
    const REPLY: &[u8] =
        b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of this until the close";
    let port = scripted(REPLY, REPLY.len(), true);
    let reply = get("127.0.0.1", port, "/").unwrap();
    assert_eq!(reply, REPLY);
    assert_eq!(
        response_body(&reply).unwrap(),
        b"all of this until the close"
    );
}

#[test]
fn reply_split_across_many_small_writes_is_whole() {
    const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 26\r\nX-Pad: some header to split\r\n\r\nabcdefghijklmnopqrstuvwxyz";
    let port = scripted(REPLY, 3, false);
    let reply = get("127.0.0.1", port, "/").unwrap();
    assert_eq!(reply, REPLY);
    const CHUNKED: &[u8] =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
    let port = scripted(CHUNKED, 2, false);
    assert_eq!(
        response_body(&get("127.0.0.1", port, "/").unwrap()).unwrap(),
        b"abcdef"
    );
}

#[test]
fn interim_continue_replies_are_dropped() {
    const REPLY: &[u8] =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let port = scripted(REPLY, REPLY.len(), false);
    let reply = get("127.0.0.1", port, "/").unwrap();
    assert_eq!(reply, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
}

#[test]
fn a_server_that_stalls_times_out() {
    // Half a reply, then silence.
    let port = scripted(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this",
        1000,
        false,
    );
    let client = Client::new().read_timeout(Duration::from_millis(300));
    let start = Instant::now();
    let err = client.get("127.0.0.1", port, "/").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut, "{err:?}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );

    // A server that accepts and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = client
        .get("127.0.0.1", silent.local_addr().unwrap().port(), "/")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut, "{err:?}");
}

#[test]
fn a_server_that_sends_garbage_is_invalid_data() {
    for garbage in [
        &b"SSH-2.0-OpenSSH_9.2\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
    ] {
        let port = scripted(garbage, garbage.len(), true);
        let err = get("127.0.0.1", port, "/").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData, "{err:?}");
    }
    let port = scripted(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        100,
        true,
    );
    assert_eq!(
        get("127.0.0.1", port, "/").unwrap_err().kind(),
        ErrorKind::InvalidData
    );
}

#[test]
fn a_reply_cut_short_is_unexpected_eof() {
    let port = scripted(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
        1000,
        true,
    );
    assert_eq!(
        get("127.0.0.1", port, "/").unwrap_err().kind(),
        ErrorKind::UnexpectedEof
    );
}

#[test]
fn a_reply_over_the_limit_is_an_error_not_an_allocation() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .spawn(|_req| Response::new(200, "application/octet-stream", vec![], vec![7u8; 200_000]))
        .unwrap();
    let port = server.local_addr().port();
    let err = Client::new()
        .max_reply(100_000)
        .get("127.0.0.1", port, "/")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    // A head announcing an absurd length is refused before reading.
    let huge = scripted(
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n",
        1000,
        false,
    );
    assert_eq!(
        get("127.0.0.1", huge, "/").unwrap_err().kind(),
        ErrorKind::InvalidData
    );
    // Within the limit the whole body arrives.
    let reply = Client::new()
        .max_reply(300_000)
        .get("127.0.0.1", port, "/")
        .unwrap();
    assert_eq!(response_body(&reply).unwrap().len(), 200_000);
    server.shutdown().unwrap();
}

#[test]
fn connecting_to_a_closed_port_is_refused() {
    let (port, _held) = wire::closed_port();
    assert_eq!(
        get("127.0.0.1", port, "/").unwrap_err().kind(),
        ErrorKind::ConnectionRefused
    );
}

#[test]
fn a_request_that_cannot_be_sent_is_invalid_input() {
    let err = ask("127.0.0.1", 1, "GET", "/a\r\nInjected: yes", &[], b"").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}
