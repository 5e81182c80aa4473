//! A server's WebSocket settings, set together ([`Server::ws_config`]) or one by one (the
//! [`Server`] setters of the same names).
//!
//! [`Server`]: crate::http::Server
//! [`Server::ws_config`]: crate::http::Server::ws_config

use std::time::Duration;

use super::Deflate;
use super::decoder::MAX_MESSAGE;
use crate::live::CLOSE_TIMEOUT;

/// Default interval of the liveness pings of WebSocket peers
/// ([`Server::ping_interval`](crate::http::Server::ping_interval)): a peer from which nothing
/// has arrived for half an interval to an interval is pinged, and closed if nothing arrives
/// within an interval of the ping, so a peer that vanished (a phone out of coverage, a laptop
/// shut, a NAT box that forgot it) is closed 1.5 to 2 intervals after its last byte — 45–60 s.
/// 30 s also keeps NAT mappings and proxies of mobile networks from timing the connection out.
pub const PING_INTERVAL: Duration = Duration::from_secs(30);

/// The WebSocket settings of a server: its largest message, the liveness check of its peers,
/// how long a closing peer has to answer, and compression. The defaults are in the table of
/// [`Server`](crate::http::Server).
///
/// ```
/// use std::time::Duration;
/// use web::ws::WsConfig;
/// let config = WsConfig::default()
///     .max_message(1 << 20)
///     .ping_interval(Some(Duration::from_secs(20)))
///     .close_timeout(Duration::from_secs(2));
/// let server = web::http::Server::bind("127.0.0.1:0")?.ws_config(config);
/// # let _ = server;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WsConfig {
    pub(crate) max_message: usize,
    pub(crate) ping_interval: Option<Duration>,
    pub(crate) close_timeout: Duration,
    pub(crate) deflate: Option<Deflate>,
}

impl Default for WsConfig {
    fn default() -> WsConfig {
        WsConfig {
            max_message: MAX_MESSAGE,
            ping_interval: Some(PING_INTERVAL),
            close_timeout: CLOSE_TIMEOUT,
            deflate: None,
        }
    }
}

impl WsConfig {
    /// Largest message accepted, fragments reassembled (and inflated); a larger one closes
    /// the connection with 1009 ([`Server::max_message`](crate::http::Server::max_message)).
    ///
    /// ```
    /// let config = web::ws::WsConfig::default().max_message(1 << 20);
    /// ```
    pub fn max_message(mut self, bytes: usize) -> WsConfig {
        self.max_message = bytes;
        self
    }

    /// The liveness interval, `None` (or zero) for none
    /// ([`Server::ping_interval`](crate::http::Server::ping_interval)).
    ///
    /// ```
    /// let config = web::ws::WsConfig::default().ping_interval(None);
    /// ```
    pub fn ping_interval(mut self, every: Option<Duration>) -> WsConfig {
        self.ping_interval = every.filter(|d| !d.is_zero());
        self
    }

    /// How long a peer has to answer our close frame
    /// ([`Server::close_timeout`](crate::http::Server::close_timeout)).
    ///
    /// ```
    /// let config = web::ws::WsConfig::default().close_timeout(std::time::Duration::from_secs(1));
    /// ```
    pub fn close_timeout(mut self, d: Duration) -> WsConfig {
        self.close_timeout = d;
        self
    }

    /// permessage-deflate for clients that offer it, `None` for none
    /// ([`Server::deflate`](crate::http::Server::deflate); feature `deflate`).
    ///
    /// ```
    /// let config = web::ws::WsConfig::default().deflate(Some(web::ws::Deflate::default()));
    /// ```
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, deflate: Option<Deflate>) -> WsConfig {
        self.deflate = deflate;
        self
    }
}
