//! Where the optional features meet the server: what they add to the builder (TLS, the fleet,
//! permessage-deflate: their settings and setters) and to starting it. The rest of `server/`
//! names a feature only where a type has a variant for it (`Running::Tls`, the figures).

use std::io;
use std::sync::Arc;
#[cfg(feature = "tls")]
use std::time::Duration;

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

impl Server {
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
    /// [`ServerStats`]. Rate limits are shared with [`RateLimit::fleet`](crate::http::RateLimit::fleet).
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
}

#[cfg(feature = "tls")]
pub(super) type TlsShared = Arc<crate::tls::TlsShared>;
#[cfg(not(feature = "tls"))]
pub(super) type TlsShared = std::convert::Infallible;

impl Server {
    /// What every TLS connection shares, when the server speaks TLS (attached to its control,
    /// for reloads and figures).
    #[cfg(feature = "tls")]
    pub(super) fn tls_service(
        &mut self,
        budget: Arc<OutputBudget>,
    ) -> io::Result<Option<TlsShared>> {
        let Some(tls) = self.extras.tls.take() else {
            return Ok(None);
        };
        if self.taken.is_some() {
            // The hook takes the socket, which carries records, not requests.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a TLS server cannot hand its connections to a `taking` hook",
            ));
        }
        let shared = Arc::new(crate::tls::TlsShared {
            configs: crate::tls::Configs::new(&tls, self.http2)?,
            counters: Arc::default(),
            handshake_timeout: self.extras.tls_config.handshake_timeout,
            linger: self.limits.linger,
            budget,
            records_per_key: self.extras.tls_config.records_per_key,
        });
        self.control.attach_tls(Arc::clone(&shared));
        Ok(Some(shared))
    }

    #[cfg(not(feature = "tls"))]
    pub(super) fn tls_service(
        &mut self,
        _budget: Arc<OutputBudget>,
    ) -> io::Result<Option<TlsShared>> {
        Ok(None)
    }
}
