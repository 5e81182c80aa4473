//! The router on a real server: parameters and tails, 404, 405 with `Allow`, `HEAD` from `GET`,
//! middleware around it, and WebSocket and event-stream routes by pattern.

use std::io::{Read, Write};

use crate::wire::Client;

use web::http::{Request, Response, Router, Server, layer, text_response, with_header, wrap};
use web::sse::{Event, Sse, SseHandler};
use web::ws::{Message, Ws, WsHandler};

fn topics() -> Router {
    Router::new()
        .get("/", |_req| text_response(200, "home"))
        .get("/topics/:name", |req| {
            text_response(200, format!("{} ({})", req.path_param("name"), req.route()))
        })
        .post("/topics/:name", |req| {
            text_response(201, format!("posted to {}", req.path_param("name")))
        })
        .get("/topics/:name/posts/:id", |req| {
            let (name, id) = (req.path_param("name"), req.path_param("id"));
            text_response(200, format!("{name}#{id}"))
        })
        .get("/topics/new", |_req| text_response(200, "the form"))
        .get("/files/*path", |req| {
            text_response(200, req.path_param("path").to_owned())
        })
}

#[test]
fn routes_with_parameters_and_tails_answer_with_their_handlers_and_the_rest_404_or_405() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(topics().handler())
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    let cases: &[(&str, &str, u16, &str)] = &[
        ("GET", "/", 200, "home"),
        ("GET", "/topics/rust", 200, "rust (/topics/:name)"),
        ("GET", "/topics/rust?page=2", 200, "rust (/topics/:name)"),
        ("GET", "/topics/new", 200, "the form"),
        ("POST", "/topics/rust", 201, "posted to rust"),
        ("GET", "/topics/rust/posts/42", 200, "rust#42"),
        ("GET", "/topics/caf%C3%A9", 200, "caf%C3%A9 (/topics/:name)"),
        ("GET", "/files/a/b/c.txt", 200, "a/b/c.txt"),
        ("GET", "/topics", 404, "Not Found\n"),
        ("GET", "/topics/", 404, "Not Found\n"),
        ("GET", "/topics/rust/posts", 404, "Not Found\n"),
        ("DELETE", "/topics/rust", 405, "Method Not Allowed\n"),
        ("PUT", "/", 405, "Method Not Allowed\n"),
    ];
    for &(method, path, status, body) in cases {
        c.send(format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        ));
        let r = c.reply();
        assert_eq!(
            (r.status, r.text().as_str()),
            (status, body),
            "{method} {path}"
        );
        if status == 405 {
            let allow = r.header("allow").unwrap_or_default().to_owned();
            let want = if path == "/" {
                "GET, HEAD"
            } else {
                "GET, HEAD, POST"
            };
            assert_eq!(allow, want, "{method} {path}");
        }
    }
    // HEAD is answered by GET's handler: its head, with the length GET's body would have.
    c.send("HEAD /topics/rust HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.head_reply();
    assert_eq!((r.status, r.header("content-length")), (200, Some("20")));
    server.shutdown().unwrap();
}

#[test]
fn middleware_wraps_a_router_and_sees_the_route_on_its_way_back() {
    // A layer that reports which route answered (the router sets it on the request it
    // passes down; the layer reads it from the response the handler built).
    let tag = layer(|req, next| {
        let res = next(req);
        let route = res.header("x-route").to_owned();
        with_header(res, "X-Seen", format!("route={route}"))
    });
    let router = Router::new().get("/u/:id", |req| {
        with_header(
            text_response(200, req.path_param("id").to_owned()),
            "X-Route",
            req.route(),
        )
    });
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(wrap(vec![tag], router.handler()))
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    let r = c.get("/u/7");
    assert_eq!(r.text(), "7");
    assert_eq!(r.header("x-seen"), Some("route=/u/:id"));
    server.shutdown().unwrap();
}

struct Rooms;

impl WsHandler for Rooms {
    type State = String;
    fn accept(&self, req: &Request) -> Result<String, Response> {
        match req.path_param("room") {
            "closed" => Err(text_response(403, "closed\n")),
            room => Ok(room.to_owned()),
        }
    }
    fn open(&self, ws: &mut Ws<'_>, room: &mut String) {
        ws.send_text(&format!("in {room}"));
    }
    fn message(&self, _ws: &mut Ws<'_>, _room: &mut String, _msg: Message) {}
}

struct Feed;

impl SseHandler for Feed {
    type State = String;
    fn accept(&self, req: &Request) -> Result<String, Response> {
        Ok(req.path_param("topic").to_owned())
    }
    fn open(&self, sse: &mut Sse<'_>, topic: &mut String) {
        sse.send(&Event::new(format!("feed of {topic}")));
    }
}

#[test]
fn websocket_and_event_stream_routes_match_by_pattern_and_their_handlers_see_the_parameters() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .websocket("/rooms/:room", Rooms)
        .sse("/feeds/:topic", Feed)
        .spawn(|req| text_response(404, format!("http {}", req.path())))
        .unwrap();
    let port = server.local_addr().port();
    let mut ws = crate::wire::ws::Client::connect_to(port, "/rooms/lobby");
    assert_eq!(ws.frame(), (0x81, b"in lobby".to_vec()));
    let (_, head) = crate::wire::ws::Client::try_connect(port, "/rooms/closed", &[]);
    assert!(
        head.starts_with(b"HTTP/1.1 403 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    // Another path goes to the HTTP handler.
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/rooms").text(), "http /rooms");
    let mut stream = std::net::TcpStream::connect(server.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /feeds/news HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("data: feed of news\n") {
        let mut buf = [0u8; 1024];
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(seen.starts_with(b"HTTP/1.1 200 "));
    drop((ws, stream, c));
    server.shutdown().unwrap();
}
