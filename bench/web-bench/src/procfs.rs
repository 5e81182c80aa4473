//! What Linux says about a process and the kernel's memory: resident memory of a process and
//! its descendants, the slab caches, TCP's pages, the descriptor limit.

use std::collections::HashMap;
use std::io;
use std::time::{Duration, Instant};

/// Resident memory of `pid` and every process descended from it, in bytes.
pub fn rss(pid: u32) -> io::Result<u64> {
    let mut total = 0;
    for p in tree(pid) {
        let status = match std::fs::read_to_string(format!("/proc/{p}/status")) {
            Ok(s) => s,
            Err(e) if p == pid => return Err(e),
            Err(_) => continue, // a child that ended meanwhile
        };
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
    }
    Ok(total)
}

/// `pid` and its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let p = all[i];
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for task in tasks.flatten() {
                let children =
                    std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
                all.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
        i += 1;
    }
    all
}

/// Threads of `pid`.
pub fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

/// Whether `pid` is running.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// RSS of `pid` once it stops moving: read every 0.5 s until two reads in a row move by less
/// than 0.2 % (or 64 KiB), at most `max`. Every read, in order.
pub fn settle(pid: u32, max: Duration) -> io::Result<Vec<u64>> {
    let start = Instant::now();
    let mut reads = vec![rss(pid)?];
    let mut steady = 0;
    while start.elapsed() < max && steady < 2 {
        std::thread::sleep(Duration::from_millis(500));
        let now = rss(pid)?;
        let prev = *reads.last().unwrap_or(&now);
        if now.abs_diff(prev) <= (prev / 500).max(64 * 1024) {
            steady += 1;
        } else {
            steady = 0;
        }
        reads.push(now);
    }
    Ok(reads)
}

/// Bytes in use per slab cache (`/proc/slabinfo`: active objects × object size); `None` where
/// it cannot be read (it needs root).
pub fn slabs() -> Option<HashMap<String, u64>> {
    let text = std::fs::read_to_string("/proc/slabinfo").ok()?;
    Some(parse_slabinfo(&text))
}

fn parse_slabinfo(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("slabinfo"))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?;
            let active: u64 = f.next()?.parse().ok()?;
            let _total = f.next()?;
            let size: u64 = f.next()?.parse().ok()?;
            Some((name.to_owned(), active * size))
        })
        .collect()
}

/// Pages TCP sockets hold for their buffers (`/proc/net/sockstat`, `TCP: … mem N`).
pub fn tcp_pages() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let tcp = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut f = tcp.split_whitespace();
    while let Some(word) = f.next() {
        if word == "mem" {
            return f.next()?.parse().ok();
        }
    }
    None
}

/// Raises this process's descriptor limit towards `want` (as far as the hard limit allows):
/// the soft limit now, and the hard limit.
pub fn raise_nofile(want: u64) -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the call's duration.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return (0, 0);
    }
    let target = want.min(lim.rlim_max);
    if lim.rlim_cur < target {
        let raised = libc::rlimit {
            rlim_cur: target,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit; the call only reads it.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = target;
        }
    }
    (lim.rlim_cur, lim.rlim_max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabinfo_lines_give_bytes_per_cache() {
        let text = "slabinfo - version: 2.1\n\
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables\n\
TCP                  120    130   2368   13    8 : tunables    0    0    0\n\
filp                1000   1100    256   16    1 : tunables    0    0    0\n\
broken line\n";
        let slabs = parse_slabinfo(text);
        assert_eq!(slabs.get("TCP"), Some(&(120 * 2368)));
        assert_eq!(slabs.get("filp"), Some(&256_000));
        assert_eq!(slabs.len(), 2);
    }

    #[test]
    fn this_process_is_seen() {
        let me = std::process::id();
        assert!(rss(me).unwrap() > 0);
        assert!(threads(me) >= 1);
        assert!(alive(me));
        let (soft, hard) = raise_nofile(64);
        assert!(soft >= 64.min(hard));
    }
}
