//! [`Control`]: a server's figures and its graceful stop, from anywhere — taken from the
//! [`Server`](super::Server) builder before it starts, so a handler can read the figures of the
//! server it runs in — and the stop on SIGINT/SIGTERM.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::live::Command;

use super::ServerStats;
use super::figures::{Figures, Totals};
use super::metrics::{self, WorkerFigures};
use super::signals;

/// Reads a server's figures and stops it, from any thread; cheap to clone. Take it with
/// [`Server::control`](super::Server::control) before the server starts: until then
/// [`stats`](Control::stats) reads zeros and [`shutdown`](Control::shutdown) is remembered and
/// applied as the server starts.
///
/// ```no_run
/// use web::http::{json_response, Server};
/// let server = Server::bind("127.0.0.1:8080")?;
/// let control = server.control();
/// control.shutdown_on_signals()?; // Ctrl-C or SIGTERM: graceful stop, no unsafe here
/// let figures = control.clone();
/// server.run(move |_req| {
///     let s = figures.stats();
///     json_response(200, format!(r#"{{"open_connections":{},"requests":{}}}"#, s.open_connections, s.requests))
/// })?;
/// // `run` returns once the server has stopped.
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Control {
    shared: Arc<ControlShared>,
}

#[derive(Default)]
struct ControlShared {
    remote: OnceLock<reactor::Remote<Command>>,
    figures: OnceLock<Arc<[Figures]>>,
    /// `shutdown` was asked for before the server started.
    early_stop: std::sync::atomic::AtomicBool,
    /// Open WebSocket connections (counted by the WebSocket strands).
    websockets: Arc<AtomicUsize>,
    streams: Arc<AtomicUsize>,
    /// The output queued for WebSocket peers, once the server is built.
    budget: OnceLock<Arc<crate::live::OutputBudget>>,
    /// What HTTP/2 request bodies arriving hold, all connections together.
    bodies: OnceLock<Arc<crate::live::OutputBudget>>,
    replies: OnceLock<Arc<super::replies::Replies>>,
    /// The count of handler calls that held their worker.
    stalls: OnceLock<Arc<crate::live::Stalls>>,
    /// The figures of the server's fleet, if it has one.
    #[cfg(feature = "redis")]
    fleet: OnceLock<Arc<crate::fleet::Counters>>,
    /// Each TLS listener's address and configurations (their figures are one count).
    #[cfg(feature = "tls")]
    tls: std::sync::Mutex<Vec<(std::net::SocketAddr, Arc<crate::tls::TlsShared>)>>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("running", &self.shared.remote.get().is_some())
            .finish()
    }
}

impl Control {
    /// Connects the control to its server once the workers exist.
    pub(crate) fn attach(&self, remote: reactor::Remote<Command>, figures: Arc<[Figures]>) {
        let _ = self.shared.figures.set(figures);
        if self.shared.remote.set(remote).is_ok() && self.shared.early_stop.load(Ordering::SeqCst) {
            self.shutdown();
        }
    }

    /// Shows the figures of the server's fleet in its stats.
    #[cfg(feature = "redis")]
    pub(crate) fn attach_fleet(&self, counters: Arc<crate::fleet::Counters>) {
        let _ = self.shared.fleet.set(counters);
    }

    /// Lets the control reload the certificates of the TLS listener on `addr` and read the
    /// TLS figures.
    #[cfg(feature = "tls")]
    pub(crate) fn attach_tls(&self, addr: std::net::SocketAddr, tls: Arc<crate::tls::TlsShared>) {
        self.tls_listeners().push((addr, tls));
    }

    #[cfg(feature = "tls")]
    fn tls_listeners(
        &self,
    ) -> std::sync::MutexGuard<'_, Vec<(std::net::SocketAddr, Arc<crate::tls::TlsShared>)>> {
        self.shared
            .tls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces the server's certificates (or whole TLS configuration) while it runs, on
    /// every TLS listener (see [`reload_tls_on`](Control::reload_tls_on) for one of several
    /// with certificates of their own): connections accepted from now on present the new
    /// ones; open connections are not touched. Sessions resume across a reload (the ticket
    /// keys and session cache stay). An error if the server does not speak TLS or has not
    /// started.
    ///
    /// ```no_run
    /// use web::tls::ServerTls;
    /// let server = web::http::Server::bind("0.0.0.0:8443")?
    ///     .tls(ServerTls::from_pem_files("cert.pem", "key.pem")?);
    /// let control = server.control();
    /// std::thread::spawn(move || loop {
    ///     std::thread::sleep(std::time::Duration::from_secs(24 * 3600));
    ///     // Renewed on disk by the certificate manager: read again.
    ///     if let Ok(tls) = ServerTls::from_pem_files("cert.pem", "key.pem") {
    ///         let _ = control.reload_tls(&tls);
    ///     }
    /// });
    /// server.run(|_req| web::http::text_response(200, "hi"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn reload_tls(&self, tls: &crate::tls::ServerTls) -> std::io::Result<()> {
        let listeners = self.tls_listeners();
        if listeners.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "this server does not speak TLS, or has not started",
            ));
        }
        listeners
            .iter()
            .try_for_each(|(_, shared)| shared.configs.replace(tls))
    }

    /// Replaces the certificates of the TLS listener on `addr` alone (as
    /// [`reload_tls`](Control::reload_tls) does for all). An error if no TLS listener of the
    /// running server has that address.
    ///
    /// ```no_run
    /// use web::tls::ServerTls;
    /// let server = web::http::Server::bind("0.0.0.0:8080")?
    ///     .also_bind_tls("0.0.0.0:8443", ServerTls::from_pem_files("cert.pem", "key.pem")?)?;
    /// let (control, addrs) = (server.control(), server.local_addrs()?);
    /// let handle = server.spawn(|_req| web::http::text_response(200, "hi"))?;
    /// control.reload_tls_on(addrs[1], &ServerTls::from_pem_files("cert.pem", "key.pem")?)?;
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "tls")]
    pub fn reload_tls_on(
        &self,
        addr: std::net::SocketAddr,
        tls: &crate::tls::ServerTls,
    ) -> std::io::Result<()> {
        match self.tls_listeners().iter().find(|(at, _)| *at == addr) {
            Some((_, shared)) => shared.configs.replace(tls),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no TLS listener of this running server is on {addr}"),
            )),
        }
    }

    /// Shows the server's queued output and its lagging peers in its stats.
    pub(crate) fn attach_budget(&self, budget: Arc<crate::live::OutputBudget>) {
        let _ = self.shared.budget.set(budget);
    }

    /// The budget HTTP/2 request bodies are held against, for the figures.
    pub(crate) fn attach_bodies(&self, bodies: Arc<crate::live::OutputBudget>) {
        let _ = self.shared.bodies.set(bodies);
    }

    /// The counter of open WebSocket connections, for the strands to keep.
    pub(crate) fn attach_replies(&self, replies: Arc<super::replies::Replies>) {
        let _ = self.shared.replies.set(replies);
    }

    /// Shows the server's stalls in its stats.
    pub(crate) fn attach_stalls(&self, stalls: Arc<crate::live::Stalls>) {
        let _ = self.shared.stalls.set(stalls);
    }

    pub(crate) fn websockets(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.shared.websockets)
    }

    pub(crate) fn streams(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.shared.streams)
    }

    /// The server's figures now (each worker publishes its own once per loop turn); zeros
    /// before the server starts.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?;
    /// let control = server.control();
    /// assert_eq!(control.stats().requests, 0); // zeros before the start
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> ServerStats {
        let Some(remote) = self.shared.remote.get() else {
            return ServerStats::default();
        };
        let s = remote.stats();
        let answered = self
            .shared
            .figures
            .get()
            .map_or_else(Totals::default, |workers| Totals::sum(workers));
        let mut stats = ServerStats {
            open_connections: s.total.open,
            connections: s.total.accepted,
            parked: s.total.parked,
            requests: answered.served,
            responses: answered.classes,
            held_bytes: s.total.held_bytes,
            websockets: self.shared.websockets.load(Ordering::Relaxed),
            event_streams: self.shared.streams.load(Ordering::Relaxed),
            http2_connections: answered.http2_open as usize,
            http2_streams: answered.http2_streams,
            refused_messages: s.total.refused_messages,
            out_of_descriptors: s.total.out_of_descriptors,
            io_uring_workers: s.total.io_uring,
            gathered_sends: s.total.gathered_sends,
            send_submissions: s.total.send_submissions,
            panics: s.total.panics,
            ..ServerStats::default()
        };
        if let Some(stalls) = self.shared.stalls.get() {
            (stats.stalls, stats.longest_stall) = stalls.totals();
        }
        if let Some(replies) = self.shared.replies.get() {
            stats.replies_waiting = replies.waiting.load(Ordering::Relaxed);
            stats.replies_dropped = replies.dropped.load(Ordering::Relaxed);
            stats.replies_timed_out = replies.timed_out.load(Ordering::Relaxed);
        }
        if let Some(budget) = self.shared.budget.get() {
            stats.lagging_closed = budget.dropped();
            stats.queued_output = budget.used();
        }
        if let Some(bodies) = self.shared.bodies.get() {
            stats.held_bodies = bodies.used();
            stats.bodies_refused = bodies.dropped();
        }
        #[cfg(feature = "redis")]
        if let Some(fleet) = self.shared.fleet.get().map(|c| c.stats()) {
            stats.fleet_errors = fleet.errors;
            stats.fleet_dropped = fleet.dropped;
            stats.fleet_local_decisions = fleet.local_decisions;
            stats.fleet_local_reads = fleet.local_reads;
        }
        #[cfg(feature = "tls")]
        if let Some((_, tls)) = self.tls_listeners().first() {
            // One count for all the TLS listeners.
            (stats.tls_handshakes, stats.tls_failures, stats.tls_timeouts) = tls.counters.read();
        }
        stats
    }

    /// The server's figures in Prometheus' text exposition format: every field of
    /// [`ServerStats`] as a `web_…` family with its `# HELP` and `# TYPE` lines, open
    /// connections, connections accepted and requests per worker (label `worker`), replies by
    /// status class (label `class`, `1xx` … `5xx`). Serve it as it is with
    /// [`metrics_response`](Control::metrics_response).
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?;
    /// let text = server.control().metrics();
    /// assert!(text.contains("# TYPE web_responses_total counter"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn metrics(&self) -> String {
        let stats = self.stats();
        let workers = match (self.shared.remote.get(), self.shared.figures.get()) {
            (Some(remote), Some(figures)) => remote
                .stats()
                .workers
                .iter()
                .zip(figures.iter())
                .map(|(w, f)| WorkerFigures {
                    open: w.open,
                    accepted: w.accepted,
                    answered: f.read(),
                })
                .collect(),
            _ => Vec::new(),
        };
        metrics::render(&stats, &workers)
    }

    /// [`metrics`](Control::metrics) as a reply: `200` with the text format's content type,
    /// never cached. A route for Prometheus to scrape:
    ///
    /// ```no_run
    /// use web::http::{text_response, Router, Server};
    /// let server = Server::bind("127.0.0.1:8080")?;
    /// let control = server.control();
    /// let app = Router::new()
    ///     .get("/metrics", move |_req| control.metrics_response())
    ///     .get("/", |_req| text_response(200, "hi"));
    /// server.run(app.handler())?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn metrics_response(&self) -> crate::http::Response {
        crate::http::Response::new(
            200,
            metrics::CONTENT_TYPE,
            vec![crate::http::Header::new("Cache-Control", "no-store")],
            self.metrics(),
        )
    }

    /// Starts the graceful stop and returns at once: no new connections, requests in flight
    /// are answered (for up to the drain timeout), WebSocket connections get close 1001, idle
    /// connections are closed. [`Server::run`](super::Server::run) then returns, and
    /// [`ServerHandle::join`](super::ServerHandle::join) too.
    ///
    /// ```
    /// let server = web::http::Server::bind("127.0.0.1:0")?;
    /// let control = server.control();
    /// control.shutdown(); // asked before the start: the server stops as it starts
    /// server.run(|_req| web::http::text_response(200, "never"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self) {
        match self.shared.remote.get() {
            Some(remote) => remote.shutdown(),
            None => self.shared.early_stop.store(true, Ordering::SeqCst),
        }
    }

    /// Whether a stop has begun.
    ///
    /// ```
    /// let control = web::http::Server::bind("127.0.0.1:0")?.control();
    /// assert!(!control.is_shutting_down());
    /// control.shutdown();
    /// assert!(control.is_shutting_down());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_shutting_down(&self) -> bool {
        self.shared
            .remote
            .get()
            .map_or(self.shared.early_stop.load(Ordering::SeqCst), |r| {
                r.is_shutting_down()
            })
    }

    /// Stops the server gracefully (as [`shutdown`](Control::shutdown)) when the process gets
    /// SIGINT (Ctrl-C) or SIGTERM. The library installs the signal handlers (which only wake a
    /// watcher thread) once per process, replacing any the program had; each call adds this
    /// server to those it stops.
    ///
    /// A signal that finds every such server already stopping or stopped — a second Ctrl-C
    /// while requests drain, or one after the servers ended — ends the process at once, as
    /// the signal would without a handler.
    ///
    /// ```no_run
    /// let server = web::http::Server::bind("127.0.0.1:8080")?;
    /// server.control().shutdown_on_signals()?;
    /// server.run(|_req| web::http::text_response(200, "hi"))?; // returns after Ctrl-C
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown_on_signals(&self) -> std::io::Result<()> {
        let control = self.clone();
        signals::on_stop_signal(Box::new(move || {
            let began = !control.is_shutting_down();
            control.shutdown();
            began
        }))
    }
}
