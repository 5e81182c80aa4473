//! Where the optional features meet the server: what they add to the builder (TLS, the fleet,
//! permessage-deflate: their settings; the setters are the builder's, in `builder.rs`) and to
//! starting it. The rest of `server/`
//! names a feature only where a type has a variant for it (`Running::Tls`, the figures).

use std::io;
use std::sync::Arc;

use super::Server;
#[cfg(doc)]
use super::{Control, ServerStats};
use crate::live::OutputBudget;

/// What the optional features add to a server being built.
#[derive(Default)]
pub(super) struct Extras {
    /// The other instances (`--features redis`).
    #[cfg(feature = "redis")]
    pub(super) fleet: Option<crate::fleet::Fleet>,
    /// The certificates (`--features tls`).
    #[cfg(feature = "tls")]
    pub(super) tls: Option<crate::tls::ServerTls>,
    /// The TLS settings (`--features tls`).
    #[cfg(feature = "tls")]
    pub(super) tls_config: crate::tls::TlsConfig,
}

impl Extras {
    /// Joins `rooms` to the fleet, if the server has one: its threads.
    pub(super) fn start_fleet(&self, rooms: &crate::rooms::Rooms) -> io::Result<FleetThreads> {
        #[cfg(feature = "redis")]
        return match &self.fleet {
            Some(fleet) => {
                let (link, threads) = fleet.serve_rooms(rooms)?;
                rooms.attach_fleet(Box::new(link));
                Ok(Some(threads))
            }
            None => Ok(None),
        };
        #[cfg(not(feature = "redis"))]
        {
            let _ = rooms;
            Ok(())
        }
    }
}

/// The fleet's threads while the server runs (nothing without `--features redis`).
#[cfg(feature = "redis")]
pub(crate) type FleetThreads = Option<crate::fleet::Running>;
#[cfg(not(feature = "redis"))]
pub(crate) type FleetThreads = ();

#[cfg(feature = "tls")]
pub(super) type TlsListeners = Arc<[Option<Arc<crate::tls::TlsShared>>]>;
#[cfg(not(feature = "tls"))]
pub(super) type TlsListeners = std::convert::Infallible;

/// A further listener's certificates (`--features tls`; without it every listener is plain).
#[cfg(feature = "tls")]
pub(super) type ListenerTls = crate::tls::ServerTls;
#[cfg(not(feature = "tls"))]
pub(super) type ListenerTls = std::convert::Infallible;

/// Each listener's TLS, in the listeners' order (`None`: plain), when any listener speaks
/// TLS (taken from the builder); attached to the control, for reloads and figures.
#[cfg(feature = "tls")]
pub(super) fn tls_listeners(
    server: &mut Server,
    addrs: &[std::net::SocketAddr],
    budget: Arc<OutputBudget>,
) -> io::Result<Option<TlsListeners>> {
    let first = server.extras.tls.take();
    let also: Vec<_> = server.also.iter_mut().map(|(_, tls)| tls.take()).collect();
    if first.is_none() && also.iter().all(Option::is_none) {
        return Ok(None);
    }
    if server.taken.is_some() {
        // The hook takes the socket, which carries records, not requests.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a TLS server cannot hand its connections to a `taking` hook",
        ));
    }
    let counters: Arc<crate::tls::TlsCounters> = Arc::default();
    let mut listeners = Vec::with_capacity(addrs.len());
    for (tls, &addr) in std::iter::once(first).chain(also).zip(addrs) {
        let Some(tls) = tls else {
            listeners.push(None);
            continue;
        };
        let shared = Arc::new(crate::tls::TlsShared {
            configs: crate::tls::Configs::new(&tls, server.http2)?,
            counters: Arc::clone(&counters),
            handshake_timeout: server.extras.tls_config.handshake_timeout,
            linger: server.limits.linger,
            budget: Arc::clone(&budget),
            records_per_key: server.extras.tls_config.records_per_key,
        });
        server.control.attach_tls(addr, Arc::clone(&shared));
        listeners.push(Some(shared));
    }
    Ok(Some(listeners.into()))
}

#[cfg(not(feature = "tls"))]
pub(super) fn tls_listeners(
    _server: &mut Server,
    _addrs: &[std::net::SocketAddr],
    _budget: Arc<OutputBudget>,
) -> io::Result<Option<TlsListeners>> {
    Ok(None)
}
