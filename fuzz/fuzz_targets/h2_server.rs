//! The whole HTTP/2 connection — preface detection, the codec, the HTTP/2 strand, dispatch —
//! of a real one-worker server on 127.0.0.1, with an event-stream route and a WebSocket route
//! whose streams become live connections: the preface, then arbitrary bytes in arbitrary
//! writes (the first byte says how many cuts, 0–7, the next ones where). Fails when the
//! connection does not end in time after the client's end of stream, when a strand panics, or
//! when what the server wrote is not its SETTINGS then a run of whole frames. Harness:
//! `tests/wire/drive.rs`.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/wire/drive.rs"]
mod drive;

fn target() -> &'static drive::Target {
    static TARGET: OnceLock<drive::Target> = OnceLock::new();
    TARGET.get_or_init(drive::Target::start_h2)
}

fuzz_target!(|data: &[u8]| {
    let Some((_, cuts, input)) = drive::split_input(data) else {
        return;
    };
    let mut whole = drive::PREFACE.to_vec();
    whole.extend_from_slice(input);
    let cuts: Vec<usize> = cuts.iter().map(|c| c + drive::PREFACE.len()).collect();
    let pieces = drive::pieces(&whole, &cuts);
    if let Err(e) = target().drive(&pieces) {
        panic!("{e}\ninput {input:?} in pieces {:?}", pieces.iter().map(|p| p.len()).collect::<Vec<_>>());
    }
});
