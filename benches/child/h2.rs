//! The little of HTTP/2 a load benchmark's client writes by hand: the preface, frame heads,
//! and a request's header block as literals (no HPACK table, no Huffman).

/// The connection preface a client starts with (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Appends a frame head: `len` bytes of payload follow, of `kind` with `flags` on `stream`.
pub fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// A header block of `fields`, each a literal without indexing (names and values under 128
/// bytes).
pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        block.extend_from_slice(&[0, name.len() as u8]);
        block.extend_from_slice(name.as_bytes());
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    }
    block
}

/// The preface, an empty SETTINGS and the acknowledgement of the server's.
pub fn hello() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    head(&mut out, 0, 0x4, 0, 0);
    head(&mut out, 0, 0x4, 1, 0);
    out
}

/// HEADERS for a request of `method` to `path` on `stream`; `end` when it has no body.
pub fn request(out: &mut Vec<u8>, stream: u32, method: &str, path: &str, end: bool) {
    let block = block(&[
        (":method", method),
        (":scheme", "http"),
        (":authority", "t"),
        (":path", path),
    ]);
    head(out, block.len(), 0x1, if end { 0x5 } else { 0x4 }, stream);
    out.extend_from_slice(&block);
}
