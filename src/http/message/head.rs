//! The one request-head parser: strict (RFC 9112 §2–§7, RFC 9110 §5), incremental, and shared by
//! the server and [`parse_request`](crate::http::parse_request).
//!
//! Fed any prefix of a byte stream it answers *incomplete* (`Ok(None)`), *complete*
//! (`Ok(Some(head))`) or *error*. It never looks at a byte twice when searching for line ends, so
//! a head arriving one byte at a time costs linear time, and it refuses a bad request line as
//! soon as that line is complete. Header values are bytes: `obs-text` (0x80–0xFF) is accepted
//! as opaque data (RFC 9110 §5.5); the target must be UTF-8 (refused with 400 otherwise).

use super::pool::{self, Parts};
use super::{Line, Request, Span};
use crate::http::error::ParseError;
use crate::http::fields::{ConnectionOptions, ContentLength, TransferCodings, valid_host};
use crate::http::grammar::{field_line_parts, find_control, is_scheme, is_token, lower_field_name};

/// Default limit on the request line plus header lines, in bytes (answered with 431, or 414
/// when the request line alone is longer).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Input the parser copies past a line it needs, at most, so that one copy serves the lines
/// that follow (see `HeadParser::line`); bounded so that a buffer of pipelined requests is not
/// copied again for each of them.
const COPY_AHEAD: usize = 256;

/// Default limit on the number of header lines (answered with 431).
pub const MAX_HEADERS: usize = 100;

/// The limits the head parser applies.
///
/// ```
/// let limits = web::http::HeadLimits { max_head_bytes: 4096, max_headers: 20 };
/// let parser = web::http::HeadParser::new(limits);
/// # let _ = parser;
/// ```
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
///
/// ```
/// let head = web::http::HeadParser::default().parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
/// assert_eq!(head.version, web::http::Version::Http10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1` (and `HTTP/1.x` with x > 1, which RFC 9110 §6.2 says to treat as 1.1).
    Http11,
}

/// How the body of a request is delimited (RFC 9112 §6.3).
///
/// ```
/// let head = web::http::HeadParser::default().parse(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n").unwrap().unwrap();
/// assert_eq!(head.framing, web::http::Framing::Length(4));
/// ```
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
///
/// ```
/// let head = web::http::HeadParser::default().parse(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").unwrap().unwrap();
/// assert!(!head.keep_alive);
/// assert_eq!(head.request.header("host"), "a");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// Method, target and headers (in one pooled buffer); the body is empty.
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
    /// `Connection: upgrade`: the client asks to switch protocols (RFC 9110 §7.8).
    pub upgrade: bool,
}

/// What the header lines seen so far say about framing and connection handling.
#[derive(Debug, Default)]
struct Fields {
    hosts: u32,
    bad_host: bool,
    content_length: ContentLength,
    transfer: TransferCodings,
    connection: ConnectionOptions,
    expect_continue: bool,
    expect_other: bool,
}

impl Fields {
    /// Notes what a header line means for framing; `name` is lower case.
    fn note(&mut self, name: &[u8], value: &[u8]) {
        match name {
            b"host" => {
                self.hosts += 1;
                self.bad_host |= !valid_host(value);
            }
            b"content-length" => self.content_length.note(value),
            b"transfer-encoding" => self.transfer.note(value),
            b"connection" => self.connection.note(value),
            b"expect" => {
                if value.eq_ignore_ascii_case(b"100-continue") {
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
        let length = self.content_length.get()?;
        let framing = if self.transfer.present() {
            if version == Version::Http10 {
                return Err(ParseError::TransferEncodingInHttp10);
            }
            if length.is_some() {
                return Err(ParseError::LengthAndTransferEncoding);
            }
            self.transfer.check_request()?;
            Framing::Chunked
        } else {
            match length {
                Some(n) => Framing::Length(n),
                None => Framing::None,
            }
        };
        let keep_alive = self.connection.persists(version == Version::Http11);
        let expect_continue = version == Version::Http11 && self.expect_continue;
        if version == Version::Http11 && self.expect_other {
            return Err(ParseError::Expectation);
        }
        Ok((framing, keep_alive, expect_continue))
    }
}

/// The incremental request-head parser.
///
/// Call [`parse`](HeadParser::parse) with the bytes received so far, each call with the same
/// bytes as the last plus what arrived since. After it answers complete or error it starts over,
/// ready for the next request. Fed other bytes than promised it may answer wrongly, but never
/// unsafely: nothing it hands out is trusted without a check.
///
/// The complete head is copied once into the [`Request`]'s pooled buffer (names lower-cased on
/// the way), so parsing a request allocates nothing in steady state.
///
/// ```
/// use web::http::{Framing, HeadParser};
/// let mut p = HeadParser::default();
/// let raw = b"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
/// assert_eq!(p.parse(&raw[..20]), Ok(None));
/// let head = p.parse(raw).unwrap().unwrap();
/// assert_eq!(head.framing, Framing::Length(3));
/// assert_eq!(head.request.path(), "/up");
/// assert_eq!(&raw[head.len..], b"abc");
/// ```
#[derive(Debug, Default)]
pub struct HeadParser {
    limits: HeadLimits,
    /// Bytes already searched for a line end.
    scanned: usize,
    /// Where the line being received starts.
    line_start: usize,
    /// Whether the request line has been parsed (into the parts' `method` and `target`, and
    /// `version`).
    started: bool,
    version: Option<Version>,
    /// The request line says `HEAD`.
    head: bool,
    /// The last request refused was a HEAD request (kept across the reset after an error).
    refused_head: bool,
    fields: Fields,
    /// The input copied so far and its header lines (pooled parts, taken at the first line).
    buf: Option<Box<Parts>>,
}

impl HeadParser {
    /// A parser applying `limits`.
    ///
    /// ```
    /// let parser = web::http::HeadParser::new(web::http::HeadLimits::default());
    /// # let _ = parser;
    /// ```
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

    /// Whether the request line seen so far is a HEAD request's.
    pub(crate) fn is_head(&self) -> bool {
        self.head
    }

    /// Whether the request the last error refused was a HEAD request.
    pub(crate) fn refused_head(&self) -> bool {
        self.refused_head
    }

    /// Bytes of heap this parser holds for a head still incomplete.
    ///
    /// ```
    /// let mut p = web::http::HeadParser::default();
    /// assert_eq!(p.held_bytes(), 0);
    /// p.parse(b"GET / HTTP/1.1\r\nHost: a\r\n").unwrap(); // incomplete: its lines are held
    /// assert!(p.held_bytes() > 0);
    /// ```
    pub fn held_bytes(&self) -> usize {
        self.buf.as_deref().map_or(0, Parts::held_bytes)
    }

    /// Parses what has arrived: `Ok(None)` while the head is incomplete, `Ok(Some(head))` once it
    /// is complete and valid, `Err` as soon as it is known to be invalid or too large.
    ///
    /// ```
    /// let mut p = web::http::HeadParser::default();
    /// assert_eq!(p.parse(b"GET / HT"), Ok(None));
    /// assert!(p.parse(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap().is_some());
    /// ```
    #[inline]
    pub fn parse(&mut self, buf: &[u8]) -> Result<Option<RequestHead>, ParseError> {
        if buf.len() < self.scanned {
            // The caller broke the contract (fed less than before): start over on what we have.
            self.reset();
        }
        // `scan` answers with the head's length only (two registers); the head is made here,
        // inlined into the caller, so it is never copied through memory in pieces (a
        // `Result<Option<RequestHead>>` written by a callee and moved by its caller costs
        // store-forwarding stalls on the busy path).
        let result = match self.scan(buf) {
            Ok(None) => return Ok(None),
            Ok(Some(len)) => self.finish(len),
            Err(e) => Err(e),
        };
        let head = self.head;
        self.reset();
        self.refused_head = head && result.is_err();
        result.map(Some)
    }

    /// Back to the start, the line buffer given back to the pool (when it still holds one).
    #[inline]
    fn reset(&mut self) {
        self.scanned = 0;
        self.line_start = 0;
        self.started = false;
        self.version = None;
        self.head = false;
        self.refused_head = false;
        self.fields = Fields::default();
        if let Some(buf) = self.buf.take() {
            pool::give(buf);
        }
    }

    /// Looks at each byte once, in order: a control byte is either the CR of a line's CRLF, an
    /// HTAB (allowed in values), or an error at its position; a line is taken apart when its
    /// CRLF arrives. Nothing past the head limit is looked at, so feeding the input in pieces
    /// answers exactly as feeding it whole.
    fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let view = &buf[..buf.len().min(self.limits.max_head_bytes)];
        while let Some(at) = find_control(view, self.scanned) {
            match (view[at], view.get(at + 1)) {
                (b'\t', _) => self.scanned = at + 1,
                (b'\r', Some(b'\n')) => {
                    let line = Span::new(self.line_start, at - self.line_start);
                    self.scanned = at + 2;
                    self.line_start = at + 2;
                    if self.line(view, line)? {
                        return Ok(Some(at + 2));
                    }
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

    /// Takes apart one line (its CRLF excluded); answers whether it was the blank line that
    /// ends the head. The input is copied into the request's buffer ahead of the lines, up to
    /// [`COPY_AHEAD`] bytes past the line at a time (a head usually arrives whole: one copy
    /// for all its lines), so the buffer always holds the input up to here at the same
    /// offsets (names are lower-cased in the copy), and no byte is copied twice.
    fn line(&mut self, view: &[u8], line: Span) -> Result<bool, ParseError> {
        let end = line.at + line.len + 2;
        let buf = self.buf.get_or_insert_with(pool::take);
        let copied = buf.bytes.len();
        debug_assert!(copied >= line.at);
        if copied < end {
            let upto = view.len().min(end.max(copied + COPY_AHEAD));
            buf.bytes.extend_from_slice(&view[copied..upto]);
        }
        let bytes = &view[line.at..line.at + line.len];
        if !self.started {
            // RFC 9112 §2.2: ignore empty lines received before the request line.
            if !bytes.is_empty() {
                self.request_line(bytes, line.at)?;
                self.started = true;
            }
            Ok(false)
        } else if bytes.is_empty() {
            Ok(true)
        } else {
            self.field_line(line).map(|()| false)
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

    /// `request-line = method SP request-target SP HTTP-version` (RFC 9112 §3); `at` is where
    /// the line starts in the input.
    fn request_line(&mut self, line: &[u8], at: usize) -> Result<(), ParseError> {
        let (sp1, common) = method_len(line).ok_or(ParseError::RequestLine)?;
        let (method, rest) = (&line[..sp1], &line[sp1 + 1..]);
        let sp2 = version_space(rest).ok_or(ParseError::RequestLine)?;
        let (target, version) = (&rest[..sp2], &rest[sp2 + 1..]);
        // `method = token` (RFC 9110 §9.1), known already of a common one.
        if !common && !is_token(method) {
            return Err(ParseError::Method);
        }
        self.version = Some(parse_version(version)?);
        check_target(method, target)?;
        self.head = method == b"HEAD";
        if let Some(buf) = self.buf.as_deref_mut() {
            buf.method = Span::new(at, sp1);
            buf.target = Span::new(at + sp1 + 1, sp2);
        }
        Ok(())
    }

    /// A field line, already copied into the buffer at `line`.
    fn field_line(&mut self, line: Span) -> Result<(), ParseError> {
        let buf = self.buf.as_deref_mut().ok_or(ParseError::HeaderName)?;
        if buf.lines.len() >= self.limits.max_headers {
            return Err(ParseError::TooManyHeaders);
        }
        let copy = buf
            .bytes
            .get_mut(line.at..line.at + line.len)
            .ok_or(ParseError::HeaderName)?;
        let name_len = lower_field_name(copy);
        let (name, value) = field_line_parts(copy, name_len)?;
        self.fields.note(name, value);
        // Both are subslices of the line's copy: their offsets in it are where they lie.
        let offset = |part: &[u8]| line.at + (part.as_ptr() as usize - copy.as_ptr() as usize);
        let line = Line {
            name: Span::new(offset(name), name.len()),
            value: Span::new(offset(value), value.len()),
        };
        buf.lines.push(line);
        Ok(())
    }

    /// The blank line arrived: checks what needs the whole head; the request takes the buffer
    /// the lines were copied into.
    #[inline]
    fn finish(&mut self, len: usize) -> Result<RequestHead, ParseError> {
        let version = self.version.ok_or(ParseError::RequestLine)?;
        let (framing, keep_alive, expect_continue) = self.fields.finish(version)?;
        let mut buf = self.buf.take().ok_or(ParseError::RequestLine)?;
        // What was copied past the head is the next request's (or the body's): not this one's.
        buf.bytes.truncate(len);
        Ok(RequestHead {
            request: Request::from_head(buf),
            len,
            version,
            framing,
            keep_alive,
            expect_continue,
            upgrade: self.fields.connection.upgrade,
        })
    }
}

/// Where the first space of a request line is (the method's length), and whether the method
/// before it is a common one (`GET`, `PUT`, `POST`, `HEAD`: found without a search, and a
/// token without a look).
#[inline]
fn method_len(line: &[u8]) -> Option<(usize, bool)> {
    match line {
        [b'G', b'E', b'T', b' ', ..] | [b'P', b'U', b'T', b' ', ..] => Some((3, true)),
        [b'P', b'O', b'S', b'T', b' ', ..] | [b'H', b'E', b'A', b'D', b' ', ..] => Some((4, true)),
        _ => line.iter().position(|&b| b == b' ').map(|at| (at, false)),
    }
}

/// Where the last space of `rest` (a request line after its method) is. An `HTTP-version` is
/// eight bytes, so in a valid line it is nine bytes from the end; when that byte is a space
/// but not the last one, the version after it holds a space and is refused as the version
/// after the last one would be, so taking it answers the same.
#[inline]
fn version_space(rest: &[u8]) -> Option<usize> {
    match rest.len().checked_sub(9) {
        Some(at) if rest[at] == b' ' => Some(at),
        _ => rest.iter().rposition(|&b| b == b' '),
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
/// `CONNECT`. (HTTP/2's `:path` is held to it too, `h2/headers.rs`.)
pub(crate) fn check_target(method: &[u8], target: &[u8]) -> Result<(), ParseError> {
    // Control bytes but HTAB, and DEL, were refused as the line was scanned: a byte up to SP
    // is SP or HTAB here. One pass finds those and non-ASCII bytes.
    let mut ascii = true;
    for &b in target {
        if b <= b' ' {
            return Err(ParseError::Target);
        }
        ascii &= b < 0x80;
    }
    if target.is_empty() {
        return Err(ParseError::Target);
    }
    if !ascii && std::str::from_utf8(target).is_err() {
        return Err(ParseError::NotUtf8);
    }
    let ok = match target {
        [b'/', ..] => true,
        b"*" => method == b"OPTIONS",
        _ if method == b"CONNECT" => true,
        _ => is_absolute_form(target),
    };
    if ok { Ok(()) } else { Err(ParseError::Target) }
}

/// `absolute-URI` starts with `scheme ":"`.
fn is_absolute_form(target: &[u8]) -> bool {
    target
        .iter()
        .position(|&b| b == b':')
        .is_some_and(|colon| is_scheme(&target[..colon]))
}

#[cfg(test)]
mod tests;
