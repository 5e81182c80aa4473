//! A team's axum code on `web` (`--features tower`): a real axum `Router` — path, query and
//! JSON extractors, state, a fallback, a streamed body, tower-http's CORS, compression,
//! timeout and trace layers — served once by `axum::serve` and once by `web`, and the same
//! requests asked of both must get the same answers.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Json, Path, Query, State};
use axum::http::{Method, StatusCode};
use axum::routing::get;
use serde::{Deserialize, Serialize};
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use web::http::{Client, ClientResponse, Server, ServerHandle};

mod differential;
mod example;
#[allow(dead_code)] // the examples' builder, shared with the other test binaries
#[path = "../wire/examples.rs"]
mod examples;
mod over_h2;
mod paths;

#[derive(Clone, Default)]
struct Orders(Arc<Mutex<Vec<Order>>>);

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Order {
    id: u32,
    item: String,
}

#[derive(Deserialize)]
struct Search {
    q: String,
    limit: Option<usize>,
}

/// How long the timeout layer lets a handler take.
const TIMEOUT: Duration = Duration::from_millis(300);

/// The team's router: ten routes and the layers a service of theirs has.
fn router() -> Router {
    Router::new()
        .route("/orders", get(list).post(create))
        .route("/orders/{id}", get(one))
        .route("/search", get(search))
        .route("/wait", get(wait))
        .route("/slow", get(slow))
        .route("/stream", get(stream))
        .route(
            "/big",
            get(|| async { "all work and no play ".repeat(500) }),
        )
        .route("/peer", get(peer))
        .route("/panics", get(panics))
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such page") })
        .layer(
            CorsLayer::new()
                .allow_origin(Any)
                .allow_methods([Method::GET, Method::POST]),
        )
        .layer(CompressionLayer::new())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            TIMEOUT,
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(Orders::default())
}

async fn list(State(orders): State<Orders>) -> Json<Vec<Order>> {
    Json(orders.0.lock().unwrap().clone())
}

async fn create(
    State(orders): State<Orders>,
    Json(order): Json<Order>,
) -> (StatusCode, Json<Order>) {
    orders.0.lock().unwrap().push(order.clone());
    (StatusCode::CREATED, Json(order))
}

async fn one(State(orders): State<Orders>, Path(id): Path<u32>) -> Result<Json<Order>, StatusCode> {
    let orders = orders.0.lock().unwrap();
    let found = orders.iter().find(|o| o.id == id).cloned();
    found.map(Json).ok_or(StatusCode::NOT_FOUND)
}

async fn search(State(orders): State<Orders>, Query(search): Query<Search>) -> Json<Vec<Order>> {
    let orders = orders.0.lock().unwrap();
    let found = orders.iter().filter(|o| o.item.contains(&search.q));
    Json(
        found
            .take(search.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect(),
    )
}

/// Waits on tokio's timer: pending on the worker, answered from the runtime.
async fn wait() -> &'static str {
    tokio::time::sleep(Duration::from_millis(20)).await;
    "waited"
}

/// Past the timeout layer's bound.
async fn slow() -> &'static str {
    tokio::time::sleep(TIMEOUT * 4).await;
    "too late"
}

/// A body that comes in pieces, each after a short wait on tokio's timer.
async fn stream() -> axum::body::Body {
    axum::body::Body::new(Pieces {
        left: vec!["three", "two ", "one "],
        wait: None,
    })
}

async fn peer(ConnectInfo(peer): ConnectInfo<SocketAddr>) -> String {
    peer.ip().to_string()
}

async fn panics() -> &'static str {
    panic!("a handler's bug")
}

/// A streamed body: its pieces (last first), each after a wait.
struct Pieces {
    left: Vec<&'static str>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl http_body::Body for Pieces {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        if self.left.is_empty() {
            return Poll::Ready(None);
        }
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(5))));
        std::task::ready!(wait.as_mut().poll(cx));
        self.wait = None;
        let piece = self.left.pop().unwrap_or_default();
        Poll::Ready(Some(Ok(http_body::Frame::data(bytes::Bytes::from_static(
            piece.as_bytes(),
        )))))
    }
}

/// A body of one piece of data and then trailers, all ready at once.
struct WithTrailers(Vec<http_body::Frame<bytes::Bytes>>);

impl http_body::Body for WithTrailers {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::convert::Infallible>>>
    {
        let next = (!self.0.is_empty()).then(|| Ok(self.0.remove(0)));
        std::task::Poll::Ready(next)
    }
}

/// What a request asked, as a service echoes it: `METHOD TARGET X-TRACE BODY` (`-` for no
/// `x-trace`).
async fn said(req: http::Request<web::tower::RequestBody>) -> String {
    use http_body_util::BodyExt;
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let trace = parts.headers.get("x-trace").and_then(|v| v.to_str().ok());
    format!(
        "{} {} {} {}",
        parts.method,
        parts.uri,
        trace.unwrap_or("-"),
        String::from_utf8_lossy(&body),
    )
}

/// A multi-threaded runtime of the test's own.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `router` served by `web` on `runtime`, the peer's address given as axum's `ConnectInfo`:
/// the server and its URL.
fn on_web(runtime: &tokio::runtime::Runtime, router: Router) -> (ServerHandle, String) {
    let app = web::tower::handler(runtime.handle(), router).connect_info(ConnectInfo);
    serve(bound(), move |req| app.call(req))
}

/// A server on a free port of 127.0.0.1.
fn bound() -> Server {
    Server::bind("127.0.0.1:0").expect("a port")
}

/// `server` (given one worker) answering with `handler`: the server and its URL.
fn serve(
    server: Server,
    handler: impl Fn(web::http::Request) -> web::http::Response + Send + Sync + 'static,
) -> (ServerHandle, String) {
    let handle = server.workers(1).spawn(handler).expect("web serves");
    let url = format!("http://{}", handle.local_addr());
    (handle, url)
}

/// `router` served by `axum::serve` on `runtime`; its address.
fn on_axum(runtime: &tokio::runtime::Runtime, router: Router) -> SocketAddr {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    runtime.spawn(async move { axum::serve(listener, service).await });
    addr
}

/// Asks `method url` with `headers` and `body` of a fresh connection.
fn ask(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> ClientResponse {
    let client = Client::new().read_timeout(Duration::from_secs(20));
    let mut request = client.request(method, url);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if !body.is_empty() {
        request = request.body(body.as_bytes().to_vec());
    }
    request.send().expect("an answer")
}
