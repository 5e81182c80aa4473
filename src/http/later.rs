//! What reaches an HTTP connection from other threads: the deferred reply a handler promised
//! ([`Reply`](crate::http::Reply)), inside [`WsCommand::Http`](crate::ws::WsCommand::Http).

use std::num::NonZeroU32;

use super::Response;

/// A deferred reply on its way to its connection (inside
/// [`WsCommand::Http`](crate::ws::WsCommand::Http)); made by [`Reply`](crate::http::Reply) only.
#[derive(Clone, Debug)]
pub struct HttpMsg {
    pub(crate) seq: NonZeroU32,
    pub(crate) what: Delivery,
}

/// What a `Reply` delivers.
#[derive(Clone, Debug)]
pub(crate) enum Delivery {
    /// The response (boxed: a message stays small).
    Answer(Box<Response>),
    /// The `Reply` was dropped unanswered: the client gets a 500.
    Dropped,
}
