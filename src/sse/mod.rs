//! Server-Sent Events (the WHATWG `text/event-stream`): a stream the server pushes events to,
//! served by [`Server::sse`](crate::http::Server::sse) and kept in the reactor like an idle
//! WebSocket; its members share [`Rooms`](crate::ws::Rooms) with WebSocket connections.

mod app;
mod strand;

pub use crate::http::event_stream::Event;
pub use app::{Sse, SseHandler, SseSender};
pub(crate) use strand::{SseApp, SseRoute};
