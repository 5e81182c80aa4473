//! WebSocket: the codec and its properties, the blocking functions and client, the strand,
//! liveness, deflate, graceful stop and the output budget.
//!
//! One test binary for the area (each file a module), so the suite links a few binaries
//! instead of one per file.

#[path = "../wire/mod.rs"]
mod wire;

mod ws_blocking;
mod ws_client;
mod ws_codec_properties;
mod ws_deflate;
mod ws_graceful_stop;
mod ws_liveness;
mod ws_output_budget;
mod ws_spec_examples;
mod ws_state_lifecycle;
mod ws_strand;
