//! [`Pool`]: a bounded set of threads for blocking work (a database call, the blocking
//! client), so a slow handler never stalls the reactor's workers; its answers go back through
//! deferred replies ([`defer`](super::defer)).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::http::{Response, text_response, with_header};

use std::io::Read;

use super::deferred::{Reply, defer};

type Job = Box<dyn FnOnce() + Send>;

/// Threads for blocking work, with a bounded queue. A handler hands the slow part of a request
/// to [`Pool::answer`]: the request's reply is deferred, the work runs on one of the pool's
/// threads, and the worker that read the request goes on serving its other connections. When
/// `queue` jobs already wait, `answer` answers `503` (with `Retry-After: 1`) at once instead.
///
/// Cheap to clone (one `Arc`); the threads end once every clone is dropped and the queue is
/// empty. A job that panics answers `500`; a job whose client has left before it started is
/// skipped.
///
/// ```
/// use std::time::Duration;
/// use web::http::{text_response, Pool, Server};
/// let pool = Pool::new(4, 64)?;
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(move |req| match req.path() {
///     "/report" => pool.answer(|| {
///         std::thread::sleep(Duration::from_millis(50)); // a slow query
///         text_response(200, "report\n")
///     }),
///     _ => text_response(200, "fast\n"), // never waits behind /report
/// })?;
/// let reply = web::http::get("127.0.0.1", handle.local_addr().port(), "/report")?;
/// assert_eq!(web::http::response_body(&reply).unwrap(), b"report\n");
/// # handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Pool {
    owner: Arc<Owner>,
}

/// Dropped with the last clone of the pool: the threads are told to end.
struct Owner {
    shared: Arc<PoolShared>,
}

struct PoolShared {
    queue: Mutex<Queue>,
    ready: Condvar,
    limit: usize,
    refused: AtomicU64,
}

struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("queued", &self.queued())
            .field("limit", &self.owner.shared.limit)
            .finish()
    }
}

impl PoolShared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Jobs run outside the lock: a panic cannot leave the queue half-changed.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pool thread: runs jobs until the pool is dropped and the queue is empty.
    fn serve(&self) {
        loop {
            let job = {
                let mut queue = self.queue();
                loop {
                    if let Some(job) = queue.jobs.pop_front() {
                        break job;
                    }
                    if queue.closed {
                        return;
                    }
                    queue = self.ready.wait(queue).unwrap_or_else(|e| e.into_inner());
                }
            };
            // A panic drops the job's `Reply`, which answers 500.
            let _ = catch_unwind(AssertUnwindSafe(job));
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.queue().closed = true;
        self.shared.ready.notify_all();
    }
}

impl Pool {
    /// Starts `threads` threads (at least one) with room for `queue` waiting jobs; fails when
    /// a thread cannot be started.
    ///
    /// ```
    /// let pool = web::http::Pool::new(8, 1024)?;
    /// assert_eq!(pool.queued(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(threads: usize, queue: usize) -> std::io::Result<Pool> {
        let shared = Arc::new(PoolShared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            limit: queue,
            refused: AtomicU64::new(0),
        });
        let pool = Pool {
            owner: Arc::new(Owner {
                shared: Arc::clone(&shared),
            }),
        };
        for n in 0..threads.max(1) {
            let shared = Arc::clone(&shared);
            // On failure `pool` drops, and the threads already started end.
            std::thread::Builder::new()
                .name(format!("web-pool-{n}"))
                .spawn(move || {
                    reactor::share_one_arena();
                    shared.serve()
                })?;
        }
        Ok(pool)
    }

    /// Answers the request being handled with what `work` returns, run on one of the pool's
    /// threads: returns the placeholder of a deferred reply ([`defer`](super::defer)), which
    /// the handler returns. When the queue is full, returns `503 Service Unavailable` with
    /// `Retry-After: 1` instead (counted in [`Pool::refused`]) and `work` is dropped unrun.
    ///
    /// ```
    /// fn handler(pool: &web::http::Pool, req: web::http::Request) -> web::http::Response {
    ///     let path = req.path().to_owned();
    ///     pool.answer(move || web::http::text_response(200, format!("looked up {path}\n")))
    /// }
    /// ```
    pub fn answer(&self, work: impl FnOnce() -> Response + Send + 'static) -> Response {
        self.run(move |reply| {
            reply.send(work());
        })
    }

    /// Answers the request being handled with `head` and a body read from `body` on one of the
    /// pool's threads, streamed as it is read ([`Reply::stream`](super::Reply::stream);
    /// `Content-Length` when `length` is given, else chunked). The reading waits while the
    /// client is behind by [`STREAM_WINDOW`](crate::http::STREAM_WINDOW), and stops when the client
    /// goes away; a read error cuts the body (the client sees it incomplete). Returns the
    /// placeholder the handler returns, or `503` as [`Pool::answer`] does when the queue is full.
    ///
    /// ```
    /// fn download(pool: &web::http::Pool, path: &str) -> web::http::Response {
    ///     match std::fs::File::open(path) {
    ///         Ok(file) => {
    ///             let length = file.metadata().ok().map(|m| m.len());
    ///             let head = web::http::text_response(200, "");
    ///             pool.stream(head, length, file)
    ///         }
    ///         Err(_) => web::http::text_response(404, "no such file\n"),
    ///     }
    /// }
    /// ```
    pub fn stream(
        &self,
        head: Response,
        length: Option<u64>,
        mut body: impl Read + Send + 'static,
    ) -> Response {
        self.run(move |reply| {
            let sender = match length {
                Some(length) => reply.stream_sized(head, length),
                None => reply.stream(head),
            };
            let Ok(mut sender) = sender else {
                return; // the client has gone
            };
            // A read error, or a client gone, drops the sender before its end: the body is cut.
            if std::io::copy(&mut body, &mut sender).is_ok() {
                let _ = sender.finish();
            }
        })
    }

    /// Queues `work` with the request's deferred reply; `503` when the queue is full.
    fn run(&self, work: impl FnOnce(Reply) + Send + 'static) -> Response {
        let shared = &self.owner.shared;
        let mut queue = shared.queue();
        if queue.jobs.len() >= shared.limit {
            drop(queue);
            shared.refused.fetch_add(1, Ordering::Relaxed);
            return with_header(
                text_response(503, "too busy, try again\n"),
                "Retry-After",
                "1",
            );
        }
        let (reply, later) = defer();
        queue.jobs.push_back(Box::new(move || {
            if reply.is_open() {
                work(reply);
            }
        }));
        drop(queue);
        shared.ready.notify_one();
        later
    }

    /// Jobs waiting for a thread now.
    ///
    /// ```
    /// assert_eq!(web::http::Pool::new(1, 8)?.queued(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn queued(&self) -> usize {
        self.owner.shared.queue().jobs.len()
    }

    /// Requests answered `503` because the queue was full, since the pool started.
    ///
    /// ```
    /// assert_eq!(web::http::Pool::new(1, 8)?.refused(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn refused(&self) -> u64 {
        self.owner.shared.refused.load(Ordering::Relaxed)
    }
}
