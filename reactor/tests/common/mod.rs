//! A line-echo protocol for the reactor's tests, and client helpers.
//!
//! The strand echoes each complete `\n`-terminated line. It keeps a partial line and unsent
//! output in `Vec`s that are given back (`Vec::new()`) once drained, and closes after `idle`
//! without a complete line. Special lines: `id` answers `id <worker> <key> <generation>`,
//! `panic` panics, `take` hands the connection over as a blocking stream (a thread then echoes
//! lines prefixed with `taken: `). Messages (`Vec<u8>`) are written to the connection as they are.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use reactor::{Config, ConnId, Handle, Io, Reactor, Read, Service, Strand, Then, Wake};

pub struct LineEcho {
    partial: Vec<u8>,
    out: Vec<u8>,
    idle: Duration,
    draining: bool,
}

enum Step {
    Go,
    Close,
    Take,
}

impl LineEcho {
    /// Answers one complete line into `out` (written later, all of a read's answers at once:
    /// one write per read, not one per line, as a real protocol does).
    fn line(out: &mut Vec<u8>, line: &[u8], id: ConnId) -> Step {
        match line {
            b"panic" => panic!("the test asked this strand to panic"),
            b"take" => Step::Take,
            b"id" => {
                out.extend_from_slice(
                    format!("id {} {} {}\n", id.worker(), id.key(), id.generation()).as_bytes(),
                );
                Step::Go
            }
            _ => {
                out.extend_from_slice(line);
                out.push(b'\n');
                Step::Go
            }
        }
    }

    /// Writes what is pending; false on error.
    fn flush(&mut self, io: &mut Io<'_, Vec<u8>>) -> bool {
        if self.out.is_empty() {
            return true;
        }
        match io.write(&self.out) {
            Ok(n) => {
                self.out.drain(..n);
                if self.out.is_empty() {
                    self.out = Vec::new();
                }
                true
            }
            Err(_) => false,
        }
    }

    fn next(&mut self, now: Instant) -> Then {
        if self.partial.is_empty() {
            self.partial = Vec::new();
        }
        if !self.out.is_empty() {
            return Then::write();
        }
        if self.draining && self.partial.is_empty() {
            return Then::Close;
        }
        Then::read().until(now + self.idle)
    }
}

impl Strand for LineEcho {
    type Msg = Vec<u8>;

    fn resume(&mut self, io: &mut Io<'_, Vec<u8>>, wake: Wake) -> Then {
        if wake == Wake::Timeout {
            return Then::Close;
        }
        if !self.flush(io) {
            return Then::Close;
        }
        if !self.out.is_empty() {
            return Then::write();
        }
        let id = io.id();
        loop {
            match io.read() {
                Read::Data(bytes) => {
                    let mut rest = bytes;
                    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
                        let step = if self.partial.is_empty() {
                            Self::line(&mut self.out, &rest[..nl], id)
                        } else {
                            self.partial.extend_from_slice(&rest[..nl]);
                            let line = std::mem::take(&mut self.partial);
                            Self::line(&mut self.out, &line, id)
                        };
                        rest = &rest[nl + 1..];
                        match step {
                            Step::Go => {}
                            Step::Close => return Then::Close,
                            Step::Take => return Then::release(take),
                        }
                    }
                    self.partial.extend_from_slice(rest);
                }
                Read::WouldBlock => break,
                Read::Closed | Read::Error(_) => return Then::Close,
            }
            if !self.flush(io) {
                return Then::Close;
            }
            if !self.out.is_empty() {
                // Backpressure: stop reading until the output drains.
                return Then::write();
            }
        }
        self.next(io.now())
    }

    fn drain(&mut self, io: &mut Io<'_, Vec<u8>>) -> Then {
        self.draining = true;
        self.next(io.now())
    }

    fn message(&mut self, io: &mut Io<'_, Vec<u8>>, msg: Vec<u8>) -> Then {
        self.out.extend_from_slice(&msg);
        if !self.flush(io) {
            return Then::Close;
        }
        self.next(io.now())
    }

    fn held_bytes(&self) -> usize {
        self.partial.capacity() + self.out.capacity()
    }
}

/// What a taken connection does: echo lines prefixed with `taken: `, blocking, on its own thread.
fn take(stream: TcpStream) {
    std::thread::spawn(move || {
        let Ok(mut writer) = stream.try_clone() else {
            return;
        };
        let _ = writer.write_all(b"taken\n");
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if writer
                .write_all(format!("taken: {line}\n").as_bytes())
                .is_err()
            {
                return;
            }
        }
    });
}

pub struct EchoService {
    pub idle: Duration,
}

impl Service for EchoService {
    type Strand = LineEcho;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, _: ConnId) -> LineEcho {
        LineEcho {
            partial: Vec::new(),
            out: Vec::new(),
            idle: self.idle,
            draining: false,
        }
    }
}

/// Starts a line-echo server on 127.0.0.1 with an idle timeout of `idle`.
pub fn start(config: Config, idle: Duration) -> Handle<Vec<u8>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    Reactor::new(listener, config, move |_| EchoService { idle })
        .expect("reactor")
        .spawn()
        .expect("spawn")
}

/// A client with a read timeout, so a failing test never hangs.
pub struct Client {
    pub reader: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        Client {
            reader: BufReader::new(stream),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).expect("write");
    }

    /// Reads one line (without its `\n`); `None` at end of stream or on error/timeout.
    pub fn line(&mut self) -> Option<String> {
        let mut s = String::new();
        match self.reader.read_line(&mut s) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(s.trim_end_matches('\n').to_string()),
        }
    }

    pub fn roundtrip(&mut self, line: &str) -> Option<String> {
        self.send(format!("{line}\n").as_bytes());
        self.line()
    }

    /// Asks the strand for its id.
    pub fn id(&mut self) -> (u32, u32, u32) {
        let reply = self.roundtrip("id").expect("id reply");
        let parts: Vec<u32> = reply
            .split(' ')
            .skip(1)
            .map(|p| p.parse().expect("number"))
            .collect();
        (parts[0], parts[1], parts[2])
    }

    /// Whether the server closed the connection (end of stream or reset) within `within`.
    pub fn closed_within(&mut self, within: Duration) -> bool {
        self.reader
            .get_ref()
            .set_read_timeout(Some(within))
            .expect("timeout");
        let mut s = String::new();
        let closed = match self.reader.read_line(&mut s) {
            Ok(0) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        };
        self.reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        closed
    }
}

/// Polls `cond` every 5 ms until it holds or `within` passes.
pub fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// CPU time (user + system) this process has used.
pub fn cpu_time() -> Duration {
    // SAFETY: `usage` is a plain C struct written by getrusage; all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into `usage`, which lives across the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
