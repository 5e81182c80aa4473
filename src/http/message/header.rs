//! Header lines: the owned [`Header`] a program builds, the [`HeaderRef`] views of a received
//! request's header lines, and the specification's lookups [`header`] and [`header_in`].

use super::Request;

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
