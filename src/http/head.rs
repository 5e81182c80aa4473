//! The one request-head parser: strict (RFC 9112 §2–§7, RFC 9110 §5), incremental, and shared by
//! the server and [`parse_request`](crate::http::parse_request).
//!
//! Fed any prefix of a byte stream it answers *incomplete* (`Ok(None)`), *complete*
//! (`Ok(Some(head))`) or *error*. It never looks at a byte twice when searching for line ends, so
//! a head arriving one byte at a time costs linear time, and it refuses a bad request line as
//! soon as that line is complete.

use super::error::ParseError;
use super::grammar::{
    alphanumeric_and, find_control, is_token, list_items, parse_digits, split_field_line, trim_ows,
};
use super::message::{Header, Request};

/// Default limit on the request line plus header lines, in bytes (answered with 431, or 414
/// when the request line alone is longer).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Default limit on the number of header lines (answered with 431).
pub const MAX_HEADERS: usize = 100;

/// The limits the head parser applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadLimits {
    /// Most bytes of request line and header lines, the final blank line and any leading empty
    /// lines included.
    pub max_head_bytes: usize,
    /// Most header lines.
    pub max_headers: usize,
}

impl Default for HeadLimits {
    fn default() -> HeadLimits {
        HeadLimits {
            max_head_bytes: MAX_HEAD_BYTES,
            max_headers: MAX_HEADERS,
        }
    }
}

/// The HTTP version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1` (and `HTTP/1.x` with x > 1, which RFC 9110 §6.2 says to treat as 1.1).
    Http11,
}

/// How the body of a request is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A complete, valid request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// Method, target and headers; the body is empty.
    pub request: Request,
    /// Bytes the head took in the input, from its first byte through the blank line.
    pub len: usize,
    /// The request's version.
    pub version: Version,
    /// How the body that follows is delimited.
    pub framing: Framing,
    /// Whether the client wishes to keep the connection open after this request (HTTP/1.1
    /// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request.
    pub expect_continue: bool,
}

/// What the header lines seen so far say about framing and connection handling.
#[derive(Debug, Default)]
struct Fields {
    hosts: u32,
    bad_host: bool,
    content_length: Option<u64>,
    bad_length: bool,
    transfer_encoding: bool,
    chunked: bool,
    chunked_last: bool,
    chunked_twice: bool,
    unknown_coding: bool,
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
    expect_other: bool,
}

impl Fields {
    /// Notes what a header line means for framing; `name` is lower case.
    fn note(&mut self, name: &str, value: &str) {
        match name {
            "host" => {
                self.hosts += 1;
                self.bad_host |= !value.bytes().all(is_host_byte);
            }
            "content-length" => {
                // RFC 9110 §8.6: a list of identical values may be taken as one.
                for item in value.split(',') {
                    match parse_digits(trim_ows(item.as_bytes())) {
                        Some(n) if self.content_length.map_or(true, |m| m == n) => {
                            self.content_length = Some(n)
                        }
                        _ => self.bad_length = true,
                    }
                }
            }
            "transfer-encoding" => {
                self.transfer_encoding = true;
                for coding in list_items(value) {
                    if coding.eq_ignore_ascii_case("chunked") {
                        self.chunked_twice |= self.chunked;
                        self.chunked = true;
                        self.chunked_last = true;
                    } else {
                        self.unknown_coding = true;
                        self.chunked_last = false;
                    }
                }
            }
            "connection" => {
                for option in list_items(value) {
                    self.close |= option.eq_ignore_ascii_case("close");
                    self.keep_alive |= option.eq_ignore_ascii_case("keep-alive");
                }
            }
            "expect" => {
                if value.eq_ignore_ascii_case("100-continue") {
                    self.expect_continue = true;
                } else {
                    self.expect_other = true;
                }
            }
            _ => {}
        }
    }

    /// RFC 9112 §6.1–§6.3 and RFC 9110 §7.2, §10.1.1: the checks that need the whole head.
    fn finish(&self, version: Version) -> Result<(Framing, bool, bool), ParseError> {
        if self.hosts > 1 {
            return Err(ParseError::DuplicateHost);
        }
        if self.hosts == 0 && version == Version::Http11 {
            return Err(ParseError::MissingHost);
        }
        if self.bad_host {
            return Err(ParseError::BadHost);
        }
        if self.bad_length {
            return Err(ParseError::ContentLength);
        }
        let framing = if self.transfer_encoding {
            if version == Version::Http10 {
                return Err(ParseError::TransferEncodingInHttp10);
            }
            if self.content_length.is_some() {
                return Err(ParseError::LengthAndTransferEncoding);
            }
            if self.chunked_twice || !(self.chunked || self.unknown_coding) {
                return Err(ParseError::TransferEncoding);
            }
            if self.unknown_coding || !self.chunked_last {
                return Err(ParseError::UnsupportedTransferCoding);
            }
            Framing::Chunked
        } else {
            match self.content_length {
                Some(n) => Framing::Length(n),
                None => Framing::None,
            }
        };
        let keep_alive = match version {
            Version::Http11 => !self.close,
            Version::Http10 => self.keep_alive && !self.close,
        };
        let expect_continue = version == Version::Http11 && self.expect_continue;
        if version == Version::Http11 && self.expect_other {
            return Err(ParseError::Expectation);
        }
        Ok((framing, keep_alive, expect_continue))
    }
}

/// `Host = uri-host [ ":" port ]`: unreserved, percent-encoded and sub-delimiter characters,
/// colons and the brackets of an IP literal (RFC 3986 §3.2.2).
static HOST_BYTE: [bool; 256] = alphanumeric_and(b"-._~%!$&'()*+,;=:[]");

fn is_host_byte(b: u8) -> bool {
    HOST_BYTE[usize::from(b)]
}

/// The incremental request-head parser.
///
/// Call [`parse`](HeadParser::parse) with the bytes received so far, each call with the same
/// bytes as the last plus what arrived since. After it answers complete or error it starts over,
/// ready for the next request.
///
/// ```
/// use web::http::{Framing, HeadParser};
/// let mut p = HeadParser::default();
/// let raw = b"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
/// assert_eq!(p.parse(&raw[..20]), Ok(None));
/// let head = p.parse(raw).unwrap().unwrap();
/// assert_eq!(head.framing, Framing::Length(3));
/// assert_eq!(&raw[head.len..], b"abc");
/// ```
#[derive(Debug, Default)]
pub struct HeadParser {
    limits: HeadLimits,
    /// Bytes already searched for a line end.
    scanned: usize,
    /// Where the line being received starts.
    line_start: usize,
    /// Whether a byte of 0x80 or above was seen in the current line.
    non_ascii: bool,
    /// Whether the request line has been parsed into `request` and `version`.
    started: bool,
    request: Request,
    version: Option<Version>,
    fields: Fields,
}

impl HeadParser {
    /// A parser applying `limits`.
    pub fn new(limits: HeadLimits) -> HeadParser {
        HeadParser {
            limits,
            ..HeadParser::default()
        }
    }

    /// Whether no byte of a request has been looked at yet.
    pub(crate) fn is_fresh(&self) -> bool {
        self.scanned == 0
    }

    /// Bytes of heap this parser holds for a head still incomplete.
    pub fn held_bytes(&self) -> usize {
        self.request.method.capacity()
            + self.request.path.capacity()
            + self.request.headers.capacity() * std::mem::size_of::<Header>()
            + self
                .request
                .headers
                .iter()
                .map(|h| h.name.capacity() + h.value.capacity())
                .sum::<usize>()
    }

    /// Parses what has arrived: `Ok(None)` while the head is incomplete, `Ok(Some(head))` once it
    /// is complete and valid, `Err` as soon as it is known to be invalid or too large.
    pub fn parse(&mut self, buf: &[u8]) -> Result<Option<RequestHead>, ParseError> {
        if buf.len() < self.scanned {
            // The caller broke the contract (fed less than before): start over on what we have.
            *self = HeadParser::new(self.limits);
        }
        let result = self.scan(buf);
        if !matches!(result, Ok(None)) {
            *self = HeadParser::new(self.limits);
        }
        result
    }

    /// Looks at each byte once, in order: a control byte is either the CR of a line's CRLF, an
    /// HTAB (allowed in values), or an error at its position; a line is taken apart when its
    /// CRLF arrives. Nothing past the head limit is looked at, so feeding the input in pieces
    /// answers exactly as feeding it whole.
    fn scan(&mut self, buf: &[u8]) -> Result<Option<RequestHead>, ParseError> {
        let view = &buf[..buf.len().min(self.limits.max_head_bytes)];
        while let Some(at) = find_control(view, self.scanned, &mut self.non_ascii) {
            match (view[at], view.get(at + 1)) {
                (b'\t', _) => self.scanned = at + 1,
                (b'\r', Some(b'\n')) => {
                    let line = &view[self.line_start..at];
                    self.scanned = at + 2;
                    self.line_start = at + 2;
                    if let Some(head) = self.line(line, at + 2)? {
                        return Ok(Some(head));
                    }
                    self.non_ascii = false;
                }
                // A CR as the last byte received: wait for what follows it.
                (b'\r', None) => {
                    self.scanned = at;
                    break;
                }
                // RFC 9112 §2.2: a bare LF is refused, not guessed at.
                (b'\n', _) => return Err(ParseError::LineEnding),
                // A bare CR, NUL, DEL or another control byte.
                _ if !self.started => return Err(ParseError::RequestLine),
                _ => return Err(ParseError::HeaderValue),
            }
        }
        if !matches!(view.get(self.scanned), Some(b'\r')) {
            self.scanned = view.len();
        }
        if buf.len() > view.len() {
            return Err(self.too_large(buf));
        }
        Ok(None)
    }

    /// Takes apart one line that ended at `end` (its CRLF excluded from `line`).
    fn line(&mut self, line: &[u8], end: usize) -> Result<Option<RequestHead>, ParseError> {
        if !self.started {
            // RFC 9112 §2.2: ignore empty lines received before the request line.
            if !line.is_empty() {
                self.request_line(line)?;
                self.started = true;
            }
            Ok(None)
        } else if line.is_empty() {
            self.finish(end).map(Some)
        } else {
            self.field_line(line).map(|()| None)
        }
    }

    /// 414 when the request line itself is past the limit (and has a target), else 431.
    fn too_large(&self, buf: &[u8]) -> ParseError {
        if self.started {
            ParseError::HeadTooLarge
        } else if buf[self.line_start..].contains(&b' ') {
            ParseError::UriTooLong
        } else {
            ParseError::RequestLine
        }
    }

    /// `request-line = method SP request-target SP HTTP-version` (RFC 9112 §3).
    fn request_line(&mut self, line: &[u8]) -> Result<(), ParseError> {
        let sp1 = line
            .iter()
            .position(|&b| b == b' ')
            .ok_or(ParseError::RequestLine)?;
        let (method, rest) = (&line[..sp1], &line[sp1 + 1..]);
        let sp2 = rest
            .iter()
            .rposition(|&b| b == b' ')
            .ok_or(ParseError::RequestLine)?;
        let (target, version) = (&rest[..sp2], &rest[sp2 + 1..]);
        if !is_token(method) {
            return Err(ParseError::Method);
        }
        self.version = Some(parse_version(version)?);
        check_target(method, target)?;
        self.request.method = self.text(method)?.to_owned();
        self.request.path = self.text(target)?.to_owned();
        self.request.headers = Vec::with_capacity(16);
        Ok(())
    }

    fn field_line(&mut self, line: &[u8]) -> Result<(), ParseError> {
        if self.request.headers.len() >= self.limits.max_headers {
            return Err(ParseError::TooManyHeaders);
        }
        let (name, value) = split_field_line(line)?;
        let name = self.text(name)?.to_ascii_lowercase();
        let value = self.text(value)?;
        self.fields.note(&name, value);
        self.request.headers.push(Header {
            name,
            value: value.to_owned(),
        });
        Ok(())
    }

    /// Bytes of the current line as text: checked as UTF-8 only when the line has a byte of 0x80
    /// or above (a head that is not UTF-8 is refused, never altered).
    fn text<'b>(&self, bytes: &'b [u8]) -> Result<&'b str, ParseError> {
        if self.non_ascii {
            return std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8);
        }
        debug_assert!(bytes.is_ascii());
        // SAFETY: `non_ascii` is false, so `find_control` saw no byte of 0x80 or above in this
        // line, of which `bytes` is a part: ASCII bytes are valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
    }

    fn finish(&mut self, len: usize) -> Result<RequestHead, ParseError> {
        let version = self.version.ok_or(ParseError::RequestLine)?;
        let (framing, keep_alive, expect_continue) = self.fields.finish(version)?;
        Ok(RequestHead {
            request: std::mem::take(&mut self.request),
            len,
            version,
            framing,
            keep_alive,
            expect_continue,
        })
    }
}

/// `HTTP-version = "HTTP/" DIGIT "." DIGIT` (RFC 9112 §2.3).
fn parse_version(v: &[u8]) -> Result<Version, ParseError> {
    match v {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            match (major, minor) {
                (b'1', b'0') => Ok(Version::Http10),
                (b'1', _) => Ok(Version::Http11),
                _ => Err(ParseError::UnsupportedVersion),
            }
        }
        _ => Err(ParseError::Version),
    }
}

/// The four forms of `request-target` (RFC 9112 §3.2). Visible ASCII only, plus non-ASCII bytes
/// (which must then form valid UTF-8); `*` only for `OPTIONS`; authority-form only for
/// `CONNECT`.
fn check_target(method: &[u8], target: &[u8]) -> Result<(), ParseError> {
    if target.is_empty() || !target.iter().all(|&b| b > 0x20 && b != 0x7f) {
        return Err(ParseError::Target);
    }
    let ok = match target {
        [b'/', ..] => true,
        b"*" => method == b"OPTIONS",
        _ if method == b"CONNECT" => true,
        _ => is_absolute_form(target),
    };
    if ok {
        Ok(())
    } else {
        Err(ParseError::Target)
    }
}

/// `absolute-URI` starts with `scheme ":"`, `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_absolute_form(target: &[u8]) -> bool {
    let Some(colon) = target.iter().position(|&b| b == b':') else {
        return false;
    };
    let scheme = &target[..colon];
    matches!(scheme.first(), Some(b) if b.is_ascii_alphabetic())
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

#[cfg(test)]
mod tests;
