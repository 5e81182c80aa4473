//! The [`Server`] builder: where connections come from, and every setting.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::features::Extras;
use super::limits::{DRAIN_TIMEOUT, HEARTBEAT, Limits, MAX_CONNECTIONS, REPLY_TIMEOUT};
use super::serving::first_address;
use super::shared::LiveRoute;
use super::taken::DynTaken;
use super::{Control, ServerHandle};
use crate::http::router::Pattern;
use crate::http::{Request, Response};
use crate::sse::SseApp;
use crate::sse::{SseHandler, SseRoute};
use crate::ws::{Rooms, Route, WsApp, WsConfig, WsHandler};

#[cfg(doc)]
use super::*;

mod start;

/// Where the server's connections come from.
pub(super) enum Listen {
    /// A socket this builder bound with `SO_REUSEPORT`; each further worker binds its own to
    /// the same address, and the kernel spreads connections evenly across them.
    Bound(TcpListener),
    /// A listener the caller bound: each worker polls a duplicate of it.
    Given(TcpListener),
}

/// An HTTP/1.1 server: bind, set limits, then [`run`](Server::run) or [`spawn`](Server::spawn).
///
/// Every connection is a strand in one of the workers' reactors.
///
/// # Limits and defaults
///
/// **The one table of every setting, its default and what happens past it** (the guide, the
/// design notes and the README point here):
///
/// | setting | default | when exceeded |
/// |---|---|---|
/// | [`max_head_bytes`](Server::max_head_bytes) | [`MAX_HEAD_BYTES`](crate::http::MAX_HEAD_BYTES), 16 KiB | 431 (414 when the request line alone is longer) |
/// | [`max_headers`](Server::max_headers) | [`MAX_HEADERS`](crate::http::MAX_HEADERS), 100 | 431 |
/// | [`max_body`](Server::max_body) | [`MAX_BODY`](crate::http::MAX_BODY), 1 MiB | 413 |
/// | [`max_held_bodies`](Server::max_held_bodies): HTTP/2 request bodies arriving, all together | [`MAX_HELD_BODIES`](crate::http::MAX_HELD_BODIES), 64 MiB | new bodies refused (`REFUSED_STREAM`); the connections holding most cut |
/// | [`header_timeout`](Server::header_timeout): a request arriving whole | [`HEADER_TIMEOUT`](crate::http::HEADER_TIMEOUT), 10 s | 408, closed |
/// | [`idle_timeout`](Server::idle_timeout): keep-alive idle | [`IDLE_TIMEOUT`](crate::http::IDLE_TIMEOUT), 75 s | closed quietly |
/// | [`write_timeout`](Server::write_timeout): the socket taking output | [`WRITE_TIMEOUT`](crate::http::WRITE_TIMEOUT), 30 s | closed |
/// | [`linger`](Server::linger): reading after the last reply | [`LINGER`](crate::http::LINGER), 2 s | closed |
/// | [`max_connections`](Server::max_connections) | [`MAX_CONNECTIONS`](crate::http::MAX_CONNECTIONS), 100 000 | new connections wait in the backlog |
/// | [`drain_timeout`](Server::drain_timeout): a graceful stop | [`DRAIN_TIMEOUT`](crate::http::DRAIN_TIMEOUT), 10 s | requests still in flight are closed |
/// | [`reply_timeout`](Server::reply_timeout): a deferred reply coming | [`REPLY_TIMEOUT`](crate::http::REPLY_TIMEOUT), 60 s | 503 |
/// | [`requests`](Server::requests): requests served in all | none | the server stops |
/// | [`workers`](Server::workers) | available cores | |
/// | [`heartbeat`](Server::heartbeat): an event stream with nothing to send | [`HEARTBEAT`](crate::http::HEARTBEAT), 15 s | a comment line is sent |
/// | [`ping_interval`](Server::ping_interval): a WebSocket peer silent | [`PING_INTERVAL`](crate::ws::PING_INTERVAL), 30 s | pinged; closed an interval after an unanswered ping |
/// | [`liveness`](Server::liveness): how a silent peer is checked | [`Liveness::Pings`](crate::ws::Liveness::Pings) | with [`Liveness::Kernel`](crate::ws::Liveness::Kernel), the kernel's keep-alive probes: closed 1.5 intervals after its last segment |
/// | [`close_timeout`](Server::close_timeout): a peer answering our close | [`CLOSE_TIMEOUT`](crate::ws::CLOSE_TIMEOUT), 5 s | closed anyway |
/// | [`max_message`](Server::max_message): a WebSocket message | [`MAX_MESSAGE`](crate::ws::MAX_MESSAGE), 64 KiB | close 1009 |
/// | [`max_rooms`](Server::max_rooms): rooms of one connection | [`MAX_ROOMS`](crate::ws::MAX_ROOMS), 1 024 | `join` joins nothing, `try_join` answers `false` |
/// | [`max_queued_output`](Server::max_queued_output): output owed to all slow peers together | [`MAX_QUEUED_OUTPUT`](crate::live::MAX_QUEUED_OUTPUT), 256 MiB | the peers furthest behind are closed (1008 for a WebSocket) |
/// | [`history`](Server::history): rooms' recent messages | none kept; with [`History`](crate::ws::History): [`HISTORY_ROOMS`](crate::ws::HISTORY_ROOMS) 1 000 rooms, [`HISTORY_BYTES`](crate::ws::HISTORY_BYTES) 8 MiB, [`KEEP_FOR`](crate::ws::KEEP_FOR) 1 h | the oldest go |
/// | [`deflate`](Server::deflate): permessage-deflate | off | |
/// | `handshake_timeout` (`--features tls`): a TLS handshake | `web::tls::HANDSHAKE_TIMEOUT`, 10 s | closed, counted |
/// | `tls_records_per_key` (`--features tls`) | the AEAD's limit (2²⁴ for AES-GCM) | TLS 1.3: a key update; TLS 1.2: closed |
/// | [`share_one_arena`](Server::share_one_arena) | on | |
///
/// Fixed limits, not settings: each bounds what one peer can make a connection hold, at a size
/// no honest peer comes near, or is where the server stops reading so that output cannot pile
/// up.
///
/// | fixed limit | value | when exceeded |
/// |---|---|---|
/// | chunk extensions over a whole body | [`MAX_CHUNK_EXTENSIONS`](crate::http::MAX_CHUNK_EXTENSIONS), 16 KiB | 400 |
/// | trailer lines | [`MAX_TRAILER_BYTES`](crate::http::MAX_TRAILER_BYTES), 16 KiB | 400 |
/// | a body's pace (HTTP/1.1 and each HTTP/2 stream) | 1 KiB per header timeout | 408 |
/// | HTTP/2 request bodies one connection holds at once | 4 × `max_body` | the stream past it refused (`REFUSED_STREAM`) |
/// | HTTP output queued before reading stops | 64 KiB | reading resumes when the socket takes it |
/// | a streamed body's output held | [`STREAM_WINDOW`](crate::http::STREAM_WINDOW), 256 KiB | the [`BodySender`](crate::http::BodySender) waits |
/// | WebSocket output queued before reading stops | [`WS_HIGH_WATER`](crate::ws::WS_HIGH_WATER), 256 KiB | reading resumes when the peer takes it |
/// | WebSocket output owed to one peer | [`WS_MAX_BACKLOG`](crate::ws::WS_MAX_BACKLOG), 16 MiB | close 1008 |
/// | linger while the server stops | 250 ms | closed |
///
/// Each refusal is followed by `Connection: close`. The WebSocket settings can also be set
/// together as a [`WsConfig`](crate::ws::WsConfig) ([`ws_config`](Server::ws_config)), the TLS
/// ones as a `web::tls::TlsConfig` (`tls_config`, `--features tls`).
///
/// ```no_run
/// use web::http::{text_response, Server};
/// let server = Server::bind("127.0.0.1:0")?.workers(2).max_body(64 * 1024);
/// let handle = server.spawn(|req| text_response(200, format!("you asked for {}", req.path())))?;
/// println!("listening on {}", handle.local_addr());
/// handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Server {
    pub(super) listen: Listen,
    pub(super) workers: Option<usize>,
    /// Further addresses served ([`Server::also_bind`]), each plain or with its certificates.
    pub(super) also: Vec<(TcpListener, Option<super::features::ListenerTls>)>,
    pub(super) limits: Limits,
    pub(super) max_connections: usize,
    pub(super) io_uring: bool,
    pub(super) drain_timeout: Duration,
    pub(super) share_one_arena: bool,
    pub(super) reply_timeout: Duration,
    pub(super) stall_threshold: Duration,
    pub(super) proxies: crate::http::message::Proxies,
    pub(super) budget: Option<u64>,
    pub(super) taken: Option<Box<DynTaken>>,
    pub(super) access_log: Option<Box<super::access::DynAccessLog>>,
    pub(super) websocket: Vec<LiveRoute<dyn WsApp>>,
    pub(super) sse: Vec<LiveRoute<dyn SseApp>>,
    pub(super) heartbeat: Duration,
    pub(super) ws: WsConfig,
    pub(super) max_rooms: usize,
    pub(super) max_queued_output: usize,
    pub(super) rooms: Rooms,
    pub(super) control: Control,
    /// Whether HTTP/2 is served (h2c by prior knowledge, h2 by ALPN), and its settings.
    pub(super) http2: bool,
    pub(super) http2_config: crate::h2::config::Http2Config,
    /// What the optional features add (`features.rs`).
    pub(super) extras: Extras,
}

impl Server {
    /// Binds `addr` (its first address; port 0 picks a free port) for this server alone: if
    /// another socket already listens on that address — another process included — this fails
    /// with [`io::ErrorKind::AddrInUse`], also when two servers bind at the same moment
    /// (`listen(2)` without `SO_REUSEPORT` is the check, then it is turned on). The server's
    /// own workers each bind a socket with `SO_REUSEPORT`, so the kernel spreads connections
    /// across them; to let other processes join that group on purpose, use
    /// [`bind_shared`](Server::bind_shared). (Linux lets a
    /// later `SO_REUSEPORT` socket of the same user join too — one that opted in to sharing,
    /// as `bind_shared` does; other users' sockets never can.)
    ///
    /// ```
    /// let first = web::http::Server::bind("127.0.0.1:0")?;
    /// let taken = first.local_addr()?;
    /// let second = web::http::Server::bind(taken);
    /// assert_eq!(second.err().map(|e| e.kind()), Some(std::io::ErrorKind::AddrInUse));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Server> {
        let first = reactor::bind_exclusive(first_address(addr)?)?;
        Ok(Server::with(Listen::Bound(first)))
    }

    /// Binds `addr` with `SO_REUSEPORT`, sharing it with any other socket that does the same
    /// (several processes of one user serving one port, the kernel spreading connections across
    /// them). Opt in to this knowingly: a second instance started by mistake then takes half
    /// the traffic silently. [`bind`](Server::bind) refuses instead.
    ///
    /// ```
    /// let a = web::http::Server::bind_shared("127.0.0.1:0")?;
    /// let b = web::http::Server::bind_shared(a.local_addr()?)?; // both serve the port
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind_shared(addr: impl ToSocketAddrs) -> io::Result<Server> {
        Ok(Server::with(Listen::Bound(reactor::bind_reuseport(
            first_address(addr)?,
        )?)))
    }

    /// Serves connections from a listener the caller bound.
    ///
    /// ```
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let server = web::http::Server::from_listener(listener).workers(1);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_listener(listener: TcpListener) -> Server {
        Server::with(Listen::Given(listener))
    }

    /// Serves `addr` too (its first address; port 0 picks a free port), plain HTTP with h2c,
    /// bound for this server alone as [`bind`](Server::bind) binds: one server on several
    /// addresses — the same workers, routes, rooms and their ids, limits, figures and
    /// metrics; [`spawn`](Server::spawn), [`run`](Server::run) and the [`Control`] serve
    /// and stop them all. The first address stays [`local_addr`](Server::local_addr); all of
    /// them, in order, are [`local_addrs`](Server::local_addrs). With
    /// `also_bind_tls` (`--features tls`) one server serves plain HTTP and HTTPS.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.also_bind("127.0.0.1:0")?;
    /// assert_eq!(server.local_addrs()?.len(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn also_bind(self, addr: impl ToSocketAddrs) -> io::Result<Server> {
        self.also(addr, None)
    }

    /// Serves `addr` too, over TLS with `tls` — its own certificates, whatever the other
    /// addresses serve (`--features tls`); see [`also_bind`](Server::also_bind). HTTP/2 is
    /// offered by ALPN as on any TLS listener. A plain port for the proxy or the health
    /// checks and an HTTPS one for browsers, one server:
    ///
    /// ```no_run
    /// use web::tls::ServerTls;
    /// let tls = ServerTls::from_pem_files("cert.pem", "key.pem")?;
    /// let server = web::http::Server::bind("0.0.0.0:8080")?.also_bind_tls("0.0.0.0:8443", tls)?;
    /// server.run(|_req| web::http::text_response(200, "one server, two ports"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn also_bind_tls(
        self,
        addr: impl ToSocketAddrs,
        tls: crate::tls::ServerTls,
    ) -> io::Result<Server> {
        self.also(addr, Some(tls))
    }

    fn also(
        mut self,
        addr: impl ToSocketAddrs,
        tls: Option<super::features::ListenerTls>,
    ) -> io::Result<Server> {
        if self.also.len() + 1 >= reactor::MAX_LISTENERS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a server listens on at most {} addresses",
                    reactor::MAX_LISTENERS
                ),
            ));
        }
        let socket = reactor::bind_exclusive(first_address(addr)?)?;
        self.also.push((socket, tls));
        Ok(self)
    }

    fn with(listen: Listen) -> Server {
        Server {
            listen,
            also: Vec::new(),
            workers: None,
            limits: Limits::default(),
            max_connections: MAX_CONNECTIONS,
            io_uring: true,
            drain_timeout: DRAIN_TIMEOUT,
            share_one_arena: true,
            reply_timeout: REPLY_TIMEOUT,
            stall_threshold: super::STALL_THRESHOLD,
            proxies: crate::http::message::Proxies::default(),
            budget: None,
            taken: None,
            access_log: None,
            websocket: Vec::new(),
            sse: Vec::new(),
            heartbeat: HEARTBEAT,
            ws: WsConfig::default(),
            max_rooms: crate::ws::MAX_ROOMS,
            max_queued_output: crate::live::MAX_QUEUED_OUTPUT,
            rooms: Rooms::new(super::encoding::ENCODING),
            control: Control::default(),
            http2: true,
            http2_config: Default::default(),
            extras: Extras::default(),
        }
    }

    /// The address the server listens on.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?;
    /// assert_ne!(server.local_addr()?.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.listen {
            Listen::Bound(l) | Listen::Given(l) => l.local_addr(),
        }
    }

    /// Every address the server listens on: [`local_addr`](Server::local_addr), then those
    /// of [`also_bind`](Server::also_bind) and `also_bind_tls` in
    /// the order given.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?;
    /// assert_eq!(server.local_addrs()?, [server.local_addr()?]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addrs(&self) -> io::Result<Vec<SocketAddr>> {
        let mut addrs = vec![self.local_addr()?];
        for (socket, _) in &self.also {
            addrs.push(socket.local_addr()?);
        }
        Ok(addrs)
    }

    /// Worker threads, each with its own reactor (default: available cores).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(2);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn workers(mut self, n: usize) -> Server {
        self.workers = Some(n.max(1));
        self
    }

    /// Most bytes of request line and headers.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_head_bytes(8 * 1024); // larger heads: 431
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_head_bytes(mut self, n: usize) -> Server {
        self.limits.head.max_head_bytes = n;
        self
    }

    /// Most header lines.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_headers(50); // more lines: 431
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_headers(mut self, n: usize) -> Server {
        self.limits.head.max_headers = n;
        self
    }

    /// Most body bytes (after de-chunking).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_body(10 << 20); // 10 MiB; larger: 413
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_body(mut self, n: u64) -> Server {
        self.limits.max_body = n;
        self
    }

    /// Time a request has to arrive whole once started.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.header_timeout(std::time::Duration::from_secs(5));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn header_timeout(mut self, d: Duration) -> Server {
        self.limits.header_timeout = d;
        self
    }

    /// Time a keep-alive connection may wait for its next request.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.idle_timeout(std::time::Duration::from_secs(30));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn idle_timeout(mut self, d: Duration) -> Server {
        self.limits.idle_timeout = d;
        self
    }

    /// Time the socket may take none of a pending reply.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.write_timeout(std::time::Duration::from_secs(10));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_timeout(mut self, d: Duration) -> Server {
        self.limits.write_timeout = d;
        self
    }

    /// Whether the server makes every thread of the process allocate from glibc's main arena
    /// (`mallopt(M_ARENA_MAX, 1)`, set once when the first of the library's threads starts;
    /// default `true`; `false` turns [`reactor::arena_sharing`] off for the whole process).
    /// Then the memory a burst of large bodies took goes back to the system when the workers go
    /// idle; with an arena per thread it stays resident. The setting is the whole process's:
    /// a program that embeds the server and whose own threads allocate heavily in parallel may
    /// turn it off. No effect where the allocator is not glibc's.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.share_one_arena(false);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn share_one_arena(mut self, on: bool) -> Server {
        self.share_one_arena = on;
        self
    }

    /// How long, after the last reply of a connection (a refusal such as an early 413
    /// included), the server reads and drops what the client still sends before closing
    /// (default [`LINGER`], 2 s). A client that writes a large body before it reads needs this
    /// to see the refusal instead of a reset; nginx waits up to 5 s (`lingering_time` 30 s).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.linger(std::time::Duration::from_secs(5));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn linger(mut self, d: Duration) -> Server {
        self.limits.linger = d;
        self
    }

    /// Most open connections; past it, new connections wait in the kernel's backlog.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_connections(10_000);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_connections(mut self, n: usize) -> Server {
        self.max_connections = n;
        self
    }

    /// Whether each worker hands the sends of a room's publish and of a liveness sweep to the
    /// kernel together, through io_uring: one system call for up to 256 sockets instead of
    /// one each (default `true`). Only with the feature `io-uring`, on Linux, where the kernel
    /// permits io_uring; a worker that cannot set one up (a seccomp profile that forbids it,
    /// `kernel.io_uring_disabled`) sends each with its own system call, as every worker does
    /// without the feature. [`ServerStats::io_uring_workers`](crate::http::ServerStats::io_uring_workers)
    /// says how many do.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.io_uring(false);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn io_uring(mut self, on: bool) -> Server {
        self.io_uring = on;
        self
    }

    /// Most bytes of HTTP/2 request bodies held at once while they arrive, all connections
    /// together (default [`MAX_HELD_BODIES`](crate::http::MAX_HELD_BODIES), 64 MiB). Each body
    /// is bounded by [`max_body`](Server::max_body), one connection's by four of them, and
    /// each must keep arriving (a KiB per header timeout, as over HTTP/1.1, else 408 on its
    /// stream); past this limit new bodies are refused with `REFUSED_STREAM` (a client may ask
    /// again) and a connection holding more than its share sees the body that grows cut the
    /// same way.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_held_bodies(16 << 20);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_held_bodies(mut self, bytes: usize) -> Server {
        self.limits.max_held_bodies = bytes;
        self
    }

    /// How long a graceful shutdown waits for requests in flight before closing them.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.drain_timeout(std::time::Duration::from_secs(3));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drain_timeout(mut self, d: Duration) -> Server {
        self.drain_timeout = d;
        self
    }

    /// How long a deferred reply ([`defer`]) may take (default [`REPLY_TIMEOUT`], 60 s): past
    /// it the server answers `503 Service Unavailable` itself, counts it in
    /// [`ServerStats::replies_timed_out`], and the late [`Reply`] is not wanted any more
    /// ([`Reply::is_open`] is `false`, its `send` returns `false`).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.reply_timeout(std::time::Duration::from_secs(30));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reply_timeout(mut self, d: Duration) -> Server {
        self.reply_timeout = d;
        self
    }

    /// How long a handler may hold its worker before the call counts as a stall (default
    /// [`STALL_THRESHOLD`](crate::http::STALL_THRESHOLD), 50 ms). While a handler runs, every
    /// other connection of its worker waits; a call past the threshold — an HTTP handler, or a
    /// WebSocket or event-stream callback (`open`, `message`) — is counted in
    /// [`ServerStats::stalls`] and [`ServerStats::longest_stall`], and the first for each
    /// method and path is reported as a `warn` event (feature `tracing`). Answer slow work
    /// later instead: [`defer`] and a thread, a [`Pool`], or async code
    /// (`web::http::answer_async`, feature `tokio`). Timing costs two reads of the CPU's
    /// time-stamp counter per call where the kernel's clock is that counter (x86-64 Linux,
    /// most machines), two monotonic clock reads elsewhere.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.stall_threshold(std::time::Duration::from_millis(20));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stall_threshold(mut self, d: Duration) -> Server {
        self.stall_threshold = d;
        self
    }

    /// An access log: `log` is called once per exchange, on the connection's worker, with
    /// what was really sent — method, target, status, bytes, duration and peer
    /// ([`Access`](crate::http::Access)) — for replies answered at once, deferred, pooled,
    /// async and streamed alike (status and bytes as sent, duration to the last byte handed
    /// to the connection), for requests refused by the server (400, 408, 413, ...), and for
    /// WebSocket and event-stream sessions when they end. A client that leaves before its
    /// deferred reply is logged with status 0.
    ///
    /// Keep it quick (it runs on the worker): format a line for a logger, count a figure.
    /// Without a hook nothing of this runs; with one, a reply answered at once costs one
    /// clock read, and an exchange that goes on past its handler a small record until it ends
    /// (its method and target, about 100 bytes and up: held by every open WebSocket, event
    /// stream and waiting request while the hook is set).
    ///
    /// ```
    /// use web::http::{Access, Server, text_response};
    /// let server = Server::bind("127.0.0.1:0")?.access_log(|a: &Access<'_>| {
    ///     // With the `tracing` feature, through the application's subscriber:
    ///     tracing::info!(target: "access", method = a.method, target = a.target,
    ///         status = a.status, bytes = a.bytes, micros = a.duration.as_micros() as u64);
    /// });
    /// # drop(server);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn access_log(
        mut self,
        log: impl Fn(&super::Access<'_>) + Send + Sync + 'static,
    ) -> Server {
        self.access_log = Some(Box::new(log));
        self
    }

    /// Whether the server speaks HTTP/2 (RFC 9113) beside HTTP/1.1; on by default. A
    /// connection whose first bytes are HTTP/2's preface is served as HTTP/2 (h2c "with prior
    /// knowledge", on the same port as HTTP/1.1), and over TLS clients are offered `h2` by
    /// ALPN. Every stream of such a connection is a request like any other: the same
    /// handler, middleware, limits, deferred and streamed replies, counts and access log.
    /// WebSocket and event-stream routes are served over HTTP/1.1 only for now: asked over
    /// HTTP/2, their stream is reset with `HTTP_1_1_REQUIRED`, which tells a browser to ask
    /// again over HTTP/1.1.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.http2(false); // HTTP/1.1 only
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn http2(mut self, on: bool) -> Server {
        self.http2 = on;
        self
    }

    /// HTTP/2's settings: streams per connection, the HPACK table, the windows (see
    /// [`Http2Config`](crate::http::Http2Config) for each default and why).
    ///
    /// ```
    /// use web::http::{Http2Config, Server};
    /// let server = Server::bind("127.0.0.1:0")?.http2_config(Http2Config {
    ///     header_table_size: 0, // clients keep no fields for us: the least memory
    ///     ..Http2Config::default()
    /// });
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn http2_config(mut self, config: crate::h2::config::Http2Config) -> Server {
        self.http2_config = config;
        self
    }

    /// How many proxies stand in front of the server, each appending the address it received
    /// a request from to `X-Forwarded-For` (nginx: `proxy_set_header X-Forwarded-For
    /// $proxy_add_x_forwarded_for;`), **connecting from this host** (127.0.0.0/8, ::1); default
    /// 0, the server faces its callers. For proxies elsewhere, name their networks with
    /// [`trust_proxies`](Server::trust_proxies). It decides what
    /// [`Request::client_addr`](crate::http::Request::client_addr) answers — for a request
    /// whose peer is a trusted proxy, the entry the outermost proxy wrote, not the proxy's own
    /// address — and so whom a
    /// [`RateLimit::per_address`](crate::http::RateLimit::per_address) counts. A peer that is
    /// not a trusted proxy is the caller, whatever `X-Forwarded-For` it sends; entries left of
    /// the outermost proxy's are the client's to write and are never read. At most 255.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.proxies(1); // behind one nginx here
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn proxies(mut self, n: usize) -> Server {
        self.proxies = crate::http::message::Proxies::on_loopback(n);
        self
    }

    /// [`proxies`](Server::proxies) connecting from the networks named (`"10.0.0.0/8"`,
    /// `"192.168.1.7"`, `"fd00::/8"`; an address alone is itself): `X-Forwarded-For` is read
    /// only from a peer in one of them — `hops` entries from the right — and ignored from
    /// anyone else (nginx's `set_real_ip_from`). Replaces what `proxies` set. An
    /// `InvalidInput` error for a network that does not parse.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?
    ///     .trust_proxies(["127.0.0.1", "10.0.0.0/8"], 1)?; // one load balancer in front
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn trust_proxies<S: AsRef<str>>(
        mut self,
        networks: impl IntoIterator<Item = S>,
        hops: usize,
    ) -> io::Result<Server> {
        self.proxies = crate::http::message::Proxies::parse(hops, networks)?;
        Ok(self)
    }

    /// Serves `count` requests in all, then stops (what [`serve_n`] and [`accept_n`] use).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(1).requests(1);
    /// let addr = server.local_addr()?;
    /// let done = std::thread::spawn(move || server.run(|_req| web::http::text_response(200, "once")));
    /// let reply = web::http::get("127.0.0.1", addr.port(), "/")?;
    /// assert_eq!(web::http::status_of(&reply), Some(200));
    /// done.join().unwrap()?; // stopped after one request
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn requests(mut self, count: u64) -> Server {
        self.budget = Some(count);
        self
    }

    /// Serves WebSocket at `path` (call it once per path; registering a path again replaces
    /// its handler). A request to that path (query ignored) that asks for WebSocket (a
    /// `Sec-WebSocket-Key` or `Upgrade: websocket`) is checked against RFC 6455 §4.2.1 — 400 when
    /// it is not a valid upgrade, 426 for another version — then given to `handler`'s
    /// [`accept`](WsHandler::accept), which accepts it (with the connection's state) or refuses it
    /// with any response, before any `101` is written. An accepted connection becomes a
    /// WebSocket connection inside the reactor, driven by `handler`'s callbacks. Every other
    /// request goes to the HTTP handler. Messages are limited to
    /// [`max_message`](Server::max_message) bytes (close 1009 beyond).
    ///
    /// ```no_run
    /// use web::http::{Request, Response};
    /// use web::ws::{Message, Ws, WsHandler};
    /// struct Echo;
    /// impl WsHandler for Echo {
    ///     type State = ();
    ///     fn accept(&self, _req: &Request) -> Result<(), Response> {
    ///         Ok(())
    ///     }
    ///     fn message(&self, ws: &mut Ws<'_>, _state: &mut (), msg: Message) {
    ///         ws.send(&msg);
    ///     }
    /// }
    /// let server = web::http::Server::bind("127.0.0.1:9001")?
    ///     .websocket("/echo", Echo)
    ///     .websocket("/echo2", Echo);
    /// server.run(|_req| web::http::text_response(404, "WebSocket only"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn websocket<H: WsHandler>(mut self, path: &str, handler: H) -> Server {
        let app: Box<dyn WsApp> = Box::new(Route::new(handler, path));
        match self
            .websocket
            .iter_mut()
            .find(|r| r.pattern.as_str() == path)
        {
            Some(route) => route.app = app,
            None => self.websocket.push(LiveRoute {
                pattern: live_pattern(path),
                app,
            }),
        }
        self
    }

    /// Serves a Server-Sent Events stream at `path` (a `GET`, or `HEAD` for its head alone):
    /// `handler` accepts or refuses each request and sends the stream's events, and its
    /// streams join [`Rooms`] as WebSocket connections do. Replaces an earlier route at the same
    /// path; a request of another method goes to the HTTP handler. Each stream gets a comment
    /// line every [`heartbeat`](Server::heartbeat) while it has nothing else to send.
    ///
    /// ```no_run
    /// use web::http::{Request, Response};
    /// use web::sse::{Event, Sse, SseHandler};
    /// struct Clock;
    /// impl SseHandler for Clock {
    ///     type State = ();
    ///     fn accept(&self, _req: &Request) -> Result<(), Response> {
    ///         Ok(())
    ///     }
    ///     fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
    ///         sse.send(&Event::new("connected"));
    ///         sse.join("ticks");
    ///     }
    /// }
    /// let server = web::http::Server::bind("127.0.0.1:8080")?.sse("/events", Clock);
    /// let rooms = server.rooms();
    /// std::thread::spawn(move || loop {
    ///     std::thread::sleep(std::time::Duration::from_secs(1));
    ///     rooms.publish_event("ticks", &Event::new("tick").event("tick"));
    /// });
    /// server.run(|_req| web::http::text_response(404, "not here\n"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn sse<H: SseHandler>(mut self, path: &str, handler: H) -> Server {
        let app: Box<dyn SseApp> = Box::new(SseRoute::new(handler, path));
        match self.sse.iter_mut().find(|r| r.pattern.as_str() == path) {
            Some(route) => route.app = app,
            None => self.sse.push(LiveRoute {
                pattern: live_pattern(path),
                app,
            }),
        }
        self
    }

    /// How often an event stream with nothing else to send gets a comment line (default
    /// [`HEARTBEAT`], 15 s), so that proxies and load balancers do not close it as idle. One
    /// timer for the whole server: each worker then walks its streams once.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.heartbeat(std::time::Duration::from_secs(30));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn heartbeat(mut self, every: Duration) -> Server {
        self.heartbeat = every;
        self
    }

    /// How long a WebSocket peer has to answer our close frame before the connection is closed
    /// anyway (default [`CLOSE_TIMEOUT`](crate::ws::CLOSE_TIMEOUT), 5 s). At a graceful stop
    /// every WebSocket is sent a close frame (1001) at once, so the stop waits at most this long
    /// for peers that do not answer — within [`drain_timeout`](Server::drain_timeout) — and
    /// returns as soon as the last peer has answered.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.close_timeout(std::time::Duration::from_secs(1));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close_timeout(mut self, d: Duration) -> Server {
        self.ws = self.ws.close_timeout(d);
        self
    }

    /// Liveness of WebSocket peers (default `Some(`[`PING_INTERVAL`](crate::ws::PING_INTERVAL)`)`, 30 s; `None` turns it
    /// off): a peer from which nothing arrived for half an interval to an interval is pinged,
    /// and one from which nothing arrives within an interval of its ping is closed — the
    /// application's `close` is told with no code. Any frame counts, so an active peer is never
    /// pinged, and one that answers pings stays open for ever. It costs no timer, allocation or
    /// memory per connection: twice an interval each worker walks its connections (one byte of
    /// the reactor's entry says whether a peer was heard from), and a ping is one write.
    ///
    /// Event streams, whose clients send nothing, are watched by the kernel instead: with
    /// pings on, a stream's socket gets `TCP_USER_TIMEOUT` of two intervals (Linux), so one
    /// whose [heartbeats](Server::heartbeat) go unacknowledged that long is closed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let server = web::http::Server::bind("127.0.0.1:0")?.ping_interval(Some(Duration::from_secs(20)));
    /// let quiet = web::http::Server::bind("127.0.0.1:0")?.ping_interval(None);
    /// # let _ = (server, quiet);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ping_interval(mut self, every: Option<Duration>) -> Server {
        self.ws = self.ws.ping_interval(every);
        self
    }

    /// How the liveness of idle WebSocket peers is checked every
    /// [`ping_interval`](Server::ping_interval): by WebSocket pings (the default), or by the
    /// kernel's keep-alive probes, which cost the server no wakeup at all — for peers that
    /// reach the server directly, not through a proxy; see [`Liveness`](crate::ws::Liveness).
    ///
    /// ```
    /// use web::ws::Liveness;
    /// let server = web::http::Server::bind("127.0.0.1:0")?.liveness(Liveness::Kernel);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn liveness(mut self, how: crate::ws::Liveness) -> Server {
        self.ws = self.ws.liveness(how);
        self
    }

    /// The server's [`Control`]: its figures and its graceful stop from anywhere (a handler
    /// included), and the stop on SIGINT/SIGTERM. Take it before the server starts.
    ///
    /// ```no_run
    /// let server = web::http::Server::bind("127.0.0.1:8080")?;
    /// let control = server.control();
    /// control.shutdown_on_signals()?;
    /// server.run(move |_req| web::http::text_response(200, format!("{} open\n", control.stats().open_connections)))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// The server's WebSocket [`Rooms`]: publish to a room from any thread (an HTTP handler
    /// included), read how many members it has. Take it before the server starts; it works
    /// once the server runs.
    ///
    /// ```no_run
    /// use web::ws::Message;
    /// let server = web::http::Server::bind("127.0.0.1:8080")?;
    /// let rooms = server.rooms();
    /// let handle = server.spawn(move |_req| {
    ///     rooms.publish("lobby", &Message::Text("someone knocked".into()));
    ///     web::http::text_response(200, "knocked\n")
    /// })?;
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn rooms(&self) -> Rooms {
        self.rooms.clone()
    }

    /// Keeps rooms' recent messages (default none): what [`Rooms::post`] posts is kept, a
    /// member joining with [`Ws::join_with_history`](crate::ws::Ws::join_with_history) or
    /// [`Sse::join_after`](crate::sse::Sse::join_after) gets it first, [`Rooms::since`] reads
    /// it. With a fleet, histories are shared by the instances (see `web::fleet`).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.history(web::ws::History::new(20));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn history(self, history: crate::ws::History) -> Server {
        self.rooms.keep_history(history);
        self
    }

    /// Every WebSocket setting at once (the setters [`max_message`](Server::max_message),
    /// [`ping_interval`](Server::ping_interval), [`close_timeout`](Server::close_timeout) and
    /// [`deflate`](Server::deflate) set one each).
    ///
    /// ```
    /// let config = web::ws::WsConfig::default().max_message(1 << 20).ping_interval(None);
    /// let server = web::http::Server::bind("127.0.0.1:0")?.ws_config(config);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ws_config(mut self, config: WsConfig) -> Server {
        self.ws = config;
        self
    }

    /// Largest WebSocket message accepted, fragments reassembled (default 64 KiB, the
    /// specification's limit); a larger one closes the connection with 1009.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_message(1 << 20); // 1 MiB messages; larger: close 1009
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_message(mut self, bytes: usize) -> Server {
        self.ws = self.ws.max_message(bytes);
        self
    }

    /// Most rooms one WebSocket connection may be in at once (default
    /// [`MAX_ROOMS`](crate::ws::MAX_ROOMS), 1 024); past it [`Ws::join`](crate::ws::Ws::join)
    /// joins nothing and [`Ws::try_join`](crate::ws::Ws::try_join) answers `false`. What a connection's rooms cost is bounded by it.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_rooms(16);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_rooms(mut self, rooms: usize) -> Server {
        self.max_rooms = rooms;
        self
    }

    /// Most memory all WebSocket connections of the server together may hold for output their
    /// peers have not taken (default [`MAX_QUEUED_OUTPUT`](crate::live::MAX_QUEUED_OUTPUT),
    /// 256 MiB). A frame queued for many connections counts once per worker. Past it, the
    /// connections furthest behind — owed more than the limit shared among those owed
    /// anything — are closed as their next output arrives, their application told 1008, and
    /// counted in [`ServerStats::lagging_closed`](crate::http::ServerStats::lagging_closed).
    /// Each connection is also closed when it alone is owed more than
    /// [`WS_MAX_BACKLOG`](crate::ws::WS_MAX_BACKLOG).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.max_queued_output(64 << 20);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_queued_output(mut self, bytes: usize) -> Server {
        self.max_queued_output = bytes;
        self
    }

    /// Calls `taken(conn, raw)` with every request before it is answered; see [`serve_taking`].
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.taking(|_conn, raw| raw.starts_with(b"GET /raw "));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn taking(
        mut self,
        taken: impl Fn(&TcpStream, &[u8]) -> bool + Send + Sync + 'static,
    ) -> Server {
        self.taken = Some(Box::new(taken));
        self
    }
    /// WebSocket compression (permessage-deflate, RFC 7692) for clients that offer it —
    /// every browser does; off by default (`None`). [`Deflate::default()`] keeps no state per
    /// connection: one compressor and one decompressor per worker serve them all, and a message
    /// published to a room is compressed once per worker. `max_message` limits a message's
    /// size once inflated. Clients that do not offer the extension get plain frames.
    ///
    /// [`Deflate::default()`]: crate::ws::Deflate
    ///
    /// ```
    /// use web::ws::Deflate;
    /// let server = web::http::Server::bind("127.0.0.1:0")?.deflate(Some(Deflate::default()));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, deflate: Option<crate::ws::Deflate>) -> Server {
        self.ws = self.ws.deflate(deflate);
        self
    }

    /// Makes this server one instance of a `web::fleet::Fleet` (`--features
    /// redis`): a publish to a room reaches its members on every instance, through Redis. The
    /// fleet's threads start and stop with the server; its figures appear in
    /// [`ServerStats`]. Rate limits are shared with [`LimitAcrossFleet::fleet`](crate::fleet::LimitAcrossFleet::fleet).
    ///
    /// ```no_run
    /// let fleet = web::fleet::Fleet::new("redis://127.0.0.1:6379/")?;
    /// let server = web::http::Server::bind("127.0.0.1:8080")?.fleet(&fleet);
    /// server.run(|_req| web::http::text_response(200, "one of several"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "redis")]
    pub fn fleet(mut self, fleet: &crate::fleet::Fleet) -> Server {
        self.control.attach_fleet(fleet.counters());
        self.extras.fleet = Some(fleet.clone());
        self
    }

    /// Serves HTTPS only (and WSS, and SSE over HTTPS) on this server's port (feature `tls`).
    /// Every route, limit, room and deferred reply works as over plain HTTP; a plain HTTP
    /// request sent to the port gets a plain `400` saying so. Replace the certificates while
    /// running with [`Control::reload_tls`]. A server with a `taking` hook cannot also speak
    /// TLS (its sockets carry records, not requests): starting it is an `InvalidInput` error.
    ///
    /// ```no_run
    /// use web::tls::ServerTls;
    /// let server = web::http::Server::bind("0.0.0.0:8443")?
    ///     .tls(ServerTls::from_pem_files("cert.pem", "key.pem")?);
    /// server.run(|_req| web::http::text_response(200, "secure hello\n"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: crate::tls::ServerTls) -> Server {
        self.extras.tls = Some(tls);
        self
    }

    /// Every TLS setting at once (feature `tls`; the setters
    /// [`handshake_timeout`](Server::handshake_timeout) and
    /// [`tls_records_per_key`](Server::tls_records_per_key) set one each). The certificates are
    /// [`tls`](Server::tls)'s.
    ///
    /// ```
    /// let config = web::tls::TlsConfig::default().handshake_timeout(std::time::Duration::from_secs(3));
    /// let server = web::http::Server::bind("127.0.0.1:0")?.tls_config(config);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: crate::tls::TlsConfig) -> Server {
        self.extras.tls_config = config;
        self
    }

    /// How long a TLS client has to finish its handshake (default
    /// [`HANDSHAKE_TIMEOUT`](crate::tls::HANDSHAKE_TIMEOUT)); one that has not is closed and
    /// counted in [`ServerStats::tls_timeouts`].
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?
    ///     .handshake_timeout(std::time::Duration::from_secs(3));
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn handshake_timeout(mut self, timeout: Duration) -> Server {
        self.extras.tls_config = self.extras.tls_config.handshake_timeout(timeout);
        self
    }

    /// At most how many records the server seals under one traffic key of a TLS connection
    /// before it changes the key: TLS 1.3 sends a KeyUpdate, TLS 1.2 (which cannot change
    /// keys) says `close_notify` and closes. The default, and the ceiling, is each AEAD's own
    /// safe limit (RFC 8446 §5.5, as rustls keeps it): 2^24 records for AES-GCM, none short of
    /// the sequence number for ChaCha20-Poly1305. A lower figure changes keys sooner, which
    /// tests use to see it happen.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.tls_records_per_key(1 << 20);
    /// # let _ = server;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls_records_per_key(mut self, records: u64) -> Server {
        self.extras.tls_config = self.extras.tls_config.records_per_key(records);
        self
    }

    /// Serves on this thread until the server stops (after [`requests`](Server::requests) are
    /// served, or never).
    ///
    /// ```no_run
    /// let server = web::http::Server::bind("127.0.0.1:0")?;
    /// server.run(|_req| web::http::text_response(200, "hi"))?; // until stopped
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run(
        self,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> io::Result<()> {
        start::run(self, handler)
    }

    /// Serves on background threads; the handle stops and joins them.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?.workers(1);
    /// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
    /// let reply = web::http::get("127.0.0.1", handle.local_addr().port(), "/")?;
    /// assert_eq!(web::http::response_body(&reply).unwrap(), b"hi");
    /// handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn spawn(
        self,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> io::Result<ServerHandle> {
        start::spawn(self, handler)
    }
}

/// A WebSocket or event-stream route's pattern.
///
/// # Panics
///
/// On a path that is not a pattern (see [`Router`](crate::http::Router)): a mistake of the
/// program, found when it starts.
fn live_pattern(path: &str) -> Pattern {
    match Pattern::new(path) {
        Ok(pattern) => pattern,
        Err(e) => panic!("{e}"),
    }
}
