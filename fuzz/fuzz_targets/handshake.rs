//! The opening handshake: never a panic; a 101 only for a request that names a key.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::ws::{header_value, upgrade_reply, ws_wanted};

fuzz_target!(|data: &[u8]| {
    let wanted = ws_wanted(data);
    let key = header_value(data, "Sec-WebSocket-Key: ");
    match upgrade_reply(data) {
        Ok(reply) => {
            assert!(reply.starts_with(b"HTTP/1.1 101 "));
            assert!(wanted && !key.is_empty());
        }
        Err(refusal) => assert!(refusal.starts_with(b"HTTP/1.1 4")),
    }
});
