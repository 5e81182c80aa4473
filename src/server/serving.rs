//! The specification's serving functions: `serve`, `serve_at`, `serve_n`, `accept_n`,
//! `accept_forever`, `serve_taking`.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};

use super::*;
use crate::http::{Request, Response};

/// The first address `addr` names.
pub(super) fn first_address(addr: impl ToSocketAddrs) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind"))
}

/// Listens on `port` on all IPv4 addresses and serves forever.
///
/// ```no_run
/// web::http::serve(8080, |_req| web::http::text_response(200, "Hello, World!"))?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve(
    port: u16,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> io::Result<()> {
    Server::bind(("0.0.0.0", port))?.run(handler)
}

/// Listens on `host:port` and serves forever.
///
/// ```no_run
/// web::http::serve_at("127.0.0.1", 8080, |_req| web::http::text_response(200, "hi"))?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve_at(
    host: &str,
    port: u16,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> io::Result<()> {
    Server::bind((host, port))?.run(handler)
}

/// Listens on `port` on all IPv4 addresses, serves `count` requests, then stops. Intended for
/// tests; the listening socket exists before this returns an error or starts serving, but a
/// client racing it may connect before — prefer [`accept_n`] on a listener bound beforehand.
///
/// ```no_run
/// web::http::serve_n(8080, |_req| web::http::text_response(200, "once"), 1)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve_n(
    port: u16,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    count: u64,
) -> io::Result<()> {
    Server::bind(("0.0.0.0", port))?
        .requests(count)
        .run(handler)
}

/// Serves `count` **requests** (not connections; over any number of connections) from an
/// already listening socket, then stops: the reply to the last one says `Connection: close`,
/// and requests past the count are not answered (their connections are closed).
///
/// ```
/// use std::io::{Read, Write};
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let addr = listener.local_addr()?;
/// let server = std::thread::spawn(move || web::http::accept_n(listener, |_req| web::http::text_response(200, "ok"), 1));
/// let mut client = std::net::TcpStream::connect(addr)?;
/// client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")?;
/// let mut reply = String::new();
/// client.read_to_string(&mut reply)?;
/// assert!(reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("\r\n\r\nok"));
/// server.join().unwrap()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn accept_n(
    server: TcpListener,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    count: u64,
) -> io::Result<()> {
    Server::from_listener(server).requests(count).run(handler)
}

/// Serves from an already listening socket forever.
///
/// ```no_run
/// let listener = std::net::TcpListener::bind("127.0.0.1:8080")?;
/// web::http::accept_forever(listener, |_req| web::http::text_response(200, "hi"))?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn accept_forever(
    server: TcpListener,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> io::Result<()> {
    Server::from_listener(server).run(handler)
}

/// Like [`accept_forever`], but `taken(conn, raw)` sees every request before it is answered:
/// `raw` is the request's bytes as received (head and body; followed by any bytes the client
/// sent after it without waiting for the reply), and `conn` the connection, switched to
/// blocking mode. Returning `true` takes the connection: keep it with `conn.try_clone()`; the
/// server lets go of it and never writes to it again, and closing it is the caller's job.
/// Returning `false` lets the handler answer the request as usual.
///
/// `taken` runs on a worker thread: it must not block (move the connection to a thread of
/// its own). Replies to earlier requests on the connection are written before it is called.
/// This is the hook for upgrades such as WebSocket.
///
/// ```no_run
/// use std::io::Write;
/// let listener = std::net::TcpListener::bind("127.0.0.1:8080")?;
/// web::http::serve_taking(
///     listener,
///     |_req| web::http::text_response(200, "plain HTTP"),
///     |conn, raw| {
///         if !raw.starts_with(b"GET /raw ") {
///             return false;
///         }
///         let Ok(mut mine) = conn.try_clone() else { return false };
///         std::thread::spawn(move || mine.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nmine!"));
///         true
///     },
/// )?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve_taking(
    server: TcpListener,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    taken: impl Fn(&TcpStream, &[u8]) -> bool + Send + Sync + 'static,
) -> io::Result<()> {
    Server::from_listener(server).taking(taken).run(handler)
}
