//! A service served over HTTP/2 (h2c by prior knowledge on the plain port), asked by `h2`,
//! the HTTP/2 client hyper uses: the request's head and body reach the service whole, and a
//! body's trailers come back as HTTP/2 carries them, a HEADERS frame after the data.

use std::convert::Infallible;

use super::{WithTrailers, bound, runtime, said, serve};

/// A service that answers what it was asked — method, target, `x-trace`, body — as the data
/// of a body that ends with the trailer `grpc-status: 0`.
fn echo_with_trailers() -> impl tower::Service<
    http::Request<web::tower::RequestBody>,
    Response = http::Response<WithTrailers>,
    Error = Infallible,
    Future = impl Send,
> + Clone
+ Send
+ Sync
+ 'static {
    tower::service_fn(|req| async move {
        let said = said(req).await;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        Ok::<_, Infallible>(http::Response::new(WithTrailers(vec![
            http_body::Frame::data(bytes::Bytes::from(said)),
            http_body::Frame::trailers(trailers),
        ])))
    })
}

/// An HTTP/2 connection to `addr` by prior knowledge, driven on the runtime.
async fn h2c(addr: std::net::SocketAddr) -> h2::client::SendRequest<bytes::Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2c");
    tokio::spawn(connection);
    client
}

/// What one request over `client` got: status, body and trailers.
async fn ask_h2(
    client: &h2::client::SendRequest<bytes::Bytes>,
    method: &str,
    path: &str,
    trace: &str,
    body: &'static [u8],
) -> (u16, String, Option<http::HeaderMap>) {
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1{path}"))
        .header("x-trace", trace)
        .body(())
        .expect("a request");
    let mut client = client
        .clone()
        .ready()
        .await
        .expect("the connection takes a stream");
    let (response, mut stream) = client.send_request(request, body.is_empty()).expect("sent");
    if !body.is_empty() {
        stream
            .send_data(bytes::Bytes::from_static(body), true)
            .expect("the body sent");
    }
    let response = response.await.expect("a response");
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut got = Vec::new();
    while let Some(data) = body.data().await {
        let data = data.expect("the body's data");
        let _ = body.flow_control().release_capacity(data.len());
        got.extend_from_slice(&data);
    }
    let trailers = body.trailers().await.expect("the trailers");
    (status, String::from_utf8_lossy(&got).into_owned(), trailers)
}

#[test]
fn a_request_over_h2c_reaches_the_service_whole_and_its_trailers_come_back_as_headers() {
    let runtime = runtime();
    let app = web::tower::handler(runtime.handle(), echo_with_trailers());
    let (handle, _url) = serve(bound(), move |req| app.call(req));
    let addr = handle.local_addr();
    let (status, body, trailers) = runtime.block_on(async move {
        let client = h2c(addr).await;
        ask_h2(&client, "PUT", "/a/b?c=d", "t1", b"the body").await
    });
    assert_eq!(status, 200);
    assert_eq!(body, "PUT /a/b?c=d t1 the body");
    let trailers = trailers.expect("trailers after the data");
    assert_eq!(
        trailers.get("grpc-status").and_then(|v| v.to_str().ok()),
        Some("0")
    );
    handle.shutdown().expect("stops");
}

#[test]
fn streams_at_once_on_one_h2c_connection_each_get_their_own_answer() {
    const STREAMS: usize = 40;
    let runtime = runtime();
    let app = web::tower::handler(runtime.handle(), echo_with_trailers());
    let (handle, _url) = serve(bound(), move |req| app.call(req));
    let addr = handle.local_addr();
    let answers = runtime.block_on(async move {
        let client = h2c(addr).await;
        let asks: Vec<_> = (0..STREAMS)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move {
                    let path = format!("/item/{i}?n={i}");
                    let trace = format!("trace-{i}");
                    let got = ask_h2(&client, "GET", &path, &trace, b"").await;
                    (got, format!("GET {path} {trace} "))
                })
            })
            .collect();
        let mut answers = Vec::new();
        for ask in asks {
            answers.push(ask.await.expect("an asker"));
        }
        answers
    });
    for ((status, body, trailers), wanted) in answers {
        assert_eq!((status, body), (200, wanted));
        assert!(trailers.is_some_and(|t| t.contains_key("grpc-status")));
    }
    handle.shutdown().expect("stops");
}
