//! A server's TLS settings beside its certificates, set together ([`Server::tls_config`]) or
//! one by one.
//!
//! [`Server::tls_config`]: crate::http::Server::tls_config

use std::time::Duration;

/// How long a client has to finish its handshake by default; see
/// [`Server::handshake_timeout`](crate::http::Server::handshake_timeout).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS settings of a server (its certificates are a [`ServerTls`](crate::tls::ServerTls)):
/// how long a handshake may take, and how many records one key seals. The defaults are in the
/// table of [`Server`](crate::http::Server).
///
/// ```
/// use web::tls::TlsConfig;
/// let config = TlsConfig::default()
///     .handshake_timeout(std::time::Duration::from_secs(3))
///     .records_per_key(1 << 20);
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    pub(crate) handshake_timeout: Duration,
    pub(crate) records_per_key: u64,
}

impl Default for TlsConfig {
    fn default() -> TlsConfig {
        TlsConfig {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            records_per_key: u64::MAX,
        }
    }
}

impl TlsConfig {
    /// How long a client has to finish its handshake
    /// ([`Server::handshake_timeout`](crate::http::Server::handshake_timeout)).
    ///
    /// ```
    /// let config = web::tls::TlsConfig::default().handshake_timeout(std::time::Duration::from_secs(3));
    /// ```
    pub fn handshake_timeout(mut self, timeout: Duration) -> TlsConfig {
        self.handshake_timeout = timeout;
        self
    }

    /// At most how many records one traffic key seals
    /// ([`Server::tls_records_per_key`](crate::http::Server::tls_records_per_key)); capped by
    /// each AEAD's own limit, and two at least (a key seals its KeyUpdate too).
    ///
    /// ```
    /// let config = web::tls::TlsConfig::default().records_per_key(1 << 20);
    /// ```
    pub fn records_per_key(mut self, records: u64) -> TlsConfig {
        self.records_per_key = records.max(2);
        self
    }
}
