//! The two system calls of the busy path, made directly: `recv(2)` and `send(2)` on a
//! connection's socket. Through `std` and `mio` each costs two extra layers of calls a request
//! (`<&mio::TcpStream as Read>` → `<&std::TcpStream as Read>` → the socket wrapper); these make
//! the same call with the same flags.
//!
//! On Linux they go through `syscall(2)`: glibc's `recv` and `send` are thread-cancellation
//! points, and in a process with threads each brackets the call with
//! `__pthread_enable_asynccancel`/`__pthread_disable_asynccancel` (a tenth of the server's own
//! time on a keep-alive request, see docs/PERFORMANCE.md). Rust never
//! cancels a thread, so the plain system call does the same thing. (One consequence: a
//! shim that interposes on the C library's `recv`/`send` through `LD_PRELOAD` no longer sees
//! these two calls.)

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use mio::net::TcpStream;

/// One item where the condition holds, the other where it does not: the condition is written
/// once.
macro_rules! cfg_else {
    (#[cfg($when:meta)] $yes:item else $no:item) => {
        #[cfg($when)]
        $yes
        #[cfg(not($when))]
        $no
    };
}

cfg_else! {
    // The systems where `std`'s socket writes pass `MSG_NOSIGNAL` (the same list).
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "hurd",
        target_os = "dragonfly",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "solaris",
        target_os = "illumos",
        target_os = "haiku",
        target_os = "nto",
        target_os = "cygwin",
    ))]
    /// `send(2)` flags: no `SIGPIPE` for a peer gone.
    const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
    else
    /// `send(2)` flags: none, as in `std` (Apple's sockets get `SO_NOSIGPIPE` instead).
    const SEND_FLAGS: libc::c_int = 0;
}

/// One `recv(2)` into `buf`: the bytes read (0 at the end of stream) or the error, as
/// `Read::read` on the stream would answer.
#[inline]
pub(crate) fn recv(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    // Through `try_io`, as mio's own `read` is: on mio's one-shot backends (`poll(2)`, event
    // ports) a `WouldBlock` must re-arm the registration; on epoll and kqueue this is nothing.
    stream.try_io(|| {
        // SAFETY: `buf` is a live, writable slice of `buf.len()` bytes for the whole call, and
        // the descriptor belongs to `stream`, borrowed (so open) for the whole call. The kernel
        // writes at most `buf.len()` bytes.
        let n = unsafe { raw::recv(stream.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        count(n)
    })
}

/// One `send(2)` of `buf` (without `SIGPIPE`, as `std` writes to a socket): the bytes the
/// socket took, or the error.
#[inline]
pub(crate) fn send(stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    // Through `try_io`, as `recv` (a `WouldBlock` re-arms the registration where mio must).
    stream.try_io(|| {
        // SAFETY: `buf` is a live slice of `buf.len()` bytes for the whole call, which the
        // kernel only reads, and the descriptor belongs to `stream`, borrowed (so open) for the
        // call.
        let n = unsafe { raw::send(stream.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        count(n)
    })
}

cfg_else! {
    // Linux where `recvfrom` and `sendto` are system calls of their own on every kernel Rust
    // supports and `long` is a register: not 32-bit x86, s390x, m68k or 32-bit SPARC (there
    // they went through `socketcall` before Linux 4.3/4.4), nor x32 (a 32-bit `long`).
    #[cfg(all(
        target_os = "linux",
        not(any(
            target_arch = "x86",
            target_arch = "s390x",
            target_arch = "m68k",
            target_arch = "sparc",
        )),
        not(all(target_arch = "x86_64", target_pointer_width = "32")),
    ))]
    /// `recv(2)` and `send(2)` as the system calls themselves (`recvfrom`/`sendto` without an
    /// address), not glibc's cancellation-point wrappers. Same contract as `libc::recv` and
    /// `libc::send`: the caller passes a descriptor and a buffer valid for `len` bytes.
    mod raw {
        use std::ptr::null_mut;

        use libc::{c_int, c_long, c_void, size_t};

        /// # Safety
        /// `buf` must be valid for writes of `len` bytes for the call.
        #[inline]
        pub(super) unsafe fn recv(fd: c_int, buf: *mut c_void, len: size_t) -> isize {
            // The integers as the `long`s `syscall(2)` reads; no address is asked for (both
            // pointers null).
            let (fd, len, flags) = (c_long::from(fd), len as c_long, 0 as c_long);
            let none = null_mut::<c_void>();
            // SAFETY: the caller's contract.
            let n = unsafe { libc::syscall(libc::SYS_recvfrom, fd, buf, len, flags, none, none) };
            n as isize
        }

        /// # Safety
        /// `buf` must be valid for reads of `len` bytes for the call.
        #[inline]
        pub(super) unsafe fn send(fd: c_int, buf: *const c_void, len: size_t) -> isize {
            // The integers as the `long`s `syscall(2)` reads; no address is given (null, of
            // length 0).
            let flags = c_long::from(super::SEND_FLAGS);
            let (fd, len) = (c_long::from(fd), len as c_long);
            let (none, no_len) = (null_mut::<c_void>(), 0 as c_long);
            // SAFETY: the caller's contract.
            let n = unsafe { libc::syscall(libc::SYS_sendto, fd, buf, len, flags, none, no_len) };
            n as isize
        }
    }
    else
    /// `recv(2)` and `send(2)` through the C library.
    mod raw {
        use libc::{c_int, c_void, size_t};

        /// # Safety
        /// `buf` must be valid for writes of `len` bytes for the call.
        #[inline]
        pub(super) unsafe fn recv(fd: c_int, buf: *mut c_void, len: size_t) -> isize {
            // SAFETY: the caller's contract.
            unsafe { libc::recv(fd, buf, len, 0) }
        }

        /// # Safety
        /// `buf` must be valid for reads of `len` bytes for the call.
        #[inline]
        pub(super) unsafe fn send(fd: c_int, buf: *const c_void, len: size_t) -> isize {
            // SAFETY: the caller's contract.
            unsafe { libc::send(fd, buf, len, super::SEND_FLAGS) }
        }
    }
}

/// A system call's byte count, or the error `errno` holds when it answered -1.
#[inline]
fn count(n: isize) -> io::Result<usize> {
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Sets `TCP_USER_TIMEOUT`: data the peer leaves unacknowledged for `after` makes the kernel
/// fail the connection (the strand then sees the error and closes). Linux only; elsewhere
/// nothing is set.
pub(crate) fn give_up_unacknowledged_after(stream: &TcpStream, after: Duration) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let millis = libc::c_uint::try_from(after.as_millis()).unwrap_or(libc::c_uint::MAX);
        // SAFETY: `stream` is an open socket, borrowed for the call; the option value is a c_uint
        // passed by pointer with its size, as setsockopt(2) expects for TCP_USER_TIMEOUT.
        let done = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_USER_TIMEOUT,
                (&millis as *const libc::c_uint).cast(),
                std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
            )
        };
        if done != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (stream, after);
    Ok(())
}

/// Has the kernel check the peer while the connection is silent (`SO_KEEPALIVE`): after
/// `silent` without a segment from the peer it sends a probe, then one every `silent`, and
/// fails the connection after `probes` unanswered in a row. Linux sets all three (whole
/// seconds, at least one); elsewhere only `SO_KEEPALIVE` is set, with the system's timings.
pub(crate) fn probe_when_silent(
    stream: &TcpStream,
    silent: Duration,
    probes: u32,
) -> io::Result<()> {
    let fd = stream.as_raw_fd();
    let set = |level: libc::c_int, name: libc::c_int, value: libc::c_int| {
        // SAFETY: `fd` is an open socket, borrowed for the call; the option value is a c_int
        // passed by pointer with its size, as setsockopt(2) expects for these options.
        let done = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        match done {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    #[cfg(target_os = "linux")]
    {
        let seconds = libc::c_int::try_from(silent.as_secs().max(1)).unwrap_or(libc::c_int::MAX);
        let probes = libc::c_int::try_from(probes.max(1)).unwrap_or(libc::c_int::MAX);
        set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, seconds)?;
        set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, seconds)?;
        set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, probes)?;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (silent, probes);
    Ok(())
}

/// Whether the peer has acknowledged every byte of data written to `stream` (our FIN, once
/// sent, may still be on its way: it is retransmitted after a close like any unacknowledged
/// segment). Linux's `SIOCOUTQ` counts what is unacknowledged, the FIN as one; `TCP_INFO`'s
/// state says whether the FIN is sent. `false` where it cannot be told.
pub(crate) fn all_acknowledged(stream: &TcpStream) -> bool {
    #[cfg(target_os = "linux")]
    {
        let fd = stream.as_raw_fd();
        let mut queued: libc::c_int = 0;
        // SAFETY: `fd` is an open socket, borrowed for the call; SIOCOUTQ (TIOCOUTQ on Linux)
        // writes one c_int through the pointer, which points to one on this frame.
        if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) } != 0 || queued > 1 {
            return false;
        }
        if queued == 0 {
            return true;
        }
        // One unacknowledged: our FIN alone if it is sent (FIN_WAIT1, CLOSING, LAST_ACK).
        // SAFETY: tcp_info is plain integers, valid zeroed; getsockopt(2) writes at most `len`
        // bytes into it and the length back into `len`, both on this frame.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let got = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_TCP,
                libc::TCP_INFO,
                (&mut info as *mut libc::tcp_info).cast(),
                &mut len,
            )
        };
        const FIN_WAIT1: u8 = 4;
        const LAST_ACK: u8 = 9;
        const CLOSING: u8 = 11;
        got == 0 && matches!(info.tcpi_state, FIN_WAIT1 | LAST_ACK | CLOSING)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = stream;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    #[cfg(target_os = "linux")]
    #[test]
    fn bytes_are_acknowledged_once_the_peer_has_them() {
        let (ours, mut peer) = pair();
        assert!(all_acknowledged(&ours), "nothing written yet");
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(send(&ours, b"hello").unwrap(), 5);
        let mut got = [0u8; 5];
        peer.read_exact(&mut got).unwrap();
        // The peer's kernel acknowledges on its own time (delayed ACKs).
        let acknowledged = |ours: &TcpStream| {
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while !all_acknowledged(ours) {
                assert!(std::time::Instant::now() < until, "never acknowledged");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        acknowledged(&ours);
        // Our FIN sent: the data stays acknowledged whether or not the FIN's ACK came.
        ours.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(all_acknowledged(&ours));
        // Data the peer's application has not read is acknowledged once its kernel has it.
        let (ours, _peer) = pair();
        assert_eq!(send(&ours, &[7u8; 100]).unwrap(), 100);
        acknowledged(&ours);
    }

    /// A connected pair: our non-blocking mio end and a blocking std peer.
    fn pair() -> (TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ours, _) = listener.accept().unwrap();
        ours.set_nonblocking(true).unwrap();
        (TcpStream::from_std(ours), peer)
    }

    /// Receives into `buf` once something has arrived (retrying while the socket would block).
    fn recv_arrived(stream: &TcpStream, buf: &mut [u8]) -> usize {
        loop {
            match recv(stream, buf) {
                Ok(n) => return n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// Polls until the stream is readable; false after a few quiet polls.
    fn readable(poll: &mut mio::Poll, events: &mut mio::Events) -> bool {
        for _ in 0..5 {
            poll.poll(events, Some(std::time::Duration::from_millis(50)))
                .unwrap();
            if events.iter().any(|e| e.is_readable()) {
                return true;
            }
        }
        false
    }

    /// Regression: `recv` made without mio's `do_io` never re-armed the registration after a
    /// `WouldBlock` on mio's one-shot backends (`poll(2)`: AIX, Haiku, Hurd, NTO, Cygwin,
    /// `--cfg mio_unsupported_force_poll_poll`; event ports: Solaris), so a connection that
    /// once read its socket dry never heard of its next bytes.
    #[test]
    fn a_recv_that_would_block_rearms_the_registration() {
        let (mut ours, mut peer) = pair();
        let mut poll = mio::Poll::new().unwrap();
        poll.registry()
            .register(&mut ours, mio::Token(0), mio::Interest::READABLE)
            .unwrap();
        let mut events = mio::Events::with_capacity(4);
        let mut buf = [0u8; 16];
        for round in 0..3 {
            peer.write_all(b"x").unwrap();
            assert!(
                readable(&mut poll, &mut events),
                "round {round}: bytes raise an event"
            );
            loop {
                match recv(&ours, &mut buf) {
                    Ok(n) => assert!(n > 0),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }

    #[test]
    fn recv_and_send_answer_as_the_stream_would() {
        let (ours, mut peer) = pair();
        let mut buf = [0u8; 16];
        // Nothing sent yet: WouldBlock, as an error.
        let e = recv(&ours, &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        // An empty buffer sends nothing and fails nothing.
        assert_eq!(send(&ours, b"").unwrap(), 0);

        peer.write_all(b"ping").unwrap();
        let got = recv_arrived(&ours, &mut buf);
        assert_eq!(&buf[..got], b"ping");
        // A buffer shorter than what waits takes only what fits.
        peer.write_all(b"0123456789").unwrap();
        let mut small = [0u8; 4];
        let n = recv_arrived(&ours, &mut small);
        assert_eq!((n, &small), (4, b"0123"));

        assert_eq!(send(&ours, b"pong").unwrap(), 4);
        let mut back = [0u8; 4];
        peer.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"pong");

        // The peer gone: the end of stream reads as 0 once the data before it is read, and a
        // send fails with an error (never a signal).
        drop(peer);
        let mut rest = [0u8; 16];
        let mut seen_end = false;
        for _ in 0..10_000 {
            match recv(&ours, &mut rest) {
                Ok(0) => {
                    seen_end = true;
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        assert!(seen_end, "end of stream read as 0");
        let mut failed = false;
        for _ in 0..100 {
            if send(&ours, &[0u8; 1024]).is_err() {
                failed = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(failed, "a send to a peer gone fails");
    }

    /// `send` must pass `MSG_NOSIGNAL`: the test harness ignores `SIGPIPE`, so a send without
    /// it would pass the test above unnoticed. Here `SIGPIPE` is blocked on this thread, and a
    /// blocked signal stays pending on Linux even when ignored, so one raised by a send shows.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_send_to_a_peer_gone_raises_no_sigpipe() {
        use std::mem::MaybeUninit;

        /// `SIGPIPE` alone, as a signal set.
        fn sigpipe_set() -> libc::sigset_t {
            let mut set = MaybeUninit::<libc::sigset_t>::uninit();
            // SAFETY: `set` is writable storage for a `sigset_t`; `sigemptyset` initialises
            // it whole before `sigaddset` and `assume_init` read it.
            unsafe {
                assert_eq!(libc::sigemptyset(set.as_mut_ptr()), 0);
                assert_eq!(libc::sigaddset(set.as_mut_ptr(), libc::SIGPIPE), 0);
                set.assume_init()
            }
        }

        /// Whether `SIGPIPE` is pending on this thread (or the process).
        fn sigpipe_pending() -> bool {
            let mut set = MaybeUninit::<libc::sigset_t>::uninit();
            // SAFETY: `sigpending` fills the whole set it is given (checked by its answer)
            // before `assume_init`; `sigismember` only reads the initialised set.
            unsafe {
                assert_eq!(libc::sigpending(set.as_mut_ptr()), 0);
                libc::sigismember(&set.assume_init(), libc::SIGPIPE) == 1
            }
        }

        let block = sigpipe_set();
        let mut before = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: both pointers are to live `sigset_t` storage; the call changes only this
        // thread's mask and fills `before` whole (checked by its answer).
        let before = unsafe {
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &block, before.as_mut_ptr());
            assert_eq!(rc, 0);
            before.assume_init()
        };
        assert!(!sigpipe_pending(), "no SIGPIPE pending before the test");

        let (ours, peer) = pair();
        // Closed with unread data, the peer answers our next segment with a reset; a later
        // send then fails with EPIPE, which is where a send without MSG_NOSIGNAL signals.
        drop(peer);
        let mut error = None;
        for _ in 0..1000 {
            match send(&ours, &[0u8; 1024]) {
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => {
                    error = Some(e);
                    if error.as_ref().and_then(io::Error::raw_os_error) == Some(libc::EPIPE) {
                        break;
                    }
                }
            }
        }
        let pending = sigpipe_pending();
        // SAFETY: `before` is the initialised mask read above; restoring it changes only this
        // thread's mask (a pending SIGPIPE is then discarded: the harness ignores it).
        unsafe {
            let rc = libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            assert_eq!(rc, 0);
        }
        let error = error.expect("a send to a peer gone fails");
        assert_eq!(error.raw_os_error(), Some(libc::EPIPE), "{error}");
        assert!(!pending, "the failed send raised SIGPIPE");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_user_timeout_is_set_on_the_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let conn = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let conn = TcpStream::from_std(conn);
        give_up_unacknowledged_after(&conn, Duration::from_millis(1500)).unwrap();
        let mut value: libc::c_uint = 0;
        let mut len = std::mem::size_of::<libc::c_uint>() as libc::socklen_t;
        // SAFETY: reads the option into a c_uint of the size given, on a live socket.
        let got = unsafe {
            libc::getsockopt(
                conn.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_USER_TIMEOUT,
                (&mut value as *mut libc::c_uint).cast(),
                &mut len,
            )
        };
        assert_eq!((got, value), (0, 1500));
    }
}
