//! `ws_ceiling`: the WebSocket physical-limit anchor. One thread, one mio (epoll) loop, the
//! least WebSocket logic an echo can have: a fixed 101 answer (only Sec-WebSocket-Key is read
//! from the upgrade request), then per client frame: read the header, unmask the payload while
//! streaming it back as an unmasked frame with the same FIN/opcode. Ping -> pong, close -> close.
//! No UTF-8 validation, no message reassembly, no limits. `--workers` is accepted and ignored.
use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);

struct Conn {
    sock: TcpStream,
    upgraded: bool,
    hs: Vec<u8>,
    hdr: [u8; 14],
    hdr_len: usize,
    hdr_need: usize,
    in_payload: bool,
    b0: u8,
    payload_left: u64,
    mask: [u8; 4],
    mask_off: usize,
    ctl: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    want_write: bool,
    closing: bool,
}

impl Conn {
    fn new(sock: TcpStream) -> Self {
        Conn {
            sock,
            upgraded: false,
            hs: Vec::new(),
            hdr: [0; 14],
            hdr_len: 0,
            hdr_need: 2,
            in_payload: false,
            b0: 0,
            payload_left: 0,
            mask: [0; 4],
            mask_off: 0,
            ctl: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            want_write: false,
            closing: false,
        }
    }
}

fn push_header(out: &mut Vec<u8>, b0: u8, len: u64) {
    out.push(b0);
    if len < 126 {
        out.push(len as u8);
    } else if len <= 0xffff {
        out.push(126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

fn unmask_into(out: &mut Vec<u8>, data: &[u8], mask: [u8; 4], off: usize) {
    let start = out.len();
    out.extend_from_slice(data);
    let m = [mask[off & 3], mask[(off + 1) & 3], mask[(off + 2) & 3], mask[(off + 3) & 3]];
    let m8 = [m[0], m[1], m[2], m[3], m[0], m[1], m[2], m[3]];
    let m64 = u64::from_ne_bytes(m8);
    let buf = &mut out[start..];
    let split = buf.len() / 8 * 8;
    let (body, rest) = buf.split_at_mut(split);
    for c in body.chunks_exact_mut(8) {
        let v = u64::from_ne_bytes(c.try_into().unwrap()) ^ m64;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in rest.iter_mut().enumerate() {
        *b ^= m8[i];
    }
}

/// Returns false when the connection must be closed (protocol error).
fn handshake(c: &mut Conn, data: &[u8]) -> Result<usize, ()> {
    let before = c.hs.len();
    c.hs.extend_from_slice(data);
    let end = match c.hs.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(p) => p + 4,
        None => {
            if c.hs.len() > 16 * 1024 {
                return Err(());
            }
            return Ok(data.len());
        }
    };
    let head = String::from_utf8_lossy(&c.hs[..end]).to_string();
    let key = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("sec-websocket-key").then(|| v.trim().to_string())
    });
    let Some(key) = key else {
        c.out.extend_from_slice(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        c.closing = true;
        return Ok(data.len());
    };
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    c.out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ");
    c.out.extend_from_slice(accept.as_bytes());
    c.out.extend_from_slice(b"\r\n\r\n");
    c.upgraded = true;
    c.hs = Vec::new();
    Ok(end - before) // bytes of `data` consumed by the handshake
}

fn frames(c: &mut Conn, data: &[u8]) -> Result<(), ()> {
    let mut i = 0;
    while i < data.len() && !c.closing {
        if !c.in_payload {
            let take = (c.hdr_need - c.hdr_len).min(data.len() - i);
            c.hdr[c.hdr_len..c.hdr_len + take].copy_from_slice(&data[i..i + take]);
            c.hdr_len += take;
            i += take;
            if c.hdr_len < c.hdr_need {
                break;
            }
            let b1 = c.hdr[1];
            if b1 & 0x80 == 0 {
                return Err(()); // client frames must be masked
            }
            let l7 = (b1 & 0x7f) as usize;
            let need = 2 + match l7 {
                126 => 2,
                127 => 8,
                _ => 0,
            } + 4;
            if c.hdr_need < need {
                c.hdr_need = need;
                continue;
            }
            let len = match l7 {
                126 => u16::from_be_bytes([c.hdr[2], c.hdr[3]]) as u64,
                127 => u64::from_be_bytes(c.hdr[2..10].try_into().unwrap()),
                n => n as u64,
            };
            c.mask.copy_from_slice(&c.hdr[need - 4..need]);
            c.b0 = c.hdr[0];
            c.hdr_len = 0;
            c.hdr_need = 2;
            c.in_payload = true;
            c.payload_left = len;
            c.mask_off = 0;
            c.ctl.clear();
            let opcode = c.b0 & 0x0f;
            if opcode <= 2 {
                push_header(&mut c.out, c.b0, len); // data frame: echo header now, payload streams
            } else if len > 125 {
                return Err(());
            }
        }
        let take = (c.payload_left.min((data.len() - i) as u64)) as usize;
        let chunk = &data[i..i + take];
        let opcode = c.b0 & 0x0f;
        if opcode <= 2 {
            unmask_into(&mut c.out, chunk, c.mask, c.mask_off);
        } else {
            unmask_into(&mut c.ctl, chunk, c.mask, c.mask_off);
        }
        c.mask_off += take;
        c.payload_left -= take as u64;
        i += take;
        if c.payload_left == 0 {
            c.in_payload = false;
            match opcode {
                0x9 => {
                    push_header(&mut c.out, 0x8A, c.ctl.len() as u64);
                    c.out.extend_from_slice(&c.ctl);
                }
                0x8 => {
                    push_header(&mut c.out, 0x88, c.ctl.len() as u64);
                    c.out.extend_from_slice(&c.ctl);
                    c.closing = true;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

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

fn main() -> io::Result<()> {
    let a = web_bench_peers::args("ws_ceiling");
    let addr: SocketAddr = a.addr().parse().expect("--host must be an IP address");
    let mut listener = TcpListener::bind(addr)?;
    let mut poll = Poll::new()?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    eprintln!("ws_ceiling listening on {addr} (single thread, minimal WebSocket echo)");

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
                            conns[idx] = Some(Conn::new(sock));
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => {
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
                if !c.closing && (ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                    loop {
                        match c.sock.read(&mut buf) {
                            Ok(0) => {
                                close = true;
                                break;
                            }
                            Ok(n) => {
                                let mut data = &buf[..n];
                                if !c.upgraded {
                                    match handshake(c, data) {
                                        Ok(used) => data = &data[used.min(data.len())..],
                                        Err(()) => {
                                            close = true;
                                            break;
                                        }
                                    }
                                }
                                if c.upgraded && !data.is_empty() && frames(c, data).is_err() {
                                    close = true;
                                    break;
                                }
                                if n < buf.len() || c.closing {
                                    break;
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
                if !close && c.out_pos < c.out.len() {
                    match write_some(&mut c.sock, &c.out[c.out_pos..]) {
                        Ok(n) => c.out_pos += n,
                        Err(_) => close = true,
                    }
                    if c.out_pos == c.out.len() {
                        c.out.clear();
                        c.out_pos = 0;
                    } else if c.out_pos >= 1 << 20 {
                        c.out.drain(..c.out_pos); // rare: keep the buffer from growing without end
                        c.out_pos = 0;
                    }
                }
                if !close {
                    if c.closing && c.out_pos >= c.out.len() {
                        close = true;
                    } else {
                        let need = c.out_pos < c.out.len();
                        if need != c.want_write {
                            let interest =
                                if need { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
                            poll.registry().reregister(&mut c.sock, Token(idx), interest)?;
                            c.want_write = need;
                        }
                        if c.out.is_empty() && c.out.capacity() > 1 << 20 {
                            c.out = Vec::new();
                        }
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
