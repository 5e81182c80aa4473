//! WebSocket (RFC 6455): the handshake, frames, a strict message-level decoder, and the
//! specification's blocking operations.
//!
//! Every function of the specification's `web/ws` module lives here under its own name.

pub(crate) mod app;
mod blocking;
mod budget;
pub(crate) mod close;
pub(crate) mod decoder;
pub(crate) mod deflate;
pub(crate) mod frame;
pub(crate) mod handshake;
pub(crate) mod history;
#[cfg(feature = "redis")]
mod instances;
mod outbox;
mod rooms;
mod seat;
mod strand;
mod utf8;

pub use crate::client::ws::{CONNECT_TIMEOUT, WsClient, WsConnect, WsReader, WsWriter, connect};
pub(crate) use app::WsCommand;
pub use app::{Message, Ws, WsHandler, WsSender, broadcast};
pub use blocking::{
    MAX_FRAME, client_frame, client_frame_bin, fill, ws_accept, ws_close, ws_frame, ws_frame_bin,
    ws_frame_op, ws_read, ws_take, ws_write, ws_write_bin,
};
pub use budget::MAX_QUEUED_OUTPUT;
pub(crate) use budget::{Charge, OutputBudget};
pub use close::{
    GOING_AWAY, INTERNAL_ERROR, INVALID_DATA, NORMAL, POLICY, PROTOCOL_ERROR, TOO_BIG, WsError,
    close_payload, is_valid_code, parse_close,
};
pub use decoder::{Decoder, Event, MAX_MESSAGE};
#[cfg(not(feature = "deflate"))]
pub(crate) use deflate::Deflate;
pub(crate) use deflate::{Agreed, agree};
#[cfg(feature = "deflate")]
pub use deflate::{Deflate, LEVEL, MIN_SIZE};
pub use frame::{
    FIXED_MASK, FrameHead, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT, Opcode,
    Role, apply_mask, parse_frame_head, write_frame,
};
pub use handshake::{accept_key, header_value, upgrade_reply, ws_handshake_request, ws_wanted};
pub(crate) use handshake::{check_upgrade, extensions_of, switching_protocols};
pub use history::{HISTORY_BYTES, HISTORY_ROOMS, History, KEEP_FOR};
#[cfg(feature = "redis")]
pub(crate) use instances::{Instances, Text, Then};
pub(crate) use outbox::Outbox;
/// A connection's address on its worker, as the reactor gives it. The same type as
/// `web_reactor::ConnId`, on purpose: `web-reactor` is a public dependency of `web` (programs
/// that go below the server use its `Io`, `Layer` and `arena_sharing`), and an id crosses
/// between the two unchanged.
pub use reactor::ConnId;
pub use rooms::{Follow, MAX_ROOMS, Rooms};
pub(crate) use rooms::{Joined, local_members};
pub(crate) use seat::{Joining, Seat, history_back, join_back, leave_all};
pub use strand::{CLOSE_TIMEOUT, WS_HIGH_WATER, WS_MAX_BACKLOG};
pub(crate) use strand::{LiveApp, LiveConn, Route, Timeouts, WsSettings, write_out};
pub use utf8::Utf8Check;

/// The worker has no connection left: what WebSocket and room traffic kept on its thread for
/// busy times (compressors, caches of frames, tables) goes back.
pub(crate) fn worker_idle() {
    budget::forget_worker_frames();
    rooms::forget_worker_rooms();
    deflate::forget_worker_frames();
    #[cfg(feature = "deflate")]
    deflate::forget_worker_codecs();
}
