//! Checking UTF-8 as a text message arrives, fragment by fragment, so that an invalid sequence
//! fails at once (even in the middle of a fragment) and a code point split across fragments is
//! accepted (RFC 6455 §8.1).

/// The state of a text message's UTF-8 check: the bytes of a code point begun but not finished.
///
/// ```
/// let mut check = web::ws::Utf8Check::default();
/// assert!(check.feed(&[0xc3]));      // half of "é": fine so far
/// assert!(check.feed(&[0xa9]) && check.is_complete());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Utf8Check {
    pending: [u8; 4],
    pending_len: u8,
}

impl Utf8Check {
    /// Checks the next bytes of the message: false as soon as they cannot be UTF-8.
    ///
    /// ```
    /// let mut check = web::ws::Utf8Check::default();
    /// assert!(!check.feed(&[0xff])); // never UTF-8
    /// ```
    pub fn feed(&mut self, mut bytes: &[u8]) -> bool {
        // First finish a code point begun in earlier bytes.
        while self.pending_len > 0 {
            let Some((&b, rest)) = bytes.split_first() else {
                return true;
            };
            bytes = rest;
            self.pending[usize::from(self.pending_len)] = b;
            self.pending_len += 1;
            match std::str::from_utf8(&self.pending[..usize::from(self.pending_len)]) {
                Ok(_) => self.pending_len = 0,
                Err(e) if e.error_len().is_some() => return false,
                Err(_) if self.pending_len == 4 => return false,
                Err(_) => {}
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => true,
            Err(e) if e.error_len().is_some() => false,
            Err(e) => {
                // A valid prefix of a code point at the end: keep it for the next bytes.
                let tail = &bytes[e.valid_up_to()..];
                self.pending[..tail.len()].copy_from_slice(tail);
                self.pending_len = tail.len() as u8;
                true
            }
        }
    }

    /// Whether the message may end here (no code point left unfinished).
    ///
    /// ```
    /// let mut check = web::ws::Utf8Check::default();
    /// check.feed(&[0xe2, 0x82]);
    /// assert!(!check.is_complete()); // a character is cut
    /// ```
    pub fn is_complete(&self) -> bool {
        self.pending_len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_in_pieces(bytes: &[u8], cuts: &[usize]) -> bool {
        let mut check = Utf8Check::default();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            if !check.feed(&bytes[at..cut]) {
                return false;
            }
            at = cut;
        }
        check.is_complete()
    }

    #[test]
    fn valid_text_split_anywhere() {
        let text = "κόσμε €𝄞 hello".as_bytes();
        for a in 0..=text.len() {
            for b in a..=text.len() {
                assert!(check_in_pieces(text, &[a, b]), "cut {a} {b}");
            }
        }
    }

    #[test]
    fn invalid_text_fails_split_anywhere_and_early() {
        let cases: &[&[u8]] = &[
            b"\xff",
            b"abc\xc0\xafdef",
            b"\xed\xa0\x80",     // a surrogate
            b"\xf4\x90\x80\x80", // above U+10FFFF
            b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited",
            b"\xe2\x82", // unfinished at the end
        ];
        for bytes in cases {
            for cut in 0..=bytes.len() {
                assert!(!check_in_pieces(bytes, &[cut]), "{bytes:?} cut {cut}");
            }
        }
        // Fails fast: the bad byte is known bad before the message ends.
        let mut check = Utf8Check::default();
        assert!(!check.feed(b"\xf4\x90"));
    }
}
