//! WebSocket (RFC 6455): the handshake, frames, a strict message-level decoder, and the
//! specification's blocking operations.
//!
//! Every function of the specification's `web/ws` module lives here under its own name.

pub(crate) mod app;
mod blocking;
pub(crate) mod close;
mod config;
pub(crate) mod decoder;
pub(crate) mod deflate;
pub(crate) mod frame;
pub(crate) mod handshake;
mod strand;
mod utf8;

pub use crate::client::ws::{
    CONNECT_TIMEOUT, UpgradeRefused, WsClient, WsConnect, WsReader, WsWriter, connect,
};
pub use app::{Ws, WsHandler, WsSender, broadcast};
pub use blocking::{
    MAX_FRAME, client_frame, client_frame_bin, fill, ws_accept, ws_close, ws_frame, ws_frame_bin,
    ws_frame_op, ws_read, ws_take, ws_write, ws_write_bin,
};
pub use close::{
    CloseCode, GOING_AWAY, INTERNAL_ERROR, INVALID_DATA, NORMAL, POLICY, PROTOCOL_ERROR, TOO_BIG,
    WsError, close_payload, is_valid_code, parse_close,
};
pub use config::{Liveness, PING_INTERVAL, WsConfig};
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
/// A connection's address on its worker, as the reactor gives it. The same type as
/// `web_reactor::ConnId`, on purpose: `web-reactor` is a public dependency of `web` (programs
/// that go below the server use its `Io`, `SocketLayer` and `arena_sharing`), and an id crosses
/// between the two unchanged.
pub use reactor::ConnId;
pub use strand::WS_HIGH_WATER;
pub(crate) use strand::{Route, WsApp, WsSettings};
pub use utf8::Utf8Check;
// The rooms and the live connections' limits sit below WebSocket (event streams share them);
// their names are the specification's `web/ws` names, so they are read from here.
pub use crate::live::{CLOSE_TIMEOUT, MAX_QUEUED_OUTPUT, WS_MAX_BACKLOG};
pub use crate::rooms::{
    Follow, HISTORY_BYTES, HISTORY_ROOMS, History, KEEP_FOR, MAX_ROOMS, Message, Rooms,
};

/// The worker has no connection left: what WebSocket traffic kept on its thread for busy
/// times (compressors, caches of frames) goes back.
pub(crate) fn worker_idle() {
    deflate::forget_worker_frames();
    #[cfg(feature = "deflate")]
    deflate::forget_worker_codecs();
}
