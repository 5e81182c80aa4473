//! [`Http2Config`]: what a server's HTTP/2 connections advertise, with its defaults and why.

use std::time::Duration;

use super::conn::{Config, DEFAULT_WINDOW};

/// Default HPACK table a client may fill on each connection, in bytes. Chosen by what an idle
/// connection holds: the table is kept as long as the connection, and a client fills what it
/// is given — a browser's `user-agent`, `accept`, `accept-language`, `accept-encoding` and
/// `:authority` come to about 460 bytes as HPACK counts them, so 512 keeps them and holds an
/// idle connection under a kibibyte, where RFC 7541's 4 096 would let each cost 4–5 KB.
pub const HEADER_TABLE_SIZE: u32 = 512;
/// Default streams open at once on one connection: dashboards with many event streams want
/// hundreds (Mercure's users hit a default of 100).
pub const MAX_CONCURRENT_STREAMS: u32 = 250;
/// Default time a client has to acknowledge the server's SETTINGS.
pub const SETTINGS_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/2's settings ([`Server::http2_config`](crate::http::Server::http2_config)): what each
/// connection advertises to its client. A header list's limit is the server's
/// [`max_head_bytes`](crate::http::Server::max_head_bytes) (past it, 431 on that stream).
///
/// ```
/// use web::http::{Http2Config, Server};
/// let server = Server::bind("127.0.0.1:0")?.http2_config(Http2Config {
///     max_concurrent_streams: 500,
///     ..Http2Config::default()
/// });
/// # let _ = server;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http2Config {
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); one past it
    /// is refused (RST_STREAM REFUSED_STREAM). Default [`MAX_CONCURRENT_STREAMS`].
    pub max_concurrent_streams: u32,
    /// Bytes of HPACK table the client may fill for its fields (SETTINGS_HEADER_TABLE_SIZE),
    /// kept as long as the connection; 0 keeps none (each request then carries its fields
    /// whole). Default [`HEADER_TABLE_SIZE`].
    pub header_table_size: u32,
    /// Each stream's receive window: bytes of a request body in flight before the server
    /// asks for more. Default 65 535 (RFC 9113's).
    pub stream_window: u32,
    /// The connection's receive window, over all its streams. Default 1 MiB.
    pub connection_window: u32,
    /// How long a client has to acknowledge the server's SETTINGS (RFC 9113 §6.5.3); past
    /// it the connection ends with GOAWAY SETTINGS_TIMEOUT. Until then the client's header
    /// blocks may use HPACK's default table, larger than the one advertised: a client that
    /// never acknowledges does not keep that. Default [`SETTINGS_TIMEOUT`] (nghttpx's
    /// `--frontend-http2-settings-timeout` too).
    pub settings_timeout: Duration,
}

impl Default for Http2Config {
    fn default() -> Http2Config {
        Http2Config {
            max_concurrent_streams: MAX_CONCURRENT_STREAMS,
            header_table_size: HEADER_TABLE_SIZE,
            stream_window: DEFAULT_WINDOW,
            connection_window: 1 << 20,
            settings_timeout: SETTINGS_TIMEOUT,
        }
    }
}

impl Http2Config {
    /// The codec's settings: these, with the header list's limit.
    pub(crate) fn codec(self, max_header_list_size: usize) -> Config {
        Config {
            max_concurrent_streams: self.max_concurrent_streams,
            stream_window: self.stream_window.clamp(1, super::frame::MAX_WINDOW),
            conn_window: self
                .connection_window
                .clamp(DEFAULT_WINDOW, super::frame::MAX_WINDOW),
            header_table_size: self.header_table_size,
            max_header_list_size: u32::try_from(max_header_list_size).unwrap_or(u32::MAX),
            // RFC 8441: WebSocket over HTTP/2, by extended CONNECT.
            connect_protocol: true,
        }
    }
}
