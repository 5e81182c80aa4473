//! `ceiling`: the physical-limit anchor. One thread, one mio (epoll) loop, no HTTP logic.
//! For every "\r\n\r\n" seen in a connection's input it writes one canned keep-alive
//! response. Nothing else is parsed (no method, path, headers, bodies or Connection: close).
//! `--workers` is accepted and ignored: it is always single-threaded.
use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const RESP: &[u8] = b"HTTP/1.1 200 OK\r\nServer: ceiling\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
const LISTENER: Token = Token(usize::MAX);
const BATCH: usize = 64;

struct Conn {
    sock: TcpStream,
    /// how many bytes of "\r\n\r\n" are matched at the end of the input so far (0..=3)
    state: u8,
    /// responses not yet written (only used when the socket would block)
    out: Vec<u8>,
    out_pos: usize,
    want_write: bool,
}

/// Count "\r\n\r\n" occurrences, carrying the partial-match state across reads.
#[inline]
fn count_ends(state: &mut u8, buf: &[u8]) -> usize {
    let mut s = *state;
    let mut n = 0;
    for &b in buf {
        s = match (b, s) {
            (b'\r', 2) => 3,
            (b'\r', _) => 1,
            (b'\n', 1) => 2,
            (b'\n', 3) => {
                n += 1;
                0
            }
            _ => 0,
        };
    }
    *state = s;
    n
}

fn main() -> io::Result<()> {
    let a = web_bench_peers::args("ceiling");
    let addr: SocketAddr = a.addr().parse().expect("--host must be an IP address");
    let mut listener = TcpListener::bind(addr)?;
    let mut poll = Poll::new()?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    eprintln!("ceiling listening on {addr} (single thread, no HTTP parsing)");

    let big: Vec<u8> = RESP.repeat(BATCH);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = Events::with_capacity(1024);

    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut sock, _)) => {
                            let _ = sock.set_nodelay(true);
                            let idx = free.pop().unwrap_or_else(|| {
                                conns.push(None);
                                conns.len() - 1
                            });
                            poll.registry().register(&mut sock, Token(idx), Interest::READABLE)?;
                            conns[idx] = Some(Conn { sock, state: 0, out: Vec::new(), out_pos: 0, want_write: false });
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => {
                            // EMFILE etc.: drop this wake-up; a later connection re-triggers it.
                            eprintln!("accept error: {e}");
                            break;
                        }
                    }
                }
                continue;
            }
            let idx = ev.token().0;
            let mut close = false;
            if let Some(c) = conns.get_mut(idx).and_then(|c| c.as_mut()) {
                // Flush anything left over from an earlier would-block.
                if c.out_pos < c.out.len() {
                    match write_some(&mut c.sock, &c.out[c.out_pos..]) {
                        Ok(n) => c.out_pos += n,
                        Err(_) => close = true,
                    }
                    if c.out_pos == c.out.len() {
                        c.out.clear();
                        c.out_pos = 0;
                    }
                }
                // Read everything available, answer each request end.
                if !close && (ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                    loop {
                        match c.sock.read(&mut buf) {
                            Ok(0) => {
                                close = true;
                                break;
                            }
                            Ok(n) => {
                                let mut k = count_ends(&mut c.state, &buf[..n]);
                                while k > 0 && !close {
                                    let m = k.min(BATCH);
                                    k -= m;
                                    let chunk = &big[..m * RESP.len()];
                                    if c.out_pos >= c.out.len() {
                                        c.out.clear();
                                        c.out_pos = 0;
                                        match write_some(&mut c.sock, chunk) {
                                            Ok(w) if w == chunk.len() => {}
                                            Ok(w) => c.out.extend_from_slice(&chunk[w..]),
                                            Err(_) => close = true,
                                        }
                                    } else {
                                        c.out.extend_from_slice(chunk);
                                    }
                                }
                                if n < buf.len() {
                                    break; // drained: a new arrival raises a new edge
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                            Err(_) => {
                                close = true;
                                break;
                            }
                        }
                    }
                }
                if !close {
                    let need = c.out_pos < c.out.len();
                    if need != c.want_write {
                        let interest = if need { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
                        poll.registry().reregister(&mut c.sock, Token(idx), interest)?;
                        c.want_write = need;
                    }
                    if !need && c.out.capacity() > 1 << 20 {
                        c.out = Vec::new();
                        c.out_pos = 0;
                    }
                }
            }
            if close {
                if let Some(mut c) = conns[idx].take() {
                    let _ = poll.registry().deregister(&mut c.sock);
                    free.push(idx);
                }
            }
        }
    }
}

/// Write as much as the socket takes now; Ok(bytes written), WouldBlock counts as 0.
fn write_some(sock: &mut TcpStream, data: &[u8]) -> io::Result<usize> {
    let mut off = 0;
    while off < data.len() {
        match sock.write(&data[off..]) {
            Ok(0) => return Err(io::Error::new(ErrorKind::WriteZero, "closed")),
            Ok(n) => off += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(off)
}
