//! Tower services served as handlers (feature `tower`): a team's axum `Router`, with its
//! extractors, state and tower-http layers, answers on `web`'s reactor beside `web`'s own
//! WebSocket, event-stream and room routes, on the same port.
//!
//! [`TowerHandler::call`] turns a [`Request`] into an `http::Request` (its head, its whole
//! body, and — when asked — the peer's address as an extension), calls the service, and turns
//! its `http::Response` back into a [`Response`]. The service's future is polled first on the
//! worker that read the request: one that is ready at once (a router answering from memory)
//! is answered in the same turn, with no task and no thread crossing. One that is pending
//! moves to the application's tokio runtime, as [`answer_async`](crate::http::answer_async)
//! does, and its reply comes later (deferred: `Server::reply_timeout` bounds it). The
//! response's body is taken as it comes: whole when all of it is ready at once, else
//! streamed through [`BodySender`] (with its length when the body knows it), its trailers
//! last (HTTP/2's trailing HEADERS, a chunked HTTP/1.1 body's trailer section; see
//! [`BodySender::finish_with_trailers`]).
//!
//! Futures that use tokio's I/O or timers (a database client, `tokio::time::sleep`) work on
//! this path: the worker polls with the runtime entered, so they register with the
//! runtime's drivers, which the runtime's own threads run — the runtime given to
//! [`handler`] must be a running one (a multi-threaded runtime, or a current-thread one
//! driven by a thread of the application).
//!
//! A service error, a panic in the service, and a body that fails before anything was sent
//! answer `500`, as a dropped [`Reply`] does; a body that fails midway is cut.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tower_service::Service;

use crate::http::{BodySender, Header, ParseError, Refusal, Reply, Request, Response};
use crate::server::{poll_first, spawn_reply};

mod reuse;

/// What puts the peer's address into a request's extensions (see
/// [`TowerHandler::connect_info`]).
type ConnectInfo = Arc<dyn Fn(SocketAddr, &mut http::Extensions) + Send + Sync>;

/// A tower service as a handler: see the [module](self) and [`handler`].
pub struct TowerHandler<S> {
    service: S,
    runtime: tokio::runtime::Handle,
    connect_info: Option<ConnectInfo>,
}

/// The body of a request as a service sees it: the whole body `web` read, in one frame.
#[derive(Debug, Default)]
pub struct RequestBody(Option<Bytes>);

/// Serves `service` — any `Service<http::Request<RequestBody>>` answering `http::Response<B>`,
/// an axum `Router` with its state and layers included — as a handler; what is pending runs on
/// `runtime` (the application's). Every worker calls a clone of it, so the handler the server
/// is given (`move |req| app.call(req)`) needs the service `Sync` as well as `Clone` (an axum
/// `Router` is; a service that is not can be wrapped in tower's `BoxCloneSyncService`).
///
/// Give an axum `Router` with its state: `router.with_state(state)`, or `router.with_state(())`
/// for one without. That is what `axum::serve` does first: it makes each route's handler
/// into a service once, where a `Router` called as it was built makes it again for every
/// request (about 1 300 instructions of a hello-world request).
///
/// ```
/// use web::http::Server;
/// let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
/// // Any tower service; an axum `Router` is one (`Router::with_state(...)`).
/// let service = tower::service_fn(|req: http::Request<web::tower::RequestBody>| async move {
///     let text = format!("you asked for {}", req.uri().path());
///     Ok::<_, std::convert::Infallible>(http::Response::new(text))
/// });
/// let app = web::tower::handler(runtime.handle(), service);
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(move |req| app.call(req))?;
/// let raw = web::http::get("127.0.0.1", handle.local_addr().port(), "/orders")?;
/// assert_eq!(web::http::response_body(&raw).unwrap(), b"you asked for /orders");
/// # handle.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn handler<S>(runtime: &tokio::runtime::Handle, service: S) -> TowerHandler<S> {
    TowerHandler {
        service,
        runtime: runtime.clone(),
        connect_info: None,
    }
}

impl<S, B> TowerHandler<S>
where
    S: Service<http::Request<RequestBody>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: HttpBody + Send + 'static,
    B::Data: Send,
{
    /// Puts what `info` makes of the peer's address into each request's extensions: how
    /// axum's `ConnectInfo` extractor finds it —
    /// `web::tower::handler(&rt, router).connect_info(axum::extract::ConnectInfo)`.
    #[must_use]
    pub fn connect_info<T>(mut self, info: fn(SocketAddr) -> T) -> Self
    where
        T: Clone + Send + Sync + 'static,
    {
        self.connect_info = Some(Arc::new(move |peer, extensions| {
            extensions.insert(info(peer));
        }));
        self
    }

    /// Answers `req` with the service (see the [module](self)).
    pub fn call(&self, req: Request) -> Response {
        let Some(request) = self.http_request(req) else {
            return Refusal::Malformed(ParseError::TooManyHeaders).response();
        };
        let mut service = self.service.clone();
        let called = async move {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(request).await
        };
        // Polled here first: a service ready at once answers in this turn.
        match poll_first(&self.runtime, called) {
            Ok(Ok(response)) => self.respond(response),
            Ok(Err(_)) => failed(),
            Err(pending) => spawn_reply(&self.runtime, |reply| async move {
                let Ok(response) = pending.await else {
                    reply.send(failed());
                    return;
                };
                let (parts, body) = response.into_parts();
                let head = response_head(&parts);
                let size = body.size_hint();
                let body = Some(Box::pin(body));
                stream_body(reply, head, (Taken::default(), body), size).await;
            }),
        }
    }

    /// The service's view of `req`: its method, target and header lines as `web` read them
    /// (a line `http` refuses — it is stricter about a few bytes — is left out), its whole
    /// body, and the peer's address if [`connect_info`](TowerHandler::connect_info) asked.
    /// `None` when `http` cannot hold its lines (32 768 at most, where the server's
    /// `max_headers` may allow more): answered 431, as a head past the server's own limit is.
    fn http_request(&self, req: Request) -> Option<http::Request<RequestBody>> {
        let mut request = http::Request::new(RequestBody::default());
        if let Ok(method) = http::Method::from_bytes(req.method().as_bytes()) {
            *request.method_mut() = method;
        }
        // The target and the values share one copy of the head, made in the worker's head
        // buffer (no allocation once that buffer's space comes back: see `reuse`).
        let raw = req.head_bytes();
        let head = reuse::share_head(raw);
        let share = |part: &[u8]| match (part.as_ptr() as usize).checked_sub(raw.as_ptr() as usize)
        {
            Some(at)
                if at
                    .checked_add(part.len())
                    .is_some_and(|end| end <= raw.len()) =>
            {
                head.slice(at..at + part.len())
            }
            // (A part a middleware set lies elsewhere.)
            _ => Bytes::copy_from_slice(part),
        };
        if let Ok(uri) = http::Uri::from_maybe_shared(share(req.path().as_bytes())) {
            *request.uri_mut() = uri;
        }
        let headers = request.headers_mut();
        *headers = reuse::headers();
        headers.try_reserve(req.headers().len()).ok()?;
        for header in req.headers() {
            let name = http::HeaderName::from_bytes(header.name().as_bytes());
            let value = http::HeaderValue::from_maybe_shared(share(header.value()));
            if let (Ok(name), Ok(value)) = (name, value) {
                headers.try_append(name, value).ok()?;
            }
        }
        if let (Some(info), Some(peer)) = (&self.connect_info, req.peer()) {
            info(peer, request.extensions_mut());
        }
        let body = req.into_body();
        if !body.is_empty() {
            *request.body_mut() = RequestBody(Some(Bytes::from(body)));
        }
        Some(request)
    }

    /// The service's response: whole if its body is all ready now (and has no trailers),
    /// else streamed from the runtime.
    fn respond(&self, response: http::Response<B>) -> Response {
        let (parts, body) = response.into_parts();
        let mut head = response_head(&parts);
        reuse::keep_headers(parts.headers);
        let mut body = Box::pin(body);
        let mut taken = Taken::default();
        // (A body may wait on tokio's timers or I/O: polled with the runtime entered.)
        let ready = {
            let _entered = self.runtime.enter();
            take_ready(body.as_mut(), &mut taken)
        };
        match ready {
            Ready::Ended if taken.trailers.is_empty() => {
                head.body = taken.data.into();
                head
            }
            Ready::Failed => failed(),
            Ready::Ended | Ready::Pending => {
                let size = body.size_hint();
                let body = (ready == Ready::Pending).then_some(body);
                spawn_reply(&self.runtime, |reply| {
                    stream_body(reply, head, (taken, body), size)
                })
            }
        }
    }
}

/// A response's head as `web` sends it: its status, its type and its other header lines
/// (framing lines left to `web`, which frames the body itself).
fn response_head(parts: &http::response::Parts) -> Response {
    let mut head = Response::new(parts.status.as_u16(), "", Vec::new(), "");
    for (name, value) in &parts.headers {
        match name {
            &http::header::CONTENT_TYPE => head.content_type = content_type(value),
            &http::header::CONTENT_LENGTH
            | &http::header::TRANSFER_ENCODING
            | &http::header::CONNECTION => {}
            _ => head.headers.push(Header::new(name.as_str(), text(value))),
        }
    }
    head
}

/// The content types axum and tower-http set themselves, and the plainest ones a handler
/// names: borrowed, not copied, when a response carries one of them.
const COMMON_TYPES: [&str; 8] = [
    "text/plain; charset=utf-8",
    "application/json",
    "text/html; charset=utf-8",
    "application/octet-stream",
    "text/event-stream",
    "application/x-www-form-urlencoded",
    "text/plain",
    "text/html",
];

/// A `Content-Type` value: one of [`COMMON_TYPES`] borrowed, any other copied as text.
fn content_type(value: &http::HeaderValue) -> std::borrow::Cow<'static, str> {
    let bytes = value.as_bytes();
    match COMMON_TYPES.iter().find(|t| t.as_bytes() == bytes) {
        Some(common) => std::borrow::Cow::Borrowed(common),
        None => std::borrow::Cow::Owned(text(value)),
    }
}

/// A header value as text (bytes that are not UTF-8 replaced, as a header line can carry
/// only text here).
fn text(value: &http::HeaderValue) -> String {
    String::from_utf8_lossy(value.as_bytes()).into_owned()
}

/// What was taken of a body so far: its data, and its trailers once they came.
#[derive(Default)]
struct Taken {
    data: Vec<u8>,
    trailers: Vec<Header>,
}

/// Takes a frame's data (appended) or trailers.
fn take_frame<D: bytes::Buf>(frame: Frame<D>, into: &mut Taken) {
    match frame.into_data() {
        Ok(mut data) => {
            while data.has_remaining() {
                let chunk = data.chunk();
                into.data.extend_from_slice(chunk);
                let n = chunk.len();
                data.advance(n);
            }
        }
        Err(frame) => {
            if let Ok(trailers) = frame.into_trailers() {
                into.trailers.extend(
                    trailers
                        .iter()
                        .map(|(name, value)| Header::new(name.as_str(), text(value))),
                );
            }
        }
    }
}

/// Sends `head` and the body — what was `taken` already, then the rest of `body` (`None`: it
/// ended) as it comes — to `reply`: whole if it ends before anything is sent and has no
/// trailers, else streamed (with its length when the body knows it), its trailers last.
async fn stream_body<B>(
    reply: Reply,
    mut head: Response,
    (mut taken, mut body): (Taken, Option<Pin<Box<B>>>),
    size: SizeHint,
) where
    B: HttpBody + Send,
    B::Data: Send,
{
    // Whole, if it ends before it would have to wait.
    let ready = match &mut body {
        Some(body) => take_ready(body.as_mut(), &mut taken),
        None => Ready::Ended,
    };
    match ready {
        Ready::Ended if taken.trailers.is_empty() => {
            head.body = taken.data.into();
            reply.send(head);
            return;
        }
        Ready::Failed => {
            reply.send(failed());
            return;
        }
        Ready::Ended => body = None,
        Ready::Pending => {}
    }
    // (With trailers already come, not by length: HTTP/1.1 carries them in chunks only.)
    let sender = match (size.exact(), taken.trailers.is_empty()) {
        (Some(length), true) => reply.stream_sized(head, length),
        _ => reply.stream(head),
    };
    let Ok(mut sender) = sender else { return };
    if send(&mut sender, &taken.data).await.is_err() {
        return;
    }
    if let Some(mut body) = body {
        loop {
            taken.data.clear();
            let next = std::future::poll_fn(|cx| {
                body.as_mut()
                    .poll_frame(cx)
                    .map(|frame| frame.map(|f| f.map(|f| take_frame(f, &mut taken)).is_ok()))
            });
            match next.await {
                None => break,
                Some(true) => {}
                Some(false) => return, // the body failed midway: dropped unfinished, it is cut
            }
            if send(&mut sender, &taken.data).await.is_err() {
                return; // not wanted any more
            }
        }
    }
    let _ = sender.finish_with_trailers(taken.trailers);
}

/// What a body had ready.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ready {
    /// All of it: it ended.
    Ended,
    Failed,
    /// Some, or none: the rest comes later.
    Pending,
}

/// Takes what `body` has ready now into `taken`, without waiting.
fn take_ready<B: HttpBody>(mut body: Pin<&mut B>, taken: &mut Taken) -> Ready {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match body.as_mut().poll_frame(&mut cx) {
            Poll::Ready(None) => return Ready::Ended,
            Poll::Ready(Some(Ok(frame))) => take_frame(frame, taken),
            Poll::Ready(Some(Err(_))) => return Ready::Failed,
            Poll::Pending => return Ready::Pending,
        }
    }
}

async fn send(sender: &mut BodySender, bytes: &[u8]) -> std::io::Result<()> {
    match bytes.is_empty() {
        true => Ok(()),
        false => sender.send(bytes).await,
    }
}

/// What a failed service gets: a 500, as a dropped `Reply`.
fn failed() -> Response {
    crate::http::Refusal::ReplyDropped.response()
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.take().map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |data| data.len() as u64))
    }
}
