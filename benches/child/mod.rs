//! A server in a child process, for the load benchmarks: the benchmark program re-runs itself
//! with an environment variable set, the child serves and prints its port, the parent measures
//! it (its memory and CPU are its own, and each process has its own descriptor limit), and the
//! child ends when the parent closes its standard input.

#![allow(dead_code)] // each benchmark uses a different part of it

pub mod h2;
pub mod rooms;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

/// In the child (`env` set): runs `serve`, which must call [`serve_until_stdin_closes`].
/// In the parent: starts the child, runs `measure` with its port and process, stops the child;
/// returns what `measure` returned (a panic in it is passed on after the child is stopped).
pub fn run<T>(env: &str, serve: impl FnOnce(), measure: impl FnOnce(u16, &mut Child) -> T) -> T {
    run_with(env, &[], serve, measure)
}

/// [`run`], with `vars` set in the child's environment (and only there: the parent's own
/// environment is never changed while its threads may read it).
pub fn run_with<T>(
    env: &str,
    vars: &[(&str, &str)],
    serve: impl FnOnce(),
    measure: impl FnOnce(u16, &mut Child) -> T,
) -> T {
    if std::env::var_os(env).is_some() {
        serve();
        std::process::exit(0);
    }
    let mut child = Command::new(std::env::current_exe().expect("this program's path"))
        .env(env, "1")
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the child server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("the child prints its port");
    let port: u16 = line.trim().parse().expect("a port");
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| measure(port, &mut child)));
    drop(child.stdin.take());
    let _ = child.wait();
    result.unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// In the child: prints the port, then serves until the parent closes standard input.
pub fn serve_until_stdin_closes(port: u16) {
    println!("{port}");
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

/// A `kB` figure of `/proc/<pid>/status` (`"VmRSS:"`, `"RssAnon:"`, ...); 0 when unreadable.
pub fn status_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0)
}

/// This process's CPU time (user + system), in microseconds.
pub fn cpu_micros() -> i64 {
    // SAFETY: getrusage(2) writes into the zeroed struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let micros = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    micros(u.ru_utime) + micros(u.ru_stime)
}

/// A global allocator that counts: a benchmark installs it with
/// `#[global_allocator] static GLOBAL: child::Counting = child::Counting;` and reads
/// [`allocations`] and [`live_bytes`].
pub struct Counting;

static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LIVE_BYTES: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
static LIVE_BLOCKS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only
// atomics.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE_BLOCKS.fetch_add(1, Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
        LIVE_BLOCKS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

/// Heap allocations (and reallocations) since the start, with [`Counting`] installed.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Heap blocks (allocations not yet freed) now, with [`Counting`] installed.
pub fn live_blocks() -> i64 {
    LIVE_BLOCKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Heap bytes in use now, with [`Counting`] installed.
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Raises this process's open-file limit to its hard limit (a child started afterwards
/// inherits it); returns the limit now in force. Idle connections need one descriptor each,
/// on both sides.
pub fn raise_open_files() -> u64 {
    // SAFETY: getrlimit/setrlimit read or write exactly one `rlimit`, a live local here.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        limit.rlim_cur
    }
}

/// Connection number `n` to 127.0.0.1:`port`, from source address 127.0.0.`2 + n % 200`, so
/// that tens of thousands of connections (and their TIME_WAITs) never exhaust one address's
/// ports.
pub fn connect_from_spread(port: u16, n: usize) -> std::net::TcpStream {
    use std::net::{Ipv4Addr, SocketAddrV4};
    use std::os::fd::FromRawFd;
    let src = Ipv4Addr::new(127, 0, 0, 2 + (n % 200) as u8);
    // SAFETY: plain socket calls on a descriptor this function owns; the address structs are
    // fully initialised and passed with their sizes. On success the descriptor is handed to a
    // `TcpStream`, which owns it from then on; on failure it is closed here.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let sockaddr = |a: SocketAddrV4| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: a.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*a.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let from = sockaddr(SocketAddrV4::new(src, 0));
        let to = sockaddr(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        if libc::bind(fd, (&from as *const libc::sockaddr_in).cast(), len) != 0
            || libc::connect(fd, (&to as *const libc::sockaddr_in).cast(), len) != 0
        {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            panic!("connect from {src}: {e}");
        }
        std::net::TcpStream::from_raw_fd(fd)
    }
}

/// Reads `conn` until `end` has arrived (a head, an event); what came. Panics if the
/// connection ends first.
pub fn read_until(conn: &mut impl Read, end: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(end.len()).any(|w| w == end) {
        let n = conn.read(&mut buf).expect("the server answers");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// What a child server reports of itself: `allocations live_heap_bytes cpu_micros rss_kib`
/// (with [`Counting`] installed), as [`stats_line`] writes it and [`ProcessStats::parse`]
/// reads it back.
#[derive(Clone, Copy, Debug)]
pub struct ProcessStats {
    pub allocations: u64,
    pub heap: i64,
    pub cpu_micros: i64,
    pub rss_kib: u64,
}

/// This process's [`ProcessStats`], as one line.
pub fn stats_line() -> String {
    format!(
        "{} {} {} {}",
        allocations(),
        live_bytes(),
        cpu_micros(),
        status_kib("self", "VmRSS:")
    )
}

/// One request to the child on 127.0.0.1:`port`, on a connection of its own; the reply's body.
pub fn http(port: u16, request: &str) -> String {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the child listens");
    conn.write_all(request.as_bytes()).expect("the child reads");
    let mut reply = String::new();
    conn.read_to_string(&mut reply).expect("the child answers");
    reply
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

/// The child's [`ProcessStats`], as its `GET /stats` reports them.
pub fn stats(port: u16) -> ProcessStats {
    ProcessStats::parse(&http(
        port,
        "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    ))
}

/// The stats `read` gives once RSS has settled: two reads in a row, 250 ms apart, within
/// 64 KiB of each other (10 s at most).
pub fn settled(mut read: impl FnMut() -> ProcessStats) -> ProcessStats {
    let mut last = read();
    for _ in 0..40 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let now = read();
        if now.rss_kib.abs_diff(last.rss_kib) <= 64 {
            return now;
        }
        last = now;
    }
    last
}

impl ProcessStats {
    /// Reads a [`stats_line`] (what follows it on the line is ignored).
    pub fn parse(line: &str) -> ProcessStats {
        let v: Vec<i64> = line
            .split_whitespace()
            .take(4)
            .map(|x| x.parse().expect("a stats line"))
            .collect();
        ProcessStats {
            allocations: v[0] as u64,
            heap: v[1],
            cpu_micros: v[2],
            rss_kib: v[3] as u64,
        }
    }
}

/// A connection whose receive buffer is at most `rcvbuf` bytes (set before connecting).
pub fn small_buffer(port: u16, rcvbuf: i32) -> std::net::TcpStream {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns; the address struct is
    // fully initialised and passed with its size. On success the descriptor is handed to a
    // `TcpStream`; on failure it is closed here.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&rcvbuf as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
        let to = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::connect(fd, (&to as *const libc::sockaddr_in).cast(), len) != 0 {
            libc::close(fd);
            panic!("connect: {}", std::io::Error::last_os_error());
        }
        std::net::TcpStream::from_raw_fd(fd)
    }
}
