//! Shared frames sent with `Io::send_shared` in a pass through many connections: with the
//! feature `io-uring` (Linux) the worker hands them to the kernel together — one system call
//! for the pass — and what a full socket did not take comes back to its strand
//! (`Strand::unsent`) and is written after, in order. Without the feature every send is its
//! own system call; either way every byte arrives once, in order.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reactor::{Config, ConnId, Handle, Io, Reactor, Read, Service, Strand, Then, Wake};

type Frame = Arc<[u8]>;

/// The message that has a member's socket keep a small send buffer (no autotuning).
const SMALL_SEND_BUFFER: [u8; 1] = [0xff];

/// `Strand::unsent` calls, all tests together.
static UNSENT: AtomicUsize = AtomicUsize::new(0);

/// Says its id in a first line, then writes every frame it is sent, in order: a frame owed
/// alone through `send_shared`, the rest with plain writes (as a WebSocket member does).
struct Member {
    queue: VecDeque<(Frame, usize)>,
}

impl Member {
    fn write(&mut self, io: &mut Io<'_, Frame>) -> Then {
        loop {
            let alone = self.queue.len() == 1;
            let Some((frame, at)) = self.queue.front_mut() else {
                break;
            };
            let n = match alone {
                true => io.send_shared(frame, *at),
                false => io.write(&frame[*at..]),
            };
            let Ok(n) = n else { return Then::Close };
            if n == 0 {
                return Then::read_write();
            }
            *at += n;
            if *at == frame.len() {
                self.queue.pop_front();
            }
        }
        self.queue = VecDeque::new();
        Then::read()
    }
}

impl Strand for Member {
    type Msg = Frame;

    fn resume(&mut self, io: &mut Io<'_, Frame>, wake: Wake) -> Then {
        if wake == Wake::Start {
            let id = io.id();
            let line = format!("{} {} {}\n", id.worker(), id.key(), id.generation());
            let frame: Frame = line.into_bytes().into();
            self.queue.push_back((frame, 0));
        }
        loop {
            match io.read() {
                Read::Data(_) => continue,
                Read::WouldBlock => break,
                Read::Closed | Read::Error(_) => return Then::Close,
            }
        }
        self.write(io)
    }

    fn drain(&mut self, _io: &mut Io<'_, Frame>) -> Then {
        Then::Close
    }

    fn message(&mut self, io: &mut Io<'_, Frame>, frame: Frame) -> Then {
        if *frame == SMALL_SEND_BUFFER {
            set_buffer(io.stream(), libc::SO_SNDBUF, 8192);
            return Then::read();
        }
        // Written at the end of the turn, with the turn's other messages.
        self.queue.push_back((frame, 0));
        Then::read_write()
    }

    fn unsent(&mut self, io: &mut Io<'_, Frame>, frame: Frame, from: usize) -> Then {
        UNSENT.fetch_add(1, Ordering::Relaxed);
        self.queue.push_front((frame, from));
        self.write(io)
    }

    fn held_bytes(&self) -> usize {
        self.queue.capacity() * std::mem::size_of::<(Frame, usize)>()
    }
}

struct Members;

impl Service for Members {
    type Strand = Member;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, _: ConnId) -> Member {
        Member {
            queue: VecDeque::new(),
        }
    }
}

fn start() -> Handle<Frame> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    Reactor::new(listener, Config::default().workers(1), |_| Members)
        .expect("reactor")
        .spawn()
        .expect("spawn")
}

/// `n` connections and their ids (each read from its first line).
fn members(handle: &Handle<Frame>, n: usize) -> Vec<(TcpStream, ConnId)> {
    (0..n)
        .map(|_| {
            let stream = TcpStream::connect(handle.local_addr()).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            let mut line = String::new();
            // One byte at a time: nothing after the line is taken from the socket.
            let mut byte = [0u8; 1];
            while !line.ends_with('\n') {
                (&stream).read_exact(&mut byte).expect("the id line");
                line.push(byte[0] as char);
            }
            let parts: Vec<u32> = line
                .trim()
                .split(' ')
                .map(|p| p.parse().expect("number"))
                .collect();
            (stream, ConnId::from_parts(parts[0], parts[1], parts[2]))
        })
        .collect()
}

/// Whether this build gathers sends (and the kernel lets it).
fn gathers(handle: &Handle<Frame>) -> bool {
    handle.stats().total.io_uring == 1
}

/// Waits (bounded) until `f` holds.
fn wait_until(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_frame_for_many_connections_goes_to_the_kernel_in_one_call() {
    let handle = start();
    let members = members(&handle, 40);
    let ids: Vec<ConnId> = members.iter().map(|(_, id)| *id).collect();
    let before = handle.stats().total;
    let frame: Frame = Arc::from(&b"one frame for every member\n"[..]);
    assert_eq!(handle.remote().broadcast(&ids, &frame), ids.len());
    for (stream, id) in &members {
        let mut lines = BufReader::new(stream);
        let mut got = String::new();
        lines.read_line(&mut got).expect("the frame");
        assert_eq!(got, "one frame for every member\n", "member {id:?}");
    }
    if cfg!(all(feature = "io-uring", target_os = "linux")) {
        assert!(
            gathers(&handle),
            "io_uring is permitted on the machines this runs on"
        );
        // (The worker publishes its figures at the end of its turn.)
        wait_until("the figures of the pass", || {
            handle.stats().total.gathered_sends - before.gathered_sends >= 40
        });
        let after = handle.stats().total;
        assert_eq!(after.gathered_sends - before.gathered_sends, 40);
        assert_eq!(
            after.send_submissions - before.send_submissions,
            1,
            "forty sends, one system call"
        );
    } else {
        let after = handle.stats().total;
        assert_eq!((after.io_uring, after.gathered_sends), (0, 0));
    }
    assert!(handle.shutdown().is_ok());
}

#[test]
fn what_a_full_socket_did_not_take_is_written_after_in_order() {
    let handle = start();
    let members = members(&handle, 12);
    for (_, id) in &members {
        // The server's socket takes a part of each frame at most: its send buffer is small
        // (set by the strand when told).
        assert!(handle.remote().send(*id, Arc::from(&SMALL_SEND_BUFFER[..])));
    }
    let ids: Vec<ConnId> = members.iter().map(|(_, id)| *id).collect();
    // Twenty frames of 64 KiB each, every byte of frame i is i: far more than the sockets
    // take while nobody reads, so most sends are short or refused.
    let frames: Vec<Frame> = (0..20u8).map(|i| Arc::from(vec![i; 64 * 1024])).collect();
    for frame in &frames {
        assert_eq!(handle.remote().broadcast(&ids, frame), ids.len());
        // Each its own turn: the first of a member's frames goes out alone (gathered).
        std::thread::sleep(Duration::from_millis(2));
    }
    if cfg!(all(feature = "io-uring", target_os = "linux")) {
        wait_until("gathered sends the sockets could not take whole", || {
            UNSENT.load(Ordering::Relaxed) > 0
        });
    }
    let expected: usize = frames.iter().map(|f| f.len()).sum();
    for (mut stream, id) in members {
        let mut got = vec![0u8; expected];
        stream.read_exact(&mut got).expect("every byte");
        for (i, chunk) in got.chunks(64 * 1024).enumerate() {
            assert!(
                chunk.iter().all(|&b| b == i as u8),
                "member {id:?}: frame {i} whole and in its place"
            );
        }
    }
    wait_until("every strand idle", || handle.stats().total.held_bytes == 0);
    assert!(handle.shutdown().is_ok());
}

/// Fixes a socket's buffer size (`SO_RCVBUF`, `SO_SNDBUF`).
fn set_buffer(stream: &impl std::os::fd::AsRawFd, which: libc::c_int, bytes: libc::c_int) {
    // SAFETY: setsockopt(2) reads `size_of::<c_int>()` bytes from a live `c_int`; the descriptor
    // belongs to `stream`, open for the whole call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            which,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt");
}

/// The worker's ring is its own: once the server has stopped, the kernel's teardown of the
/// ring does not interrupt the thread that started it (a blocking read there is not cut short
/// by `EINTR`).
#[test]
fn the_thread_that_started_a_server_is_not_interrupted_after_it_stops() {
    use std::io::Read as _;
    use std::os::unix::net::UnixStream;
    for _ in 0..3 {
        let handle = start();
        assert!(handle.shutdown().is_ok());
        // Nothing is ever written: the read ends with its timeout, the window in which the
        // ring's teardown (asynchronous, in the kernel) would have interrupted it.
        let (_quiet, mut waiting) = UnixStream::pair().expect("pair");
        waiting
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let read = waiting.read(&mut [0u8; 1]);
        assert!(
            matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the read waited out its time: {read:?}"
        );
    }
}
