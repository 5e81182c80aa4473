//! Answering from async code on the application's own tokio runtime (feature `tokio`): the
//! request waits parked, as a deferred reply does, while a task of the runtime makes its
//! answer. The library starts no runtime and no task of its own; an idle connection has none.

use std::future::Future;

use crate::http::Response;

use super::deferred::defer;

/// Answers the request from `answer`, a future run as a task of `runtime` (the application's):
/// call it from a handler and return what it returns. The worker goes on with its other
/// connections at once; the request's connection waits parked, holding no thread, until the
/// future's response comes — exactly a [`defer`]red reply, so
/// [`Server::reply_timeout`](crate::http::Server::reply_timeout) bounds it (503) and a
/// future that panics, or is dropped with its runtime, answers `500` as a dropped
/// [`Reply`](crate::http::Reply) does. For a streamed body, `defer` and stream from the task
/// ([`BodySender`](crate::http::BodySender) is a tokio writer).
///
/// What it costs per request: one task spawned and one `Reply` (its connection's entry in the
/// table of replies awaited) — and nothing per idle connection. The task ends with the
/// reply's wait: when the server answers it at the reply timeout, when its client goes away
/// and when the server stops, the future is dropped where it waits (its `Drop`s run), so
/// work no one waits for does not go on.
///
/// The database pool, HTTP client or cache of the application is used as it is:
///
/// ```
/// use web::http::{answer_async, text_response, Server};
/// # async fn user_name(_id: &str) -> String { "ada".into() } // sqlx, reqwest, ...
/// let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
/// let tasks = runtime.handle().clone();
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(move |req| {
///     let id = req.path().trim_start_matches('/').to_owned();
///     answer_async(&tasks, async move { text_response(200, user_name(&id).await) })
/// })?;
/// let raw = web::http::get("127.0.0.1", handle.local_addr().port(), "/7")?;
/// assert_eq!(web::http::response_body(&raw).unwrap(), b"ada");
/// # handle.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The server's handles are `Send + Sync` and work from tasks as from threads: a task keeps
/// [`Rooms`](crate::ws::Rooms) (or a connection's `WsSender`, `SseSender`) and publishes
/// across its `.await`s:
///
/// ```
/// use std::time::Duration;
/// use web::ws::Message;
/// let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
/// let server = web::http::Server::bind("127.0.0.1:0")?;
/// let rooms = server.rooms();
/// let ticking = runtime.spawn(async move {
///     let mut every = tokio::time::interval(Duration::from_millis(10));
///     for n in 0..3 {
///         every.tick().await;
///         rooms.publish("ticks", &Message::Text(format!("tick {n}")));
///     }
/// });
/// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
/// runtime.block_on(ticking)?;
/// # handle.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn answer_async<F>(runtime: &tokio::runtime::Handle, answer: F) -> Response
where
    F: Future<Output = Response> + Send + 'static,
{
    let (reply, later) = defer();
    let unwanted = reply.unwanted();
    // The task owns the reply: whether the future answers, panics or is dropped, the
    // connection hears of it.
    let task = runtime.spawn(async move {
        reply.send(answer.await);
    });
    // A reply no longer wanted — answered by the server at its timeout, its client gone, the
    // server stopped — ends its task: the future is dropped where it waits.
    if let Some(unwanted) = unwanted {
        let task = task.abort_handle();
        unwanted.then(Box::new(move || task.abort()));
    }
    later
}
