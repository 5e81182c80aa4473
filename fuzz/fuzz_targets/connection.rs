//! The whole connection — request reading, dispatch, the reactor's HTTP strand — of a real
//! one-worker server on 127.0.0.1, fed arbitrary bytes in arbitrary writes: the first byte says
//! how many cuts (0–7), the next ones where (scaled to the input). Fails when a connection does
//! not end in time after the client's end of stream (a turn without progress), when a strand
//! panics (the strand's step budget panics on a resume that makes no progress), or when what
//! the server wrote is not a run of whole replies. Harness: `tests/wire/drive.rs`.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/wire/drive.rs"]
mod drive;

fn target() -> &'static drive::Target {
    static TARGET: OnceLock<drive::Target> = OnceLock::new();
    TARGET.get_or_init(drive::Target::start)
}

fuzz_target!(|data: &[u8]| {
    let Some((_, cuts, input)) = drive::split_input(data) else {
        return;
    };
    let pieces = drive::pieces(input, &cuts);
    if let Err(e) = target().drive(&pieces) {
        panic!("{e}\ninput {:?} in pieces {:?}", String::from_utf8_lossy(input), pieces.iter().map(|p| p.len()).collect::<Vec<_>>());
    }
});
