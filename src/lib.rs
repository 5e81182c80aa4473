#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod client;
#[cfg(feature = "redis")]
pub mod fleet;
// The HTTP/2 codec ahead of the connection that will use it (only tests and fuzzing call it yet).
#[cfg_attr(not(test), allow(dead_code, unused_imports))]
mod h2;
pub mod http;
mod live;
mod log;
mod rooms;
mod server;
pub mod sse;
#[cfg(feature = "tls")]
pub mod tls;
pub mod ws;

/// Entry points of the fuzz targets that reach inside (built only under `cargo fuzz`).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
