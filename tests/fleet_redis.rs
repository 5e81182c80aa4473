//! Several instances of a server as one fleet (`--features redis`): rooms and rate limits across
//! instances through a live Redis, and an instance whose Redis is unreachable.
//!
//! The tests marked `#[ignore]` need `redis-server` installed: each starts its own on a free
//! port of 127.0.0.1 and stops it by its PID. `.ci/run` runs them:
//!
//! ```sh
//! cargo test --features redis --test fleet_redis -- --include-ignored
//! ```
#![cfg(feature = "redis")]

mod wire;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use web::fleet::{Fleet, LimitAcrossFleet};
use web::http::{
    Header, RateLimit, Request, Response, Server, ServerHandle, param, query_of, text_response,
    wrap,
};
use web::ws::{History, Message, Rooms, Ws, WsHandler, client_frame};
use wire::fake_redis::{Fake, fake_redis};
use wire::wait_until;
use wire::ws::Client;

/// A redis-server of this test's own; killed by its PID when dropped.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    /// Starts one on a free port. The port is found by binding and letting go, so another test
    /// may take it before redis-server binds it: then redis-server exits, and another port is
    /// tried.
    fn start() -> Redis {
        for _ in 0..5 {
            if let Some(redis) = Redis::try_start() {
                return redis;
            }
        }
        panic!("redis-server did not answer on any of 5 ports");
    }

    fn try_start() -> Option<Redis> {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = wire::redis_server::start(port, &std::env::temp_dir(), &[])?;
        Some(Redis { child, port })
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// One command; the first line of its reply, `None` when Redis does not answer.
    fn command(&self, args: &[&str]) -> Option<String> {
        let mut conn = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        conn.write_all(out.as_bytes()).ok()?;
        let mut reader = BufReader::new(conn);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        if line.starts_with('*') {
            // PUBSUB NUMSUB: [channel, count]; the count is the fourth line.
            for _ in 0..3 {
                line.clear();
                reader.read_line(&mut line).ok()?;
            }
        }
        Some(line.trim_end().to_owned())
    }

    /// The entries of list `key`, first to last.
    fn list(&self, key: &str) -> Vec<String> {
        let mut conn = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let cmd = format!(
            "*4\r\n$6\r\nLRANGE\r\n${}\r\n{key}\r\n$1\r\n0\r\n$2\r\n-1\r\n",
            key.len()
        );
        conn.write_all(cmd.as_bytes()).unwrap();
        let mut reader = BufReader::new(conn);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let n: usize = line.trim_end().trim_start_matches('*').parse().unwrap();
        (0..n)
            .map(|_| {
                line.clear();
                reader.read_line(&mut line).unwrap(); // $len
                let len: usize = line.trim_end().trim_start_matches('$').parse().unwrap();
                let mut entry = vec![0; len + 2];
                std::io::Read::read_exact(&mut reader, &mut entry).unwrap();
                String::from_utf8_lossy(&entry[..len]).into_owned()
            })
            .collect()
    }

    /// How many instances subscribe to `channel`.
    fn subscribers(&self, channel: &str) -> String {
        self.command(&["PUBSUB", "NUMSUB", channel])
            .unwrap_or_default()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Members join `?room=`; a text message is published to that room — or, when `posting`, members
/// join with the room's history and a text message is posted.
struct Relay {
    posting: bool,
}

impl WsHandler for Relay {
    type State = String;

    fn accept(&self, req: &Request) -> Result<String, Response> {
        Ok(param(query_of(req.path()), "room"))
    }

    fn open(&self, ws: &mut Ws<'_>, room: &mut String) {
        if self.posting {
            ws.join_with_history(room);
        } else {
            ws.join(room);
        }
    }

    fn message(&self, ws: &mut Ws<'_>, room: &mut String, msg: Message) {
        match msg {
            Message::Text(text) if self.posting => {
                ws.rooms().post(room, move |id| format!("{id} {text}"));
            }
            msg => {
                ws.publish(room, &msg);
            }
        }
    }
}

/// Posts in a fleet and waits for the id Redis gave the message.
fn posted(rooms: &Rooms, room: &str, text: impl FnOnce(u64) -> String + Send + 'static) -> u64 {
    let (tx, rx) = std::sync::mpsc::channel();
    rooms.post_then(room, text, move |id| {
        let _ = tx.send(id);
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("told within 5 s")
        .expect("posted")
}

/// An instance whose rooms keep their last 5 messages, and its rooms.
fn keeping(fleet: &Fleet) -> (ServerHandle, Rooms) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .fleet(fleet)
        .history(History::new(5))
        .websocket("/", Relay { posting: true });
    let rooms = server.rooms();
    let handle = server
        .spawn(|_req| text_response(404, "WebSocket only\n"))
        .unwrap();
    (handle, rooms)
}

/// Two instances keeping history, of one fleet on `redis` with `prefix`: each server, its
/// rooms, and its fleet.
fn two_keeping(redis: &Redis, prefix: &str) -> [(ServerHandle, Rooms, Fleet); 2] {
    [0, 1].map(|_| {
        let f = fleet(redis, prefix);
        let (server, rooms) = keeping(&f);
        (server, rooms, f)
    })
}

fn instance(fleet: &Fleet) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .fleet(fleet)
        .websocket("/", Relay { posting: false })
        .spawn(|_req| text_response(404, "WebSocket only\n"))
        .unwrap()
}

fn member(server: &ServerHandle, room: &str) -> Client {
    Client::connect_to(server.local_addr().port(), &format!("/?room={room}"))
}

fn text_of(c: &mut Client) -> String {
    let (first, payload) = c.frame();
    assert_eq!(first, 0x81, "a text frame");
    String::from_utf8(payload).unwrap()
}

/// A fresh prefix per test, so tests sharing nothing never see each other's channels.
fn fleet(redis: &Redis, prefix: &str) -> Fleet {
    Fleet::new(&redis.url()).unwrap().prefix(prefix)
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn a_publish_reaches_members_on_every_instance_exactly_once_in_publish_order() {
    let redis = Redis::start();
    let (fa, fb) = (fleet(&redis, "order"), fleet(&redis, "order"));
    assert_ne!(fa.instance(), fb.instance());
    let (a, b) = (instance(&fa), instance(&fb));
    let mut on_a = member(&a, "r");
    let mut also_on_a = member(&a, "r");
    let mut on_b = member(&b, "r");
    wait_until(Duration::from_secs(5), "both instances subscribed", || {
        redis.subscribers("{order:r}:room") == ":2"
    });
    const N: usize = 300;
    for i in 0..N {
        on_a.send(&client_frame(&format!("m{i}")));
    }
    let want: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
    for (who, c) in [
        ("the publisher", &mut on_a),
        ("its neighbour", &mut also_on_a),
        ("the member on the other instance", &mut on_b),
    ] {
        let got: Vec<String> = (0..N).map(|_| text_of(c)).collect();
        assert_eq!(got, want, "{who}: every message once, in order");
        // No echo and no duplicate after them.
        c.conn
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut byte = [0u8; 1];
        assert!(
            std::io::Read::read(&mut c.conn, &mut byte).is_err(),
            "{who}: nothing more"
        );
    }
    assert_eq!(fa.stats().published, N as u64);
    assert_eq!(fb.stats().received, N as u64);
    assert_eq!(fa.stats().received, 0, "its own echo is dropped");
    assert_eq!((a.stats().fleet_errors, b.stats().fleet_dropped), (0, 0));
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn an_instance_subscribes_only_to_rooms_with_local_members() {
    let redis = Redis::start();
    let f = fleet(&redis, "subs");
    let a = instance(&f);
    let subscribed = |n: &str| {
        let want = format!(":{n}");
        wait_until(Duration::from_secs(5), &format!("{n} subscribers"), || {
            redis.subscribers("{subs:x}:room") == want
        });
    };
    assert_eq!(redis.subscribers("{subs:x}:room"), ":0");
    let first = member(&a, "x");
    subscribed("1");
    let second = member(&a, "x");
    let elsewhere = member(&a, "y");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(redis.subscribers("{subs:x}:room"), ":1", "one per instance");
    assert_eq!(redis.subscribers("{subs:y}:room"), ":1");
    drop(first);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(redis.subscribers("{subs:x}:room"), ":1", "a member is left");
    drop(second);
    subscribed("0");
    assert_eq!(redis.subscribers("{subs:y}:room"), ":1");
    drop(elsewhere);
    a.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn rate_limits_count_a_caller_once_across_instances() {
    let redis = Redis::start();
    let (fa, fb) = (fleet(&redis, "rate"), fleet(&redis, "rate"));
    wire::fleet::a_caller_is_counted_once_across_two_instances(&fa, &fb);
}

#[test]
fn with_redis_unreachable_an_instance_serves_its_own_members_and_never_waits_on_redis() {
    // A port nothing listens on: every connection is refused at once.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let f = Fleet::new(&format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .timeout(Duration::from_millis(20));
    let server = instance(&f);
    let mut one = member(&server, "r");
    let mut two = member(&server, "r");
    std::thread::sleep(Duration::from_millis(100));
    one.send(&client_frame("still here"));
    assert_eq!(text_of(&mut one), "still here");
    assert_eq!(text_of(&mut two), "still here");
    wait_until(Duration::from_secs(5), "failures counted", || {
        let s = server.stats();
        s.fleet_errors >= 2 && s.fleet_dropped >= 1
    });
    // The rate limiter decides on its local count, without waiting for the timeout (two
    // seconds here, so that a decision that waited could not pass for one that did not).
    let f = f.timeout(Duration::from_secs(2));
    let app = wrap(vec![RateLimit::new(2, 100, 1).fleet(&f).layer()], |_req| {
        text_response(201, "")
    });
    let post = || {
        Request::new(
            "POST",
            "/",
            vec![Header::new("X-Forwarded-For", "10.0.0.1")],
            "",
        )
    };
    let (statuses, took) = wire::within_one_second(|_| {
        let begun = Instant::now();
        let statuses: Vec<u16> = (0..4).map(|_| app(post()).status).collect();
        (statuses, begun.elapsed())
    });
    assert_eq!(statuses, [201, 201, 429, 429], "the local count");
    assert!(
        took < Duration::from_secs(1),
        "four decisions took {took:?}"
    );
    assert!(f.stats().local_decisions >= 4);
    assert!(!f.stats().subscribed);
    server.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn a_posted_message_has_one_id_and_one_history_on_every_instance() {
    let redis = Redis::start();
    let [(a, _, _), (b, _, _)] = two_keeping(&redis, "hist");
    let mut poster = member(&a, "r");
    // Seven posted on A; B has never had the room: its member gets the fleet's last five.
    let mut said = Vec::new();
    for i in 0..7 {
        poster.send(&client_frame(&format!("m{i}")));
        said.push(text_of(&mut poster));
    }
    wait_until(Duration::from_secs(5), "the history written", || {
        redis.command(&["LLEN", "{hist:r}:history"]).as_deref() == Some(":5")
    });
    let mut late = member(&b, "r");
    let history: Vec<String> = (0..5).map(|_| text_of(&mut late)).collect();
    assert_eq!(
        history,
        said[2..],
        "the same texts with the same ids, in order"
    );
    // From now on B's member gets A's posts live, once each.
    wait_until(Duration::from_secs(5), "B subscribed", || {
        redis.subscribers("{hist:r}:room") == ":2"
    });
    poster.send(&client_frame("live"));
    let live = text_of(&mut poster);
    assert_eq!(text_of(&mut late), live);
    // Ids from the fleet's counter: one block per instance, all different.
    let ids: Vec<u64> = said
        .iter()
        .chain([&live])
        .map(|t| t.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let mut other = member(&b, "r");
    let kept: Vec<String> = (0..5).map(|_| text_of(&mut other)).collect();
    assert_eq!(kept.last(), Some(&live), "B's own copy is the fleet's");
    drop((poster, late, other));
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn a_followed_room_receives_the_other_instances_posts_without_members() {
    let redis = Redis::start();
    let [(a, rooms_a, _), (b, rooms_b, _)] = two_keeping(&redis, "follow");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let seen = std::sync::Arc::clone(&seen);
        rooms_b.watch(move |room, id, text| {
            seen.lock()
                .unwrap()
                .push((room.to_owned(), id, text.to_owned()))
        });
    }
    let follow = rooms_b.follow("f");
    assert_eq!(rooms_b.members("f"), 0, "a follower is no member");
    assert!(rooms_b.list().is_empty());
    wait_until(Duration::from_secs(5), "B subscribed", || {
        redis.subscribers("{follow:f}:room") == ":1"
    });
    let id = posted(&rooms_a, "f", |id| format!("{id} posted on A"));
    wait_until(Duration::from_secs(5), "B's watcher saw it", || {
        !seen.lock().unwrap().is_empty()
    });
    assert_eq!(
        *seen.lock().unwrap(),
        [("f".to_owned(), id, format!("{id} posted on A"))]
    );
    assert_eq!(rooms_b.since("f", 0, || {}).len(), 1, "and keeps it");
    drop(follow);
    wait_until(Duration::from_secs(5), "B unsubscribed", || {
        redis.subscribers("{follow:f}:room") == ":0"
    });
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn presence_counts_every_instance_and_forgets_one_that_stopped_reporting() {
    let redis = Redis::start();
    let [(a, rooms_a, fa), (b, rooms_b, _)] = two_keeping(&redis, "pres");
    let members = [member(&a, "p"), member(&a, "p"), member(&b, "p")];
    wait_until(Duration::from_secs(4), "both instances counted", || {
        rooms_a.members_everywhere("p") == 3 && rooms_b.members_everywhere("p") == 3
    });
    // An instance that reports once and never again (as one killed would).
    redis.command(&[
        "SET",
        "{pres:p}:presence:00000000000000ff",
        "10",
        "PX",
        "2500",
    ]);
    redis.command(&["SADD", "{pres:p}:presence", "00000000000000ff"]);
    // A count is what was last read, at most a beat old: it shows within a beat.
    wait_until(
        Duration::from_secs(2),
        "the silent instance counted",
        || rooms_a.members_everywhere("p") == 13,
    );
    wait_until(
        Duration::from_secs(5),
        "the silent instance forgotten",
        || rooms_a.members_everywhere("p") == 3,
    );
    assert_eq!(
        redis
            .command(&["SISMEMBER", "{pres:p}:presence", "00000000000000ff"])
            .as_deref(),
        Some(":0"),
        "taken out of the room's set of instances"
    );
    // A stopping instance says goodbye: its members stop counting at the next read.
    drop(members);
    wait_until(Duration::from_secs(4), "the members gone", || {
        rooms_a.members_everywhere("p") == 0
    });
    let _b_members = member(&b, "p");
    wait_until(Duration::from_secs(4), "B's member counted", || {
        rooms_a.members_everywhere("p") == 1
    });
    drop(_b_members);
    b.shutdown().unwrap();
    wait_until(Duration::from_secs(3), "B's goodbye read", || {
        rooms_a.members_everywhere("p") == 0
    });
    assert_eq!(fa.stats().local_reads, 0);
    a.shutdown().unwrap();
}

#[test]
fn with_redis_unreachable_a_join_gets_the_instance_s_own_history_within_the_timeout() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let f = Fleet::new(&format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .timeout(Duration::from_millis(20));
    let (server, rooms) = keeping(&f);
    let mut poster = member(&server, "r");
    poster.send(&client_frame("one"));
    let one = text_of(&mut poster);
    drop(poster);
    wait_until(Duration::from_secs(5), "the room empty", || {
        rooms.members("r") == 0
    });
    let begun = Instant::now();
    let mut late = member(&server, "r");
    assert_eq!(text_of(&mut late), one, "this instance's own copy");
    assert!(
        begun.elapsed() < Duration::from_secs(1),
        "{:?}",
        begun.elapsed()
    );
    assert!(f.stats().local_reads >= 1 && server.stats().fleet_local_reads >= 1);
    assert_eq!(rooms.members_everywhere("r"), 1, "counted here only");
    drop(late);
    server.shutdown().unwrap();
}

#[test]
fn a_slow_redis_never_holds_a_worker_joins_and_counts_answer_later() {
    // Every reply a second late (under the fleet's timeout: reads succeed, slowly); one
    // worker, so anything it waited for would hold every request that long.
    let (url, stop) = fake_redis(Fake::Slow(Duration::from_secs(1)));
    let f = Fleet::new(&url)
        .unwrap()
        .timeout(Duration::from_millis(1500));
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .fleet(&f)
        .history(History::new(5))
        .websocket("/", Relay { posting: true });
    let rooms = server.rooms();
    let server = server.spawn(|_req| text_response(200, "here\n")).unwrap();
    let mut probe = wire::Client::connect(server.local_addr());
    let mut slowest = Duration::ZERO;
    let mut members = Vec::new();
    for round in 0..5 {
        // A join with history on a room this instance does not follow: Redis is read for it.
        let room = format!("slow{round}");
        members.push(member(&server, &room));
        let begun = Instant::now();
        assert_eq!(probe.get("/").text(), "here\n");
        assert_eq!(
            rooms.members_everywhere(&room),
            0,
            "not counted before its history"
        );
        slowest = slowest.max(begun.elapsed());
    }
    assert!(
        slowest < Duration::from_millis(500),
        "a request waited {slowest:?}"
    );
    // Each join completes when its read comes back: the member is counted and gets what is
    // posted (here alone: the fake Redis cannot take posts).
    for (round, joined) in members.iter_mut().enumerate() {
        let room = format!("slow{round}");
        wait_until(Duration::from_secs(10), "the join completed", || {
            rooms.members(&room) == 1
        });
        joined.send(&client_frame("hello"));
        assert!(text_of(joined).ends_with(" hello"));
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    drop(members);
    server.shutdown().unwrap();
}

/// This process's resident memory.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

#[test]
fn a_slow_redis_never_holds_up_a_rate_limit_decision() {
    let (url, stop) = fake_redis(Fake::Slow(Duration::from_millis(200)));
    let f = Fleet::new(&url).unwrap();
    let app = wrap(
        vec![RateLimit::new(1000, 1000, 1).fleet(&f).layer()],
        |_req| text_response(201, ""),
    );
    wait_until(Duration::from_secs(5), "the limiter connected", || {
        f.stats().connections >= 1
    });
    let begun = Instant::now();
    for i in 0..40 {
        let req = Request::new(
            "POST",
            "/",
            vec![Header::new("X-Forwarded-For", format!("10.0.0.{}", i % 4))],
            "",
        );
        assert_eq!(app(req).status, 201);
    }
    // Waiting for Redis even once per request would take 40 × 200 ms.
    assert!(
        begun.elapsed() < Duration::from_secs(2),
        "{:?}",
        begun.elapsed()
    );
    drop(app);
    stop.store(true, std::sync::atomic::Ordering::Release);
}

#[test]
fn a_hostile_redis_is_dropped_and_bounded_and_never_holds_up_shutdown() {
    for how in [Fake::HugeBulk, Fake::EndlessArray, Fake::Trickle] {
        let (url, stop) = fake_redis(how);
        let f = Fleet::new(&url).unwrap();
        let before = rss();
        let server = instance(&f);
        let app = wrap(vec![RateLimit::new(5, 5, 1).fleet(&f).layer()], |_req| {
            text_response(201, "")
        });
        let mut one = member(&server, "r");
        let begun = Instant::now();
        let mut most = 0;
        while begun.elapsed() < Duration::from_secs(3) {
            one.send(&client_frame("hi"));
            assert_eq!(text_of(&mut one), "hi", "{how:?}: local delivery goes on");
            let _ = app(Request::new("POST", "/", vec![], ""));
            most = most.max(rss().saturating_sub(before));
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(most < 64 << 20, "{how:?}: grew {most} bytes");
        assert!(f.stats().errors >= 1, "{how:?}: {:?}", f.stats());
        drop(one);
        let stopping = Instant::now();
        server.shutdown().unwrap();
        drop(app);
        assert!(
            stopping.elapsed() < Duration::from_secs(5),
            "{how:?}: shutdown took {:?}",
            stopping.elapsed()
        );
        stop.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// What each instance delivered to room `o`, in its order (ids and texts), from `watch`.
fn watched(rooms: &Rooms) -> std::sync::Arc<std::sync::Mutex<Vec<(u64, String)>>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    rooms.watch(move |_room, id, text| log.lock().unwrap().push((id, text.to_owned())));
    seen
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn a_room_has_one_order_on_every_instance_and_resuming_anywhere_neither_repeats_nor_skips() {
    const EACH: usize = 10;
    let redis = Redis::start();
    let [(a, rooms_a, fa), (b, rooms_b, fb)] = two_keeping(&redis, "order");
    let (seen_a, seen_b) = (watched(&rooms_a), watched(&rooms_b));
    let (_follow_a, _follow_b) = (rooms_a.follow("o"), rooms_b.follow("o"));
    wait_until(Duration::from_secs(5), "both subscribed", || {
        redis.subscribers("{order:o}:room") == ":2"
    });
    for round in 0..3 {
        // Both instances post at once, from several threads each.
        let posters: Vec<_> = [&rooms_a, &rooms_b]
            .into_iter()
            .enumerate()
            .flat_map(|(at, rooms)| {
                (0..2).map(move |t| {
                    let rooms = rooms.clone();
                    std::thread::spawn(move || {
                        for i in 0..EACH / 2 {
                            rooms.post("o", move |id| format!("{id} r{round} i{at} t{t} m{i}"));
                        }
                    })
                })
            })
            .collect();
        for p in posters {
            p.join().unwrap();
        }
        let want = (round + 1) * 2 * EACH;
        let begun = Instant::now();
        while seen_a.lock().unwrap().len() != want || seen_b.lock().unwrap().len() != want {
            assert!(
                begun.elapsed() < Duration::from_secs(10),
                "round {round}: A has {:?}, B has {:?}; want {want}; fleets {:?} {:?}",
                seen_a
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(id, _)| *id)
                    .collect::<Vec<_>>(),
                seen_b
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(id, _)| *id)
                    .collect::<Vec<_>>(),
                fa.stats(),
                fb.stats(),
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let (on_a, on_b) = (
        seen_a.lock().unwrap().clone(),
        seen_b.lock().unwrap().clone(),
    );
    assert_eq!(on_a, on_b, "one order on both instances");
    assert!(
        on_a.windows(2).all(|w| w[0].0 < w[1].0),
        "ids increase in it: {on_a:?}"
    );
    for (id, text) in &on_a {
        assert!(text.starts_with(&format!("{id} ")), "{text}");
    }
    // Redis's history is the same order (its last five).
    let redis_ids: Vec<u64> = redis
        .list("{order:o}:history")
        .iter()
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    let last_five: Vec<u64> = on_a[on_a.len() - 5..].iter().map(|(id, _)| *id).collect();
    assert_eq!(redis_ids, last_five);
    // Resuming after any id on the other instance gives exactly what follows it there — held
    // or evicted (the history keeps five).
    for (at, (id, _)) in on_a.iter().enumerate() {
        let want: Vec<u64> = on_a[at + 1..]
            .iter()
            .map(|(id, _)| *id)
            .skip((on_a.len() - at - 1).saturating_sub(5))
            .collect();
        for rooms in [&rooms_a, &rooms_b] {
            let got: Vec<u64> = rooms
                .since("o", *id, || {})
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(got, want, "after {id}");
        }
    }
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn members_joining_a_room_another_instance_posts_to_get_each_message_once_in_order() {
    let redis = Redis::start();
    let [(a, rooms_a, _), (b, _, _)] = two_keeping(&redis, "joins");
    let seen_a = watched(&rooms_a);
    let mut poster = member(&a, "j");
    let posted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&posted);
    let posting = std::thread::spawn(move || {
        for i in 0..60 {
            poster.send(&client_frame(&format!("m{i}")));
            let _ = text_of(&mut poster);
            counted.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(3));
        }
        poster
    });
    // Members join on B (which does not follow the room at first) while A posts.
    let mut joiners = Vec::new();
    // The first once the room has posted more than its history holds.
    wait_until(Duration::from_secs(10), "ten posts", || {
        posted.load(Ordering::Relaxed) >= 10
    });
    for _ in 0..6 {
        joiners.push(member(&b, "j"));
        std::thread::sleep(Duration::from_millis(25));
    }
    let _poster = posting.join().unwrap();
    // The watcher runs right after a message's fan-out: the poster may read its echo first.
    let begun = Instant::now();
    while seen_a.lock().unwrap().len() != 60 {
        assert!(
            begun.elapsed() < Duration::from_secs(10),
            "A's watcher saw {:?}",
            seen_a
                .lock()
                .unwrap()
                .iter()
                .map(|(id, t)| (*id, t.split(' ').nth(1).unwrap_or("").to_owned()))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let order: Vec<u64> = seen_a.lock().unwrap().iter().map(|(id, _)| *id).collect();
    let last = *order.last().unwrap();
    for (n, joiner) in joiners.iter_mut().enumerate() {
        let mut got = Vec::new();
        while got.last() != Some(&last) {
            let text = text_of(joiner);
            got.push(text.split(' ').next().unwrap().parse::<u64>().unwrap());
        }
        // Its history, then what follows: each message of the room from the first it got, once
        // and in the room's order. (Posts between the first join and its instance's
        // subscription reach it as far as the room's history — five here, 15 ms of posts —
        // holds them: the subscriber is woken for a new room at once, so that is a round trip.)
        let start = order.iter().position(|id| *id == got[0]);
        assert_eq!(
            Some(&got[..]),
            start.map(|start| &order[start..]),
            "joiner {n}: the room's messages from its first on"
        );
    }
    drop((joiners, _poster));
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn a_poster_learns_the_id_redis_gave_and_ids_survive_a_lost_counter() {
    let redis = Redis::start();
    let [(a, rooms_a, _), (b, _, _)] = two_keeping(&redis, "ids");
    let first = posted(&rooms_a, "i", |id| format!("{id} one"));
    let second = posted(&rooms_a, "i", |id| format!("{id} two"));
    assert!(second > first, "{second} after {first}");
    assert!(second < 1 << 53, "exact as a JavaScript number");
    // Redis loses everything: the next id is still greater (the counter restarts from the
    // clock).
    redis.command(&["FLUSHALL"]).unwrap();
    let third = posted(&rooms_a, "i", |id| format!("{id} three"));
    assert!(third > second, "{third} after {second}");
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

#[test]
fn what_a_hostile_redis_answers_obeys_the_bounds_of_what_is_posted() {
    // An absurd count: refused, this instance's own count stands (a local read).
    let (url, stop) = fake_redis(Fake::Reply(b":9223372036854775807\r\n"));
    let f = Fleet::new(&url)
        .unwrap()
        .timeout(Duration::from_millis(200));
    let (server, rooms) = keeping(&f);
    // Counts never wait: this instance's own at once, the fleet's read behind it refused.
    assert_eq!(rooms.members_everywhere("absurd"), 0);
    wait_until(Duration::from_secs(5), "the count's read refused", || {
        f.stats().local_reads >= 1
    });
    assert_eq!(rooms.members_everywhere("absurd"), 0);
    stop.store(true, std::sync::atomic::Ordering::Release);
    server.shutdown().unwrap();
    // A history of 20 entries of 300 KB (6 MB): what is kept stays within the history's
    // bytes.
    let mut reply = b"*20\r\n".to_vec();
    for id in 1..=20 {
        let entry = format!("{id} {}", "h".repeat(300 * 1024));
        reply.extend_from_slice(format!("${}\r\n{entry}\r\n", entry.len()).as_bytes());
    }
    let reply: &'static [u8] = Box::leak(reply.into_boxed_slice());
    let (url, stop) = fake_redis(Fake::Reply(reply));
    let f = Fleet::new(&url).unwrap().timeout(Duration::from_secs(2));
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .fleet(&f)
        .history(History::new(20).bytes(2 << 20));
    let rooms = server.rooms();
    let server = server.spawn(|_req| text_response(404, "")).unwrap();
    let held = rooms.since("big", 0, || {});
    let bytes: usize = held.iter().map(|(_, text)| text.len()).sum();
    assert!(!held.is_empty(), "the newest kept");
    assert!(
        bytes <= 4 << 20,
        "{bytes} bytes kept of a history bound to 4 MiB"
    );
    assert_eq!(held.last().map(|(id, _)| *id), Some(20));
    stop.store(true, std::sync::atomic::Ordering::Release);
    server.shutdown().unwrap();
}

#[test]
#[ignore = "needs redis-server (run by .ci/run)"]
fn a_look_under_follow_then_gets_the_fleet_s_history_read_off_the_worker() {
    let redis = Redis::start();
    let [(a, rooms_a, _), (b, rooms_b, _)] = two_keeping(&redis, "look");
    let ids: Vec<u64> = (0..3)
        .map(|i| posted(&rooms_a, "x", move |id| format!("{id} m{i}")))
        .collect();
    // B has never followed the room: its copy is filled from Redis before the look.
    let (tx, rx) = std::sync::mpsc::channel();
    let look = rooms_b.clone();
    rooms_b.follow_then("x", move |follow| {
        let newer: Vec<u64> = look
            .since("x", 0, || {})
            .iter()
            .map(|(id, _)| *id)
            .collect();
        let _ = tx.send(newer);
        drop(follow);
    });
    let got = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(got, ids);
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}
