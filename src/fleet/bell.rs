//! A bell a worker rings to wake the subscriber thread while it waits for Redis: the
//! subscriber waits up to its `POLL` for a message, and a room's first member should not wait
//! that long for the room's subscription (messages published before it are caught up only as
//! far as the room's history in Redis still holds them). A socket pair: ringing writes a byte
//! and never waits (the end is non-blocking; a full pair has rung already); the subscriber
//! waits for its Redis socket and the bell together.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The end that rings.
pub(crate) struct Bell(UnixStream);

/// The end that hears.
pub(crate) struct Ear(UnixStream);

/// What ended a wait.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Heard {
    /// This one of the watched sockets has something to read.
    Readable(usize),
    /// The bell rang (every ring since the last wait heard as one).
    Rung,
    /// Neither, within the wait.
    Quiet,
}

/// A bell and its ear.
pub(crate) fn bell() -> io::Result<(Bell, Ear)> {
    let (ring, hear) = UnixStream::pair()?;
    ring.set_nonblocking(true)?;
    hear.set_nonblocking(true)?;
    Ok((Bell(ring), Ear(hear)))
}

impl Bell {
    /// Wakes the ear's waiter, now or at its next wait. Never waits.
    pub(crate) fn ring(&self) {
        // A full pair (WouldBlock) has rung already; a closed one has no one to wake.
        let _ = (&self.0).write(&[1]);
    }
}

impl Ear {
    /// Waits at most `wait` until one of `sockets` is readable (the first such one in
    /// `sockets` is named) or the bell rings.
    pub(crate) fn wait(&self, sockets: &[RawFd], wait: Duration) -> io::Result<Heard> {
        let mut fds: Vec<libc::pollfd> = sockets
            .iter()
            .chain(std::iter::once(&self.0.as_raw_fd()))
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = libc::c_int::try_from(wait.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        let count = libc::nfds_t::try_from(fds.len())
            .map_err(|_| io::Error::other("too many sockets to wait for"))?;
        // SAFETY: `fds` holds `count` initialised `pollfd`s and lives across the call; poll(2)
        // writes only their `revents`.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), count, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(Heard::Quiet),
                _ => Err(e),
            };
        }
        let (bell, sockets) = fds
            .split_last()
            .ok_or_else(|| io::Error::other("no bell"))?;
        if let Some(at) = sockets.iter().position(|fd| fd.revents != 0) {
            // Readable, closed or failed: the read that follows tells which.
            return Ok(Heard::Readable(at));
        }
        if bell.revents != 0 {
            let mut rings = [0u8; 64];
            while matches!((&self.0).read(&mut rings), Ok(n) if n > 0) {}
            return Ok(Heard::Rung);
        }
        Ok(Heard::Quiet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_ring_ends_the_wait_at_once_and_many_rings_are_heard_once() {
        let (bell, ear) = bell().unwrap();
        let (quiet, _other) = UnixStream::pair().unwrap();
        let t = Instant::now();
        assert_eq!(
            ear.wait(&[quiet.as_raw_fd()], Duration::from_millis(30))
                .unwrap(),
            Heard::Quiet
        );
        assert!(t.elapsed() >= Duration::from_millis(25));
        for _ in 0..1000 {
            bell.ring();
        }
        let t = Instant::now();
        assert_eq!(
            ear.wait(&[quiet.as_raw_fd()], Duration::from_secs(5))
                .unwrap(),
            Heard::Rung
        );
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(
            ear.wait(&[quiet.as_raw_fd()], Duration::from_millis(1))
                .unwrap(),
            Heard::Quiet
        );
    }

    #[test]
    fn a_readable_socket_comes_first() {
        let (_bell, ear) = bell().unwrap();
        let (watched, mut peer) = UnixStream::pair().unwrap();
        peer.write_all(b"+OK\r\n").unwrap();
        assert_eq!(
            ear.wait(&[watched.as_raw_fd()], Duration::from_secs(5))
                .unwrap(),
            Heard::Readable(0)
        );
        let (_quiet, _other) = UnixStream::pair().unwrap();
        assert_eq!(
            ear.wait(
                &[_quiet.as_raw_fd(), watched.as_raw_fd()],
                Duration::from_secs(5)
            )
            .unwrap(),
            Heard::Readable(1),
            "the readable one of several"
        );
    }
}
