//! Bytes read as text where they are valid UTF-8 by construction (a request's method and
//! target, a label copied from them) and short: an ASCII run — nearly always — is taken as it
//! is, without the general check's call.

/// `bytes` as text; `""` when they are not UTF-8.
#[inline]
pub(crate) fn as_text(bytes: &[u8]) -> &str {
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8, whatever they are.
        return unsafe { std::str::from_utf8_unchecked(bytes) };
    }
    std::str::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_utf8_and_neither() {
        for (bytes, text) in [
            (&b"GET"[..], "GET"),
            (b"/a?b=c", "/a?b=c"),
            ("/caf\u{e9}".as_bytes(), "/caf\u{e9}"),
            (b"/\xff", ""),
            (b"", ""),
        ] {
            assert_eq!(as_text(bytes), text);
        }
    }
}
