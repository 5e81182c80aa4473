//! Starting a built [`Server`]: its workers (plain or under TLS), its fleet and its ticks, run
//! here or spawned.

use std::io;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use reactor::{Config, Reactor};

use super::Listen;
use crate::http::{Request, Response};
use crate::live::{Command, LiveSettings, OutputBudget, Stalls, Timeouts};
use crate::server::conn::HttpService;
use crate::server::features;
use crate::server::features::FleetThreads;
use crate::server::figures::Figures;
use crate::server::shared::{DynHandler, ServerShared};
use crate::server::ticks::Tick;
use crate::server::*;
use crate::ws::WsSettings;

/// Makes the server's workers and what they share, ready to run.
fn reactor(
    mut server: Server,
    handler: Box<DynHandler>,
) -> io::Result<(Running, Arc<ServerShared>, FleetThreads)> {
    if !server.share_one_arena {
        // Before any of the server's threads (workers, ticks, fleet) start.
        reactor::arena_sharing(false);
    }
    let budget = OutputBudget::new(server.max_queued_output);
    let workers = server
        .workers
        .unwrap_or_else(|| Config::default().worker_count());
    let addrs = server.local_addrs()?;
    let tls = features::tls_listeners(&mut server, &addrs, Arc::clone(&budget))?;
    let config = Config::default()
        .workers(workers)
        .max_connections(server.max_connections)
        .io_uring(server.io_uring)
        .drain_deadline(server.drain_timeout);
    server.control.attach_budget(Arc::clone(&budget));
    let bodies = OutputBudget::new(server.limits.max_held_bodies);
    server.control.attach_bodies(Arc::clone(&bodies));
    let replies = replies::Replies::new(workers, server.max_connections);
    server.control.attach_replies(Arc::clone(&replies));
    let stalls = Arc::new(Stalls::new(server.stall_threshold, workers));
    server.control.attach_stalls(Arc::clone(&stalls));
    let live = LiveSettings {
        max_rooms: server.max_rooms,
        budget,
        timeouts: Timeouts {
            write: server.limits.write_timeout,
            close: server.ws.close_timeout,
            linger: server.limits.linger,
        },
        rooms: server.rooms.clone(),
        open: server.control.websockets(),
        streams: server.control.streams(),
        ping_interval: server.ws.ping_interval,
        kernel_liveness: server.ws.liveness == crate::ws::Liveness::Kernel,
        stalls: Arc::clone(&stalls),
    };
    let shared = Arc::new(ServerShared {
        handler,
        taken: server.taken,
        limits: server.limits,
        budget: server.budget.map(AtomicU64::new),
        figures: (0..workers)
            .map(|_| Figures::default())
            .collect::<Arc<[Figures]>>(),
        stalls,
        remote: std::sync::OnceLock::new(),
        websocket: server.websocket,
        sse: server.sse,
        ws_settings: Arc::new(WsSettings {
            live: live.clone(),
            max_message: server.ws.max_message,
            deflate: server.ws.deflate,
        }),
        sse_settings: Arc::new(live),
        replies,
        reply_timeout: server.reply_timeout,
        bodies,
        proxies: server.proxies,
        access_log: server.access_log,
        h2: server
            .http2
            .then(|| server.http2_config.codec(server.limits.head.max_head_bytes)),
        h2_settings_timeout: server.http2_config.settings_timeout,
    });
    let service = |worker| HttpService {
        shared: Arc::clone(&shared),
        worker: worker as u32,
    };
    let also = server.also.drain(..).map(|(socket, _)| socket).collect();
    let sets = listener_sets(server.listen, also, workers)?;
    let reactor = match tls {
        None => Running::Plain(Reactor::from_listener_sets(sets, config, service)?),
        #[cfg(feature = "tls")]
        Some(tls) => Running::Tls(Reactor::from_listener_sets(sets, config, move |worker| {
            crate::tls::TlsService {
                inner: service(worker),
                listeners: Arc::clone(&tls),
            }
        })?),
    };
    let _ = shared.remote.set(reactor.remote());
    let _ = shared.replies.remote.set(reactor.remote());
    let mut schedule = Vec::new();
    if !shared.sse.is_empty() {
        schedule.push(Tick {
            every: server.heartbeat,
            command: Command::Heartbeat,
        });
    }
    if let Some(every) = server.ws.ping_interval
        && !shared.websocket.is_empty()
        && server.ws.liveness == crate::ws::Liveness::Pings
    {
        // Two sweeps an interval: see `PING_INTERVAL`. (The kernel's probes need none.)
        schedule.push(Tick {
            every: every / 2,
            command: Command::Sweep,
        });
    }
    ticks::start(reactor.remote(), schedule)?;
    server.rooms.attach(Box::new(reactor.remote()));
    #[allow(clippy::let_unit_value)] // `()` without the fleet feature
    let fleet = server.extras.start_fleet(&server.rooms)?;
    server
        .control
        .attach(reactor.remote(), Arc::clone(&shared.figures));
    Ok((reactor, shared, fleet))
}

/// Each worker's sockets, one per address (the first address's, then the further ones'). A
/// bound first address gets a socket per worker; a listener the caller gave is one worker's.
fn listener_sets(
    listen: Listen,
    also: Vec<TcpListener>,
    workers: usize,
) -> io::Result<Vec<Vec<TcpListener>>> {
    let first = match listen {
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
    let mut sets: Vec<Vec<TcpListener>> = first.into_iter().map(|l| vec![l]).collect();
    for socket in also {
        let addr = socket.local_addr()?;
        let mut socket = Some(socket);
        for set in &mut sets {
            set.push(match socket.take() {
                Some(first) => first,
                None => reactor::bind_reuseport(addr)?,
            });
        }
    }
    Ok(sets)
}

/// [`Server::run`]: serves on this thread until stopped.
pub(super) fn run(
    server: Server,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> io::Result<()> {
    // The fleet's threads stop after the workers (locals drop after the tail).
    let (reactor, _shared, _fleet) = reactor(server, Box::new(handler))?;
    match reactor {
        Running::Plain(reactor) => reactor.run(),
        #[cfg(feature = "tls")]
        Running::Tls(reactor) => reactor.run(),
    }
}

/// [`Server::spawn`]: serves on background threads; the handle stops and joins them.
pub(super) fn spawn(
    server: Server,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> io::Result<ServerHandle> {
    let control = server.control.clone();
    let (reactor, _shared, fleet) = reactor(server, Box::new(handler))?;
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
