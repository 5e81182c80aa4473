//! Whole programs: the examples' command lines, the chat's rules and streams, signals and
//! controls of a serving process.
//!
//! One test binary for the area (each file a module), so the suite links a few binaries
//! instead of one per file.

#[path = "../wire/mod.rs"]
mod wire;

mod chat_rules;
mod chat_streams;
mod examples_cli;
mod hello_routes;
mod server_controls;
