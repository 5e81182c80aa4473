//! Listening sockets for the workers: `dup`s of one listener, or one `SO_REUSEPORT` socket each.
//!
//! # Which spreads load better
//!
//! `SO_REUSEPORT`: the busiest of 2 workers took 50.1–51.4% of the connections in every run,
//! against 50.6–70% with a shared listener. Figures and method in
//! [`Reactor::bind`](crate::Reactor::bind).

use std::io;
use std::net::{SocketAddr, TcpListener};

/// Backlog of the listening sockets this crate creates.
///
/// ```
/// assert!(reactor::LISTEN_BACKLOG >= 128);
/// ```
pub const LISTEN_BACKLOG: i32 = 1024;

/// `n` duplicates (`dup`) of one listener: one open file description, one accept queue, each
/// worker's poll registered on its own descriptor.
pub(crate) fn duplicated(listener: TcpListener, n: usize) -> io::Result<Vec<TcpListener>> {
    listener.set_nonblocking(true)?;
    let mut all = Vec::with_capacity(n);
    for _ in 1..n {
        all.push(listener.try_clone()?);
    }
    all.push(listener);
    Ok(all)
}

/// `n` sockets bound to the same address with `SO_REUSEPORT`: one accept queue each, the kernel
/// hashing incoming connections across them. Port 0 picks one port for all. The first is
/// [`bind_exclusive`]: an address another socket serves fails with `AddrInUse`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn reuseport(addr: SocketAddr, n: usize) -> io::Result<Vec<TcpListener>> {
    let first = bind_exclusive(addr)?;
    let addr = first.local_addr()?;
    let mut all = vec![first];
    for _ in 1..n {
        all.push(bind_reuseport(addr)?);
    }
    Ok(all)
}

/// Elsewhere `SO_REUSEPORT` does not balance connections: a plain listener.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn bind_reuseport(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr)
}

/// Elsewhere `SO_REUSEPORT` does not balance connections: share one listener instead.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn reuseport(addr: SocketAddr, n: usize) -> io::Result<Vec<TcpListener>> {
    duplicated(TcpListener::bind(addr)?, n)
}

/// Binds one listening socket with `SO_REUSEPORT` (and `SO_REUSEADDR`), so that more sockets
/// can join it on the same address later — [`Reactor::from_listeners`](crate::Reactor::from_listeners)
/// takes one per worker. Port 0 picks a free port; bind the others to the first one's
/// `local_addr()`.
///
/// This joins any `SO_REUSEPORT` socket of the same user already listening there, sharing its
/// connections; to refuse an address that is already served, start with [`bind_exclusive`].
///
/// ```
/// let first = reactor::bind_reuseport("127.0.0.1:0".parse().unwrap())?;
/// let second = reactor::bind_reuseport(first.local_addr()?)?;
/// assert_eq!(first.local_addr()?, second.local_addr()?);
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn bind_reuseport(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = bound(addr, true)?;
    listen(&socket)?;
    Ok(TcpListener::from(socket))
}

/// Binds one listening socket that no other socket was serving, then lets sockets made with
/// [`bind_reuseport`] join it: the first socket of a server that owns its address. Fails with
/// [`io::ErrorKind::AddrInUse`] when any socket already listens on `addr` (another process's
/// included, `SO_REUSEPORT` or not).
///
/// The check is atomic: the socket is bound and put to `listen(2)` without `SO_REUSEPORT`,
/// which the kernel refuses while another socket listens on the address — even one that
/// raced us, bound but not yet listening — and only then is `SO_REUSEPORT` turned on. (A
/// separate probe bind, dropped before the real one, lets two servers started at the same
/// moment both pass and then silently share the port.) What it cannot stop: a later socket
/// of the same user that opts in to `SO_REUSEPORT` itself may still join, as Linux allows
/// between sockets of one user; sockets of other users cannot.
///
/// ```
/// let first = reactor::bind_exclusive("127.0.0.1:0".parse().unwrap())?;
/// let addr = first.local_addr()?;
/// let again = reactor::bind_exclusive(addr);
/// assert_eq!(again.err().map(|e| e.kind()), Some(std::io::ErrorKind::AddrInUse));
/// let worker = reactor::bind_reuseport(addr)?; // the server's own next worker joins
/// # drop((first, worker));
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn bind_exclusive(addr: SocketAddr) -> io::Result<TcpListener> {
    use std::os::fd::AsRawFd;

    let socket = bound(addr, false)?;
    listen(&socket)?;
    set_flag(socket.as_raw_fd(), libc::SO_REUSEPORT)?;
    Ok(TcpListener::from(socket))
}

/// Elsewhere `SO_REUSEPORT` is not used: a plain listener, which fails with
/// [`io::ErrorKind::AddrInUse`] when another socket listens on `addr`.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn bind_exclusive(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr)
}

/// A new non-blocking TCP socket with `SO_REUSEADDR` (a restarted server can bind while old
/// connections linger in TIME_WAIT), and `SO_REUSEPORT` when `reuseport`, bound to `addr`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn bound(addr: SocketAddr, reuseport: bool) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: socket(2) takes no pointers; the result is checked before use.
    let fd = unsafe { libc::socket(domain, flags, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor socket(2) just returned to us and nothing else owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    set_flag(owned.as_raw_fd(), libc::SO_REUSEADDR)?;
    if reuseport {
        set_flag(owned.as_raw_fd(), libc::SO_REUSEPORT)?;
    }
    let rc = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_in is a plain C struct for which all-zero bytes are valid.
            let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_port = a.port().to_be();
            sa.sin_addr = libc::in_addr {
                s_addr: u32::from_ne_bytes(a.ip().octets()),
            };
            // SAFETY: `sa` is a valid sockaddr_in and the length passed is its size.
            unsafe {
                libc::bind(
                    owned.as_raw_fd(),
                    (&sa as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
        }
        SocketAddr::V6(a) => {
            // SAFETY: sockaddr_in6 is a plain C struct for which all-zero bytes are valid.
            let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sa.sin6_port = a.port().to_be();
            sa.sin6_flowinfo = a.flowinfo();
            sa.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            sa.sin6_scope_id = a.scope_id();
            // SAFETY: `sa` is a valid sockaddr_in6 and the length passed is its size.
            unsafe {
                libc::bind(
                    owned.as_raw_fd(),
                    (&sa as *const libc::sockaddr_in6).cast(),
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        }
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(owned)
}

/// Puts a bound socket to listen(2) with [`LISTEN_BACKLOG`].
#[cfg(any(target_os = "linux", target_os = "android"))]
fn listen(socket: &std::os::fd::OwnedFd) -> io::Result<()> {
    use std::os::fd::AsRawFd;

    // SAFETY: listen(2) on a descriptor we own; no pointers.
    if unsafe { libc::listen(socket.as_raw_fd(), LISTEN_BACKLOG) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn set_flag(fd: std::os::fd::RawFd, option: libc::c_int) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` lives across the call and the length passed is its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
