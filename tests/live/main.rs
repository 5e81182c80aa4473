//! Rooms and long-lived streams: rooms and their order, history, Server-Sent Events.
//!
//! One test binary for the area (each file a module), so the suite links a few binaries
//! instead of one per file.

#[path = "../wire/mod.rs"]
mod wire;

mod gathered_sends;
mod long_polls;
mod room_history;
mod sse_streams;
mod ws_rooms;
mod ws_rooms_join_order;
