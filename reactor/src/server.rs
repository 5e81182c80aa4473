//! [`Reactor`]: sets up the workers; [`Handle`]: a running server.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mio::{Interest, Poll};

use crate::conn_id::{MAX_LISTENERS, WAKER, listener_token};
use crate::listen;
use crate::remote::{Counters, Shared, WorkerShared};
use crate::worker::Worker;
use crate::{Config, Remote, Service, Stats, Strand};

/// The message type of a service's strands.
///
/// ```
/// # use reactor::*;
/// # struct S;
/// # impl Strand for S {
/// #     type Msg = ();
/// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
/// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
/// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
/// #     fn held_bytes(&self) -> usize { 0 }
/// # }
/// # struct Svc;
/// # impl Service for Svc {
/// #     type Strand = S;
/// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
/// # }
/// fn sender(remote: Remote<MsgOf<Svc>>) -> Remote<()> {
///     remote
/// }
/// ```
pub type MsgOf<S> = <<S as Service>::Strand as Strand>::Msg;

/// A server ready to run: one poll, listener and service per worker.
///
/// ```no_run
/// # use reactor::{ConnId, Io, Then, Service, Strand, Wake};
/// # struct Closer;
/// # impl Strand for Closer {
/// #     type Msg = ();
/// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
/// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
/// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
/// #     fn held_bytes(&self) -> usize { 0 }
/// # }
/// # struct CloseAll;
/// # impl Service for CloseAll {
/// #     type Strand = Closer;
/// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> Closer { Closer }
/// # }
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let reactor = reactor::Reactor::new(listener, reactor::Config::default(), |_worker| CloseAll)?;
/// let handle = reactor.spawn()?;
/// println!("listening on {}", handle.local_addr());
/// handle.shutdown()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Reactor<S: Service> {
    parts: Vec<(Poll, Vec<mio::net::TcpListener>, S)>,
    remote: Remote<MsgOf<S>>,
    config: Config,
    /// The addresses listened on, in the listeners' order (the first is `local_addr`).
    local_addrs: Vec<SocketAddr>,
}

impl<S: Service> Reactor<S> {
    /// Prepares `config.workers` workers sharing `listener` (an already bound listener: each
    /// worker polls its own `dup` of it, all accepting from one queue). `make_service(i)` makes
    /// worker `i`'s service.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let reactor = Reactor::new(listener, Config::default().workers(1), |_| Svc)?;
    /// # drop(reactor);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(
        listener: TcpListener,
        config: Config,
        make_service: impl FnMut(usize) -> S,
    ) -> io::Result<Reactor<S>> {
        let listeners = listen::duplicated(listener, config.workers)?;
        Reactor::from_listener_sets(
            listeners.into_iter().map(|l| vec![l]).collect(),
            config,
            make_service,
        )
    }

    /// Binds `addr` (port 0 picks a free port) with one `SO_REUSEPORT` socket per worker, so the
    /// kernel spreads connections across workers by a hash of the connection's addresses
    /// (Linux; elsewhere this shares one listener as [`Reactor::new`] does). An address another
    /// socket already listens on fails with [`io::ErrorKind::AddrInUse`]: the first socket is
    /// made with [`bind_exclusive`](crate::bind_exclusive).
    ///
    /// # Dup or `SO_REUSEPORT`: `SO_REUSEPORT` spreads better
    ///
    /// `tests/listener_spread.rs` (`cargo test -p web-reactor --release --test listener_spread
    /// -- --ignored --nocapture`) measures the busiest worker's share of connections accepted
    /// both ways, under churn and with connections held: one `SO_REUSEPORT` socket per worker
    /// stays within a point of an even split, a shared listener drifts by up to 16 points.
    ///
    /// With a shared listener every worker's poll is woken for each connection (edge-triggered,
    /// no `EPOLLEXCLUSIVE`) and whichever runs first takes it, so the split drifts with
    /// scheduling (the 500-connection echo test has seen 400 / 100). `SO_REUSEPORT` hashes each
    /// connection's addresses to one socket: an even split, and only one worker woken. Its cost:
    /// the split ignores load, so a worker stuck in a long strand call still gets its share.
    /// Prefer `bind` when the server owns its address; `new` serves callers that hand over an
    /// already bound listener.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let reactor = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(2), |_| Svc)?;
    /// assert_ne!(reactor.local_addr().port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(
        addr: SocketAddr,
        config: Config,
        make_service: impl FnMut(usize) -> S,
    ) -> io::Result<Reactor<S>> {
        let listeners = listen::reuseport(addr, config.workers)?;
        Reactor::from_listener_sets(
            listeners.into_iter().map(|l| vec![l]).collect(),
            config,
            make_service,
        )
    }

    /// Prepares one worker per listener in `listeners` (for example sockets made with
    /// [`bind_reuseport`](crate::bind_reuseport) on one address); `config.workers` is ignored.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let first = bind_reuseport("127.0.0.1:0".parse().unwrap())?;
    /// let second = bind_reuseport(first.local_addr()?)?;
    /// let reactor = Reactor::from_listeners(vec![first, second], Config::default(), |_| Svc)?;
    /// # drop(reactor);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_listeners(
        listeners: Vec<TcpListener>,
        config: Config,
        make_service: impl FnMut(usize) -> S,
    ) -> io::Result<Reactor<S>> {
        Reactor::from_listener_sets(
            listeners.into_iter().map(|l| vec![l]).collect(),
            config,
            make_service,
        )
    }

    /// Prepares one worker per set in `sets`, each polling every listener of its set: a
    /// server on several addresses (a plain port and a TLS one), every worker taking
    /// connections from all of them. Each set holds its worker's socket for each address, in
    /// the same order in every set; a connection's strand is made knowing that place
    /// ([`Service::open_on`]). `config.workers` is ignored. At most
    /// [`MAX_LISTENERS`](crate::MAX_LISTENERS) addresses; the sets must agree on their number.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let plain = bind_reuseport("127.0.0.1:0".parse().unwrap())?;
    /// let other = bind_reuseport("127.0.0.1:0".parse().unwrap())?;
    /// let reactor = Reactor::from_listener_sets(vec![vec![plain, other]], Config::default(), |_| Svc)?;
    /// assert_eq!(reactor.local_addrs().len(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_listener_sets(
        sets: Vec<Vec<TcpListener>>,
        config: Config,
        mut make_service: impl FnMut(usize) -> S,
    ) -> io::Result<Reactor<S>> {
        let refuse = |why: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, why.to_owned()));
        let Some(first) = sets.first() else {
            return refuse("no listener given");
        };
        if first.is_empty() || first.len() > MAX_LISTENERS {
            return refuse("a worker listens on 1 to MAX_LISTENERS addresses");
        }
        if sets.iter().any(|set| set.len() != first.len()) {
            return refuse("every worker listens on the same addresses");
        }
        let local_addrs = first
            .iter()
            .map(TcpListener::local_addr)
            .collect::<io::Result<Vec<_>>>()?;
        let config = config.workers(sets.len());
        let mut parts = Vec::with_capacity(sets.len());
        let mut shared = Vec::with_capacity(sets.len());
        for (i, set) in sets.into_iter().enumerate() {
            let poll = Poll::new()?;
            let mut listeners = Vec::with_capacity(set.len());
            for (at, listener) in set.into_iter().enumerate() {
                listener.set_nonblocking(true)?;
                let mut listener = mio::net::TcpListener::from_std(listener);
                poll.registry()
                    .register(&mut listener, listener_token(at), Interest::READABLE)?;
                listeners.push(listener);
            }
            let waker = mio::Waker::new(poll.registry(), WAKER)?;
            shared.push(WorkerShared {
                inbox: Mutex::new(Vec::new()),
                waker,
                counters: Counters::default(),
                running: AtomicBool::new(true),
                ahead: AtomicBool::new(false),
            });
            parts.push((poll, listeners, make_service(i)));
        }
        let remote = Remote {
            shared: Arc::new(Shared {
                workers: shared.into_boxed_slice(),
                shutdown: AtomicBool::new(false),
            }),
        };
        Ok(Reactor {
            parts,
            remote,
            config,
            local_addrs,
        })
    }

    /// The address the server listens on.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let reactor = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?;
    /// println!("{}", reactor.local_addr());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addrs[0]
    }

    /// Every address the server listens on, in the listeners' order.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let reactor = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?;
    /// assert_eq!(reactor.local_addrs(), [reactor.local_addr()]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// The server's [`Remote`], usable before it runs (say, to shut down a [`Reactor::run`]
    /// from another thread).
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let reactor = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?;
    /// let remote = reactor.remote(); // usable before and after the start
    /// assert_eq!(remote.workers(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remote(&self) -> Remote<MsgOf<S>> {
        self.remote.clone()
    }

    /// Starts one thread per worker (named `reactor-<i>`) and returns at once.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let reactor = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?;
    /// let handle = reactor.spawn()?;
    /// handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn spawn(self) -> io::Result<Handle<MsgOf<S>>> {
        let mut handle = Handle {
            remote: self.remote.clone(),
            threads: Vec::with_capacity(self.parts.len()),
            local_addrs: self.local_addrs,
        };
        for (i, (poll, listeners, service)) in self.parts.into_iter().enumerate() {
            let worker = Worker::new(
                i,
                poll,
                listeners,
                service,
                self.remote.clone(),
                self.config.clone(),
            );
            let thread = std::thread::Builder::new()
                .name(format!("reactor-{i}"))
                .spawn(move || worker.run())?;
            handle.threads.push(thread);
        }
        Ok(handle)
    }

    /// Runs the server and returns only after a shutdown started through a [`Remote`]
    /// (see [`Reactor::remote`]) has completed.
    ///
    /// ```no_run
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// Reactor::bind("127.0.0.1:7000".parse().unwrap(), Config::default(), |_| Svc)?.run()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run(self) -> io::Result<()> {
        self.spawn()?.join()
    }
}

/// A running server. Dropping it shuts the server down gracefully and waits for its workers.
///
/// ```no_run
/// # fn demo(handle: reactor::Handle<()>) -> std::io::Result<()> {
/// let addr = handle.local_addr();
/// let stats = handle.stats();
/// handle.shutdown()?; // stop accepting, drain, join
/// # let _ = (addr, stats);
/// # Ok(())
/// # }
/// ```
pub struct Handle<M: Send + 'static> {
    remote: Remote<M>,
    threads: Vec<JoinHandle<()>>,
    local_addrs: Vec<SocketAddr>,
}

impl<M: Send + 'static> Handle<M> {
    /// The address the server listens on.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let handle = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?.spawn()?;
    /// assert_ne!(handle.local_addr().port(), 0);
    /// handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addrs[0]
    }

    /// Every address the server listens on, in the listeners' order.
    ///
    /// ```
    /// fn demo(handle: &reactor::Handle<()>) {
    ///     assert_eq!(handle.local_addrs()[0], handle.local_addr());
    /// }
    /// ```
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// A [`Remote`] of this server.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let handle = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?.spawn()?;
    /// handle.remote().shutdown(); // from anywhere
    /// handle.join()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remote(&self) -> Remote<M> {
        self.remote.clone()
    }

    /// The server's figures now.
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let handle = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?.spawn()?;
    /// assert_eq!(handle.stats().total.open, 0);
    /// handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.remote.stats()
    }

    /// Graceful shutdown: stops accepting, asks every strand to [drain](crate::Strand::drain),
    /// waits for them to close (closing the rest after the drain deadline), then joins the
    /// workers. Fails only if a worker thread panicked (a bug of the reactor: strand panics are
    /// caught).
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let handle = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?.spawn()?;
    /// handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(mut self) -> io::Result<()> {
        self.remote.shutdown();
        self.wait()
    }

    /// Waits until the workers end (after a shutdown started elsewhere).
    ///
    /// ```
    /// # use reactor::*;
    /// # struct S;
    /// # impl Strand for S {
    /// #     type Msg = ();
    /// #     fn resume(&mut self, _: &mut Io<'_, ()>, _: Wake) -> Then { Then::Close }
    /// #     fn drain(&mut self, _: &mut Io<'_, ()>) -> Then { Then::Close }
    /// #     fn message(&mut self, _: &mut Io<'_, ()>, _: ()) -> Then { Then::Close }
    /// #     fn held_bytes(&self) -> usize { 0 }
    /// # }
    /// # struct Svc;
    /// # impl Service for Svc {
    /// #     type Strand = S;
    /// #     fn open(&mut self, _: &mio::net::TcpStream, _: std::net::SocketAddr, _: ConnId) -> S { S }
    /// # }
    /// let handle = Reactor::bind("127.0.0.1:0".parse().unwrap(), Config::default().workers(1), |_| Svc)?.spawn()?;
    /// handle.remote().shutdown();
    /// handle.join()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn join(mut self) -> io::Result<()> {
        self.wait()
    }

    fn wait(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                result = Err(io::Error::other("a reactor worker thread panicked"));
            }
        }
        result
    }
}

impl<M: Send + 'static> Drop for Handle<M> {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.remote.shutdown();
            let _ = self.wait();
        }
    }
}

impl<M: Send + 'static> std::fmt::Debug for Handle<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("local_addrs", &self.local_addrs)
            .field("workers", &self.threads.len())
            .finish()
    }
}
