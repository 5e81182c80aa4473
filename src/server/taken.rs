//! The `taken` hook of [`serve_taking`](crate::http::serve_taking): handing a connection that
//! lives in the reactor to code that uses it as a blocking `std::net::TcpStream`.

use std::mem::ManuallyDrop;
use std::net::TcpStream;
use std::os::fd::{FromRawFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The hook as the server stores it: `taken(conn, raw)`.
pub(crate) type DynTaken = dyn Fn(&TcpStream, &[u8]) -> bool + Send + Sync;

/// Calls `taken` with the connection in blocking mode, as the caller will own it. Answers
/// whether it took the connection (`None` when the socket could not be switched or the hook
/// panicked: the connection is then closed).
pub(crate) fn hand_over(taken: &DynTaken, fd: RawFd, raw: &[u8]) -> Option<bool> {
    set_nonblocking(fd, false).ok()?;
    // SAFETY: `fd` is this strand's open socket for the whole call; `ManuallyDrop` keeps this
    // borrowed view from closing it. The hook gets a shared reference only (it may `try_clone`).
    let stream = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
    let took = catch_unwind(AssertUnwindSafe(|| taken(&stream, raw)));
    if took.as_ref().is_ok_and(|&t| t) {
        return Some(true);
    }
    // Not taken, or the hook panicked: the socket goes back to non-blocking either way.
    let restored = set_nonblocking(fd, true).is_ok();
    (took.is_ok() && restored).then_some(false)
}

fn set_nonblocking(fd: RawFd, on: bool) -> std::io::Result<()> {
    // SAFETY: fcntl(2) with F_GETFL/F_SETFL takes no pointers; `fd` is an open descriptor.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let flags = if on {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        if libc::fcntl(fd, libc::F_SETFL, flags) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
