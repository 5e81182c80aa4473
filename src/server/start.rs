//! Starting a built [`Server`]: its workers (plain or under TLS), its fleet and its ticks, run
//! here or spawned.

use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use reactor::{Config, Reactor};

use super::builder::Listen;
use super::conn::HttpService;
use super::features::FleetThreads;
use super::figures::Figures;
use super::shared::{DynHandler, ServerShared};
use super::ticks::Tick;
use super::*;
use crate::http::{Request, Response};
use crate::live::{Command, LiveSettings, OutputBudget, Stalls, Timeouts};
use crate::ws::WsSettings;

impl Server {
    fn reactor(
        mut self,
        handler: Box<DynHandler>,
    ) -> io::Result<(Running, Arc<ServerShared>, FleetThreads)> {
        if !self.share_one_arena {
            // Before any of the server's threads (workers, ticks, fleet) start.
            reactor::arena_sharing(false);
        }
        let budget = OutputBudget::new(self.max_queued_output);
        let tls = self.tls_service(Arc::clone(&budget))?;
        let workers = self
            .workers
            .unwrap_or_else(|| Config::default().worker_count());
        let config = Config::default()
            .workers(workers)
            .max_connections(self.max_connections)
            .drain_deadline(self.drain_timeout);
        self.control.attach_budget(Arc::clone(&budget));
        let bodies = OutputBudget::new(self.limits.max_held_bodies);
        self.control.attach_bodies(Arc::clone(&bodies));
        let replies = replies::Replies::new(workers, self.max_connections);
        self.control.attach_replies(Arc::clone(&replies));
        let stalls = Arc::new(Stalls::new(self.stall_threshold, workers));
        self.control.attach_stalls(Arc::clone(&stalls));
        let live = LiveSettings {
            max_rooms: self.max_rooms,
            budget,
            timeouts: Timeouts {
                write: self.limits.write_timeout,
                close: self.ws.close_timeout,
                linger: self.limits.linger,
            },
            rooms: self.rooms.clone(),
            open: self.control.websockets(),
            streams: self.control.streams(),
            ping_interval: self.ws.ping_interval,
            stalls: Arc::clone(&stalls),
        };
        let shared = Arc::new(ServerShared {
            handler,
            taken: self.taken,
            limits: self.limits,
            budget: self.budget.map(AtomicU64::new),
            figures: (0..workers)
                .map(|_| Figures::default())
                .collect::<Arc<[Figures]>>(),
            stalls,
            remote: std::sync::OnceLock::new(),
            websocket: self.websocket,
            sse: self.sse,
            ws_settings: Arc::new(WsSettings {
                live: live.clone(),
                max_message: self.ws.max_message,
                deflate: self.ws.deflate,
            }),
            sse_settings: Arc::new(live),
            replies,
            reply_timeout: self.reply_timeout,
            bodies,
            proxies: self.proxies,
            access_log: self.access_log,
            h2: self
                .http2
                .then(|| self.http2_config.codec(self.limits.head.max_head_bytes)),
        });
        let service = |worker| HttpService {
            shared: Arc::clone(&shared),
            worker: worker as u32,
        };
        let listeners = match self.listen {
            Listen::Bound(first) => {
                let addr = first.local_addr()?;
                let mut listeners = vec![first];
                for _ in 1..workers {
                    listeners.push(reactor::bind_reuseport(addr)?);
                }
                listeners
            }
            Listen::Given(listener) => vec![listener],
        };
        let reactor = match tls {
            None => Running::Plain(Reactor::from_listeners(listeners, config, service)?),
            #[cfg(feature = "tls")]
            Some(tls) => Running::Tls(Reactor::from_listeners(listeners, config, move |worker| {
                crate::tls::TlsService {
                    inner: service(worker),
                    shared: Arc::clone(&tls),
                }
            })?),
        };
        let _ = shared.remote.set(reactor.remote());
        let _ = shared.replies.remote.set(reactor.remote());
        let mut schedule = Vec::new();
        if !shared.sse.is_empty() {
            schedule.push(Tick {
                every: self.heartbeat,
                command: Command::Heartbeat,
            });
        }
        if let (Some(every), false) = (self.ws.ping_interval, shared.websocket.is_empty()) {
            // Two sweeps an interval: see `PING_INTERVAL`.
            schedule.push(Tick {
                every: every / 2,
                command: Command::Sweep,
            });
        }
        ticks::start(reactor.remote(), schedule)?;
        self.rooms.attach(Box::new(reactor.remote()));
        #[allow(clippy::let_unit_value)] // `()` without the fleet feature
        let fleet = self.extras.start_fleet(&self.rooms)?;
        self.control
            .attach(reactor.remote(), Arc::clone(&shared.figures));
        Ok((reactor, shared, fleet))
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
        // The fleet's threads stop after the workers (locals drop after the tail).
        let (reactor, _shared, _fleet) = self.reactor(Box::new(handler))?;
        match reactor {
            Running::Plain(reactor) => reactor.run(),
            #[cfg(feature = "tls")]
            Running::Tls(reactor) => reactor.run(),
        }
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
        let control = self.control.clone();
        let (reactor, _shared, fleet) = self.reactor(Box::new(handler))?;
        let handle = match reactor {
            Running::Plain(reactor) => reactor.spawn()?,
            #[cfg(feature = "tls")]
            Running::Tls(reactor) => reactor.spawn()?,
        };
        Ok(ServerHandle {
            handle,
            control,
            _fleet: fleet,
        })
    }
}

/// The fleet threads of a running server (none without the `redis` feature); dropped after
/// the workers stop.
/// The workers of a server about to run: plain, or each connection under TLS.
enum Running {
    Plain(Reactor<HttpService>),
    #[cfg(feature = "tls")]
    Tls(Reactor<crate::tls::TlsService<HttpService>>),
}

impl Running {
    fn remote(&self) -> reactor::Remote<Command> {
        match self {
            Running::Plain(reactor) => reactor.remote(),
            #[cfg(feature = "tls")]
            Running::Tls(reactor) => reactor.remote(),
        }
    }
}
