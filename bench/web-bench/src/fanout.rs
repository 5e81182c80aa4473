//! `web-bench fanout`: one publish to N idle members of a room — when each member has it, and
//! what it cost the server's CPU per member.
//!
//! The members connect as `idle` opens connections (sources spread over 127.0.0.2-250), over
//! one or several server processes (`--url` and `--pid` lists, the members dealt round-robin):
//! what one process's descriptor limit cannot hold, several can. Each round sends one `POST`
//! of a 32-byte body to each server (its publish path), then reads every member on one thread
//! with `epoll` until each has the body: the times are the client's (its reading shares the
//! machine), the CPU is each server's own (`/proc/PID/task/*/schedstat`, nanoseconds).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::{Value, json};

use crate::conns::{self, Held, Kind, Target};
use crate::peers::{self, Running};
use crate::procfs;
use crate::report::{self, Progress};

/// One server process the members are spread over.
pub struct Server {
    pub pid: u32,
    pub target: Target,
    /// The path a `POST` publishes to.
    pub publish: String,
}

/// What to measure.
pub struct Plan {
    pub servers: Vec<Server>,
    pub kind: Kind,
    pub n: usize,
    pub rounds: usize,
    pub budget: Duration,
    pub timeout: Duration,
}

/// A member's connection and how many of the round's bodies it still waits for (an HTTP/2
/// connection carries several members).
struct Holder {
    held: Held,
    members: usize,
    seen: usize,
    carry: Vec<u8>,
}

/// Opens the members; the connections that hold them.
fn open(plan: &Plan, n: usize, progress: &mut Progress) -> io::Result<Vec<Holder>> {
    let tls = conns::tls_config();
    let per_h2 = conns::STREAMS_PER_H2;
    let mut holders: Vec<Holder> = Vec::new();
    let started = Instant::now();
    let mut i = 0;
    while i < n {
        if started.elapsed() > plan.budget {
            return Err(io::Error::other(format!(
                "the budget ran out after {i} members"
            )));
        }
        let server = &plan.servers[holders.len() % plan.servers.len()];
        let mut held = conns::open(plan.kind, &server.target, i, &tls, plan.timeout)?;
        let mut members = 1;
        if plan.kind == Kind::H2Sse {
            // Streams 3, 5, … of this connection (stream 1 opened it), up to its share.
            while members < per_h2 && i + members < n {
                let stream = 1 + 2 * members as u32;
                match &mut held {
                    Held::Plain(s) => conns::h2_event_stream(s, &server.target, stream)?,
                    Held::Tls(t) => conns::h2_event_stream(&mut **t, &server.target, stream)?,
                }
                members += 1;
            }
        }
        i += members;
        holders.push(Holder {
            held,
            members,
            seen: 0,
            carry: Vec::new(),
        });
        if holders.len().is_multiple_of(1000) {
            progress.line(&format!("{i} members of {n}"));
        }
    }
    Ok(holders)
}

/// Each server's CPU time so far, in nanoseconds (all its threads).
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// `POST path` with `body` to `target`'s address, on a connection of its own; the status.
fn publish(target: &Target, path: &str, body: &str, timeout: Duration) -> io::Result<u16> {
    let mut s = TcpStream::connect_timeout(&target.addr.into(), timeout)?;
    s.set_read_timeout(Some(timeout))?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        target.host,
        body.len()
    )?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head)?;
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an HTTP reply"))
}

/// Occurrences of `marker` in what `holder` read now, after what it had read before.
fn count(holder: &mut Holder, data: &[u8], marker: &[u8]) -> usize {
    let mut joined = std::mem::take(&mut holder.carry);
    joined.extend_from_slice(data);
    let found = joined
        .windows(marker.len())
        .filter(|w| *w == marker)
        .count();
    let keep = joined.len().min(marker.len() - 1);
    holder.carry = joined[joined.len() - keep..].to_vec();
    found
}

/// One round: the publish, then every member read until it has the body. Each member's
/// arrival after the publish, sorted; each server's CPU for the round.
fn round(
    plan: &Plan,
    holders: &mut [Holder],
    poll: &mut Poll,
    r: usize,
) -> io::Result<(Vec<Duration>, u64)> {
    let marker = format!("fanout{r:04}-");
    let body = format!("{marker:x<32}");
    for h in holders.iter_mut() {
        h.seen = 0;
        h.carry.clear();
    }
    let cpu0: u64 = plan.servers.iter().map(|s| cpu_ns(s.pid)).sum();
    let begun = Instant::now();
    for server in &plan.servers {
        let status = publish(&server.target, &server.publish, &body, plan.timeout)?;
        if !(200..300).contains(&status) {
            return Err(io::Error::other(format!(
                "POST {} answered {status}",
                server.publish
            )));
        }
    }
    let members: usize = holders.iter().map(|h| h.members).sum();
    let mut arrivals = Vec::with_capacity(members);
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    // Edge-triggered: each holder is read until it would block, also once at the start.
    let mut ready: Vec<usize> = (0..holders.len()).collect();
    while arrivals.len() < members {
        if begun.elapsed() > plan.timeout * 3 {
            return Err(io::Error::other(format!(
                "{} of {members} members had the publish after {:?}",
                arrivals.len(),
                begun.elapsed()
            )));
        }
        for &at in &ready {
            let h = &mut holders[at];
            loop {
                let got = match &mut h.held {
                    Held::Plain(s) => s.read(&mut buf),
                    Held::Tls(t) => t.read(&mut buf),
                };
                match got {
                    Ok(0) => return Err(io::Error::other("a member's connection ended")),
                    Ok(k) => {
                        let found = count(h, &buf[..k], marker.as_bytes());
                        let now = begun.elapsed();
                        for _ in 0..found.min(h.members - h.seen) {
                            arrivals.push(now);
                        }
                        h.seen = (h.seen + found).min(h.members);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        ready.clear();
        if arrivals.len() < members {
            poll.poll(&mut events, Some(Duration::from_millis(100)))?;
            ready.extend(events.iter().map(|e| e.token().0));
        }
    }
    // The server's last writes were read: what it still does for the round is bookkeeping.
    std::thread::sleep(Duration::from_millis(50));
    let cpu = plan
        .servers
        .iter()
        .map(|s| cpu_ns(s.pid))
        .sum::<u64>()
        .saturating_sub(cpu0);
    arrivals.sort();
    Ok((arrivals, cpu))
}

pub fn measure(plan: &Plan, progress: &mut Progress) -> io::Result<Value> {
    for s in &plan.servers {
        if !procfs::alive(s.pid) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no process {}", s.pid),
            ));
        }
    }
    let sockets = match plan.kind {
        Kind::H2Sse => plan.n.div_ceil(conns::STREAMS_PER_H2),
        _ => plan.n,
    };
    let (soft, hard) = procfs::raise_nofile(sockets as u64 + 64);
    let room = soft.saturating_sub(64) as usize;
    let n = match plan.kind {
        Kind::H2Sse => plan.n.min(room.saturating_mul(conns::STREAMS_PER_H2)),
        _ => plan.n.min(room),
    };
    if n < plan.n {
        progress.say(&format!(
            "descriptor limit {soft} (hard {hard}): {n} members, not {}",
            plan.n
        ));
    }
    let mut holders = open(plan, n, progress)?;
    let mut poll = Poll::new()?;
    for (at, h) in holders.iter().enumerate() {
        let socket = h.held.socket();
        socket.set_nonblocking(true)?;
        poll.registry().register(
            &mut SourceFd(&socket.as_raw_fd()),
            Token(at),
            Interest::READABLE,
        )?;
    }
    // What the opening left to read (heads, first events) is read before the first round.
    std::thread::sleep(Duration::from_millis(300));
    drain(&mut holders);
    let mut rounds = Vec::new();
    for r in 0..plan.rounds {
        progress.line(&format!("round {} of {}", r + 1, plan.rounds));
        let (arrivals, cpu) = round(plan, &mut holders, &mut poll, r)?;
        let at = |q: f64| {
            let i = ((arrivals.len() - 1) as f64 * q).round() as usize;
            arrivals[i].as_secs_f64() * 1e3
        };
        rounds.push(json!({
            "first_ms": at(0.0),
            "median_ms": at(0.5),
            "last_ms": at(1.0),
            "server_cpu_ms": cpu as f64 / 1e6,
            "server_cpu_us_per_member": cpu as f64 / 1e3 / n as f64,
        }));
        std::thread::sleep(Duration::from_millis(500));
        drain(&mut holders);
    }
    progress.done();
    Ok(json!({
        "kind": plan.kind.name(),
        "members": n,
        "connections": holders.len(),
        "servers": plan.servers.len(),
        "rounds": rounds,
    }))
}

/// `web-bench fanout --compare`: each server of [`peers::ROOMS`] started in turn (one worker,
/// pinned to CPU 0; the members read on CPU 1), `n` WebSocket members, `rounds` publishes,
/// the whole repeated `repeats` times with the order reversed every other time. The record
/// has every round's server CPU per member, per server and repeat.
pub fn compare(
    n: usize,
    rounds: usize,
    repeats: usize,
    progress: &mut Progress,
) -> io::Result<Value> {
    crate::load::pin_to(1);
    let mut runs = Vec::new();
    for repeat in 0..repeats {
        let mut servers: Vec<&peers::Peer> = peers::ROOMS.iter().collect();
        if repeat % 2 == 1 {
            servers.reverse();
        }
        for peer in servers {
            progress.line(&format!(
                "repeat {} of {repeats}: {}",
                repeat + 1,
                peer.name
            ));
            let running = Running::start(peer, 0, false)?;
            let target = Target::parse(&format!("ws://127.0.0.1:{}/events", running.port))
                .map_err(io::Error::other)?;
            let plan = Plan {
                servers: vec![Server {
                    pid: running.pid(),
                    target,
                    publish: "/events".into(),
                }],
                kind: Kind::Ws,
                n,
                rounds,
                budget: Duration::from_secs(600),
                timeout: Duration::from_secs(10),
            };
            let record = measure(&plan, progress)?;
            let per_member: Vec<f64> = record["rounds"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|x| x["server_cpu_us_per_member"].as_f64())
                        .collect()
                })
                .unwrap_or_default();
            runs.push(json!({
                "server": peer.name,
                "repeat": repeat,
                "members": record["members"],
                "server_cpu_us_per_member": per_member,
            }));
        }
    }
    progress.done();
    Ok(json!({ "kind": "ws", "members": n, "rounds": rounds, "runs": runs }))
}

/// The median of `v` (`NaN` when empty).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The record of [`compare`] as a table: each server's CPU per member (every round of every
/// repeat: least, median, most), and its median against `web`'s, per repeat (least–most).
pub fn describe_compare(r: &Value) -> String {
    let runs = r["runs"].as_array().cloned().unwrap_or_default();
    let rounds_of = |server: &str, repeat: Option<u64>| -> Vec<f64> {
        runs.iter()
            .filter(|x| x["server"] == server && repeat.is_none_or(|p| x["repeat"] == p))
            .flat_map(|x| {
                x["server_cpu_us_per_member"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|v| v.as_f64())
            .collect()
    };
    let repeats = runs
        .iter()
        .filter_map(|x| x["repeat"].as_u64())
        .max()
        .map_or(0, |m| m + 1);
    let mut rows = Vec::new();
    for peer in peers::ROOMS {
        let mut all = rounds_of(peer.name, None);
        if all.is_empty() {
            continue;
        }
        let least = all.iter().copied().fold(f64::INFINITY, f64::min);
        let most = all.iter().copied().fold(0.0, f64::max);
        let ratios: Vec<f64> = (0..repeats)
            .map(|p| {
                median(&mut rounds_of(peer.name, Some(p))) / median(&mut rounds_of("web", Some(p)))
            })
            .filter(|x| x.is_finite())
            .collect();
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
        rows.push(vec![
            peer.name.to_string(),
            format!("{least:.2}"),
            format!("{:.2}", median(&mut all)),
            format!("{most:.2}"),
            format!("{lo:.2}–{hi:.2}"),
        ]);
    }
    let mut out = format!(
        "{} WebSocket members, one 32-byte publish a round, {} rounds, {repeats} repeat(s); \
         server CPU per member (µs), one worker on CPU 0\n",
        r["members"], r["rounds"]
    );
    out.push_str(&report::table(
        &[
            "server",
            "least",
            "median",
            "most",
            "median ÷ web's (per repeat)",
        ],
        &rows,
    ));
    out
}

/// Reads and drops whatever the holders have now.
fn drain(holders: &mut [Holder]) {
    let mut buf = vec![0u8; 64 * 1024];
    for h in holders {
        loop {
            let got = match &mut h.held {
                Held::Plain(s) => s.read(&mut buf),
                Held::Tls(t) => t.read(&mut buf),
            };
            if !matches!(got, Ok(k) if k > 0) {
                break;
            }
        }
    }
}

/// The record as a table.
pub fn describe(r: &Value) -> String {
    let mut out = format!(
        "{} members ({}) on {} connection(s) of {} server process(es): one 32-byte publish\n",
        r["members"],
        r["kind"].as_str().unwrap_or("?"),
        r["connections"],
        r["servers"]
    );
    let rows: Vec<Vec<String>> = r["rounds"]
        .as_array()
        .map(|rounds| {
            rounds
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let f = |k: &str| format!("{:.2}", x[k].as_f64().unwrap_or(f64::NAN));
                    vec![
                        (i + 1).to_string(),
                        f("first_ms"),
                        f("median_ms"),
                        f("last_ms"),
                        f("server_cpu_ms"),
                        f("server_cpu_us_per_member"),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    out.push_str(&report::table(
        &[
            "round",
            "first ms",
            "median ms",
            "last ms",
            "server CPU ms",
            "server CPU µs/member",
        ],
        &rows,
    ));
    out
}
