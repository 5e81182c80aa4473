#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod http;
mod server;
pub mod ws;
