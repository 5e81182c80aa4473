//! The load generator of its own (when `wrk` is not installed, and always for WebSocket): one
//! thread, one mio loop, `conns` connections each keeping `depth` requests or messages in
//! flight; every reply is framed and counted (HTTP by `Content-Length`, WebSocket by frame
//! length, each echo's length checked).

use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::conns::{self, Target};

/// What one run counted in its measured window.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// Replies (or echoed messages) completed in the window.
    pub done: u64,
    /// The window's length.
    pub seconds: f64,
    /// CPU time this thread used in the window, seconds.
    pub client_cpu: f64,
}

/// What each connection asks and how a reply is framed.
#[derive(Clone, Copy)]
pub enum Ask<'a> {
    /// Keep-alive `GET`s of the target.
    Http,
    /// Masked WebSocket frames of `payload` (`binary` or text), echoed back.
    Ws { payload: &'a [u8], binary: bool },
}

struct Conn {
    sock: TcpStream,
    input: Vec<u8>,
    /// Bytes of `input` already taken.
    taken: usize,
    output: Vec<u8>,
}

/// Runs `ask` over `conns` connections to `target`, `depth` in flight each: `warmup`, then
/// `window` counted. Fails if a connection breaks or a reply is malformed.
pub fn run(
    target: &Target,
    ask: Ask<'_>,
    conns: usize,
    depth: usize,
    warmup: Duration,
    window: Duration,
) -> io::Result<Outcome> {
    let one = match ask {
        Ask::Http => format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\n\r\n",
            target.path, target.host
        )
        .into_bytes(),
        Ask::Ws { payload, binary } => masked_frame(payload, binary),
    };
    let mut poll = Poll::new()?;
    let mut all = Vec::with_capacity(conns);
    for i in 0..conns {
        let mut std = conns::connect_from(conns::source(i), target.addr, Duration::from_secs(5))?;
        if let Ask::Ws { .. } = ask {
            conns::upgrade(&mut std, target)?;
        }
        std.set_nonblocking(true)?;
        let mut sock = TcpStream::from_std(std);
        poll.registry()
            .register(&mut sock, Token(i), Interest::READABLE | Interest::WRITABLE)?;
        let mut c = Conn {
            sock,
            input: Vec::with_capacity(64 * 1024),
            taken: 0,
            output: Vec::new(),
        };
        for _ in 0..depth {
            c.output.extend_from_slice(&one);
        }
        flush(&mut c)?;
        all.push(c);
    }
    let mut events = Events::with_capacity(1024);
    let start = Instant::now();
    let (mut done, mut at_window) = (0u64, None::<(u64, f64)>);
    let end = start + warmup + window;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let now = Instant::now();
        if at_window.is_none() && now >= start + warmup {
            at_window = Some((done, thread_cpu()));
        }
        if now >= end {
            break;
        }
        let next = if at_window.is_none() {
            start + warmup
        } else {
            end
        };
        let wait = next
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        poll.poll(&mut events, Some(wait))?;
        for ev in events.iter() {
            let c = &mut all[ev.token().0];
            if ev.is_readable() {
                loop {
                    match c.sock.read(&mut buf) {
                        Ok(0) => {
                            return Err(io::Error::new(
                                ErrorKind::UnexpectedEof,
                                "the server closed a connection",
                            ));
                        }
                        Ok(n) => c.input.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                }
                // Each reply makes room for the next request.
                let got = take_replies(c, ask)?;
                done += got as u64;
                for _ in 0..got {
                    c.output.extend_from_slice(&one);
                }
            }
            flush(c)?;
        }
    }
    let (before, cpu0) = at_window.unwrap_or((0, thread_cpu()));
    Ok(Outcome {
        done: done - before,
        seconds: window.as_secs_f64(),
        client_cpu: thread_cpu() - cpu0,
    })
}

/// Writes what `c` has to send, as far as the socket takes it.
fn flush(c: &mut Conn) -> io::Result<()> {
    let mut sent = 0;
    while sent < c.output.len() {
        match c.sock.write(&c.output[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    c.output.drain(..sent);
    Ok(())
}

/// Takes the whole replies at the head of `c`'s input: how many.
fn take_replies(c: &mut Conn, ask: Ask<'_>) -> io::Result<usize> {
    let mut n = 0;
    loop {
        let rest = &c.input[c.taken..];
        let used = match ask {
            Ask::Http => http_reply(rest)?,
            Ask::Ws { payload, .. } => ws_echo(rest, payload.len())?,
        };
        match used {
            Some(len) => {
                c.taken += len;
                n += 1;
            }
            None => break,
        }
    }
    if c.taken > 0 && (c.taken == c.input.len() || c.taken > 32 * 1024) {
        c.input.drain(..c.taken);
        c.taken = 0;
    }
    Ok(n)
}

/// The length of the whole HTTP reply at the start of `b`, `None` if it is not all there.
fn http_reply(b: &[u8]) -> io::Result<Option<usize>> {
    let Some(end) = b.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = &b[..end];
    if !head.starts_with(b"HTTP/1.1 200") {
        return Err(bad("a reply other than 200"));
    }
    let mut length = None;
    for line in head.split(|&c| c == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
            length = std::str::from_utf8(&line[15..])
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
        }
    }
    let length = length.ok_or_else(|| bad("a reply without Content-Length"))?;
    let whole = end + 4 + length;
    Ok((b.len() >= whole).then_some(whole))
}

/// The length of the whole (unmasked) echo frame at the start of `b`, which must carry `want`
/// bytes; `None` if it is not all there.
fn ws_echo(b: &[u8], want: usize) -> io::Result<Option<usize>> {
    if b.len() < 2 {
        return Ok(None);
    }
    let (len, head) = match b[1] & 0x7f {
        126 if b.len() >= 4 => (u16::from_be_bytes([b[2], b[3]]) as usize, 4),
        127 if b.len() >= 10 => {
            let mut be = [0u8; 8];
            be.copy_from_slice(&b[2..10]);
            (
                usize::try_from(u64::from_be_bytes(be)).unwrap_or(usize::MAX),
                10,
            )
        }
        126 | 127 => return Ok(None),
        n => (n as usize, 2),
    };
    if b[0] & 0x80 == 0 || b[1] & 0x80 != 0 || len != want {
        return Err(bad("an echo that is not the message sent"));
    }
    Ok((b.len() >= head + len).then_some(head + len))
}

/// A client's masked frame of `payload`.
pub fn masked_frame(payload: &[u8], binary: bool) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut f = vec![if binary { 0x82 } else { 0x81 }];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n <= 0xffff => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

fn bad(what: &str) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, what.to_owned())
}

/// CPU time this thread has used, in seconds.
pub fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Pins the calling thread to CPU `cpu` (where there is one); whether it is pinned.
pub fn pin_to(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; 0 is this thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// The target of a server listening on `port` of 127.0.0.1, at `/`.
pub fn local(port: u16) -> Target {
    Target {
        addr: SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port),
        host: format!("127.0.0.1:{port}"),
        path: "/".into(),
        secure: false,
        send: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_replies_are_framed_by_their_length() {
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(http_reply(one).unwrap(), Some(one.len()));
        assert_eq!(http_reply(&one[..one.len() - 1]).unwrap(), None);
        assert_eq!(http_reply(b"HTTP/1.1 200 OK\r\n").unwrap(), None);
        let lower = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(http_reply(lower).unwrap(), Some(lower.len()));
        assert!(http_reply(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
        assert!(http_reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").is_err());
    }

    #[test]
    fn echoes_are_framed_and_checked() {
        assert_eq!(ws_echo(&[0x81, 3, b'a', b'b', b'c'], 3).unwrap(), Some(5));
        assert_eq!(ws_echo(&[0x81, 3, b'a'], 3).unwrap(), None);
        assert!(ws_echo(&[0x81, 2, b'a', b'b'], 3).is_err());
        let mut long = vec![0x82, 126, 0x40, 0x00];
        long.extend(vec![0u8; 16384]);
        assert_eq!(ws_echo(&long, 16384).unwrap(), Some(16388));
        let f = masked_frame(b"hi", false);
        assert_eq!(&f[..2], &[0x81, 0x82]);
        assert_eq!(f.len(), 2 + 4 + 2);
    }
}
