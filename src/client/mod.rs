//! The blocking clients: HTTP/1.1 ([`http`]: `Client`, `get`, `ask`, a pool of idle
//! connections per host in [`fetch`]) and WebSocket ([`ws`]: `WsConnect`, `connect`), over one
//! connection type ([`wire`]: plain TCP or TLS) and one URL parser ([`url`]). Their public
//! names are where the specification puts them: `web::http::Client`, `web::ws::connect`.

mod fetch;
pub(crate) mod http;
mod url;
pub(crate) mod wire;
pub(crate) mod ws;
