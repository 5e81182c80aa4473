//! The fleet's connection to Redis, bounded against a broken or hostile server: every reply is
//! framed here before anything is made of it, and must arrive whole within a time limit and a
//! size limit. A length or count past the limits fails at once, before anything is allocated
//! for it (a server answering `$999999999999` and streaming, or `*999999999999` and then
//! `:1` for ever); a reply that trickles in fails at its deadline. On any failure the caller
//! drops the connection and reconnects (the fleet counts it). Commands are encoded, and whole
//! frames decoded, by the `redis` crate.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, ConnectionInfo, Value};

/// Longest reply read, in bytes.
pub(crate) const MAX_REPLY: usize = 16 << 20;
/// Most elements in one reply, nested ones included.
const MAX_ELEMENTS: usize = 1 << 16;
/// Longest line (a status, an error, a length) in a reply.
const MAX_LINE: usize = 64 * 1024;

/// Why a reply was refused.
fn broken(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("Redis reply {what}"))
}

/// What an error message shows of a reply, at most: a hostile Redis's reply may be 16 MiB,
/// and its debug text several times that.
const SHOWN: usize = 200;

/// An answer that is not the one expected: `command`, and the start of what came.
pub(crate) fn answered(command: &str, reply: &dyn std::fmt::Debug) -> io::Error {
    io::Error::other(format!("{command} answered {}", shown(reply)))
}

/// The start of `value`'s debug text: formatting stops once [`SHOWN`] bytes are written.
fn shown(value: &dyn std::fmt::Debug) -> String {
    struct Bounded(String);
    impl std::fmt::Write for Bounded {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let room = SHOWN.saturating_sub(self.0.len());
            let mut take = s.len().min(room);
            while !s.is_char_boundary(take) {
                take -= 1;
            }
            self.0.push_str(&s[..take]);
            if take < s.len() {
                return Err(std::fmt::Error);
            }
            Ok(())
        }
    }
    let mut out = Bounded(String::new());
    if std::fmt::write(&mut out, format_args!("{value:?}")).is_err() {
        out.0.push('…');
    }
    out.0
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, d: Duration) -> io::Result<()> {
        let d = Some(d.max(Duration::from_millis(1)));
        match self {
            Stream::Tcp(s) => s.set_read_timeout(d),
            Stream::Unix(s) => s.set_read_timeout(d),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One connection to Redis.
pub(crate) struct RedisConn {
    stream: Stream,
    /// Bytes received and not yet taken as replies.
    buf: Vec<u8>,
    /// How far the reply at the start of `buf` has been framed.
    scan: Scan,
    timeout: Duration,
}

impl RedisConn {
    /// Connects (within `timeout`), authenticates and selects the database the URL names;
    /// every later reply must arrive whole within `timeout`.
    pub(crate) fn open(info: &ConnectionInfo, timeout: Duration) -> io::Result<RedisConn> {
        let stream = match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for Redis");
                let mut found = None;
                for addr in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&addr, timeout) {
                        Ok(s) => {
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                let s = found.ok_or(last)?;
                s.set_nodelay(true)?;
                s.set_write_timeout(Some(timeout))?;
                Stream::Tcp(s)
            }
            ConnectionAddr::Unix(path) => {
                let s = UnixStream::connect(path)?;
                s.set_write_timeout(Some(timeout))?;
                Stream::Unix(s)
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the fleet speaks to Redis over TCP or a Unix socket",
                ));
            }
        };
        let mut conn = RedisConn {
            stream,
            buf: Vec::new(),
            scan: Scan::default(),
            timeout,
        };
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            conn.expect_ok(&auth.get_packed_command())?;
        }
        if settings.db() != 0 {
            conn.expect_ok(&redis::cmd("SELECT").arg(settings.db()).get_packed_command())?;
        }
        Ok(conn)
    }

    /// How long every later reply may take to arrive whole.
    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    fn expect_ok(&mut self, packed: &[u8]) -> io::Result<()> {
        self.send(packed)?;
        match self.reply()? {
            Value::Okay => Ok(()),
            Value::ServerError(e) => Err(io::Error::other(format!("Redis refused: {}", shown(&e)))),
            other => Err(broken(&format!("unexpected: {}", shown(&other)))),
        }
    }

    /// Writes encoded commands.
    pub(crate) fn send(&mut self, packed: &[u8]) -> io::Result<()> {
        self.stream.write_all(packed)
    }

    /// Writes `n` encoded commands and reads their `n` replies, all within the timeout.
    pub(crate) fn query(&mut self, packed: &[u8], n: usize) -> io::Result<Vec<Value>> {
        self.send(packed)?;
        let until = Instant::now() + self.timeout;
        (0..n).map(|_| self.reply_until(until)).collect()
    }

    /// The next reply, whole within the timeout.
    pub(crate) fn reply(&mut self) -> io::Result<Value> {
        self.reply_until(Instant::now() + self.timeout)
    }

    /// Loads `scripts` (`SCRIPT LOAD`, one pipeline): their SHA-1s, as Redis answers them.
    pub(crate) fn load_scripts<S: AsRef<str>>(&mut self, scripts: &[S]) -> io::Result<Vec<String>> {
        let mut pipe = redis::pipe();
        for script in scripts {
            pipe.cmd("SCRIPT").arg("LOAD").arg(script.as_ref());
        }
        let answers = self.query(&pipe.get_packed_pipeline(), scripts.len())?;
        answers
            .iter()
            .map(|a| match a {
                Value::BulkString(sha) => Ok(String::from_utf8_lossy(sha).into_owned()),
                other => Err(answered("SCRIPT LOAD", other)),
            })
            .collect()
    }

    /// Whether bytes of a reply have arrived and not been taken.
    pub(crate) fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }

    /// The socket, to wait for with others (`bell.rs`).
    pub(crate) fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// The next reply of a connection whose socket was found readable: what has arrived is
    /// read, and the reply must be whole within the timeout.
    pub(crate) fn reply_once_readable(&mut self) -> io::Result<Value> {
        if self.buf.is_empty() {
            self.fill()?;
        }
        self.reply()
    }

    fn reply_until(&mut self, until: Instant) -> io::Result<Value> {
        loop {
            if let Some(end) = self.scan.frame(&self.buf)? {
                let value = redis::parse_redis_value(&self.buf[..end])
                    .map_err(|e| broken(&format!("not understood: {e}")))?;
                self.buf.drain(..end);
                self.scan = Scan::default();
                return Ok(value);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "a Redis reply did not arrive whole in time",
                ));
            }
            self.stream.set_read_timeout(left)?;
            self.fill()?;
        }
    }

    /// Reads what has arrived (at least a byte) into the buffer, within [`MAX_REPLY`].
    fn fill(&mut self) -> io::Result<()> {
        let room = MAX_REPLY.saturating_sub(self.buf.len()).min(64 * 1024);
        if room == 0 {
            return Err(broken(&format!("longer than {MAX_REPLY} bytes")));
        }
        let had = self.buf.len();
        self.buf.resize(had + room, 0);
        let read = loop {
            match self.stream.read(&mut self.buf[had..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        self.buf.truncate(had + *read.as_ref().unwrap_or(&0));
        match read? {
            0 => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "Redis closed the connection",
            )),
            _ => Ok(()),
        }
    }
}

/// Every whole reply at the start of `buf`, framed and decoded as a connection's are, up to
/// the first incomplete or refused one (the fuzz target's way in).
#[cfg(fuzzing)]
pub(crate) fn replies(mut buf: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(Some(end)) = Scan::default().frame(buf) {
        match redis::parse_redis_value(&buf[..end]) {
            Ok(value) => out.push(value),
            Err(_) => break,
        }
        buf = &buf[end..];
    }
    out
}

/// Framing of one RESP2 reply, resumable: where the value being read starts, and how many
/// values (it included) are still to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Scan {
    at: usize,
    pending: usize,
    elements: usize,
}

impl Default for Scan {
    fn default() -> Scan {
        Scan {
            at: 0,
            pending: 1,
            elements: 0,
        }
    }
}

impl Scan {
    /// Where the reply at the start of `buf` ends, once all of it is there; an error as soon as
    /// it is known to be malformed or past a limit.
    fn frame(&mut self, buf: &[u8]) -> io::Result<Option<usize>> {
        while self.pending > 0 {
            let rest = &buf[self.at..];
            let Some(lf) = rest.iter().take(MAX_LINE + 2).position(|&b| b == b'\n') else {
                if rest.len() > MAX_LINE + 1 {
                    return Err(broken("line too long"));
                }
                return Ok(None);
            };
            if lf < 2 || rest[lf - 1] != b'\r' {
                return Err(broken("line without CRLF"));
            }
            let (kind, line) = (rest[0], &rest[1..lf - 1]);
            let body = self.at + lf + 1;
            match kind {
                b'+' | b'-' | b':' => self.at = body,
                b'$' => {
                    let Some(n) = length(line)? else {
                        self.at = body;
                        self.pending -= 1;
                        continue;
                    };
                    if n > MAX_REPLY {
                        return Err(broken(&format!("announcing {n} bytes")));
                    }
                    let end = body + n + 2;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    if &buf[end - 2..end] != b"\r\n" {
                        return Err(broken("bulk string without CRLF"));
                    }
                    self.at = end;
                }
                b'*' => {
                    self.at = body;
                    if let Some(n) = length(line)? {
                        self.elements = self.elements.saturating_add(n);
                        if self.elements > MAX_ELEMENTS {
                            return Err(broken(&format!("with more than {MAX_ELEMENTS} elements")));
                        }
                        self.pending += n;
                    }
                }
                _ => return Err(broken(&format!("of unknown type {:?}", kind as char))),
            }
            self.pending -= 1;
        }
        Ok(Some(self.at))
    }
}

/// A length line: `None` for -1 (null), else the number.
fn length(line: &[u8]) -> io::Result<Option<usize>> {
    if line == b"-1" {
        return Ok(None);
    }
    if line.is_empty() || line.len() > 19 || !line.iter().all(u8::is_ascii_digit) {
        return Err(broken("length is not a number"));
    }
    let n = line.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    usize::try_from(n)
        .map(Some)
        .map_err(|_| broken("length too large"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unexpected_reply_is_shown_by_its_start_and_not_formatted_whole() {
        // A reply of a million elements: its debug text would be megabytes.
        let huge = Value::Array(vec![Value::Int(1); 1_000_000]);
        let began = std::time::Instant::now();
        let e = answered("SCRIPT LOAD", &huge).to_string();
        assert!(e.starts_with("SCRIPT LOAD answered array([int(1), "), "{e}");
        assert!(
            e.len() <= "SCRIPT LOAD answered ".len() + SHOWN + '…'.len_utf8(),
            "{}",
            e.len()
        );
        assert!(e.ends_with('…'));
        assert!(
            began.elapsed() < std::time::Duration::from_secs(1),
            "stopped early"
        );
        assert_eq!(shown(&Value::Okay), "ok");
    }

    use super::*;

    fn frame(buf: &[u8]) -> io::Result<Option<usize>> {
        Scan::default().frame(buf)
    }

    #[test]
    fn whole_replies_are_framed_and_partial_ones_wait() {
        let cases: &[(&[u8], Option<usize>)] = &[
            (b"+OK\r\n", Some(5)),
            (b":12\r\n:13\r\n", Some(5)),
            (b"$3\r\nabc\r\n+", Some(9)),
            (b"$-1\r\n", Some(5)),
            (b"*-1\r\n", Some(5)),
            (b"*0\r\n", Some(4)),
            (b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n", Some(32)),
            (b"*2\r\n*1\r\n:1\r\n:2\r\n", Some(16)),
            (b"$3\r\nab", None),
            (b"*2\r\n:1\r\n", None),
            (b"+O", None),
            (b"", None),
        ];
        for (buf, want) in cases {
            assert_eq!(
                frame(buf).unwrap(),
                *want,
                "{:?}",
                String::from_utf8_lossy(buf)
            );
        }
    }

    #[test]
    fn a_reply_fed_in_pieces_frames_as_whole() {
        let reply = b"*3\r\n$7\r\nmessage\r\n$4\r\nroom\r\n$5\r\nhello\r\n";
        for cut in 0..reply.len() {
            let mut scan = Scan::default();
            assert_eq!(scan.frame(&reply[..cut]).unwrap(), None, "{cut}");
            assert_eq!(scan.frame(reply).unwrap(), Some(reply.len()), "{cut}");
        }
    }

    #[test]
    fn hostile_lengths_and_counts_fail_before_anything_is_allocated() {
        for bad in [
            &b"$999999999999\r\n"[..],
            b"*999999999999\r\n",
            b"$99999999999999999999\r\n",
            b"$-2\r\n",
            b"$abc\r\n",
            b"%1\r\n",
            b"+OK\n",
            b"$2\r\nabcd",
        ] {
            assert!(frame(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let mut many = b"*65537\r\n".to_vec();
        many.extend_from_slice(b":1\r\n");
        assert!(frame(&many).is_err());
        let long = vec![b'+'; MAX_LINE + 8];
        assert!(frame(&long).is_err());
    }
}
