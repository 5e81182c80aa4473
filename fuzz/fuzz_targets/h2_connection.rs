//! A whole HTTP/2 connection from a peer's bytes in any split: every request answered, never
//! a panic, output and state within their bounds, nothing read after a connection error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    web::fuzzing::h2_connection(data);
});
