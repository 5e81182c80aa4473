//! What a fleet costs (`--features redis`): instances of a server sharing rooms and rate limits
//! through Redis, on 127.0.0.1.
//!
//! ```sh
//! cargo bench --features redis --bench fleet
//! ```
//!
//! Starts its own redis-server on a free port of 127.0.0.1 (stopped by its PID at the end; it
//! must be installed: `apt-get install -y redis-server`) and prints:
//!
//! 1. **throughput**: messages per second delivered to a room's members when a publisher sends
//!    a burst, with all members on one instance (no fleet, then in a fleet) and with the members
//!    split over two instances (half of every message crossing Redis);
//! 2. **latency**: how long a message takes from `publish` to a member on the same instance and
//!    to a member on another instance (p50/p99), and the difference — the Redis hop;
//! 3. **rate limits**: what one counted request costs with the local count and with the count
//!    in Redis (p50/p99 for one caller at a time, and requests per second and per count sent
//!    with four threads at once);
//! 4. **a slow Redis**: `GET /` over keep-alive connections to a server whose rate limit counts
//!    every request in a Redis that answers 40 ms late (a fake one,
//!    `tests/wire/fake_redis.rs`), against the same server without a fleet: p50/p99 and their
//!    ratio, taken in one run, several rounds (a worker never waits for Redis).
//!
//! The instances run in this process, each with its own reactor, workers and Redis
//! connections; the two cores of the machine are shared by everything, Redis included. Every
//! phase is bounded in count and time.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use web::fleet::{Fleet, LimitAcrossFleet};

#[path = "../tests/wire/fake_redis.rs"]
#[allow(dead_code)]
mod fake_redis;
use web::http::{Header, RateLimit, Request, Response, Server, ServerHandle, text_response, wrap};
use web::ws::{Message, Rooms, Ws, WsHandler, ws_handshake_request, ws_take};

/// Members of the room in the throughput phase.
const MEMBERS: usize = 20;
/// Messages in the throughput burst.
const BURST: usize = 20_000;
/// Samples in the latency phase (one message every millisecond).
const SAMPLES: usize = 2_000;
/// Counted requests per rate-limit measurement.
const REQUESTS: usize = 20_000;
/// The longest any phase may take.
const PHASE_LIMIT: Duration = Duration::from_secs(60);

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // compiled and listed by `cargo test --benches`; figures come from `cargo bench`.
    }
    let redis = Redis::start();
    println!(
        "fleet: redis-server {} on 127.0.0.1:{}",
        redis.version(),
        redis.port
    );
    throughput(&redis);
    latency(&redis);
    rate_limits(&redis);
    slow_redis();
}

/// GET / latency with the rate limit counting in a Redis 40 ms late, against no fleet.
fn slow_redis() {
    println!(
        "\n4. a slow Redis: GET / p50/p99 over 8 keep-alive connections, 2 workers, Redis answering 40 ms late vs no fleet"
    );
    let (url, stop) = fake_redis::fake_redis(fake_redis::Fake::Slow(Duration::from_millis(40)));
    let fleet = Fleet::new(&url).unwrap();
    let limited = |fleet: Option<&Fleet>| {
        let mut limit = RateLimit::new(1_000_000_000, 1_000_000_000, 1);
        if let Some(f) = fleet {
            limit = limit.fleet(f);
        }
        Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(2)
            .spawn(wrap(vec![limit.layer()], |_req| text_response(200, "ok")))
            .unwrap()
    };
    let (plain, slow) = (limited(None), limited(Some(&fleet)));
    for round in 1..=3 {
        let a = get_latencies(plain.local_addr().port());
        let b = get_latencies(slow.local_addr().port());
        let (a50, a99, b50, b99) = (
            percentile(&a, 50.0) / 1e3,
            percentile(&a, 99.0) / 1e3,
            percentile(&b, 50.0) / 1e3,
            percentile(&b, 99.0) / 1e3,
        );
        println!(
            "  round {round}: no fleet p50 {a50:.1} µs p99 {a99:.1} µs; Redis 40 ms late p50 {b50:.1} µs p99 {b99:.1} µs; p99 ratio {:.2}",
            b99 / a99
        );
    }
    let s = fleet.stats();
    println!(
        "  (the slow Redis: {} counts' answers past the 50 ms timeout or other errors, {} decisions on the local count)",
        s.errors, s.local_decisions
    );
    plain.shutdown().unwrap();
    slow.shutdown().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Release);
}

/// 8 clients each sending 500 keep-alive `GET /` one after another: every request's time.
fn get_latencies(port: u16) -> Vec<u64> {
    let threads: Vec<_> = (0..8)
        .map(|client| {
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_nodelay(true).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let req = format!(
                    "GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 10.2.0.{client}\r\n\r\n"
                );
                let mut buf = [0u8; 1024];
                let mut took = Vec::with_capacity(500);
                for _ in 0..500 {
                    let t = Instant::now();
                    c.write_all(req.as_bytes()).unwrap();
                    let mut got = 0;
                    while !buf[..got].ends_with(b"ok") {
                        got += std::io::Read::read(&mut c, &mut buf[got..]).unwrap();
                    }
                    took.push(t.elapsed().as_nanos() as u64);
                }
                took
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect()
}

// --- 1. throughput --------------------------------------------------------------------------

fn throughput(redis: &Redis) {
    println!(
        "\n1. throughput: {BURST} messages of 100 bytes published as fast as possible to a room of {MEMBERS} members"
    );
    let one = Instance::start(None);
    report("one instance, no fleet", burst(&[&one], None));
    drop(one);
    let fleet = redis.fleet("bench-one").queue(BURST + 1);
    let one = Instance::start(Some(&fleet));
    report("one instance in a fleet", burst(&[&one], Some(&fleet)));
    drop(one);
    let (fa, fb) = (
        redis.fleet("bench-two").queue(BURST + 1),
        redis.fleet("bench-two"),
    );
    let (a, b) = (Instance::start(Some(&fa)), Instance::start(Some(&fb)));
    report("two instances, members split", burst(&[&a, &b], Some(&fa)));
}

/// Joins the members (spread over `instances`), publishes the burst on the first instance,
/// and waits for every member to see the last message: (deliveries, seconds, dropped).
fn burst(instances: &[&Instance], fleet: Option<&Fleet>) -> (usize, f64, u64) {
    let (done, finished) = mpsc::channel();
    let members: Vec<_> = (0..MEMBERS)
        .map(|i| {
            let port = instances[i % instances.len()].port();
            let mut conn = join(port, "burst");
            let done = done.clone();
            std::thread::spawn(move || {
                let mut got = 0usize;
                let mut acc = Vec::new();
                while let Ok((payload, rest)) = ws_take(&mut conn, acc) {
                    acc = rest;
                    if payload.is_empty() || payload == b"end" {
                        break;
                    }
                    got += 1;
                }
                let _ = done.send((got, Instant::now()));
            })
        })
        .collect();
    drop(done);
    wait_subscribed(instances, fleet, MEMBERS);
    let rooms = instances[0].rooms.clone();
    let body = "x".repeat(100);
    let started = Instant::now();
    for _ in 0..BURST {
        rooms.publish("burst", &Message::Text(body.clone()));
    }
    rooms.publish("burst", &Message::Text("end".into()));
    let mut delivered = 0;
    let mut last = started;
    for _ in 0..MEMBERS {
        match finished.recv_timeout(PHASE_LIMIT) {
            Ok((got, at)) => {
                delivered += got;
                last = last.max(at);
            }
            Err(_) => break,
        }
    }
    for m in members {
        let _ = m.join();
    }
    let dropped = fleet.map_or(0, |f| f.stats().dropped);
    (delivered, (last - started).as_secs_f64(), dropped)
}

fn report(what: &str, (delivered, secs, dropped): (usize, f64, u64)) {
    println!(
        "  {what:<32} {:>10.0} deliveries/s   ({delivered} of {} in {:.3} s, {dropped} dropped for other instances)",
        delivered as f64 / secs,
        BURST * MEMBERS,
        secs
    );
}

// --- 2. latency ---------------------------------------------------------------------------------

fn latency(redis: &Redis) {
    println!(
        "\n2. latency: {SAMPLES} messages, one a millisecond, from publish (or post) to a member's socket"
    );
    latency_of(
        redis,
        "publish (each instance delivers its own at once)",
        |rooms, text| {
            rooms.publish("lat", &Message::Text(text));
        },
    );
    latency_of(
        redis,
        "post (one order per room: every instance delivers from Redis)",
        |rooms, text| {
            rooms.post("lat", move |_id| text);
        },
    );
}

/// One latency figure: `send` (a publish or a post of `text`) on instance A, a member on A and
/// one on B.
fn latency_of(redis: &Redis, what: &str, send: impl Fn(&Rooms, String)) {
    println!("  {what}:");
    let (fa, fb) = (redis.fleet("bench-lat"), redis.fleet("bench-lat"));
    let (a, b) = (Instance::start(Some(&fa)), Instance::start(Some(&fb)));
    let base = Instant::now();
    let listen = |port: u16| {
        let mut conn = join(port, "lat");
        std::thread::spawn(move || {
            let mut samples = Vec::with_capacity(SAMPLES);
            let mut acc = Vec::new();
            while let Ok((payload, rest)) = ws_take(&mut conn, acc) {
                acc = rest;
                let Some(sent) = std::str::from_utf8(&payload)
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok())
                else {
                    break; // "end", or the connection ended
                };
                samples.push(base.elapsed().as_nanos() as u64 - sent);
            }
            samples
        })
    };
    let (local, remote) = (listen(a.port()), listen(b.port()));
    wait_subscribed(&[&a, &b], Some(&fa), 2);
    for _ in 0..SAMPLES {
        let now = base.elapsed().as_nanos() as u64;
        send(&a.rooms, now.to_string());
        std::thread::sleep(Duration::from_millis(1));
    }
    send(&a.rooms, "end".into());
    let (local, remote) = (
        local.join().unwrap_or_default(),
        remote.join().unwrap_or_default(),
    );
    let (l50, l99) = (percentile(&local, 50.0), percentile(&local, 99.0));
    let (r50, r99) = (percentile(&remote, 50.0), percentile(&remote, 99.0));
    println!(
        "    same instance                  p50 {:>8.1} µs   p99 {:>8.1} µs   ({} samples)",
        l50 / 1e3,
        l99 / 1e3,
        local.len()
    );
    println!(
        "    other instance, through Redis  p50 {:>8.1} µs   p99 {:>8.1} µs   ({} samples)",
        r50 / 1e3,
        r99 / 1e3,
        remote.len()
    );
}

// --- 3. rate limits -----------------------------------------------------------------------------

fn rate_limits(redis: &Redis) {
    println!(
        "\n3. rate limits: one counted POST through RateLimit::new(10^9, 10^9, 1), called in this process"
    );
    let local: App = Arc::new(wrap(
        vec![RateLimit::new(1_000_000_000, 1_000_000_000, 1).layer()],
        |_req| text_response(201, ""),
    ));
    let fleet = redis.fleet("bench-rate");
    let shared: App = Arc::new(wrap(
        vec![
            RateLimit::new(1_000_000_000, 1_000_000_000, 1)
                .fleet(&fleet)
                .layer(),
        ],
        |_req| text_response(201, ""),
    ));
    let ready = Instant::now();
    while fleet.stats().connections == 0 && ready.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    for (what, app) in [("local count", &local), ("count in Redis", &shared)] {
        let mut took: Vec<u64> = Vec::with_capacity(REQUESTS);
        for i in 0..REQUESTS {
            let req = post(i % 100);
            let t = Instant::now();
            let res = app(req);
            took.push(t.elapsed().as_nanos() as u64);
            assert_eq!(res.status, 201);
        }
        println!(
            "  {what:<16} one at a time  p50 {:>7.1} µs   p99 {:>7.1} µs",
            percentile(&took, 50.0) / 1e3,
            percentile(&took, 99.0) / 1e3
        );
    }
    for (what, app) in [("local count", &local), ("count in Redis", &shared)] {
        let counts = redis.incrbys();
        let started = Instant::now();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let app = Arc::clone(app);
                std::thread::spawn(move || {
                    for i in 0..REQUESTS / 4 {
                        let _ = app(post(t * 1000 + i % 100));
                    }
                })
            })
            .collect();
        for t in threads {
            let _ = t.join();
        }
        let secs = started.elapsed().as_secs_f64();
        let counts = redis.incrbys() - counts;
        println!(
            "  {what:<16} four threads   {:>9.0} requests/s   {}",
            REQUESTS as f64 / secs,
            if counts == 0 {
                "nothing sent to Redis".to_owned()
            } else {
                format!(
                    "{counts} INCRBYs: {:.2} requests per count sent (a caller's batched)",
                    REQUESTS as f64 / counts as f64
                )
            }
        );
    }
    let s = fleet.stats();
    println!(
        "  (count in Redis: {} errors, {} decisions on the local count)",
        s.errors, s.local_decisions
    );
}

/// A handler behind its rate limiter.
type App = Arc<dyn Fn(Request) -> Response + Send + Sync>;

/// A POST from caller `n` behind one proxy.
fn post(n: usize) -> Request {
    Request::new(
        "POST",
        "/",
        vec![Header::new(
            "X-Forwarded-For",
            format!("10.1.{}.{}", n / 256, n % 256),
        )],
        "",
    )
}

// --- the parts ------------------------------------------------------------------------------

/// Members join `?room=`; nothing else.
struct Member;

impl WsHandler for Member {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        Ok(web::http::param(web::http::query_of(req.path()), "room"))
    }

    fn open(&self, ws: &mut Ws<'_>, room: &mut String) {
        ws.join(room);
    }

    fn message(&self, _ws: &mut Ws<'_>, _room: &mut String, _msg: Message) {}
}

/// One instance: a server of two workers, in a fleet or not.
struct Instance {
    handle: Option<ServerHandle>,
    rooms: Rooms,
}

impl Instance {
    fn start(fleet: Option<&Fleet>) -> Instance {
        let mut server = Server::bind("127.0.0.1:0")
            .expect("a port on 127.0.0.1")
            .workers(2)
            .websocket("/", Member);
        if let Some(fleet) = fleet {
            server = server.fleet(fleet);
        }
        let rooms = server.rooms();
        let handle = server
            .spawn(|_req| text_response(404, ""))
            .expect("the server starts");
        Instance {
            handle: Some(handle),
            rooms,
        }
    }

    fn port(&self) -> u16 {
        self.handle.as_ref().map_or(0, |h| h.local_addr().port())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.shutdown();
        }
    }
}

/// A member of `room` on the instance at `port`, upgraded.
fn join(port: u16, room: &str) -> TcpStream {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    conn.set_read_timeout(Some(PHASE_LIMIT)).expect("timeout");
    conn.write_all(&ws_handshake_request(
        "127.0.0.1",
        &format!("/?room={room}"),
    ))
    .expect("handshake");
    conn
}

/// Until the instances count `expected` members and, in a fleet, every instance has subscribed.
fn wait_subscribed(instances: &[&Instance], fleet: Option<&Fleet>, expected: usize) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let members: usize = instances
            .iter()
            .map(|i| i.rooms.list().iter().map(|(_, n)| n).sum::<usize>())
            .sum();
        if members >= expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if fleet.is_some() {
        // The subscriber looks at new rooms every 100 ms.
        std::thread::sleep(Duration::from_millis(400));
    }
}

fn percentile(samples: &[u64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[at.min(sorted.len() - 1)] as f64
}

/// A redis-server of the benchmark's own; killed by its PID when dropped.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start() -> Redis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install -y redis-server)");
        let redis = Redis { child, port };
        let started = Instant::now();
        while redis.info("server").is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    fn fleet(&self, prefix: &str) -> Fleet {
        Fleet::new(&format!("redis://127.0.0.1:{}/", self.port))
            .expect("a Redis URL")
            .prefix(prefix)
    }

    /// `INFO section`, or nothing when Redis does not answer.
    fn info(&self, section: &str) -> String {
        let Ok(mut conn) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return String::new();
        };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let cmd = format!("*2\r\n$4\r\nINFO\r\n${}\r\n{section}\r\n", section.len());
        if conn.write_all(cmd.as_bytes()).is_err() {
            return String::new();
        }
        let mut reader = BufReader::new(conn);
        let mut len = String::new();
        if reader.read_line(&mut len).is_err() || !len.starts_with('$') {
            return String::new();
        }
        let n: usize = len[1..].trim().parse().unwrap_or(0);
        let mut body = vec![0u8; n + 2];
        if std::io::Read::read_exact(&mut reader, &mut body).is_err() {
            return String::new();
        }
        String::from_utf8_lossy(&body).into_owned()
    }

    fn version(&self) -> String {
        field(&self.info("server"), "redis_version").unwrap_or_default()
    }

    /// Transactions (`EXEC`) Redis has run: one per rate-limit round trip.
    /// `INCRBY` commands Redis has run (the rate limit's counts, one per caller and batch).
    fn incrbys(&self) -> u64 {
        let stats = self.info("commandstats");
        field(&stats, "cmdstat_incrby")
            .and_then(|v| v.split(',').next().map(str::to_owned))
            .and_then(|calls| calls.strip_prefix("calls=").and_then(|n| n.parse().ok()))
            .unwrap_or(0)
    }
}

fn field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
