//! Answering from async code on the application's own tokio runtime (feature `tokio`): the
//! future is polled first on the worker that read the request, and answers in the same turn
//! if it is ready; one that is pending moves to the runtime as a task, and the request waits
//! parked, as a deferred reply does, until it answers. The library starts no runtime and no
//! task of its own; an idle connection has none.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::http::Response;

use super::deferred::{Reply, defer};

/// Answers the request from `answer`, a future polled first here, on the worker, with `runtime`
/// (the application's) entered: call it from a handler and return what it returns. A future
/// that is ready at once — a cache hit, a router answering from memory — is the answer, in
/// this turn, with no task and no thread crossing. One that is pending moves to `runtime` as
/// a task: the worker goes on with its other connections at once, and the request's
/// connection waits parked, holding no thread, until the future's response comes — exactly
/// a [`defer`]red reply, so
/// [`Server::reply_timeout`](crate::http::Server::reply_timeout) bounds it (503) and a
/// future that panics, or is dropped with its runtime, answers `500` as a dropped
/// [`Reply`](crate::http::Reply) does. For a streamed body, `defer` and stream from the task
/// ([`BodySender`](crate::http::BodySender) is a tokio writer).
///
/// The future's first poll runs on the worker, as a handler does: what it does before its
/// first `.await` must not block (a stall is counted and reported as a handler's is). Futures
/// that use tokio's I/O and timers work there: they register with the runtime's drivers,
/// which the runtime's threads run — `runtime` must be running.
///
/// What it costs per request: the future boxed, and, only if it is pending, one task spawned
/// and one `Reply` (its connection's entry in the table of replies awaited) — nothing per
/// idle connection. The task ends with the reply's wait: when the server answers it at the
/// reply timeout, when its client goes away and when the server stops, the future is dropped
/// where it waits (its `Drop`s run), so work no one waits for does not go on.
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
    match poll_first(runtime, answer) {
        Ok(res) => res,
        // The task owns the reply: whether the future answers, panics or is dropped, the
        // connection hears of it.
        Err(answer) => spawn_reply(runtime, |reply| async move {
            reply.send(answer.await);
        }),
    }
}

/// Polls `future` once, here, with `runtime` entered: its output if it is ready, else the
/// future to go on with elsewhere (its next poll, where it goes, registers that waker).
pub(crate) fn poll_first<F: Future>(
    runtime: &tokio::runtime::Handle,
    future: F,
) -> Result<F::Output, Pin<Box<F>>> {
    let mut future = Box::pin(future);
    let _entered = runtime.enter();
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(future),
    }
}

/// A deferred reply made by `work` as a task of `runtime`: the `Response` to return from the
/// handler. A reply no longer wanted — answered by the server at its timeout, its client gone,
/// the server stopped — ends the task: its future is dropped where it waits.
pub(crate) fn spawn_reply<F>(
    runtime: &tokio::runtime::Handle,
    work: impl FnOnce(Reply) -> F,
) -> Response
where
    F: Future<Output = ()> + Send + 'static,
{
    let (reply, later) = defer();
    let unwanted = reply.unwanted();
    let task = runtime.spawn(work(reply));
    if let Some(unwanted) = unwanted {
        let task = task.abort_handle();
        unwanted.then(Box::new(move || task.abort()));
    }
    later
}
