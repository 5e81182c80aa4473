//! [`Sends`]: a worker's sends gathered over one pass through many connections (a room's
//! publish, a liveness sweep) and handed to the kernel together — one `io_uring_enter` for up
//! to 256 sockets instead of one `send(2)` each. Built with the feature
//! `io-uring` on Linux; elsewhere, or where the kernel refuses io_uring (a seccomp profile,
//! `io_uring_disabled`), a worker has none and every send is a `send(2)`, as without the
//! feature.
//!
//! Only frames shared by reference ([`Io::send_shared`](crate::Io::send_shared)) are
//! gathered: the ring holds a reference to each until the kernel is done with it, so no
//! strand's buffer is read after the strand was given it back. Each send is non-blocking
//! (`MSG_DONTWAIT`): it completes in the call that submits it, with what the socket took, as a
//! `send(2)` would; what it did not take goes back to its strand
//! ([`Strand::unsent`](crate::Strand::unsent)), to be written from its queue as any output
//! the socket could not take.

use std::sync::Arc;

use crate::ConnId;

/// Fewer connections than this to visit in a pass: their sends go out one by one (a batch of
/// a few saves nothing over their own system calls).
pub(crate) const GATHER_FROM: usize = 8;

/// A send the kernel has answered: `frame[from..]` to the connection `id`; `result` is the
/// count of bytes the socket took, or a negative `errno`.
pub(crate) struct Done {
    pub(crate) id: ConnId,
    pub(crate) frame: Arc<[u8]>,
    pub(crate) from: usize,
    pub(crate) result: i32,
}

impl Done {
    /// Whether the socket took all of it.
    pub(crate) fn whole(&self) -> bool {
        usize::try_from(self.result).is_ok_and(|n| self.from + n >= self.frame.len())
    }

    /// Whether the socket took part (or none) of it for want of room: its buffer is full.
    pub(crate) fn short(&self) -> bool {
        self.result >= 0 || self.result == -libc::EAGAIN || self.result == -libc::EWOULDBLOCK
    }

    /// Where what the socket did not take starts.
    pub(crate) fn rest_from(&self) -> usize {
        let taken = usize::try_from(self.result).unwrap_or(0);
        (self.from + taken).min(self.frame.len())
    }
}

#[cfg(all(feature = "io-uring", target_os = "linux"))]
pub(crate) use ring::Sends;

#[cfg(all(feature = "io-uring", target_os = "linux"))]
mod ring {
    use std::os::fd::RawFd;
    use std::sync::Arc;

    use io_uring::{IoUring, opcode, types};

    use super::Done;
    use crate::ConnId;

    /// Sends one submission holds; a pass with more submits each time the ring is full.
    const RING_ENTRIES: u32 = 256;

    /// Tries of one submission interrupted (`EINTR`) or refused for now (`EAGAIN`, `EBUSY`)
    /// before the ring is given up.
    const TRIES: usize = 64;

    /// A queued send: what its completion answers for. The frame is held here until then.
    struct Queued {
        id: ConnId,
        frame: Arc<[u8]>,
        from: usize,
    }

    /// One worker's ring and the sends queued on it.
    pub(crate) struct Sends {
        ring: IoUring,
        /// By index: the `user_data` of each queued send.
        queued: Vec<Queued>,
        /// Results by the index of `queued` (`None` until the completion came).
        results: Vec<Option<i32>>,
        /// What the kernel answered, not yet taken by the worker.
        done: Vec<Done>,
        broken: bool,
        submissions: u64,
        sent: u64,
    }

    impl Sends {
        /// A ring for one worker, or `None` where the kernel refuses one. Made on the worker's
        /// own thread: the kernel queues its work for a ring to the thread that set it up.
        pub(crate) fn start() -> Option<Sends> {
            let ring = IoUring::new(RING_ENTRIES).ok()?;
            Some(Sends {
                ring,
                queued: Vec::with_capacity(RING_ENTRIES as usize),
                results: Vec::with_capacity(RING_ENTRIES as usize),
                done: Vec::new(),
                broken: false,
                submissions: 0,
                sent: 0,
            })
        }

        /// Whether the ring holds as many sends as one submission takes.
        pub(crate) fn is_full(&self) -> bool {
            self.queued.len() >= RING_ENTRIES as usize
        }

        /// Queues a send of `frame[from..]` (not empty) on `fd`, the socket of `id`: `false`
        /// when the ring takes no more now (send it yourself).
        pub(crate) fn queue(
            &mut self,
            fd: RawFd,
            id: ConnId,
            frame: &Arc<[u8]>,
            from: usize,
        ) -> bool {
            if self.broken || self.is_full() {
                return false;
            }
            let Some(rest) = frame.get(from..).filter(|r| !r.is_empty()) else {
                return false;
            };
            // A send takes at most u32::MAX bytes; what is left is written from the queue.
            let len = u32::try_from(rest.len()).unwrap_or(u32::MAX);
            let send = opcode::Send::new(types::Fd(fd), rest.as_ptr(), len)
                .flags(libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                .build()
                .user_data(self.queued.len() as u64);
            // SAFETY: the kernel reads `len` bytes at `rest.as_ptr()`, inside `frame`, an
            // immutable shared allocation that `queued` keeps alive (a clone of the `Arc`)
            // until the send's completion has come: `submit` waits for every queued send, and
            // if the ring fails first, the frames of sends without a completion are never
            // freed. The descriptor is `id`'s socket, open until `submit` has run (the worker
            // submits before it closes a socket with a send queued).
            let pushed = unsafe { self.ring.submission().push(&send) };
            if pushed.is_err() {
                return false;
            }
            self.queued.push(Queued {
                id,
                frame: Arc::clone(frame),
                from,
            });
            self.results.push(None);
            true
        }

        /// Submits what is queued and waits for every completion (each send is non-blocking,
        /// so it completes in the call that submits it). Results are kept for [`Sends::take`].
        /// A ring that fails answers `EIO` for the sends it did not complete, and is
        /// [`broken`](Sends::broken) from then on.
        pub(crate) fn submit(&mut self) {
            let n = self.queued.len();
            if n == 0 {
                return;
            }
            let mut got = 0;
            let mut tries = 0;
            while got < n && !self.broken {
                match self.ring.submit_and_wait(n - got) {
                    Ok(_) => self.submissions += 1,
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                        ) && tries < TRIES =>
                    {
                        tries += 1;
                    }
                    Err(_) => self.broken = true,
                }
                for cqe in self.ring.completion() {
                    let at = cqe.user_data() as usize;
                    if let Some(slot @ None) = self.results.get_mut(at) {
                        *slot = Some(cqe.result());
                        got += 1;
                    }
                }
            }
            self.sent += got as u64;
            for (q, result) in self.queued.drain(..).zip(self.results.drain(..)) {
                if result.is_none() {
                    // The ring failed with this send perhaps still in the kernel's hands: its
                    // frame is never freed (at most a ring's worth, once: the ring is dropped).
                    std::mem::forget(Arc::clone(&q.frame));
                }
                self.done.push(Done {
                    id: q.id,
                    frame: q.frame,
                    from: q.from,
                    result: result.unwrap_or(-libc::EIO),
                });
            }
        }

        /// What the kernel answered since the last take, into `into` (emptied first).
        pub(crate) fn take(&mut self, into: &mut Vec<Done>) {
            into.clear();
            std::mem::swap(into, &mut self.done);
        }

        /// The ring failed: nothing more is queued on it; the worker drops it.
        pub(crate) fn broken(&self) -> bool {
            self.broken
        }

        /// Submissions made (`io_uring_enter` calls that submitted), and sends made.
        pub(crate) fn figures(&self) -> (u64, u64) {
            (self.submissions, self.sent)
        }
    }
}

/// Without io_uring a worker has no [`Sends`]: this type has no value, so every use of it
/// compiles to nothing.
#[cfg(not(all(feature = "io-uring", target_os = "linux")))]
pub(crate) enum Sends {}

#[cfg(not(all(feature = "io-uring", target_os = "linux")))]
impl Sends {
    pub(crate) fn start() -> Option<Sends> {
        None
    }

    pub(crate) fn is_full(&self) -> bool {
        match *self {}
    }

    pub(crate) fn queue(
        &mut self,
        _fd: std::os::fd::RawFd,
        _id: ConnId,
        _frame: &Arc<[u8]>,
        _from: usize,
    ) -> bool {
        match *self {}
    }

    pub(crate) fn submit(&mut self) {
        match *self {}
    }

    pub(crate) fn take(&mut self, _into: &mut Vec<Done>) {
        match *self {}
    }

    pub(crate) fn broken(&self) -> bool {
        match *self {}
    }

    pub(crate) fn figures(&self) -> (u64, u64) {
        match *self {}
    }
}
