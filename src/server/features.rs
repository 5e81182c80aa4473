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
pub(super) type TlsShared = Arc<crate::tls::TlsShared>;
#[cfg(not(feature = "tls"))]
pub(super) type TlsShared = std::convert::Infallible;

/// What every TLS connection shares, when the server speaks TLS (attached to its control,
/// for reloads and figures).
#[cfg(feature = "tls")]
pub(super) fn tls_service(
    server: &mut Server,
    budget: Arc<OutputBudget>,
) -> io::Result<Option<TlsShared>> {
    let Some(tls) = server.extras.tls.take() else {
        return Ok(None);
    };
    if server.taken.is_some() {
        // The hook takes the socket, which carries records, not requests.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a TLS server cannot hand its connections to a `taking` hook",
        ));
    }
    let shared = Arc::new(crate::tls::TlsShared {
        configs: crate::tls::Configs::new(&tls, server.http2)?,
        counters: Arc::default(),
        handshake_timeout: server.extras.tls_config.handshake_timeout,
        linger: server.limits.linger,
        budget,
        records_per_key: server.extras.tls_config.records_per_key,
    });
    server.control.attach_tls(Arc::clone(&shared));
    Ok(Some(shared))
}

#[cfg(not(feature = "tls"))]
pub(super) fn tls_service(
    _server: &mut Server,
    _budget: Arc<OutputBudget>,
) -> io::Result<Option<TlsShared>> {
    Ok(None)
}
