#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod client;
#[cfg(feature = "redis")]
pub mod fleet;
pub mod http;
mod live;
mod rooms;
mod server;
pub mod sse;
#[cfg(feature = "tls")]
pub mod tls;
pub mod ws;
