//! Entry points of the fuzz targets that reach inside the library (built only under
//! `cargo fuzz`, which sets `--cfg fuzzing`).

/// Plays the steps `data` describes on a server's rooms and checks them against a model after
/// each (see `rooms/check.rs`).
pub fn rooms(data: &[u8]) {
    crate::rooms::check::run(&crate::rooms::check::Op::decode(data));
}
