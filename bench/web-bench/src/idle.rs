//! `web-bench idle`: what an idle connection costs a running server.
//!
//! The server's resident memory (with its descendants') is read once it is steady; then `n`
//! connections are opened, one request or handshake completed on each, and held; once the
//! memory is steady again, the growth divided by the connections held is the user-space cost
//! of one. Where `/proc/slabinfo` is readable (root), the kernel's slab caches are read at the
//! same moments: their growth per connection counts **both ends** of every loopback
//! connection (the client's sockets are on this host too). Then every connection is closed and
//! what the server gave back is read.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::conns::{self, Held, Kind, Target};
use crate::procfs;
use crate::report::Progress;

/// The slab caches a TCP connection grows, named in the report (all are summed).
const NAMED_CACHES: &[&str] = &[
    "TCP",
    "sock_inode_cache",
    "filp",
    "dentry",
    "eventpoll_epi",
    "eventpoll_pwq",
    "skbuff_head_cache",
];

/// What to measure.
pub struct Plan {
    pub pid: u32,
    pub target: Target,
    pub kind: Kind,
    pub n: usize,
    /// Longest the whole run may take.
    pub budget: Duration,
    /// Each connection's own limit (connect, request, reply).
    pub timeout: Duration,
}

/// Runs `plan`: the record (see the module's notes).
pub fn measure(plan: &Plan, progress: &mut Progress) -> io::Result<Value> {
    let started = Instant::now();
    let pid = plan.pid;
    if !procfs::alive(pid) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no process {pid}"),
        ));
    }
    // Descriptors are sockets: with event streams on HTTP/2, one per connection of
    // STREAMS_PER_H2 - 1 streams, not one per stream.
    let sockets = |streams: usize| match plan.kind {
        Kind::H2Sse => streams.div_ceil(conns::STREAMS_PER_H2 - 1),
        _ => streams,
    };
    let (soft, hard) = procfs::raise_nofile(sockets(plan.n) as u64 + 64);
    let room = soft.saturating_sub(64) as usize;
    let n = match plan.kind {
        Kind::H2Sse => plan.n.min(room.saturating_mul(conns::STREAMS_PER_H2 - 1)),
        _ => plan.n.min(room),
    };
    let capped = n < plan.n;
    if capped {
        progress.say(&format!(
            "descriptor limit {soft} (hard {hard}): holding {n} of {} ({} sockets)",
            plan.n,
            sockets(n)
        ));
    }
    let tls = conns::tls_config();
    // Warm: what a server allocates on its first connections is not any connection's cost.
    for i in 0..10 {
        drop(conns::open(plan.kind, &plan.target, i, &tls, plan.timeout)?);
    }
    // With event streams on HTTP/2, their connections (each with its first stream) are open
    // before the first reading: what is measured is what each further stream adds.
    let mut connections: Vec<Held> = Vec::new();
    if plan.kind == Kind::H2Sse {
        for i in 0..n.div_ceil(conns::STREAMS_PER_H2 - 1) {
            connections.push(conns::open(plan.kind, &plan.target, i, &tls, plan.timeout)?);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = procfs::settle(pid, Duration::from_secs(20))?;
    let (slabs0, tcp0, threads0) = (procfs::slabs(), procfs::tcp_pages(), procfs::threads(pid));
    let mut held: Vec<Held> = Vec::with_capacity(n);
    let mut streams = 0;
    let (mut failed, mut first_error) = (0usize, None::<String>);
    let opening = Instant::now();
    for i in 0..n {
        if started.elapsed() > plan.budget {
            first_error.get_or_insert_with(|| format!("the budget of {:?} ran out", plan.budget));
            break;
        }
        let opened = match plan.kind {
            Kind::H2Sse => {
                // Stream 3, 5, … of connection i / 99 (stream 1 opened it).
                let per = conns::STREAMS_PER_H2 - 1;
                let stream = 3 + 2 * (i % per) as u32;
                let c = &mut connections[i / per];
                match c {
                    Held::Plain(s) => conns::h2_event_stream(s, &plan.target, stream),
                    Held::Tls(t) => conns::h2_event_stream(&mut **t, &plan.target, stream),
                }
                .map(|()| None)
            }
            _ => conns::open(plan.kind, &plan.target, i, &tls, plan.timeout).map(Some),
        };
        match opened {
            Ok(Some(c)) => held.push(c),
            Ok(None) => streams += 1,
            Err(e) => {
                failed += 1;
                first_error.get_or_insert_with(|| format!("connection {i}: {e}"));
                if failed >= 50 || !procfs::alive(pid) {
                    break;
                }
            }
        }
        if (i + 1) % 500 == 0 {
            progress.line(&format!("{} of {n} connections open", i + 1));
        }
    }
    let open_seconds = opening.elapsed().as_secs_f64();
    if !procfs::alive(pid) {
        progress.done();
        return Err(io::Error::other(format!(
            "the server exited after {} connections ({})",
            held.len(),
            first_error.as_deref().unwrap_or("no error seen")
        )));
    }
    progress.line(&format!(
        "{} open; waiting for the memory to settle",
        held.len()
    ));
    let during = procfs::settle(pid, Duration::from_secs(20))?;
    let (slabs1, tcp1, threads1) = (procfs::slabs(), procfs::tcp_pages(), procfs::threads(pid));
    let closed_by_server = closed(&held) + closed(&connections);
    let count = held.len() + streams;
    drop(held);
    drop(connections);
    progress.line("closed; waiting for the memory to settle");
    std::thread::sleep(Duration::from_secs(1));
    let after = procfs::settle(pid, Duration::from_secs(20))?;
    let tcp2 = procfs::tcp_pages();
    progress.done();

    let last = |v: &[u64]| *v.last().unwrap_or(&0);
    let (rss0, rss1, rss2) = (last(&before), last(&during), last(&after));
    let per = |bytes: i64| (count > 0).then(|| bytes as f64 / count as f64);
    let kernel = match (&slabs0, &slabs1) {
        (Some(s0), Some(s1)) => {
            let grown = |name: &str| {
                s1.get(name).copied().unwrap_or(0) as i64
                    - s0.get(name).copied().unwrap_or(0) as i64
            };
            let total: i64 = s1
                .keys()
                .chain(s0.keys())
                .collect::<std::collections::HashSet<_>>()
                .into_iter()
                .map(|name| grown(name))
                .sum();
            let caches: serde_json::Map<String, Value> = NAMED_CACHES
                .iter()
                .map(|&c| (c.to_owned(), json!(per(grown(c)))))
                .collect();
            json!({
                "bytes_per_connection_both_ends": per(total),
                "caches_per_connection": caches,
                "note": "slab growth on this host while the connections were held: both ends of each loopback connection",
            })
        }
        _ => Value::Null,
    };
    Ok(json!({
        "tool": "web-bench idle",
        "kind": plan.kind.name(),
        "unit": if plan.kind == Kind::H2Sse { "stream, beyond its connection" } else { "connection" },
        "url": format!("{}{}", plan.target.addr, plan.target.path),
        "pid": pid,
        "requested": plan.n,
        "held": count,
        "failed": failed,
        "first_error": first_error,
        "descriptors": { "soft": soft, "hard": hard, "capped": capped },
        "open_seconds": open_seconds,
        "rss_before": rss0,
        "rss_held": rss1,
        "rss_closed": rss2,
        "rss_samples": { "before": before, "held": during, "closed": after },
        "bytes_per_connection": per(rss1 as i64 - rss0 as i64),
        "given_back_after_close": rss1 as i64 - rss2 as i64,
        "closed_by_server": closed_by_server,
        "threads": [threads0, threads1],
        "tcp_buffer_pages": [tcp0, tcp1, tcp2],
        "kernel": kernel,
    }))
}

/// How many of `held` the server has closed: its end of the stream seen, or the socket broken.
fn closed(held: &[Held]) -> usize {
    let mut fds: Vec<libc::pollfd> = held
        .iter()
        .map(|h| libc::pollfd {
            fd: h.socket().as_raw_fd(),
            // The server's end of the stream, not data it sent (an echo of `--send`, a TLS
            // session ticket): readable is not closed.
            events: libc::POLLRDHUP,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a valid, writable array of `fds.len()` pollfds for the call's duration.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if ready <= 0 {
        return 0;
    }
    let gone = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
    fds.iter().filter(|f| f.revents & gone != 0).count()
}

/// The record as lines a person reads.
pub fn describe(r: &Value) -> String {
    let num = |k: &str| r[k].as_f64().unwrap_or(0.0);
    let mib = |k: &str| num(k) / (1 << 20) as f64;
    let mut out = format!(
        "{} connections of {} ({} held, {} failed, {} closed by the server), to {}\n",
        r["requested"],
        r["kind"].as_str().unwrap_or(""),
        r["held"],
        r["failed"],
        r["closed_by_server"],
        r["url"].as_str().unwrap_or("")
    );
    match r["bytes_per_connection"].as_f64() {
        Some(b) => out.push_str(&format!(
            "user space: {b:.1} B per idle {} (RSS {:.1} → {:.1} MiB held → {:.1} MiB closed)\n",
            r["unit"].as_str().unwrap_or("connection"),
            mib("rss_before"),
            mib("rss_held"),
            mib("rss_closed")
        )),
        None => out.push_str("user space: no connection held\n"),
    }
    match r["kernel"]["bytes_per_connection_both_ends"].as_f64() {
        Some(k) => {
            out.push_str(&format!(
                "kernel: {k:.0} B of slab per connection, both ends on this host ("
            ));
            let caches = r["kernel"]["caches_per_connection"].as_object();
            let parts: Vec<String> = caches
                .into_iter()
                .flatten()
                .filter_map(|(name, v)| v.as_f64().map(|b| format!("{name} {b:.0}")))
                .collect();
            out.push_str(&parts.join(", "));
            out.push_str(")\n");
        }
        None => out.push_str("kernel: /proc/slabinfo is not readable (it needs root)\n"),
    }
    if r["descriptors"]["capped"].as_bool() == Some(true) {
        out.push_str(&format!(
            "capped by the descriptor limit: soft {} hard {}\n",
            r["descriptors"]["soft"], r["descriptors"]["hard"]
        ));
    }
    if let Some(e) = r["first_error"].as_str() {
        out.push_str(&format!("first error: {e}\n"));
    }
    out
}
