//! Soak: a health probe on fresh connections while the server is attacked from every side, then
//! checks that it came back whole. `cargo bench --bench soak` (CI runs it with
//! `SOAK_SECONDS=120` from `.ci/run`); `SOAK_SECONDS` sets the attack's length (default 120),
//! `SOAK_WARM_SECONDS` the warm-up's (default 10).
//!
//! The server (this program re-run with `SOAK_SERVER=1`: two workers, an echo handler at every
//! path, WebSocket echo at `/ws`, short timeouts so slow attackers are cut) runs in a child
//! process. In order:
//!
//! 1. **bursts**: 5 rounds of 20 concurrent 1 MB POSTs echoed back; the server's RSS after each
//!    round against its RSS before the first (the "cold" baseline, after 50 probes);
//! 2. **warm-up**: every attacker at once for `SOAK_WARM_SECONDS`, then the "warm" baseline once
//!    they are gone (what the allocator keeps per thread after first use — glibc's per-thread
//!    caches hold up to 7 freed chunks of each small size — is part of it, as lazily made
//!    tables are);
//! 3. **attack**, each attacker in a loop until the time is up: slowloris (a header byte a
//!    second), resets in the middle of a head and of a body, half-closes after a request, clients
//!    that send and never read, pipelined bursts, oversize heads (431) and bodies (413),
//!    WebSockets dropped in the middle of a frame, WebSockets that send and never read, and on a
//!    room the server publishes 16 KiB to every 5 ms: a member that reads a little slower than
//!    the room (a lagging reader), a flood of 16 WebSocket and event-stream members ever further
//!    behind, and a crowd of 40 members that never read; and on a room holding 20 messages of
//!    16 KiB, a crowd of 40 long-polls answered with all of it and 40 event streams replayed
//!    it, none read. A probe makes a fresh connection every 50 ms for one `GET`.
//!
//! With `--features redis` the server is also one instance of a fleet whose Redis is hostile
//! (it answers `$999999999999` and streams) and counts every request in a rate limit whose
//! Redis answers correctly but 40 ms late (fake servers on 127.0.0.1, `tests/wire/fake_redis.rs`):
//! neither may slow a request down.
//!
//! Fails (exit 1) on any probe failure, a probe p99 over 50 ms, an attacker seeing a wrong
//! answer, the server dying, its RSS more than 10% over the cold baseline after the bursts, its
//! peak RSS during the attack more than [`PEAK_OVER_WARM`] over the warm baseline (the room's
//! queued output is bounded by the server's output budget, [`QUEUED_OUTPUT`]), or, after the
//! attack, its descriptors not back to their baseline or its RSS more than 10% over the warm
//! one (the figure against the cold one is printed too). Only 127.0.0.1; bounded in time and
//! count; the child is stopped by the parent closing its standard input.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use web::http::{Request, Response, Server, text_response};
use web::sse::{Sse, SseHandler};
use web::ws::{History, Message, Ws, WsHandler, client_frame, ws_handshake_request};

struct Echo;

impl WsHandler for Echo {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
        ws.send(&msg);
    }
}

/// Members of the room `feed`, which the server publishes to (WebSocket and event streams).
struct Feed;

impl SseHandler for Feed {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
        sse.join("feed");
    }
}

/// Event streams sent room `h`'s whole history when they open (about 320 KB, shared).
struct Replay;

impl SseHandler for Replay {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
        sse.join_after("h", 0);
    }
}

impl WsHandler for Feed {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join("feed");
    }
    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}

mod child;

#[global_allocator]
static GLOBAL: child::Counting = child::Counting;

#[cfg(feature = "redis")]
#[path = "../tests/wire/fake_redis.rs"]
#[allow(dead_code)]
mod fake_redis;

/// The environment variables that tell the server its fake Redis servers' URLs.
#[cfg(feature = "redis")]
const HOSTILE_REDIS: &str = "SOAK_HOSTILE_REDIS";
#[cfg(feature = "redis")]
const SLOW_REDIS: &str = "SOAK_SLOW_REDIS";

/// The server's budget for WebSocket output its peers have not taken.
const QUEUED_OUTPUT: usize = 8 << 20;
/// How far over the warm baseline the server's RSS may peak during the attack.
const PEAK_OVER_WARM: u64 = 64 << 10; // KiB
/// What the server publishes to the room, and how often.
const FEED_MESSAGE: usize = 16 * 1024;
const FEED_EVERY: Duration = Duration::from_millis(5);
/// Lines of room `h`'s history, each [`FEED_MESSAGE`] long.
const HISTORY_LINES: usize = 20;

fn serve() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .header_timeout(Duration::from_secs(2))
        .idle_timeout(Duration::from_secs(5))
        .write_timeout(Duration::from_secs(3))
        .max_body(1 << 20)
        .max_queued_output(QUEUED_OUTPUT)
        .history(History::new(HISTORY_LINES))
        .websocket("/ws", Echo)
        .websocket("/feed", Feed)
        .sse("/feed-events", Feed)
        .sse("/history", Replay);
    let rooms = server.rooms();
    // The history's room is followed all along (as a long-poll holds it), so a poll reads no
    // Redis; its lines are posted once, before the baselines.
    let _follow = rooms.follow("h");
    for i in 0..HISTORY_LINES {
        let fill = char::from(b'a' + i as u8).to_string().repeat(FEED_MESSAGE);
        rooms.post("h", move |id| format!("{id} {fill}"));
    }
    let polls = rooms.clone();
    let handler = move |req: Request| {
        if req.path() == "/probe" {
            text_response(200, "ok")
        } else if req.path() == "/poll" {
            // A long-poll answered at once with the room's whole history (a JSON array of its
            // lines in a real service): about 320 KB.
            let lines = polls.since("h", 0, || {});
            let body: Vec<&str> = lines.iter().map(|(_, text)| &**text).collect();
            text_response(200, body.join("\n"))
        } else {
            text_response(200, req.into_body())
        }
    };
    // The fake Redis servers run in the parent (their memory is not the server's).
    #[cfg(feature = "redis")]
    let (server, handler) = {
        use web::fleet::LimitAcrossFleet;
        let url = |name| std::env::var(name).expect("the parent names the fake Redis servers");
        let rooms_fleet = web::fleet::Fleet::new(&url(HOSTILE_REDIS)).unwrap();
        let count_fleet = web::fleet::Fleet::new(&url(SLOW_REDIS)).unwrap();
        // Counts every request in the slow Redis, refusing none.
        let limit = web::http::RateLimit::new(u32::MAX, u32::MAX, 1)
            .fleet(&count_fleet)
            .layer();
        let handler = web::http::wrap(vec![limit], handler);
        (server.fleet(&rooms_fleet), handler)
    };
    let rooms = server.rooms();
    let control = server.control();
    let handler = move |req: Request| {
        if req.path() == "/figures" {
            let s = control.stats();
            text_response(
                200,
                format!(
                    "{} {} {} {}",
                    s.lagging_closed,
                    s.queued_output,
                    child::live_bytes(),
                    child::live_blocks()
                ),
            )
        } else {
            handler(req)
        }
    };
    let handle = server.spawn(handler).unwrap();
    let publishing = Arc::new(AtomicBool::new(true));
    let feed = {
        let publishing = Arc::clone(&publishing);
        std::thread::spawn(move || {
            let text = "f".repeat(FEED_MESSAGE);
            while publishing.load(Ordering::Relaxed) {
                // Only while the room has members (the attack), so that the baselines taken
                // before do not hold what publishing to the fleet keeps.
                if rooms.members("feed") > 0 {
                    rooms.publish("feed", &Message::Text(text.clone()));
                }
                std::thread::sleep(FEED_EVERY);
            }
        })
    };
    child::serve_until_stdin_closes(handle.local_addr().port());
    publishing.store(false, Ordering::Relaxed);
    let _ = feed.join();
    let _ = handle.shutdown();
}

/// The server's figures: members closed for lagging, output queued, live heap bytes and
/// blocks (zeros when it does not answer).
fn figures(port: u16) -> [u64; 4] {
    let mut out = [0; 4];
    if let Some(mut c) = connect(port) {
        let _ = c.write_all(b"GET /figures HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let reply = String::from_utf8_lossy(&read_to_end_quietly(&mut c)).into_owned();
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
        for (slot, field) in out.iter_mut().zip(body.split(' ')) {
            *slot = field.parse().unwrap_or(0);
        }
    }
    out
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, field: &str) -> u64 {
    child::status_kib(&pid.to_string(), field)
}

fn connect(port: u16) -> Option<TcpStream> {
    let c =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    c.set_write_timeout(Some(Duration::from_secs(5))).ok()?;
    Some(c)
}

/// Closes with a reset (SO_LINGER 0) instead of a FIN.
fn reset(c: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt(2) on our own open socket, reading a live `linger` of the given size.
    unsafe {
        libc::setsockopt(
            c.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(c);
}

fn read_to_end_quietly(c: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let _ = c.read_to_end(&mut all);
    all
}

type Round = Box<dyn Fn() + Send + 'static>;

/// One attacker: runs `round` until `stop`, counting rounds.
fn attacker(
    name: &'static str,
    stop: &Arc<AtomicBool>,
    rounds: &Arc<Mutex<Vec<(&'static str, u64)>>>,
    round: Round,
) -> std::thread::JoinHandle<()> {
    let stop = Arc::clone(stop);
    let rounds = Arc::clone(rounds);
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            round();
            n += 1;
            // Bounded: at most 200 rounds a second per attacker (and no spin if connecting
            // fails, say when the machine runs out of ephemeral ports).
            std::thread::sleep(Duration::from_millis(5));
        }
        rounds.lock().unwrap().push((name, n));
    })
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let seconds = |name: &str, default: u64| {
        let s = std::env::var(name).ok().and_then(|s| s.parse().ok());
        Duration::from_secs(s.unwrap_or(default))
    };
    let (length, warm) = (
        seconds("SOAK_SECONDS", 120),
        seconds("SOAK_WARM_SECONDS", 10),
    );
    #[cfg(feature = "redis")]
    let _fakes = if std::env::var_os("SOAK_SERVER").is_none() {
        use fake_redis::{Fake, fake_redis};
        let (hostile, stop_hostile) = fake_redis(Fake::HugeBulk);
        let (slow, stop_slow) = fake_redis(Fake::Slow(Duration::from_millis(40)));
        Some((hostile, slow, stop_hostile, stop_slow))
    } else {
        None
    };
    // The fake servers' addresses, for the child.
    #[cfg(feature = "redis")]
    let vars: Vec<(&str, &str)> = _fakes
        .iter()
        .flat_map(|(hostile, slow, ..)| {
            [
                (HOSTILE_REDIS, hostile.as_str()),
                (SLOW_REDIS, slow.as_str()),
            ]
        })
        .collect();
    #[cfg(not(feature = "redis"))]
    let vars: Vec<(&str, &str)> = Vec::new();
    let ok = child::run_with("SOAK_SERVER", &vars, serve, |port, server| {
        run(port, server, length, warm)
    });
    if !ok {
        std::process::exit(1);
    }
}

/// One round of bursts: 20 clients at once each POST 1 MB and read it back.
fn burst_round(port: u16) -> bool {
    const BODY: usize = 1_000_000;
    let clients: Vec<_> = (0..20)
        .map(|i| {
            std::thread::spawn(move || {
                let Some(mut c) = connect(port) else {
                    return false;
                };
                let body = vec![b'a' + i as u8; BODY];
                let head = format!(
                    "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\n"
                );
                c.write_all(head.as_bytes()).is_ok()
                    && c.write_all(&body).is_ok()
                    && read_to_end_quietly(&mut c).ends_with(&body)
            })
        })
        .collect();
    clients.into_iter().all(|c| c.join().unwrap_or(false))
}

/// Waits (at most 20 s) until the server's descriptors are back to `fds` and its RSS within 10%
/// of `rss`, then 1.5 s more (a worker gives memory back at most once a second); returns both.
fn settle(pid: u32, fds_goal: usize, rss_goal: u64) -> (usize, u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20)
        && (fds(pid) > fds_goal || rss_kib(pid) as f64 > rss_goal as f64 * 1.10)
    {
        std::thread::sleep(Duration::from_millis(250));
    }
    // The fleet's threads reconnect to the hostile Redis now and then, so a single look may
    // catch one socket being opened: the fewest over 1.5 s (a descriptor left open stays).
    let mut fewest = fds(pid);
    for _ in 0..15 {
        std::thread::sleep(Duration::from_millis(100));
        fewest = fewest.min(fds(pid));
    }
    (fewest, rss_kib(pid))
}

fn percent_over(after: u64, before: u64) -> f64 {
    (after as f64 - before as f64) * 100.0 / before as f64
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Runs every attack at once until `length` is over, each in its own thread; then waits for
/// them. Whether none of them saw a wrong answer.
fn attack_for(
    attacks: Vec<(&'static str, Round)>,
    length: Duration,
    rounds: &Arc<Mutex<Vec<(&'static str, u64)>>>,
    probe: impl FnMut() -> bool,
) -> bool {
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = attacks
        .into_iter()
        .map(|(name, round)| attacker(name, &stop, rounds, round))
        .collect();
    let started = Instant::now();
    let mut probe = probe;
    while started.elapsed() < length && probe() {}
    stop.store(true, Ordering::Relaxed);
    let mut ok = true;
    for t in threads {
        ok &= t.join().is_ok();
    }
    ok
}

fn run(port: u16, child: &mut Child, length: Duration, warm: Duration) -> bool {
    let pid = child.id();
    let mut ok = true;
    // The cold baseline: after a few requests.
    for _ in 0..50 {
        if let Some(mut c) = connect(port) {
            let _ = c.write_all(b"GET /probe HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
            read_to_end_quietly(&mut c);
        }
    }
    std::thread::sleep(Duration::from_millis(1500));
    let (fds_cold, rss_cold) = (fds(pid), rss_kib(pid));

    // 1. Bursts.
    let mut rss_burst = rss_cold;
    for round in 1..=5 {
        check(
            &mut ok,
            burst_round(port),
            "a 1 MB POST was not echoed whole",
        );
        (_, rss_burst) = settle(pid, fds_cold, rss_cold);
        println!(
            "soak: burst round {round}: 20 concurrent 1 MB POSTs echoed; RSS {:.2} MiB before the first, {:.2} MiB after ({:+.1}%)",
            mib(rss_cold),
            mib(rss_burst),
            percent_over(rss_burst, rss_cold)
        );
    }
    check(
        &mut ok,
        rss_burst as f64 <= rss_cold as f64 * 1.10,
        "RSS not back within 10% of the baseline after the bursts",
    );

    // 2. Warm-up: every attack at once, then the warm baseline once they are gone.
    let warm_rounds = Arc::new(Mutex::new(Vec::new()));
    let warm_ok = attack_for(attacks(port), warm, &warm_rounds, || {
        std::thread::sleep(Duration::from_millis(50));
        true
    });
    check(
        &mut ok,
        warm_ok,
        "an attacker saw a wrong answer during the warm-up",
    );
    let (fds_before, rss_before) = settle(pid, fds_cold, rss_cold);
    let (anon_before, file_before) = (status_kib(pid, "RssAnon:"), status_kib(pid, "RssFile:"));
    let [_, _, heap_before, blocks_before] = figures(port);

    // 3. The attack, with the probe.
    let rounds = Arc::new(Mutex::new(Vec::new()));
    let mut latencies = Vec::new();
    let mut failures = 0u64;
    let mut died = None;
    let mut rss_peak = 0;
    let attack_ok = attack_for(attacks(port), length, &rounds, || {
        let t = Instant::now();
        let answered = connect(port).is_some_and(|mut c| {
            c.write_all(b"GET /probe HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .is_ok()
                && read_to_end_quietly(&mut c).ends_with(b"\r\n\r\nok")
        });
        rss_peak = rss_peak.max(rss_kib(pid));
        if answered {
            latencies.push(t.elapsed());
        } else {
            failures += 1;
        }
        if let Ok(Some(status)) = child.try_wait() {
            died = Some(status);
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
        true
    });
    if let Some(status) = died {
        println!("soak: FAIL: the server died ({status})");
        return false;
    }
    let [lagging_closed, queued_at_end, ..] = figures(port);
    println!(
        "soak: room members closed for falling behind: {lagging_closed}; output queued at the end: {queued_at_end} B (budget {QUEUED_OUTPUT} B)"
    );
    check(
        &mut ok,
        lagging_closed > 0,
        "no member was closed for falling behind: the output budget was never reached",
    );
    // Back to the baseline (idle and header timeouts cut what the attackers left).
    let (fds_after, rss_after) = settle(pid, fds_before, rss_before);
    let [_, _, heap_after, blocks_after] = figures(port);
    println!(
        "soak: RssAnon {anon_before} -> {} KiB, RssFile {file_before} -> {} KiB; live heap {heap_before} B in {blocks_before} blocks -> {heap_after} B in {blocks_after}",
        status_kib(pid, "RssAnon:"),
        status_kib(pid, "RssFile:")
    );
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let (p50, p99) = (pct(0.50), pct(0.99));
    println!(
        "soak: {:.0} s; {} probes, {failures} failed, p50 {p50:.2} ms, p99 {p99:.2} ms",
        length.as_secs_f64(),
        latencies.len() as u64 + failures
    );
    for (name, n) in rounds.lock().unwrap().iter() {
        println!("soak:   {name}: {n} rounds");
    }
    println!(
        "soak: descriptors {fds_cold} at the start, {fds_before} before the attack, {fds_after} after"
    );
    println!(
        "soak: RSS {:.2} MiB at the start, {:.2} MiB before the attack (warm), peak {:.2}, {:.2} MiB after: {:+.1}% over the warm baseline, {:+.1}% over the start",
        mib(rss_cold),
        mib(rss_before),
        mib(rss_peak),
        mib(rss_after),
        percent_over(rss_after, rss_before),
        percent_over(rss_after, rss_cold)
    );
    check(&mut ok, attack_ok, "an attacker saw a wrong answer");
    check(&mut ok, failures == 0, "probes failed");
    check(&mut ok, p99 <= 50.0, "probe p99 over 50 ms");
    println!(
        "soak: RSS peak {:.2} MiB over the warm baseline (bound {:.0} MiB)",
        mib(rss_peak.saturating_sub(rss_before)),
        mib(PEAK_OVER_WARM)
    );
    check(
        &mut ok,
        rss_peak <= rss_before + PEAK_OVER_WARM,
        "RSS peaked too far over the warm baseline",
    );
    check(
        &mut ok,
        fds_after <= fds_before,
        "descriptors not back to the baseline",
    );
    check(
        &mut ok,
        rss_after as f64 <= rss_before as f64 * 1.10,
        "RSS not back within 10% of the warm baseline after the attack",
    );
    if ok {
        println!("soak: passed");
    }
    ok
}

fn check(ok: &mut bool, good: bool, what: &str) {
    if !good {
        println!("soak: FAIL: {what}");
        *ok = false;
    }
}

/// Every attacker's round.
fn attacks(port: u16) -> Vec<(&'static str, Round)> {
    let mut attacks: Vec<(&'static str, Round)> = Vec::new();

    attacks.push((
        "slowloris",
        Box::new(move || {
            let mut held: Vec<TcpStream> = (0..100).filter_map(|_| connect(port)).collect();
            for byte in b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ".iter().take(5) {
                for c in &mut held {
                    let _ = c.write_all(&[*byte]);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            held.clear();
        }),
    ));
    attacks.push((
        "reset mid-head",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let _ = c.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\nX-Par");
                reset(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }),
    ));
    attacks.push((
        "reset mid-body",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let _ =
                    c.write_all(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
                let _ = c.write_all(&[b'b'; 30_000]);
                reset(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }),
    ));
    attacks.push((
        "half-close",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let _ =
                    c.write_all(b"POST /h HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
                let _ = c.shutdown(Shutdown::Write);
                let reply = read_to_end_quietly(&mut c);
                assert!(reply.ends_with(b"hello"), "half-closed request answered");
            }
            std::thread::sleep(Duration::from_millis(5));
        }),
    ));
    attacks.push((
        "non-reader",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let body = vec![b'n'; 64 * 1024];
                let head = format!(
                    "POST /n HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                let _ = c.set_write_timeout(Some(Duration::from_millis(500)));
                for _ in 0..64 {
                    if c.write_all(head.as_bytes()).is_err() || c.write_all(&body).is_err() {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }),
    ));
    attacks.push((
        "pipelined burst",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let burst = b"GET /p HTTP/1.1\r\nHost: t\r\n\r\n".repeat(200);
                let _ = c.write_all(&burst);
                let _ = c.write_all(b"GET /p HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
                let reply = read_to_end_quietly(&mut c);
                let answered = reply
                    .windows(15)
                    .filter(|w| w == b"HTTP/1.1 200 OK")
                    .count();
                assert_eq!(answered, 201, "every pipelined request answered");
            }
        }),
    ));
    attacks.push((
        "oversize",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let head = format!(
                    "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
                    "h".repeat(32 * 1024)
                );
                let _ = c.write_all(head.as_bytes());
                let reply = read_to_end_quietly(&mut c);
                assert!(reply.starts_with(b"HTTP/1.1 431 ") || reply.is_empty());
            }
            if let Some(mut c) = connect(port) {
                let _ =
                    c.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n");
                let reply = read_to_end_quietly(&mut c);
                assert!(reply.starts_with(b"HTTP/1.1 413 "));
            }
            std::thread::sleep(Duration::from_millis(20));
        }),
    ));
    attacks.push((
        "websocket drop",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let _ = c.write_all(&ws_handshake_request("127.0.0.1", "/ws"));
                let mut head = [0u8; 256];
                let _ = c.read(&mut head);
                let frame = client_frame(&"w".repeat(1000));
                let _ = c.write_all(&frame[..frame.len() / 2]);
                reset(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }),
    ));
    attacks.push((
        "websocket non-reader",
        Box::new(move || {
            if let Some(mut c) = connect(port) {
                let _ = c.write_all(&ws_handshake_request("127.0.0.1", "/ws"));
                let frame = client_frame(&"r".repeat(60_000));
                let _ = c.set_write_timeout(Some(Duration::from_millis(500)));
                for _ in 0..200 {
                    if c.write_all(&frame).is_err() {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }),
    ));
    attacks.push((
        "lagging reader",
        Box::new(move || {
            // Reads at most 64 KiB every 20 ms (3.2 MB/s) from a room fed 3.2 MB/s and more:
            // always a little behind, for 3 s.
            if let Some(mut c) = connect(port) {
                let _ = c.write_all(&ws_handshake_request("127.0.0.1", "/feed"));
                let mut chunk = vec![0u8; 64 * 1024];
                let until = Instant::now() + Duration::from_secs(3);
                while Instant::now() < until && c.read(&mut chunk).is_ok_and(|n| n > 0) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }),
    ));
    attacks.push((
        "lagging-reader flood",
        Box::new(move || {
            // 16 members of the room, WebSocket and event streams, each reading 16 KiB every
            // 20 ms (0.8 MB/s) from a room fed 3.2 MB/s: ever further behind, for 3 s.
            let mut flood: Vec<TcpStream> = (0..16)
                .filter_map(|i| {
                    let mut c = connect(port)?;
                    let path = if i % 2 == 0 { "/feed" } else { "/feed-events" };
                    let request = match path {
                        "/feed" => ws_handshake_request("127.0.0.1", path),
                        _ => format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes(),
                    };
                    c.write_all(&request).ok()?;
                    c.set_read_timeout(Some(Duration::from_millis(100))).ok()?;
                    Some(c)
                })
                .collect();
            let mut chunk = vec![0u8; 16 * 1024];
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until {
                flood.retain_mut(|c| c.read(&mut chunk).is_ok_and(|n| n > 0));
                std::thread::sleep(Duration::from_millis(20));
            }
        }),
    ));
    attacks.push((
        "non-reading long-poll and replay crowd",
        Box::new(move || {
            // 40 long-polls answered with 320 KB each and 40 event streams sent the same
            // history, none read: held by the output budget (replies shed past their share,
            // replays shared).
            let crowd: Vec<TcpStream> = (0..80)
                .filter_map(|i| {
                    let mut c = connect(port)?;
                    let path = if i % 2 == 0 { "/poll" } else { "/history" };
                    write!(c, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").ok()?;
                    Some(c)
                })
                .collect();
            std::thread::sleep(Duration::from_secs(4));
            drop(crowd);
        }),
    ));
    attacks.push((
        "non-reading crowd",
        Box::new(move || {
            let crowd: Vec<TcpStream> = (0..40)
                .filter_map(|_| {
                    let mut c = connect(port)?;
                    c.write_all(&ws_handshake_request("127.0.0.1", "/feed"))
                        .ok()?;
                    Some(c)
                })
                .collect();
            // Longer than the kernel's socket buffers take the room's output for.
            std::thread::sleep(Duration::from_secs(8));
            drop(crowd);
        }),
    ));
    attacks
}
