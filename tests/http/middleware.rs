//! `wrap` on a real server: the wrapped handler is an ordinary handler for the `Server` and for
//! the blocking `handle_conn`, layers run outermost first, and a layer that answers keeps the
//! handler from being called.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use web::http::{
    Header, Layer, Request, Response, Server, ask, cookie, handle_conn, header, header_in, layer,
    parse_reply_head, response_body, status_of, text_response, with_header, wrap,
};

/// A layer that appends `name` to the `x-trail` request header going down and to the `X-Trail`
/// response header coming back.
fn trail(name: &'static str) -> Layer {
    layer(move |mut req, next| {
        let down = format!("{} {name}", header(&req, "x-trail"));
        req.set_header("x-trail", down.trim_start());
        let mut res = next(req);
        let up = format!("{} {name}", header_in(&res.headers, "x-trail"));
        res.headers.retain(|h| h.name != "X-Trail");
        with_header(res, "X-Trail", up.trim_start())
    })
}

fn app() -> impl Fn(Request) -> Response + Send + Sync + 'static {
    wrap(vec![trail("a"), trail("b"), trail("c")], |req| {
        text_response(200, header(&req, "x-trail").to_owned())
    })
}

#[test]
fn layers_run_outermost_first_on_a_server() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(app())
        .unwrap();
    let reply = ask(
        "127.0.0.1",
        server.local_addr().port(),
        "GET",
        "/",
        &[],
        b"",
    )
    .unwrap();
    let head = parse_reply_head(&reply).unwrap().unwrap();
    assert_eq!(head.status, 200);
    // Down: a, then b, then c reached the handler; back up: c first, a last.
    assert_eq!(response_body(&reply).unwrap(), b"a b c");
    assert_eq!(header_in(&head.headers, "x-trail"), "c b a");
    server.shutdown().unwrap();
}

#[test]
fn a_wrapped_handler_serves_handle_conn() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        handle_conn(conn, app()).unwrap()
    });
    let mut client = TcpStream::connect(addr).unwrap();
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    client.read_to_end(&mut reply).unwrap();
    assert_eq!(served.join().unwrap(), 1);
    assert_eq!(response_body(&reply).unwrap(), b"a b c");
}

#[test]
fn an_authentication_layer_answers_401_without_calling_the_handler() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let auth = layer(|req, next| {
        if cookie(&req, "session") == "valid" {
            next(req)
        } else {
            text_response(401, "log in first\n")
        }
    });
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(wrap(vec![auth], move |_req| {
            seen.fetch_add(1, Ordering::SeqCst);
            text_response(200, "secret\n")
        }))
        .unwrap();
    let port = server.local_addr().port();
    let cases = [
        (vec![], 401, 0),
        (vec![Header::new("Cookie", "session=forged")], 401, 0),
        (
            vec![Header::new("Cookie", "theme=dark; session=valid")],
            200,
            1,
        ),
    ];
    for (headers, status, handler_calls) in cases {
        let reply = ask("127.0.0.1", port, "GET", "/notes", &headers, b"").unwrap();
        assert_eq!(status_of(&reply), Some(status), "{headers:?}");
        assert_eq!(calls.load(Ordering::SeqCst), handler_calls, "{headers:?}");
    }
    server.shutdown().unwrap();
}
