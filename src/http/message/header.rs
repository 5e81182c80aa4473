//! Header lines: the owned [`Header`] a program builds, the [`HeaderRef`] views of a received
//! request's header lines, and the specification's lookups [`header`] and [`header_in`].

use super::Request;
use crate::http::grammar::{is_field_byte, is_token};

/// One header line a program builds: a name and a value, both text.
///
/// Extra headers of a [`Response`](crate::http::Response), the headers given to
/// [`Request::new`](crate::http::Request::new) and the pairs of [`params`](crate::http::params)
/// are `Header`s. Headers of a received request are read through [`HeaderRef`] views instead.
///
/// ```
/// use web::http::Header;
/// let h = Header::new("X-Trace", "abc");
/// assert_eq!((h.name.as_str(), h.value.as_str()), ("X-Trace", "abc"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Header {
    /// The field name.
    pub name: String,
    /// The field value.
    pub value: String,
}

impl Header {
    /// The specification's `Header(name, value)`.
    ///
    /// ```
    /// let h = web::http::Header::new("Cache-Control", "no-store");
    /// assert_eq!(h.name, "Cache-Control");
    /// ```
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }

    /// A header line checked where it is made: the name must be a token and the value hold
    /// no control byte but HTAB (RFC 9110 §5.1, §5.5), or it is refused with the reason.
    /// (A line made with [`Header::new`] is checked when a response is rendered instead: a bad
    /// name leaves the line out, each bad byte of a value is sent as a space.)
    ///
    /// ```
    /// use web::http::{Header, InvalidHeader};
    /// assert!(Header::try_new("X-Trace", "abc").is_ok());
    /// assert_eq!(Header::try_new("X Trace", "abc"), Err(InvalidHeader::Name));
    /// assert_eq!(Header::try_new("X-Trace", "a\r\nSet-Cookie: x=1"), Err(InvalidHeader::Value));
    /// ```
    pub fn try_new(
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Header, InvalidHeader> {
        let header = Header::new(name, value);
        if !is_token(header.name.as_bytes()) {
            return Err(InvalidHeader::Name);
        }
        if !header.value.bytes().all(is_field_byte) {
            return Err(InvalidHeader::Value);
        }
        Ok(header)
    }
}

/// Why [`Header::try_new`] (or [`try_with_header`](crate::http::try_with_header)) refused a
/// header line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidHeader {
    /// The name is empty or holds a byte a token may not (a space, a colon, a control, ...).
    Name,
    /// The value holds a control byte other than HTAB (CR, LF and NUL among them).
    Value,
}

impl std::fmt::Display for InvalidHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InvalidHeader::Name => "a header name must be a token (RFC 9110 §5.1)",
            InvalidHeader::Value => "a header value may hold no control byte but HTAB",
        })
    }
}

impl std::error::Error for InvalidHeader {}

impl From<InvalidHeader> for std::io::Error {
    fn from(e: InvalidHeader) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e)
    }
}

/// One header line of a [`Request`](crate::http::Request), borrowed from its buffer.
///
/// The name is text (a token: ASCII, lower-cased in a received request). The value is bytes as
/// received, with the optional whitespace around it trimmed: RFC 9110 §5.5 lets a value carry
/// `obs-text` (bytes 0x80–0xFF), which is opaque data, not necessarily UTF-8.
/// [`value`](HeaderRef::value) gives the bytes; [`text`](HeaderRef::text) gives them as text
/// when they are valid UTF-8.
///
/// ```
/// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nX-Raw: caf\xe9\r\n\r\n").unwrap();
/// let raw = req.headers().nth(1).unwrap();
/// assert_eq!(raw.name(), "x-raw");
/// assert_eq!(raw.value(), b"caf\xe9");
/// assert_eq!(raw.text(), None); // 0xE9 alone is not UTF-8
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeaderRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) value: &'a [u8],
}

impl<'a> HeaderRef<'a> {
    /// The field name (lower case in a received request).
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHOST: a\r\n\r\n").unwrap();
    /// assert_eq!(req.headers().next().unwrap().name(), "host");
    /// ```
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The field value's bytes as received, surrounding whitespace trimmed.
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    /// assert_eq!(req.headers().next().unwrap().value(), b"a");
    /// ```
    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// The field value as text: `None` when its bytes are not valid UTF-8 (obs-text).
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    /// assert_eq!(req.headers().next().unwrap().text(), Some("a"));
    /// ```
    pub fn text(&self) -> Option<&'a str> {
        std::str::from_utf8(self.value).ok()
    }

    /// An owned copy (the value converted lossily: each byte sequence that is not UTF-8 becomes
    /// U+FFFD).
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    /// let owned: web::http::Header = req.headers().next().unwrap().to_owned();
    /// assert_eq!(owned, web::http::Header::new("host", "a"));
    /// ```
    pub fn to_owned(&self) -> Header {
        Header::new(self.name, String::from_utf8_lossy(self.value))
    }
}

impl std::fmt::Debug for HeaderRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {:?}",
            self.name,
            String::from_utf8_lossy(self.value)
        )
    }
}

/// The value of the request's header `name`, compared without regard to case; `""` when absent
/// (absent and empty are indistinguishable). When the header appears more than once, the first
/// line wins. A value that is not valid UTF-8 (obs-text) reads as `""` here: read its bytes with
/// [`Request::header_bytes`].
///
/// ```
/// use web::http::{header, Header, Request};
/// let req = Request::new("GET", "/", vec![Header::new("content-type", "text/plain")], "");
/// assert_eq!(header(&req, "Content-Type"), "text/plain");
/// assert_eq!(header(&req, "accept"), "");
/// ```
pub fn header<'a>(req: &'a Request, name: &str) -> &'a str {
    req.header(name)
}

/// The same lookup as [`header`] over a header list.
///
/// ```
/// use web::http::{header_in, Header};
/// let hs = vec![Header::new("X-A", "1"), Header::new("x-a", "2")];
/// assert_eq!(header_in(&hs, "x-A"), "1");
/// ```
pub fn header_in<'a>(headers: &'a [Header], name: &str) -> &'a str {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map_or("", |h| h.value.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_made_checked_refuses_what_rendering_would_change() {
        let cases = [
            ("X-A", "plain value", Ok(())),
            ("x-a", "tab\tand space, obs-text é", Ok(())),
            ("X-A", "", Ok(())),
            ("", "v", Err(InvalidHeader::Name)),
            ("X A", "v", Err(InvalidHeader::Name)),
            ("X-A:", "v", Err(InvalidHeader::Name)),
            ("X-\u{e9}", "v", Err(InvalidHeader::Name)),
            ("X-A", "a\rb", Err(InvalidHeader::Value)),
            ("X-A", "a\nb", Err(InvalidHeader::Value)),
            ("X-A", "a\0b", Err(InvalidHeader::Value)),
            ("X-A", "a\u{7f}b", Err(InvalidHeader::Value)),
        ];
        for (name, value, want) in cases {
            assert_eq!(
                Header::try_new(name, value).map(|_| ()),
                want,
                "{name:?}: {value:?}"
            );
        }
    }

    #[test]
    fn header_lookup_is_case_blind_and_absent_is_empty() {
        let req = crate::http::parse_request(
            b"GET / HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nAccept: a\r\nAccept: b\r\n\r\n",
        )
        .unwrap();
        let cases = [
            ("HOST", "h"),
            ("x-empty", ""),
            ("missing", ""),
            ("accept", "a"),
        ];
        for (name, want) in cases {
            assert_eq!(header(&req, name), want, "{name}");
        }
    }
}
