//! HTTP/2 frames and HPACK header blocks from a peer: every frame read or refused with its
//! error, every block decoded or refused, never a panic, the decoder's table within its bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    web::fuzzing::h2_frames(data);
});
