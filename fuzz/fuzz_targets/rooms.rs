//! Rooms on their own: any steps of connections on several workers joining, leaving, getting
//! their joins back, ending, following, publishing, posting and reading — checked against a
//! model after each step (`src/rooms/check.rs`, which the library's property test runs too).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    web::fuzzing::rooms(data);
});
