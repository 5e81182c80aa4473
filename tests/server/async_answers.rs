//! Async code beside tokio (feature `tokio`): a handler answers from a task of the
//! application's runtime without holding its worker; a task that panics, or a runtime that
//! goes away, answers 500; a streamed body fed from async code waits for a slow reader
//! without holding a thread, as a tokio writer and through `send().await`.

use crate::wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use web::http::{STREAM_WINDOW, Server, ServerHandle, answer_async, defer, text_response};
use wire::{Client, wait_until};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

const TOTAL: u64 = 64 << 20;

/// One worker: `/wait` answers after 300 ms of async sleep, `/held` once `gate` gives it a
/// permit, `/panic` panics in its task,
/// `/copy` streams TOTAL bytes through `tokio::io::copy`, `/send` the same through `send`, all
/// on `tasks`; `sent` counts what the producers sent.
fn start(tasks: tokio::runtime::Handle, sent: Arc<AtomicU64>) -> ServerHandle {
    start_gated(tasks, sent, Arc::new(tokio::sync::Semaphore::new(0)))
}

fn start_gated(
    tasks: tokio::runtime::Handle,
    sent: Arc<AtomicU64>,
    gate: Arc<tokio::sync::Semaphore>,
) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(move |req| match req.path() {
            "/wait" => answer_async(&tasks, async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                text_response(200, "waited")
            }),
            "/held" => {
                let gate = Arc::clone(&gate);
                answer_async(&tasks, async move {
                    let _permit = gate.acquire().await;
                    text_response(200, "released")
                })
            }
            "/panic" => answer_async(&tasks, async {
                tokio::task::yield_now().await;
                panic!("the task's own bug")
            }),
            "/copy" | "/send" => {
                let (reply, later) = defer();
                let by_copy = req.path() == "/copy";
                let sent = Arc::clone(&sent);
                tasks.spawn(async move {
                    let mut body = reply.stream_sized(text_response(200, ""), TOTAL).unwrap();
                    let piece: Vec<u8> = (0..=255u8).cycle().take(32 * 1024).collect();
                    while sent.load(Ordering::Relaxed) < TOTAL {
                        if by_copy {
                            body.write_all(&piece).await.unwrap();
                        } else {
                            body.send(&piece).await.unwrap();
                        }
                        sent.fetch_add(piece.len() as u64, Ordering::Relaxed);
                    }
                    if by_copy {
                        body.shutdown().await.unwrap();
                    } else {
                        body.finish().unwrap();
                    }
                });
                later
            }
            _ => text_response(200, "now"),
        })
        .unwrap()
}

#[test]
fn an_async_answer_leaves_the_worker_free_for_other_connections_meanwhile() {
    // The answer waits for the test's word: were the worker held meanwhile, the quick
    // requests could never be answered (no clock involved).
    let rt = runtime();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let server = start_gated(rt.handle().clone(), Arc::default(), Arc::clone(&gate));
    let mut waiting = Client::connect(server.local_addr());
    waiting.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n");
    wait_until(Duration::from_secs(5), "the request waits", || {
        server.stats().replies_waiting == 1
    });
    let mut quick = Client::connect(server.local_addr());
    for _ in 0..10 {
        assert_eq!(quick.get("/").text(), "now");
    }
    assert_eq!(server.stats().replies_waiting, 1, "still waiting");
    gate.add_permits(1);
    let r = waiting.reply();
    assert_eq!((r.status, r.text().as_str()), (200, "released"));
    r.assert_keeps_alive();
    assert_eq!(server.stats().stalls, 0);
    server.shutdown().unwrap();
}

#[test]
fn a_task_that_panics_or_a_runtime_that_goes_away_answers_500() {
    let rt = runtime();
    let server = start(rt.handle().clone(), Arc::default());
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/panic").status, 500);
    // The connection goes on, and so does the runtime.
    assert_eq!(c.get("/wait").text(), "waited");
    c.send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(50));
    drop(rt); // the task is dropped unfinished
    assert_eq!(c.reply().status, 500);
    server.shutdown().unwrap();
}

/// The client reads nothing for a while: the async producer stops far short of the body, the
/// server holds about a window; then every byte arrives in order.
fn slow_reader_holds_back(path: &str) {
    let rt = runtime();
    let sent = Arc::new(AtomicU64::new(0));
    let server = start(rt.handle().clone(), Arc::clone(&sent));
    let mut client = Client::connect(server.local_addr());
    client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
    let mut last = u64::MAX;
    wait_until(Duration::from_secs(10), "the producer stalls", || {
        std::thread::sleep(Duration::from_millis(200));
        let now = sent.load(Ordering::Relaxed);
        let stalled = now == last && now > 0;
        last = now;
        stalled
    });
    assert!(last < TOTAL / 2, "the producer ran ahead: {last} bytes");
    let held = server.stats().held_bytes;
    assert!(held < 4 * STREAM_WINDOW, "the server holds {held} bytes");
    let head = client.head_reply();
    assert_eq!(
        head.header("content-length"),
        Some(TOTAL.to_string().as_str())
    );
    client.cycled_body(TOTAL, 32 * 1024);
    assert_eq!(client.get("/after").text(), "now");
    server.shutdown().unwrap();
}

#[test]
fn a_body_copied_by_a_tokio_writer_waits_for_a_slow_reader_then_gets_every_byte() {
    slow_reader_holds_back("/copy");
}

#[test]
fn a_body_sent_with_send_await_waits_for_a_slow_reader_then_gets_every_byte() {
    slow_reader_holds_back("/send");
}

/// What tasks hold: the handles a task of any runtime may keep and use across `.await`s.
#[test]
fn the_handles_tasks_use_are_send_and_sync() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<web::ws::Rooms>();
    shared::<web::ws::WsSender>();
    shared::<web::sse::SseSender>();
    shared::<web::http::Reply>();
    shared::<web::http::Control>();
    fn owned<T: Send + 'static>() {}
    owned::<web::http::BodySender>();
}

/// The futures of clients that left are dropped where they wait, not run on: 200 HTTP/1.1
/// requests whose answers never come, their connections closed.
#[test]
fn a_future_whose_client_left_is_dropped_with_its_task() {
    let rt = runtime();
    let tasks = rt.handle().clone();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(move |_req| answer_async(&tasks, std::future::pending()))
        .unwrap();
    let clients: Vec<Client> = (0..200)
        .map(|_| {
            let mut c = Client::connect(server.local_addr());
            c.send("GET /never HTTP/1.1\r\nHost: t\r\n\r\n");
            c
        })
        .collect();
    wait_until(Duration::from_secs(10), "200 tasks", || {
        rt.metrics().num_alive_tasks() == 200
    });
    drop(clients);
    wait_until(Duration::from_secs(10), "no task left", || {
        rt.metrics().num_alive_tasks() == 0
    });
    assert_eq!(server.stats().replies_waiting, 0);
    server.shutdown().unwrap();
}
