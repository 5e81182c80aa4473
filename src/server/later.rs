//! What reaches an HTTP connection from other threads: the deferred reply a handler promised
//! ([`Reply`](crate::http::Reply)), inside [`WsCommand::Http`](crate::ws::WsCommand::Http).

use std::num::NonZeroU32;
use std::sync::Arc;

use super::StreamStart;
use crate::http::Response;

/// A deferred reply on its way to its connection (inside
/// [`WsCommand::Http`](crate::ws::WsCommand::Http)); made by [`Reply`](crate::http::Reply) only.
#[derive(Clone, Debug)]
pub(crate) struct HttpMsg {
    pub(crate) seq: NonZeroU32,
    pub(crate) what: Delivery,
}

/// What a `Reply` (or the `BodySender` it became) delivers.
#[derive(Clone, Debug)]
pub(crate) enum Delivery {
    /// The response (boxed: a message stays small).
    Answer(Box<Response>),
    /// The `Reply` was dropped unanswered: the client gets a 500.
    Dropped,
    /// The head of a streamed reply; its body follows in `Piece`s, then `End` or `Abort`.
    /// (In an `Arc` so that the message stays `Clone`, as every command is; it is sent to one
    /// connection only, so the strand holds the one reference.)
    Stream(Arc<StreamStart>),
    /// A piece of a streamed body.
    Piece(Vec<u8>),
    /// The streamed body is complete.
    End,
    /// The `BodySender` was dropped before the end: the body is cut (the connection closes).
    Abort,
}
