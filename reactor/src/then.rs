//! What woke a strand ([`Wake`]) and what it waits for next ([`Then`]).

use std::fmt;
use std::time::Instant;

/// Why the reactor resumes a strand.
///
/// Readiness comes from `mio`, which is **edge-triggered**: a readiness is reported once, when
/// it appears. A strand woken [`Readable`](Wake::Readable) must read until
/// [`Read::WouldBlock`](crate::Read::WouldBlock) (or end of stream) before it parks on `read`
/// again. The reactor remembers readiness it has not seen consumed: if a strand stops reading
/// early (say, to let a pending write drain first) and later parks on `read`, it is resumed at
/// once with `Readable` instead of waiting for an edge that will never come.
///
/// ```
/// use reactor::Wake;
/// fn wants_read(wake: Wake) -> bool {
///     matches!(wake, Wake::Start | Wake::Readable | Wake::Both)
/// }
/// assert!(wants_read(Wake::Both));
/// assert!(!wants_read(Wake::Timeout));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// First resume, right after [`Service::open`](crate::Service::open). Nothing is known about
    /// readiness: try reading (the request is often there already) and say what comes next.
    Start,
    /// The socket is readable (data, end of stream or an error waits to be read).
    Readable,
    /// The socket is writable again.
    Writable,
    /// Readable and writable.
    Both,
    /// The deadline of the last [`Then::Park`] passed. The deadline is cleared; set a new one
    /// if needed.
    Timeout,
}

/// What a strand hands back with [`Then::Release`]: a closure that receives the connection
/// as a blocking `std::net::TcpStream`, deregistered from the reactor. It runs on the worker
/// thread, so it must not block: spawn a thread or pass the stream on through a channel.
///
/// ```
/// let handover: reactor::Handover = Box::new(|stream: std::net::TcpStream| drop(stream));
/// let next = reactor::Then::Release(handover);
/// # let _ = next;
/// ```
pub type Handover = Box<dyn FnOnce(std::net::TcpStream) + Send + 'static>;

/// What a strand waits for next, returned from every [`Strand`](crate::Strand) method.
///
/// ```
/// use reactor::Then;
/// use std::time::{Duration, Instant};
/// let idle = Then::read().until(Instant::now() + Duration::from_secs(75));
/// let flushing = Then::write();
/// let both = Then::Park { read: true, write: true, deadline: None };
/// assert!(matches!(idle, Then::Park { read: true, write: false, deadline: Some(_) }));
/// # let _ = (flushing, both);
/// ```
#[must_use]
pub enum Then {
    /// Park the strand until one of the wanted readinesses or the deadline. With neither
    /// `read` nor `write` nor a deadline the strand sleeps until a message
    /// ([`Strand::message`](crate::Strand::message)) or shutdown
    /// ([`Strand::drain`](crate::Strand::drain)).
    ///
    /// A deadline is rounded up to the wheel's tick ([`TIMER_TICK`](crate::TIMER_TICK)): it never
    /// fires early, at most about one tick late. Returning the same deadline again costs nothing;
    /// moving it is O(1).
    Park {
        /// Resume when the socket is readable.
        read: bool,
        /// Resume when the socket is writable.
        write: bool,
        /// Resume with [`Wake::Timeout`] once this instant passes (`None`: no timer).
        deadline: Option<Instant>,
    },
    /// Close the connection and drop the strand.
    Close,
    /// Take the connection out of the reactor: the socket is deregistered, switched to blocking
    /// mode and passed to the closure; the strand is dropped.
    Release(Handover),
}

impl Then {
    /// Park until readable.
    ///
    /// ```
    /// let next = reactor::Then::read();
    /// ```
    pub fn read() -> Then {
        Then::Park {
            read: true,
            write: false,
            deadline: None,
        }
    }

    /// Park until writable (the strand holds output the socket did not take).
    ///
    /// ```
    /// let next = reactor::Then::write();
    /// ```
    pub fn write() -> Then {
        Then::Park {
            read: false,
            write: true,
            deadline: None,
        }
    }

    /// Park until readable or writable.
    ///
    /// ```
    /// let next = reactor::Then::read_write();
    /// ```
    pub fn read_write() -> Then {
        Then::Park {
            read: true,
            write: true,
            deadline: None,
        }
    }

    /// Park waiting for no readiness: only a deadline (see [`Then::until`]), a message or
    /// shutdown resumes the strand.
    ///
    /// ```
    /// let next = reactor::Then::sleep();
    /// ```
    pub fn sleep() -> Then {
        Then::Park {
            read: false,
            write: false,
            deadline: None,
        }
    }

    /// Sets the deadline of a `Park`; `Close` and `Release` are returned unchanged.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let next = reactor::Then::read().until(Instant::now() + Duration::from_secs(10));
    /// ```
    pub fn until(self, deadline: Instant) -> Then {
        match self {
            Then::Park { read, write, .. } => Then::Park {
                read,
                write,
                deadline: Some(deadline),
            },
            other => other,
        }
    }

    /// Hand the connection over as a blocking `std::net::TcpStream` (see [`Then::Release`]).
    ///
    /// ```
    /// use std::io::Write;
    /// let next = reactor::Then::release(|mut stream: std::net::TcpStream| {
    ///     std::thread::spawn(move || {
    ///         let _ = stream.write_all(b"taken\n");
    ///     });
    /// });
    /// ```
    pub fn release(f: impl FnOnce(std::net::TcpStream) + Send + 'static) -> Then {
        Then::Release(Box::new(f))
    }
}

impl fmt::Debug for Then {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Then::Park {
                read,
                write,
                deadline,
            } => f
                .debug_struct("Park")
                .field("read", read)
                .field("write", write)
                .field("deadline", deadline)
                .finish(),
            Then::Close => f.write_str("Close"),
            Then::Release(_) => f.write_str("Release(..)"),
        }
    }
}
