//! The strand reactor under `web`: one `mio` event loop per worker thread, every connection a
//! *strand* (a resumable state value parked in a slab). This crate knows nothing about HTTP or
//! WebSocket; protocols plug in through its traits.
