//! `ws_floor`: the fan-out floor for `web-bench fanout`. One thread, one mio (epoll) loop: a
//! WebSocket upgrade (any path) makes a member (a fixed 101, only Sec-WebSocket-Key read; what a
//! member sends is read and dropped); a `POST` with a body is answered `200` (and closed), then one
//! unmasked text frame of that body is written to every member with one `write(2)` each. No rooms,
//! no queues, no limits: what sending one frame to N idle sockets costs, and nothing else.
//! `--workers` is accepted and ignored. With `--io-uring` the sends of a publish go to the kernel
//! as io_uring batches (one `io_uring_enter` for up to 1 024 sockets) instead of a `write(2)` each:
//! the floor of that path.
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);

/// A connection: its request head (until it is read), then a member or a publisher.
struct Conn {
    sock: TcpStream,
    input: Vec<u8>,
    member: bool,
}

/// What a whole request head asks; `None` while incomplete.
enum Asked {
    Upgrade(String),
    Publish(Vec<u8>),
    Other,
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn asked(input: &[u8]) -> Option<Asked> {
    let end = input.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&input[..end]).into_owned();
    if let Some(key) = header(&head, "sec-websocket-key") {
        return Some(Asked::Upgrade(key.to_owned()));
    }
    if head.starts_with("POST ") {
        let len: usize = header(&head, "content-length")?.parse().ok()?;
        let body = input.get(end..end + len)?;
        return Some(Asked::Publish(body.to_vec()));
    }
    Some(Asked::Other)
}

fn main() -> std::io::Result<()> {
    let args = web_bench_peers::args("ws_floor");
    let mut listener = TcpListener::bind(args.addr().parse().expect("address"))?;
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut conns: slab_like::Slab<Conn> = slab_like::Slab::default();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut ring = match args.io_uring {
        true => Some(io_uring::IoUring::new(BATCH as u32)?),
        false => None,
    };
    eprintln!("ws_floor: listening on {}", args.addr());
    loop {
        poll.poll(&mut events, None)?;
        for event in events.iter() {
            if event.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut sock, _)) => {
                            let _ = sock.set_nodelay(true);
                            let at = conns.vacant();
                            poll.registry()
                                .register(&mut sock, Token(at), Interest::READABLE)?;
                            conns.insert(Conn {
                                sock,
                                input: Vec::new(),
                                member: false,
                            });
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => break,
                    }
                }
                continue;
            }
            let at = event.token().0;
            let mut close = false;
            let mut publish = None;
            if let Some(c) = conns.get_mut(at) {
                loop {
                    match c.sock.read(&mut buf) {
                        Ok(0) => {
                            close = true;
                            break;
                        }
                        Ok(n) if !c.member => c.input.extend_from_slice(&buf[..n]),
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => {
                            close = true;
                            break;
                        }
                    }
                }
                if !c.member && !close {
                    match asked(&c.input) {
                        Some(Asked::Upgrade(key)) => {
                            let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
                            let reply = format!(
                                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                                 Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                            );
                            let _ = c.sock.write(reply.as_bytes());
                            c.member = true;
                            c.input = Vec::new();
                        }
                        Some(Asked::Publish(body)) => publish = Some(body),
                        Some(Asked::Other) => close = true,
                        None => {}
                    }
                }
            }
            if let Some(body) = publish {
                let mut frame = vec![0x81];
                match body.len() {
                    n if n < 126 => frame.push(n as u8),
                    n => {
                        frame.push(126);
                        frame.extend_from_slice(&(n as u16).to_be_bytes());
                    }
                }
                frame.extend_from_slice(&body);
                // The publisher is answered first, as web's room and the tokio room answer
                // theirs: the client then reads its members while the frames go out, and
                // waking it (on loopback, on this CPU) is part of every server's figure.
                if let Some(c) = conns.get_mut(at) {
                    let _ = c.sock.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\npublished",
                    );
                }
                match ring.as_mut() {
                    Some(ring) => send_batched(ring, &mut conns, &frame)?,
                    None => {
                        for member in conns.iter_mut().filter(|c| c.member) {
                            let _ = member.sock.write(&frame);
                        }
                    }
                }
                close = true;
            }
            if close {
                if let Some(mut c) = conns.remove(at) {
                    let _ = poll.registry().deregister(&mut c.sock);
                }
            }
        }
    }
}

/// Sends a ring holds at once.
const BATCH: usize = 1024;

/// `frame` to every member, a batch of [`BATCH`] sends per `io_uring_enter` (non-blocking
/// sends: each completes in the call that submits it).
fn send_batched(
    ring: &mut io_uring::IoUring,
    conns: &mut slab_like::Slab<Conn>,
    frame: &[u8],
) -> std::io::Result<()> {
    use io_uring::{opcode, types};
    let fds: Vec<i32> = conns
        .iter_mut()
        .filter(|c| c.member)
        .map(|c| c.sock.as_raw_fd())
        .collect();
    for batch in fds.chunks(BATCH) {
        for &fd in batch {
            let send = opcode::Send::new(types::Fd(fd), frame.as_ptr(), frame.len() as u32)
                .flags(libc::MSG_DONTWAIT)
                .build();
            // SAFETY: `frame` outlives the batch: every send completes before this returns.
            unsafe { ring.submission().push(&send) }.map_err(std::io::Error::other)?;
        }
        ring.submit_and_wait(batch.len())?;
        ring.completion().for_each(drop);
    }
    Ok(())
}

/// A vector with reusable places: what a connection's token names.
mod slab_like {
    pub struct Slab<T> {
        items: Vec<Option<T>>,
        free: Vec<usize>,
    }

    impl<T> Default for Slab<T> {
        fn default() -> Self {
            Slab {
                items: Vec::new(),
                free: Vec::new(),
            }
        }
    }

    impl<T> Slab<T> {
        pub fn vacant(&self) -> usize {
            self.free.last().copied().unwrap_or(self.items.len())
        }

        pub fn insert(&mut self, item: T) -> usize {
            match self.free.pop() {
                Some(at) => {
                    self.items[at] = Some(item);
                    at
                }
                None => {
                    self.items.push(Some(item));
                    self.items.len() - 1
                }
            }
        }

        pub fn get_mut(&mut self, at: usize) -> Option<&mut T> {
            self.items.get_mut(at)?.as_mut()
        }

        pub fn remove(&mut self, at: usize) -> Option<T> {
            let item = self.items.get_mut(at)?.take()?;
            self.free.push(at);
            Some(item)
        }

        pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
            self.items.iter_mut().flatten()
        }
    }
}
