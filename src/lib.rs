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

/// Entry points of the fuzz targets that reach inside (built only under `cargo fuzz`).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    /// Plays the steps `data` describes on a server's rooms and checks them against a model
    /// after each (see `rooms/check.rs`).
    pub fn rooms(data: &[u8]) {
        crate::rooms::check::run(&crate::rooms::check::Op::decode(data));
    }
}
