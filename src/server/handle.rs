//! A running server's [`ServerHandle`]: its address, its figures, its stop.

use std::io;
use std::net::SocketAddr;

use super::Control;
use super::features::FleetThreads;
use super::*;
use crate::live::Command;

/// A running server: its address, its figures, and a graceful stop.
///
/// **Dropping it stops the server** (gracefully) and waits for its workers: keep it for as long
/// as the server should run, or call [`join`](ServerHandle::join).
///
/// ```
/// use web::http::{text_response, Server};
/// let handle = Server::bind("127.0.0.1:0")?.workers(1).spawn(|_req| text_response(200, "hi"))?;
/// let addr = handle.local_addr();
/// assert_eq!(handle.stats().requests, 0);
/// # let _ = addr;
/// handle.shutdown()?; // requests in flight are answered, then the workers end
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "dropping a ServerHandle stops the server; keep it, or call join()"]
pub struct ServerHandle {
    pub(super) handle: reactor::Handle<Command>,
    pub(super) control: Control,
    /// Stopped after the workers (fields drop in order).
    pub(super) _fleet: FleetThreads,
}

impl ServerHandle {
    /// The address the server listens on.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(1);
    /// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
    /// println!("listening on {}", handle.local_addr());
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.handle.local_addr()
    }

    /// Every address the server listens on, in order (see [`Server::also_bind`]).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.also_bind("127.0.0.1:0")?;
    /// let handle = server.workers(1).spawn(|_req| web::http::text_response(200, "hi"))?;
    /// assert_eq!(handle.local_addrs().len(), 2);
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addrs(&self) -> &[SocketAddr] {
        self.handle.local_addrs()
    }

    /// The server's figures now (published by each worker once per loop turn).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(1);
    /// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
    /// assert_eq!(handle.stats().websockets, 0);
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> ServerStats {
        self.control.stats()
    }

    /// A [`Control`] of this server (figures and stop from anywhere).
    ///
    /// ```
    /// let handle = web::http::Server::bind("127.0.0.1:0")?.workers(1).spawn(|_req| web::http::text_response(200, "hi"))?;
    /// let control = handle.control();
    /// std::thread::spawn(move || control.shutdown());
    /// handle.join()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// Stops gracefully: no new connections, requests in flight are answered (for up to the
    /// drain timeout), idle connections are closed, then the workers are joined.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(1);
    /// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
    /// handle.shutdown()?; // answered what was in flight, then stopped
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(self) -> io::Result<()> {
        self.handle.shutdown()
    }

    /// Waits until the server stops by itself (after [`Server::requests`]).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(1).requests(1);
    /// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
    /// web::http::get("127.0.0.1", handle.local_addr().port(), "/")?;
    /// handle.join()?; // the server stopped by itself after its one request
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn join(self) -> io::Result<()> {
        self.handle.join()
    }
}
