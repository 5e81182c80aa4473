//! HTTP/1.1: messages, the strict request parser, the chunked decoder, query strings, cookies,
//! dates, reply rendering, and the raw-reply helpers of the client side.
//!
//! Every function of the specification's `web/http` module lives here under its own name.

pub(crate) mod cookie;
pub(crate) mod date;
mod error;
pub(crate) mod event_stream;
pub(crate) mod grammar;
#[cfg(feature = "json")]
mod json;
pub(crate) mod later;
pub(crate) mod message;
pub(crate) use message::{chunked, fields, head, parse_request, render, reply};
mod middleware;
pub(crate) mod query;
pub(crate) mod rate_limit;
pub(crate) mod router;
mod status;
pub(crate) mod stream_framing;

pub use crate::client::http::{
    CLIENT_CONNECT_TIMEOUT, CLIENT_IDLE_TIMEOUT, CLIENT_READ_TIMEOUT, CLIENT_WRITE_TIMEOUT, Client,
    ClientResponse, MAX_IDLE_PER_HOST, MAX_REPLY, RequestBuilder, ask, get, get_all, read_response,
};
pub use chunked::{ChunkedDecoder, MAX_CHUNK_EXTENSIONS, MAX_TRAILER_BYTES};
pub use cookie::{cookie, cookie_decoded, cookie_in};
pub use date::http_date;
pub use error::ParseError;
pub(crate) use error::Refusal;
pub use head::{
    Framing, HeadLimits, HeadParser, MAX_HEAD_BYTES, MAX_HEADERS, RequestHead, Version,
};
pub(crate) use message::ReplyRules;
pub use message::{
    Body, HTML, Header, HeaderRef, Headers, InvalidHeader, JSON, Request, Response, TEXT, header,
    header_in, html_response, json_response, set_cookie, text_response, try_with_header,
    with_header,
};
pub use middleware::{Layer, Next, layer, wrap};
pub use parse_request::parse_request;
pub use query::{decoded, encoded, param, params, path_of, query_of};
pub use rate_limit::{
    ANYONE, CallerName, MAX_CALLERS, RateLimit, RateLimiter, UNKNOWN_CALLER, client_of, rate_limit,
    rate_limits,
};
pub use render::response_bytes;
pub use reply::{
    ReplyFraming, ReplyHead, content_length, parse_reply_head, response_body, status_of,
};
pub use router::{BadPattern, Matched, Router};
// Serving lives above `http` and `ws` (a connection may turn WebSocket); its names are the
// specification's `web/http` functions, so they are read from here.
pub use crate::h2::config::{
    HEADER_TABLE_SIZE, Http2Config, MAX_CONCURRENT_STREAMS, SETTINGS_TIMEOUT,
};
#[cfg(feature = "tokio")]
pub use crate::server::answer_async;
pub use crate::server::{
    Access, AccessKind, BodySender, Control, DRAIN_TIMEOUT, HEADER_TIMEOUT, HEARTBEAT,
    IDLE_TIMEOUT, LINGER, LongPoll, MAX_BODY, MAX_CONNECTIONS, MAX_HELD_BODIES, PING_INTERVAL,
    Pool, Protocol, REPLY_TIMEOUT, Reply, STALL_THRESHOLD, Server, ServerHandle, ServerStats,
    WRITE_TIMEOUT, accept_forever, accept_n, defer, defer_for, handle_conn, serve, serve_at,
    serve_n, serve_taking,
};
pub use later::STREAM_WINDOW;
pub use status::status_text;
