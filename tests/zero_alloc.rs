//! A keep-alive `GET` answered with a `'static` body costs the server no heap allocation in
//! steady state: the request's buffer comes from the worker's pool and goes back to it, the
//! reply is rendered into a pooled output buffer, and the response borrows its body.
//!
//! A counting global allocator sees every allocation of the process; the test's own client
//! allocates nothing while it measures (a fixed request, a stack buffer for replies). A
//! WebSocket message, which an idle connection holds no buffer for, costs a bounded few, none
//! of them a reallocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};

use web::http::{RateLimit, Request, Response, Router, Server, text_response, wrap};

/// One measurement at a time: the allocation count is the whole process's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Of them, the reallocations (a buffer grown after it was made).
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only an
// atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        REALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const REQUEST: &[u8] =
    b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: zero-alloc\r\nAccept: */*\r\n\r\n";

/// Sends one request and reads its whole reply into `buf` (no allocation).
fn exchange(conn: &mut TcpStream, buf: &mut [u8; 1024]) {
    conn.write_all(REQUEST).unwrap();
    let mut have = 0;
    loop {
        let n = conn.read(&mut buf[have..]).unwrap();
        assert!(n > 0, "the server closed the connection");
        have += n;
        if buf[..have].ends_with(b"\r\n\r\nHello, World!") {
            return;
        }
        assert!(have < buf.len(), "reply too long");
    }
}

/// Allocations the server made for keep-alive GETs over a second or more, after a warm-up;
/// and the requests.
fn steady_state(handler: impl Fn(Request) -> Response + Send + Sync + 'static) -> (u64, u64) {
    steady_state_of(|server| server, handler)
}

/// [`steady_state`] of a server with settings of its own.
fn steady_state_of(
    settings: impl FnOnce(Server) -> Server,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> (u64, u64) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = settings(Server::bind("127.0.0.1:0").unwrap().workers(1))
        .spawn(handler)
        .unwrap();
    let mut conn = connect(&server);
    let mut buf = [0u8; 1024];
    // Warm-up: pools filled, the date cache formatted, lazily made state made.
    for _ in 0..200 {
        exchange(&mut conn, &mut buf);
    }
    let counted = measure(|| exchange(&mut conn, &mut buf));
    drop(conn);
    server.shutdown().unwrap();
    counted
}

/// A connection to `server` that sends at once, and fails the test rather than hang it when
/// a reply never comes.
fn connect(server: &web::http::ServerHandle) -> TcpStream {
    let conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.set_nodelay(true).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    conn
}

/// Allocations during exchanges over a second or more — so the Date header is re-formatted at
/// least once (it is, in place) — and the exchanges.
fn measure(mut exchange: impl FnMut()) -> (u64, u64) {
    let start = std::time::Instant::now();
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let mut requests = 0u64;
    while start.elapsed() < std::time::Duration::from_millis(1200) || requests < 1000 {
        exchange();
        requests += 1;
    }
    (ALLOCATIONS.load(Ordering::SeqCst) - before, requests)
}

#[test]
fn a_keep_alive_get_costs_the_server_no_allocation_in_steady_state() {
    let (allocations, requests) = steady_state(|_req| text_response(200, "Hello, World!"));
    assert_eq!(
        allocations, 0,
        "{allocations} allocations for {requests} requests"
    );
}

#[cfg(feature = "tokio")]
#[test]
fn an_async_answer_ready_at_once_costs_its_boxed_future_and_no_task() {
    // A runtime that nothing drives: a task spawned on it would never answer, so every
    // answer came from the future's first poll, on the worker.
    let idle = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let tasks = idle.handle().clone();
    let (allocations, requests) = steady_state(move |_req| {
        web::http::answer_async(&tasks, async { text_response(200, "Hello, World!") })
    });
    assert!(
        allocations <= requests,
        "{allocations} allocations for {requests} requests: more than the future's box"
    );
}

#[cfg(feature = "tower")]
#[test]
fn a_tower_service_ready_at_once_costs_what_its_http_types_need_and_no_task() {
    // A runtime that nothing drives: every answer came from the first poll, on the worker.
    let idle = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let service = tower::service_fn(|_req: http::Request<web::tower::RequestBody>| async {
        let mut res = http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
            b"Hello, World!",
        )));
        res.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain"),
        );
        Ok::<_, std::convert::Infallible>(res)
    });
    let app = web::tower::handler(idle.handle(), service);
    let (allocations, requests) = steady_state(move |req| app.call(req));
    // The bridge's three: the service's future boxed (it would move to the runtime if it
    // waited), its body boxed (the same), the body's bytes taken into the reply. The
    // service's own two: the response's header map (its indices and its entries). None for
    // the request's head: its header map is the last response's, its bytes share a buffer
    // that comes back.
    assert!(
        allocations <= 5 * requests,
        "{allocations} allocations for {requests} requests: more than five each"
    );
}

#[test]
fn a_request_counted_by_its_callers_address_allocates_nothing_either() {
    let limiter = RateLimit::per_address(1, u32::MAX).layer();
    let app = wrap(vec![limiter], |req: Request| {
        assert!(req.client_addr().is_some());
        text_response(200, "Hello, World!")
    });
    let (allocations, requests) = steady_state(app);
    assert_eq!(
        allocations, 0,
        "{allocations} allocations for {requests} requests"
    );
}

#[test]
fn a_routed_request_allocates_nothing_among_a_hundred_routes() {
    let mut router = Router::new();
    for i in 0..99 {
        router = router.get(&format!("/api/v1/items{i}/:id"), |_req| {
            text_response(500, "")
        });
    }
    let router = router.get("/:greeting", |req: Request| {
        assert_eq!(
            (req.path_param("greeting"), req.route()),
            ("hello", "/:greeting")
        );
        text_response(200, "Hello, World!")
    });
    let (allocations, requests) = steady_state(router.handler());
    assert_eq!(
        allocations, 0,
        "{allocations} allocations for {requests} requests"
    );
}

/// Events the library emits, counted by a subscriber that wants every one at `info` and
/// above (and allocates nothing itself).
#[cfg(feature = "tracing")]
mod listening {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    pub static EVENTS: AtomicU64 = AtomicU64::new(0);

    pub struct Counter;

    impl Subscriber for Counter {
        fn enabled(&self, m: &Metadata<'_>) -> bool {
            *m.level() <= Level::INFO
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {
            EVENTS.fetch_add(1, Ordering::Relaxed);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    pub fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| tracing::subscriber::set_global_default(Counter).unwrap());
    }
}

#[cfg(feature = "tracing")]
#[test]
fn with_an_info_subscriber_and_an_access_log_a_keep_alive_get_allocates_nothing() {
    use std::sync::atomic::AtomicU64;
    listening::install();
    static LOGGED: AtomicU64 = AtomicU64::new(0);
    let events = listening::EVENTS.load(Ordering::Relaxed);
    let (allocations, requests) = steady_state_of(
        |server| {
            server.access_log(|a: &web::http::Access<'_>| {
                assert_eq!((a.status, a.method), (200, "GET"));
                LOGGED.fetch_add(1, Ordering::Relaxed);
            })
        },
        |_req| text_response(200, "Hello, World!"),
    );
    assert_eq!(
        allocations, 0,
        "{allocations} allocations for {requests} requests"
    );
    assert!(
        LOGGED.load(Ordering::Relaxed) >= requests,
        "every exchange logged"
    );
    assert_eq!(
        listening::EVENTS.load(Ordering::Relaxed),
        events,
        "no event for a request served well"
    );
}

/// The frames' head: length, type, flags, stream.
fn frame_head(out: &mut [u8], len: usize, kind: u8, flags: u8, stream: u32) {
    out[..3].copy_from_slice(&(len as u32).to_be_bytes()[1..]);
    out[3] = kind;
    out[4] = flags;
    out[5..9].copy_from_slice(&stream.to_be_bytes());
}

/// Reads frames into `buf` until the one on `stream` that ends it; answers the server's
/// SETTINGS with an ACK (no allocation: fixed frames, a stack buffer).
fn h2_until_end(conn: &mut TcpStream, buf: &mut [u8; 4096], stream: u32) {
    let mut have = 0;
    loop {
        while have >= 9 {
            let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
            if have < 9 + len {
                break;
            }
            let (kind, flags) = (buf[3], buf[4]);
            let on = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]);
            buf.copy_within(9 + len..have, 0);
            have -= 9 + len;
            if kind == 0x4 && flags & 1 == 0 {
                conn.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0]).unwrap(); // SETTINGS ACK
            }
            if on == stream && flags & 1 == 1 && (kind == 0x0 || kind == 0x1) {
                return;
            }
        }
        let n = conn.read(&mut buf[have..]).unwrap();
        assert!(n > 0, "the server closed the connection");
        have += n;
    }
}

#[test]
fn a_request_on_a_kept_http2_connection_costs_the_server_no_allocation_in_steady_state() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(|_req| text_response(200, "Hello, World!"))
        .unwrap();
    let mut conn = connect(&server);
    // The preface, empty SETTINGS, and the connection's window opened to its most (each reply
    // takes 13 bytes of it, and this client sends no other WINDOW_UPDATE).
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    conn.write_all(b"\0\0\x04\x08\0\0\0\0\0\x7f\xff\0\0")
        .unwrap();
    // GET / over http, `:authority: 127.0.0.1` as a literal never added to a table (HPACK:
    // 0x82 :method GET, 0x86 :scheme http, 0x84 :path /, 0x01 name :authority, 9 bytes).
    const BLOCK: &[u8] = b"\x82\x86\x84\x01\x09127.0.0.1";
    let mut request = [0u8; 9 + BLOCK.len()];
    request[9..].copy_from_slice(BLOCK);
    let mut buf = [0u8; 4096];
    let mut stream = 1u32;
    let mut exchange = |conn: &mut TcpStream, buf: &mut [u8; 4096]| {
        frame_head(&mut request, BLOCK.len(), 0x1, 0x5, stream); // END_STREAM | END_HEADERS
        conn.write_all(&request).unwrap();
        h2_until_end(conn, buf, stream);
        stream += 2;
    };
    for _ in 0..200 {
        exchange(&mut conn, &mut buf);
    }
    let (allocations, requests) = measure(|| exchange(&mut conn, &mut buf));
    drop(conn);
    server.shutdown().unwrap();
    assert_eq!(
        allocations, 0,
        "{allocations} allocations for {requests} HTTP/2 requests"
    );
}

/// A WebSocket peer that echoes each message with `send_owned`.
struct Echo;

impl web::ws::WsHandler for Echo {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn message(&self, ws: &mut web::ws::Ws<'_>, _state: &mut (), msg: web::ws::Message) {
        ws.send_owned(msg);
    }
}

#[test]
fn a_websocket_echo_costs_its_busy_part_message_and_frame_and_no_reallocation() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .websocket("/", Echo)
        .spawn(|_req| text_response(404, ""))
        .unwrap();
    let mut conn = connect(&server);
    conn.write_all(
        b"GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let mut buf = [0u8; 1024];
    let mut have = 0;
    while !buf[..have].ends_with(b"\r\n\r\n") {
        let n = conn.read(&mut buf[have..]).unwrap();
        assert!(n > 0, "the server closed the connection");
        have += n;
    }
    assert!(buf.starts_with(b"HTTP/1.1 101 "));
    // A masked 32-byte text message (the key is zero: the payload goes as it is).
    let mut frame = [b'x'; 2 + 4 + 32];
    frame[..6].copy_from_slice(&[0x81, 0x80 | 32, 0, 0, 0, 0]);
    let echo = |conn: &mut TcpStream, buf: &mut [u8; 1024]| {
        conn.write_all(&frame).unwrap();
        let mut have = 0;
        while have < 2 + 32 {
            let n = conn.read(&mut buf[have..]).unwrap();
            assert!(n > 0, "the server closed the connection");
            have += n;
        }
        assert_eq!(&buf[..2], &[0x81, 32]);
    };
    for _ in 0..200 {
        echo(&mut conn, &mut buf);
    }
    let reallocations = REALLOCATIONS.load(Ordering::SeqCst);
    let (allocations, messages) = measure(|| echo(&mut conn, &mut buf));
    let reallocations = REALLOCATIONS.load(Ordering::SeqCst) - reallocations;
    drop(conn);
    server.shutdown().unwrap();
    // An idle WebSocket holds no buffer: each message makes its busy part, the message and
    // the frame of its echo, each at its size.
    assert_eq!(reallocations, 0, "{reallocations} for {messages} messages");
    assert!(
        allocations <= 3 * messages,
        "{allocations} allocations for {messages} messages"
    );
}
