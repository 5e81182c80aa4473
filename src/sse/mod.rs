//! Server-Sent Events (the WHATWG `text/event-stream`): a stream the server pushes events to,
//! served by [`Server::sse`](crate::http::Server::sse) and kept in the reactor like an idle
//! WebSocket; its members share [`Rooms`](crate::ws::Rooms) with WebSocket connections.

mod app;
mod event;
mod strand;

pub use app::{Sse, SseHandler, SseSender};
pub use event::Event;
pub(crate) use event::data_event;
pub(crate) use strand::SseRoute;
