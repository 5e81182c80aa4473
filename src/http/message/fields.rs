//! The rules of the header fields that frame a message or manage its connection, written once
//! and used by the request parser, the reply parser, the client, the renderer and the WebSocket
//! handshake: list syntax, `Content-Length`, `Transfer-Encoding`, `Connection`, `Host`.

use crate::http::error::ParseError;
use crate::http::grammar::{alphanumeric_and, parse_digits, trim_ows};

/// Every element of a comma-separated list (`#element`, RFC 9110 §5.6.1), trimmed of optional
/// whitespace — empty elements included, for the fields where an empty element is an error.
pub(crate) fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(trim_ows)
}

/// The non-empty elements of a comma-separated list: what a recipient takes from it (RFC 9110
/// §5.6.1 says empty elements are ignored).
pub(crate) fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    list_elements(value).filter(|e| !e.is_empty())
}

/// Whether the list `value` holds `token`, compared without regard to case.
pub(crate) fn has_token(value: &[u8], token: &str) -> bool {
    list_items(value).any(|t| t.eq_ignore_ascii_case(token.as_bytes()))
}

/// Whether `name` is a field that frames a message body (`Content-Length`, `Transfer-Encoding`,
/// RFC 9112 §6): the library writes these itself, on replies and on the client's requests.
pub(crate) fn frames_body(name: &str) -> bool {
    name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding")
}

/// `Content-Length` over all its lines (RFC 9110 §8.6): each line a list of digits; several
/// identical values may be taken as one, anything else makes the length unknowable.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ContentLength {
    value: Option<u64>,
    bad: bool,
}

impl ContentLength {
    /// Takes one `Content-Length` line.
    pub(crate) fn note(&mut self, value: &[u8]) {
        for item in list_elements(value) {
            match parse_digits(item) {
                Some(n) if self.value.is_none_or(|m| m == n) => self.value = Some(n),
                _ => self.bad = true,
            }
        }
    }

    /// The length: `None` when no line gave one, an error when a line was invalid or they
    /// disagree.
    pub(crate) fn get(&self) -> Result<Option<u64>, ParseError> {
        if self.bad {
            Err(ParseError::ContentLength)
        } else {
            Ok(self.value)
        }
    }
}

/// `Transfer-Encoding` over all its lines (RFC 9112 §6.1, §6.3): which codings, in order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TransferCodings {
    present: bool,
    chunked: bool,
    chunked_last: bool,
    chunked_twice: bool,
    unknown: bool,
    empty: bool,
}

impl TransferCodings {
    /// Takes one `Transfer-Encoding` line. An empty line or element is noted: a proxy that
    /// reads only one of several lines, or skips empty elements differently, would frame the
    /// body otherwise (TE.TE desync), so a request with one is refused.
    pub(crate) fn note(&mut self, value: &[u8]) {
        self.present = true;
        for coding in list_elements(value) {
            if coding.is_empty() {
                self.empty = true;
            } else if coding.eq_ignore_ascii_case(b"chunked") {
                self.chunked_twice |= self.chunked;
                self.chunked = true;
                self.chunked_last = true;
            } else {
                self.unknown = true;
                self.chunked_last = false;
            }
        }
    }

    /// Whether any `Transfer-Encoding` line was seen.
    pub(crate) fn present(&self) -> bool {
        self.present
    }

    /// Whether the final coding is `chunked` (what a lenient reader, the client, needs).
    pub(crate) fn ends_chunked(&self) -> bool {
        self.chunked_last
    }

    /// The strict reading for a request (RFC 9112 §6.3): the final coding must be `chunked`,
    /// applied once, with no empty element (400 otherwise); any other coding before it is one
    /// this server does not implement (501).
    pub(crate) fn check_request(&self) -> Result<(), ParseError> {
        if self.empty || self.chunked_twice || !self.chunked_last {
            return Err(ParseError::TransferEncoding);
        }
        if self.unknown {
            return Err(ParseError::UnsupportedTransferCoding);
        }
        Ok(())
    }
}

/// The options of `Connection` lines that matter to HTTP/1.1 (RFC 9110 §7.6.1, RFC 9112 §9.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectionOptions {
    pub(crate) close: bool,
    pub(crate) keep_alive: bool,
    pub(crate) upgrade: bool,
}

impl ConnectionOptions {
    /// Takes one `Connection` line.
    pub(crate) fn note(&mut self, value: &[u8]) {
        // The common lines first, without taking the list apart.
        if value.eq_ignore_ascii_case(b"keep-alive") {
            self.keep_alive = true;
            return;
        }
        if value.eq_ignore_ascii_case(b"close") {
            self.close = true;
            return;
        }
        for option in list_items(value) {
            self.close |= option.eq_ignore_ascii_case(b"close");
            self.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
            self.upgrade |= option.eq_ignore_ascii_case(b"upgrade");
        }
    }

    /// Whether the connection persists after this message: HTTP/1.1 unless `close`; HTTP/1.0
    /// only with `keep-alive` (RFC 9112 §9.3).
    pub(crate) fn persists(&self, http11: bool) -> bool {
        !self.close && (http11 || self.keep_alive)
    }
}

/// `Host = uri-host [ ":" port ]`: unreserved, percent-encoded and sub-delimiter characters,
/// (RFC 3986 §3.2.2), and the colons of an IP literal.
static HOST_BYTE: [bool; 256] = alphanumeric_and(b"-._~%!$&'()*+,;=");

/// Whether `value` is a valid `Host` (RFC 9110 §7.2, RFC 3986 §3.2.2–§3.2.3): a reg-name or
/// IPv4 address of host bytes, or an IP literal in brackets (host bytes and colons inside),
/// then optionally `:` and a port of at most five digits within 0–65535 (an empty port is
/// allowed by `port = *DIGIT`). An empty value is valid (a target without authority).
/// One pass over the bytes.
pub(crate) fn valid_host(value: &[u8]) -> bool {
    let host_end = match value {
        [b'[', literal @ ..] => {
            let Some(close) = literal.iter().position(|&b| b == b']') else {
                return false; // unclosed literal
            };
            let inside = &literal[..close];
            if inside.is_empty()
                || !inside
                    .iter()
                    .all(|&b| HOST_BYTE[usize::from(b)] || b == b':')
            {
                return false;
            }
            close + 2
        }
        _ => host_bytes(value),
    };
    match value.get(host_end..) {
        Some([]) | None => true,
        Some([b':', port @ ..]) => valid_port(port),
        Some(_) => false,
    }
}

/// How many bytes at the start of `value` are host bytes: four table lookups a step while they
/// last (a `Host` is checked on every request).
fn host_bytes(value: &[u8]) -> usize {
    let is_host = |b: u8| HOST_BYTE[usize::from(b)];
    let mut at = 0;
    while let Some(&[a, b, c, d]) = value.get(at..at + 4) {
        if !(is_host(a) & is_host(b) & is_host(c) & is_host(d)) {
            break;
        }
        at += 4;
    }
    while value.get(at).is_some_and(|&b| is_host(b)) {
        at += 1;
    }
    at
}

/// `port = *DIGIT` within 0–65535 (at most five digits, so no overflow is possible); one pass.
fn valid_port(port: &[u8]) -> bool {
    if port.len() > 5 {
        return false;
    }
    let mut n = 0u32;
    for &b in port {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return false;
        }
        n = n * 10 + u32::from(digit);
    }
    n <= 65535
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::grammar::each_with_two_bytes;

    #[test]
    fn list_elements_and_items() {
        let all: Vec<&[u8]> = list_elements(b" a ,, b\t,").collect();
        assert_eq!(all, [&b"a"[..], b"", b"b", b""]);
        let items: Vec<&[u8]> = list_items(b" a ,, b\t,").collect();
        assert_eq!(items, [&b"a"[..], b"b"]);
        assert!(has_token(b"keep-alive, Upgrade", "upgrade"));
        assert!(!has_token(b"upgraded", "upgrade"));
    }

    /// Field lines, and what they come to.
    type Case<T> = (&'static [&'static [u8]], Result<T, ParseError>);

    #[test]
    fn content_length_cases() {
        let cases: &[Case<Option<u64>>] = &[
            (&[], Ok(None)),
            (&[b"0"], Ok(Some(0))),
            (&[b"42"], Ok(Some(42))),
            (&[b"42, 42"], Ok(Some(42))),
            (&[b"42", b"42"], Ok(Some(42))),
            (&[b"42", b"43"], Err(ParseError::ContentLength)),
            (&[b"42,"], Err(ParseError::ContentLength)),
            (&[b""], Err(ParseError::ContentLength)),
            (&[b"+1"], Err(ParseError::ContentLength)),
            (&[b"0x10"], Err(ParseError::ContentLength)),
            (&[b"18446744073709551616"], Err(ParseError::ContentLength)),
        ];
        for (lines, want) in cases {
            let mut cl = ContentLength::default();
            for line in *lines {
                cl.note(line);
            }
            assert_eq!(cl.get(), *want, "{lines:?}");
        }
    }

    #[test]
    fn transfer_encoding_cases() {
        use ParseError::*;
        let cases: &[Case<()>] = &[
            (&[b"chunked"], Ok(())),
            (&[b"Chunked"], Ok(())),
            (&[b"gzip, chunked"], Err(UnsupportedTransferCoding)),
            (&[b"gzip", b"chunked"], Err(UnsupportedTransferCoding)),
            (&[b"chunked, gzip"], Err(TransferEncoding)),
            (&[b"gzip"], Err(TransferEncoding)),
            (&[b"chunked, chunked"], Err(TransferEncoding)),
            (&[b"chunked", b"chunked"], Err(TransferEncoding)),
            (&[b""], Err(TransferEncoding)),
            (&[b"chunked", b""], Err(TransferEncoding)),
            (&[b"", b"chunked"], Err(TransferEncoding)),
            (&[b"chunked,"], Err(TransferEncoding)),
            (&[b", chunked"], Err(TransferEncoding)),
        ];
        for (lines, want) in cases {
            let mut te = TransferCodings::default();
            for line in *lines {
                te.note(line);
            }
            assert!(te.present());
            assert_eq!(te.check_request(), *want, "{lines:?}");
        }
    }

    #[test]
    fn connection_options_and_persistence() {
        let mut c = ConnectionOptions::default();
        assert!(c.persists(true) && !c.persists(false));
        c.note(b"Keep-Alive, Upgrade");
        assert!(c.keep_alive && c.upgrade && !c.close && c.persists(false));
        c.note(b"close");
        assert!(!c.persists(true));
    }

    /// Every byte value at every position, and two unusual bytes at every pair of positions,
    /// of values up to 24 bytes long: `host_bytes` (four bytes a step, then one) agrees with a
    /// loop over the table.
    #[test]
    fn host_bytes_agrees_with_the_table() {
        const NAME: &[u8] = b"Sub-Domain.example.09xyz-";
        let by_table = |v: &[u8]| {
            v.iter()
                .position(|&b| !HOST_BYTE[usize::from(b)])
                .unwrap_or(v.len())
        };
        let unusual = [
            0u8, b' ', b'%', b'_', b'~', b':', b'/', b'@', b'[', b']', b'.', b'-', b'Z', b'`',
            b'{', 0x7f, 0x80, 0xae, 0xff,
        ];
        for len in 0..=24 {
            let plain = &NAME[..len];
            assert_eq!(host_bytes(plain), len);
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut v = plain.to_vec();
                    v[at] = byte;
                    assert_eq!(host_bytes(&v), by_table(&v), "{byte:#x} at {at} of {len}");
                }
            }
            each_with_two_bytes(plain, &unusual, |v, case| {
                assert_eq!(host_bytes(&v), by_table(&v), "{case}");
            });
        }
    }

    #[test]
    fn host_values() {
        let good: &[&[u8]] = &[
            b"",
            b"example.com",
            b"example.com:80",
            b"example.com:",
            b"127.0.0.1:65535",
            b"127.0.0.1:09999",
            b"h:0",
            b"h:00000",
            b"[::1]",
            b"[::1]:8080",
            b"xn--bcher-kva.example",
            b"a%20b",
        ];
        for v in good {
            assert!(valid_host(v), "{:?}", String::from_utf8_lossy(v));
        }
        let bad: &[&[u8]] = &[
            b"example.com:http",
            b"example.com:65536",
            b"example.com:65540",
            b"example.com:70000",
            b"example.com:000001",
            b"example.com:99999999999999999999",
            b"example.com:-1",
            b"a:b:c",
            b"a b",
            b"a/b",
            b"a@b",
            b"[::1",
            b"[::1]x",
            b"[::1]:x",
            b"a[b]",
            b"[]",
            b"example.com:80 ",
        ];
        for v in bad {
            assert!(!valid_host(v), "{:?}", String::from_utf8_lossy(v));
        }
    }
}
