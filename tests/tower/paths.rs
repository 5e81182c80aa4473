//! Each way a service's answer reaches the client through `web`.

use std::convert::Infallible;
use std::time::Duration;

use super::{WithTrailers, ask, bound, on_web, router, runtime, said, serve};

#[test]
fn a_router_ready_at_once_answers_in_the_workers_turn_without_a_task() {
    // A runtime that nothing drives: a task spawned on it would never run, so an answer
    // proves the router's future was ready on the worker.
    let idle = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let app = web::tower::handler(idle.handle(), router());
    let (handle, url) = serve(bound(), move |req| app.call(req));
    let created = ask(
        "POST",
        &format!("{url}/orders"),
        &[("content-type", "application/json")],
        r#"{"id":7,"item":"tea"}"#,
    );
    assert_eq!(created.status(), 201);
    let listed = ask("GET", &format!("{url}/orders"), &[], "");
    assert_eq!(
        (listed.status(), listed.text()),
        (200, r#"[{"id":7,"item":"tea"}]"#.to_owned())
    );
    assert_eq!(listed.header("content-type"), Some("application/json"));
    handle.shutdown().expect("stops");
}

#[test]
fn a_service_waiting_on_tokio_answers_from_the_runtime() {
    let runtime = runtime();
    let (handle, url) = on_web(&runtime, router());
    let waited = ask("GET", &format!("{url}/wait"), &[], "");
    assert_eq!((waited.status(), waited.text()), (200, "waited".to_owned()));
    handle.shutdown().expect("stops");
}

#[test]
fn a_body_that_comes_later_is_streamed_in_order() {
    let runtime = runtime();
    let (handle, url) = on_web(&runtime, router());
    let streamed = ask("GET", &format!("{url}/stream"), &[], "");
    assert_eq!(
        (streamed.status(), streamed.text()),
        (200, "one two three".to_owned())
    );
    handle.shutdown().expect("stops");
}

#[test]
fn connect_info_gives_the_handler_the_peer() {
    let runtime = runtime();
    let (handle, url) = on_web(&runtime, router());
    let peer = ask("GET", &format!("{url}/peer"), &[], "");
    assert_eq!((peer.status(), peer.text()), (200, "127.0.0.1".to_owned()));
    handle.shutdown().expect("stops");
}

#[test]
fn a_handler_that_panics_answers_500_and_the_server_serves_on() {
    let runtime = runtime();
    let (handle, url) = on_web(&runtime, router());
    assert_eq!(ask("GET", &format!("{url}/panics"), &[], "").status(), 500);
    assert_eq!(ask("GET", &format!("{url}/orders"), &[], "").status(), 200);
    handle.shutdown().expect("stops");
}

#[test]
fn a_service_error_answers_500_whether_at_once_or_later() {
    let runtime = runtime();
    let failing = tower::service_fn(|req: http::Request<web::tower::RequestBody>| async move {
        if req.uri().path() == "/later" {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Err::<http::Response<String>, _>(std::io::Error::other("the database is down"))
    });
    let app = web::tower::handler(runtime.handle(), failing);
    let (handle, url) = serve(bound(), move |req| app.call(req));
    assert_eq!(ask("GET", &format!("{url}/now"), &[], "").status(), 500);
    assert_eq!(ask("GET", &format!("{url}/later"), &[], "").status(), 500);
    handle.shutdown().expect("stops");
}

#[test]
fn the_request_reaches_the_service_whole() {
    let runtime = runtime();
    let echo = tower::service_fn(|req| async move {
        Ok::<_, Infallible>(http::Response::new(said(req).await))
    });
    let app = web::tower::handler(runtime.handle(), echo);
    let (handle, url) = serve(bound(), move |req| app.call(req));
    let echoed = ask(
        "PUT",
        &format!("{url}/a/b?c=d"),
        &[("X-Trace", "t1")],
        "the body",
    );
    assert_eq!(echoed.text(), "PUT /a/b?c=d t1 the body");
    handle.shutdown().expect("stops");
}

#[test]
fn requests_waiting_together_keep_their_own_target_and_headers() {
    // Every request waits until all of them have come, so their heads, copied into one
    // shared buffer of the worker, are all alive at once; each must still read its own.
    const N: usize = 24;
    let runtime = runtime();
    let together = std::sync::Arc::new(tokio::sync::Barrier::new(N));
    let echo = tower::service_fn(move |req: http::Request<web::tower::RequestBody>| {
        let together = together.clone();
        async move {
            together.wait().await;
            Ok::<_, Infallible>(http::Response::new(said(req).await))
        }
    });
    let app = web::tower::handler(runtime.handle(), echo);
    let (handle, url) = serve(bound().workers(1), move |req| app.call(req));
    let askers: Vec<_> = (0..N)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let trace = format!("trace-{i}-{}", "x".repeat(i * 7));
                let answer = ask(
                    "GET",
                    &format!("{url}/item/{i}?n={i}"),
                    &[("X-Trace", &trace)],
                    "",
                );
                (answer.text(), format!("GET /item/{i}?n={i} {trace} "))
            })
        })
        .collect();
    for asker in askers {
        let (got, wanted) = asker.join().expect("an asker");
        assert_eq!(got, wanted);
    }
    handle.shutdown().expect("stops");
}

#[test]
fn web_routes_and_the_router_share_one_port() {
    use web::sse::{Event, Sse, SseHandler};
    struct Greeter;
    impl SseHandler for Greeter {
        type State = ();
        fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
            Ok(())
        }
        fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
            sse.send(&Event::new("hello"));
        }
    }
    let runtime = runtime();
    let app = web::tower::handler(runtime.handle(), router());
    let (handle, url) = serve(bound().sse("/events", Greeter), move |req| app.call(req));
    let addr = handle.local_addr();
    assert_eq!(ask("GET", &format!("{url}/orders"), &[], "").status(), 200);
    let mut events = std::net::TcpStream::connect(addr).expect("connects");
    use std::io::{Read, Write};
    events
        .write_all(b"GET /events HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\n\r\n")
        .expect("asks");
    events
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    let mut got = Vec::new();
    let mut buf = [0; 1024];
    while !String::from_utf8_lossy(&got).contains("data: hello") {
        let n = events.read(&mut buf).expect("the stream's bytes");
        assert!(n > 0, "the stream ended: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
    handle.shutdown().expect("stops");
}

#[test]
fn a_body_with_trailers_ends_a_chunked_reply_with_them() {
    let runtime = runtime();
    let grpc = tower::service_fn(|_req: http::Request<web::tower::RequestBody>| async move {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        let body = WithTrailers(vec![
            http_body::Frame::data(bytes::Bytes::from_static(b"abc")),
            http_body::Frame::trailers(trailers),
        ]);
        Ok::<_, Infallible>(http::Response::new(body))
    });
    let app = web::tower::handler(runtime.handle(), grpc);
    let (handle, _url) = serve(bound(), move |req| app.call(req));
    let mut conn = std::net::TcpStream::connect(handle.local_addr()).expect("connects");
    use std::io::{Read, Write};
    conn.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .expect("asks");
    let mut got = Vec::new();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    conn.read_to_end(&mut got).expect("the reply");
    let got = String::from_utf8_lossy(&got);
    assert!(got.contains("Transfer-Encoding: chunked"), "{got}");
    assert!(
        got.ends_with("3\r\nabc\r\n0\r\ngrpc-status: 0\r\n\r\n"),
        "{got}"
    );
    handle.shutdown().expect("stops");
}

#[test]
fn more_header_lines_than_http_can_hold_are_answered_431_not_a_panic() {
    // The server allows 40 000 lines; `http`'s map holds 32 768 at most.
    let runtime = runtime();
    let app = web::tower::handler(runtime.handle(), router());
    let server = bound().max_headers(40_000).max_head_bytes(1 << 20);
    let (handle, url) = serve(server, move |req| app.call(req));
    let mut head = String::from("GET /orders HTTP/1.1\r\nHost: t\r\n");
    for i in 0..40_000 - 1 {
        head.push_str(&format!("x-{i}: v\r\n"));
    }
    head.push_str("\r\n");
    let addr = url.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).expect("connects");
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("a timeout");
    std::io::Write::write_all(&mut conn, head.as_bytes()).expect("sent");
    let mut reply = [0u8; 12];
    std::io::Read::read_exact(&mut conn, &mut reply).expect("a reply");
    assert_eq!(&reply, b"HTTP/1.1 431");
    assert_eq!(handle.stats().panics, 0);
    // Within http's bound the lines all reach the service.
    let listed = ask("GET", &format!("{url}/orders"), &[("x-a", "1")], "");
    assert_eq!(listed.status(), 200);
    handle.shutdown().expect("stops");
}
