//! The whole TLS connection of a real one-worker server on 127.0.0.1 (records, the TLS
//! session, request reading, dispatch, the HTTP strand). The first byte picks the mode and the
//! cuts: with its top bit set, the rest are raw bytes where records belong (no handshake),
//! which must end the connection in time with an alert or nothing; with the next bit set, a
//! real handshake and then raw bytes where records belong (the records the library opens
//! itself), which must end it in time — and with the bit after it set too, each piece a record
//! sealed by the harness (application data, key updates, alerts, handshake bytes, empty, padded
//! and arbitrary inner plaintexts), after which every record the server sent must open; else
//! a real handshake, then the rest as plaintext
//! sealed in records cut at the next bytes' points and the ciphertext cut into writes at the
//! same points, which must come back as whole replies. A strand's panic or a
//! connection that does not end fails. Harness: `tests/wire/tls_drive.rs`.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

// `tls_drive` reaches the plain harness's checks as `super::drive`.
#[allow(dead_code)]
#[path = "../../tests/wire/drive.rs"]
mod drive;
#[path = "../../tests/wire/tls_drive.rs"]
mod tls_drive;
#[allow(dead_code)]
#[path = "../../tests/wire/tls_raw.rs"]
mod tls_raw;

fn target() -> &'static tls_drive::TlsTarget {
    static TARGET: OnceLock<tls_drive::TlsTarget> = OnceLock::new();
    TARGET.get_or_init(tls_drive::TlsTarget::start)
}

fuzz_target!(|data: &[u8]| {
    let Some((first, cuts, input)) = drive::split_input(data) else {
        return;
    };
    let (raw, after_handshake) = (first & 0x80 != 0, first & 0x40 != 0);
    let sealed = first & 0x20 != 0;
    let pieces = drive::pieces(input, &cuts);
    let result = match (raw, after_handshake, sealed) {
        (true, _, _) => target().drive_raw(&pieces),
        (false, true, true) => target().drive_sealed(&pieces),
        (false, true, false) => target().drive_after_handshake(&pieces),
        (false, false, _) => target().drive_records(&pieces, &cuts).map(|_| ()),
    };
    if let Err(e) = result {
        panic!("{e}\ninput {input:?} in pieces {:?}", pieces.iter().map(|p| p.len()).collect::<Vec<_>>());
    }
});
