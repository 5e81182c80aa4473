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

/// How the liveness of idle WebSocket peers is checked, every
/// [`ping_interval`](crate::http::Server::ping_interval) ([`Server::liveness`]).
///
/// [`Server::liveness`]: crate::http::Server::liveness
///
/// ```
/// use web::ws::Liveness;
/// let server = web::http::Server::bind("127.0.0.1:0")?.liveness(Liveness::Kernel);
/// # let _ = server;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Liveness {
    /// WebSocket pings (the default): a peer silent for half an interval to an interval is
    /// pinged, and closed if nothing arrives within an interval. Proves the peer's
    /// application reads, and works through proxies (which answer TCP themselves); each ping
    /// and its pong cost a send, a wakeup and a read.
    #[default]
    Pings,
    /// The kernel's keep-alive probes (`SO_KEEPALIVE`; on Linux after half an interval of
    /// silence, then every half interval, two unanswered ones fail the connection —
    /// 1.5 intervals after the peer's last segment — and `TCP_USER_TIMEOUT` of two
    /// intervals for output left unacknowledged). No ping, no sweep, no wakeup of a worker:
    /// the kernel does it all. A peer's kernel answers probes, so this finds a peer that
    /// vanished (a host gone, a path cut, a NAT mapping lost), not one whose application
    /// hangs; and behind a proxy, which answers for its clients, it checks only the proxy.
    Kernel,
}

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
    pub(crate) liveness: Liveness,
    pub(crate) close_timeout: Duration,
    pub(crate) deflate: Option<Deflate>,
}

impl Default for WsConfig {
    fn default() -> WsConfig {
        WsConfig {
            max_message: MAX_MESSAGE,
            ping_interval: Some(PING_INTERVAL),
            liveness: Liveness::Pings,
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

    /// How the liveness of idle peers is checked
    /// ([`Server::liveness`](crate::http::Server::liveness)).
    ///
    /// ```
    /// let config = web::ws::WsConfig::default().liveness(web::ws::Liveness::Kernel);
    /// ```
    pub fn liveness(mut self, how: Liveness) -> WsConfig {
        self.liveness = how;
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
