//! A TLS connection in the reactor: the protocol's own strand (HTTP, then WebSocket or SSE)
//! run over a [`Session`] that stands between it and the socket. The one place that knows
//! when TLS holds a connection open, for how long, and what closes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reactor::{ConnId, Io, Service, Strand, Then, Wake};

use super::server_config::Configs;
use super::session::{Session, release_buffers};
use crate::live::OutputBudget;

/// What every connection of a TLS server shares.
pub(crate) struct TlsShared {
    pub(crate) configs: Configs,
    pub(crate) counters: Arc<TlsCounters>,
    pub(crate) handshake_timeout: Duration,
    /// How long a connection the strand has closed may take to send its last records.
    pub(crate) linger: Duration,
    /// The server's budget for output its peers have not taken: records a socket did not take
    /// count against it.
    pub(crate) budget: Arc<OutputBudget>,
    /// At most this many records under one of our keys (lower than the AEAD's own limit only
    /// in tests; see [`Server::tls_records_per_key`](crate::http::Server::tls_records_per_key)).
    pub(crate) records_per_key: u64,
}

/// A TLS server's figures, shown in [`ServerStats`](crate::http::ServerStats).
#[derive(Debug, Default)]
pub(crate) struct TlsCounters {
    handshakes: AtomicU64,
    failures: AtomicU64,
    timeouts: AtomicU64,
}

impl TlsCounters {
    pub(crate) fn handshake(&self) {
        self.handshakes.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn failed(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn timed_out(&self) {
        self.timeouts.fetch_add(1, Ordering::Relaxed);
    }
    /// Handshakes done, connections failed (bad records, plain HTTP, alerts), handshakes
    /// timed out.
    pub(crate) fn read(&self) -> (u64, u64, u64) {
        (
            self.handshakes.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
            self.timeouts.load(Ordering::Relaxed),
        )
    }
}

/// Makes the connections of a server with TLS listeners: the protocol's service makes the
/// strand, this one puts it over TLS when its listener is a TLS one.
pub(crate) struct TlsService<S> {
    pub(crate) inner: S,
    /// Each listener's TLS, in the listeners' order; `None`: a plain listener.
    pub(crate) listeners: Arc<[Option<Arc<TlsShared>>]>,
}

impl<S: Service> Service for TlsService<S> {
    type Strand = TlsConn<S::Strand>;

    fn open(
        &mut self,
        stream: &mio::net::TcpStream,
        peer: std::net::SocketAddr,
        id: ConnId,
    ) -> Self::Strand {
        self.open_on(0, stream, peer, id)
    }

    fn open_on(
        &mut self,
        listener: usize,
        stream: &mio::net::TcpStream,
        peer: std::net::SocketAddr,
        id: ConnId,
    ) -> Self::Strand {
        let tls = self.listeners.get(listener).and_then(Option::as_ref);
        TlsConn {
            inner: self.inner.open_on(listener, stream, peer, id),
            session: tls.map(|shared| Box::new(Session::new(shared))),
        }
    }

    fn fan_out(&mut self, msg: &<S::Strand as Strand>::Msg, to: &mut Vec<ConnId>) {
        self.inner.fan_out(msg, to);
    }

    fn idle(&mut self) {
        self.inner.idle();
        release_buffers();
    }
}

/// A connection's strand under TLS, or of a plain listener beside TLS ones. The session is
/// boxed: a TLS connection costs its slab entry (one pointer more than a plain one) and this
/// one allocation, with the rustls state.
pub(crate) struct TlsConn<S> {
    inner: S,
    /// `None`: the connection came to a plain listener, and its strand runs on the socket.
    session: Option<Box<Session>>,
}

impl<S: Strand> TlsConn<S> {
    /// Runs `step` on the inner strand through the session, and parks as both need.
    fn step(
        &mut self,
        io: &mut Io<'_, S::Msg>,
        step: impl FnOnce(&mut S, &mut Io<'_, S::Msg>) -> Then,
    ) -> Then {
        let Some(session) = self.session.as_deref_mut() else {
            return step(&mut self.inner, io);
        };
        if let Some(deadline) = session.closing() {
            return finish(session, io, deadline);
        }
        session.new_turn();
        match session.flush(&mut io.socket()) {
            Ok(_) => {}
            Err(_) => return Then::Close,
        }
        let next = step(&mut self.inner, &mut io.layered(session));
        park(session, next, io)
    }
}

impl<S: Strand> Strand for TlsConn<S> {
    type Msg = S::Msg;

    fn resume(&mut self, io: &mut Io<'_, S::Msg>, wake: Wake) -> Then {
        if let Some(session) = self.session.as_deref_mut() {
            match wake {
                Wake::Start => session.start(io.now()),
                Wake::Timeout if session.timed_out(io.now()) => return Then::Close,
                _ => {}
            }
        }
        self.step(io, |inner, io| inner.resume(io, wake))
    }

    fn drain(&mut self, io: &mut Io<'_, S::Msg>) -> Then {
        if self.session.as_deref().is_some_and(Session::handshaking) {
            // Shutting down: no request has come over this connection yet.
            return Then::Close;
        }
        self.step(io, |inner, io| inner.drain(io))
    }

    fn message(&mut self, io: &mut Io<'_, S::Msg>, msg: S::Msg) -> Then {
        self.step(io, |inner, io| inner.message(io, msg))
    }

    /// The inner strand's own way with several streams (an HTTP/2 connection steps them all
    /// and writes once), through the session once.
    fn message_streams(&mut self, io: &mut Io<'_, S::Msg>, streams: &[u32], msg: S::Msg) -> Then {
        self.step(io, |inner, io| inner.message_streams(io, streams, msg))
    }

    fn wants(&self, msg: &S::Msg) -> bool {
        self.inner.wants(msg)
    }

    fn closed(&mut self, id: ConnId) {
        self.inner.closed(id);
    }

    fn held_bytes(&self) -> usize {
        self.inner.held_bytes() + self.session.as_deref().map_or(0, Session::held_bytes)
    }
}

/// What the connection waits for: the strand's wish, the socket writable while records wait
/// to be sent, and the handshake's deadline while it runs. A strand that closes with records
/// still unsent gets them sent first (within the linger time).
fn park<M>(session: &mut Session, next: Then, io: &Io<'_, M>) -> Then {
    match next {
        Then::Park {
            read,
            write,
            deadline,
        } => Then::Park {
            // Owing the socket too much, the connection reads again once the peer has taken
            // some (a writable wake).
            read: read && !session.owes_too_much(),
            write: write || session.has_unsent(),
            deadline: match (deadline, session.handshake_deadline()) {
                (Some(d), Some(h)) => Some(d.min(h)),
                (d, h) => d.or(h),
            },
        },
        Then::Close if session.has_unsent() => {
            let deadline = io.now() + session.linger();
            session.close_after_sending(deadline);
            Then::write().until(deadline)
        }
        // A TLS connection cannot be handed over as a plain socket.
        Then::Close | Then::Release(_) => Then::Close,
    }
}

/// Sends what is left of a closed strand's records, then closes (at the deadline at last).
fn finish<M>(session: &mut Session, io: &mut Io<'_, M>, deadline: Instant) -> Then {
    match session.flush(&mut io.socket()) {
        Ok(false) if io.now() < deadline => Then::write().until(deadline),
        _ => Then::Close,
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    /// What a TLS connection holds besides its plain strand, sizes a test keeps from growing.
    #[test]
    fn a_tls_connection_adds_a_pointer_to_the_slab_entry_and_two_small_boxes() {
        // The slab entry: the plain connection's strand and one pointer (to the session).
        assert_eq!(
            size_of::<super::TlsConn<crate::server::conn::ConnStrand>>(),
            size_of::<crate::server::conn::ConnStrand>() + 8
        );
        // The session: who protects the records, what a read or write left (empty while
        // idle), the turn's read budget, the ClientHello's walk (boxed, while it lasts), the
        // phase, the shared settings.
        assert_eq!(size_of::<super::Session>(), 112);
        // Once the handshake is done: rustls' kernel connection (560 B, its QUIC fields
        // included), our two directions' keys, the record limit per key, and 16 bytes for the
        // version, the owed key update, a handshake header being joined and the peer's
        // allowances.
        assert_eq!(
            size_of::<super::super::traffic::Traffic>(),
            size_of::<rustls::kernel::KernelConnection<rustls::server::ServerConnectionData>>()
                + 2 * 56
                + 8
                + 16
        );
    }
}
