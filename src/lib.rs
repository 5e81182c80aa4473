#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod client;
#[cfg(feature = "redis")]
pub mod fleet;
mod h2;
pub mod http;
mod live;
mod log;
mod rooms;
mod server;
pub mod sse;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "tower")]
pub mod tower;
pub mod ws;

/// Entry points of the fuzz targets that reach inside (built only under `cargo fuzz`).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
