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
    /// The watched socket has something to read.
    Readable,
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
    /// Waits at most `wait` until `socket` is readable or the bell rings.
    pub(crate) fn wait(&self, socket: RawFd, wait: Duration) -> io::Result<Heard> {
        let mut fds = [
            libc::pollfd {
                fd: socket,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = libc::c_int::try_from(wait.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is an array of two initialised `pollfd`s that lives across the call,
        // and the count passed is its length; poll(2) writes only their `revents`.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(Heard::Quiet),
                _ => Err(e),
            };
        }
        if fds[0].revents != 0 {
            // Readable, closed or failed: the read that follows tells which.
            return Ok(Heard::Readable);
        }
        if fds[1].revents != 0 {
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
            ear.wait(quiet.as_raw_fd(), Duration::from_millis(30))
                .unwrap(),
            Heard::Quiet
        );
        assert!(t.elapsed() >= Duration::from_millis(25));
        for _ in 0..1000 {
            bell.ring();
        }
        let t = Instant::now();
        assert_eq!(
            ear.wait(quiet.as_raw_fd(), Duration::from_secs(5)).unwrap(),
            Heard::Rung
        );
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(
            ear.wait(quiet.as_raw_fd(), Duration::from_millis(1))
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
            ear.wait(watched.as_raw_fd(), Duration::from_secs(5))
                .unwrap(),
            Heard::Readable
        );
    }
}
