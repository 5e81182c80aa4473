//! [`Request`]: one buffer holding the request head as received (names lower-cased in place)
//! and the body, with the positions of method, target and each header line in it.

use std::fmt;

use super::header::{Header, HeaderRef};
use super::pool::{self, Parts};

/// Where a part of a request lies in its buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) at: usize,
    pub(crate) len: usize,
}

impl Span {
    pub(crate) fn new(at: usize, len: usize) -> Span {
        Span { at, len }
    }

    fn end(self) -> usize {
        self.at.saturating_add(self.len)
    }
}

/// One header line: where its name and its value lie.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) name: Span,
    pub(crate) value: Span,
}

/// A request as the handler sees it: the specification's `Request(method, path, headers, body)`
/// read through accessor methods.
///
/// A received request owns **one buffer**: the head exactly as it arrived (header names folded
/// to lower case in place), then the body, and the positions of the method, the target and each
/// header line in it. Buffers come from a small per-thread pool and go back to it when the
/// request is dropped, so a server worker in steady state allocates nothing to read a request.
///
/// Method, target and header names are text (the parser admits tokens and a UTF-8 target only);
/// header values are bytes ([`HeaderRef::value`]), since RFC 9110 §5.5 lets them carry
/// `obs-text`. Middleware may change a request on its way down
/// ([`set_path`](Request::set_path), [`set_header`](Request::set_header), ...): a change writes
/// the new bytes at the end of the buffer, so it costs a copy only when it is made.
///
/// ```
/// use web::http::{Header, Request};
/// let mut req = Request::new("GET", "/a?b=c", vec![Header::new("host", "x")], "");
/// assert_eq!((req.method(), req.path()), ("GET", "/a?b=c"));
/// assert_eq!(req.header("Host"), "x");
/// req.set_path("/b");
/// assert_eq!(req.path(), "/b");
/// assert!(req.body().is_empty());
/// ```
pub struct Request {
    /// Buffer, lines and positions in one pooled box (`None`: the empty request, which holds
    /// nothing).
    pub(super) parts: Option<Box<Parts>>,
}

impl Request {
    /// The specification's `Request(method, path, headers, body)`. Header names are kept as
    /// given (lookups ignore case anyway).
    ///
    /// ```
    /// use web::http::{Header, Request};
    /// let req = Request::new("POST", "/notes", vec![Header::new("content-type", "text/plain")], "hello");
    /// assert_eq!((req.method(), req.path(), req.body()), ("POST", "/notes", &b"hello"[..]));
    /// ```
    pub fn new(
        method: impl AsRef<str>,
        path: impl AsRef<str>,
        headers: Vec<Header>,
        body: impl AsRef<[u8]>,
    ) -> Request {
        let mut req = Request {
            parts: Some(pool::take()),
        };
        let method = req.push(method.as_ref().as_bytes());
        let target = req.push(path.as_ref().as_bytes());
        for h in &headers {
            req.append_header(&h.name, &h.value);
        }
        let body = req.push(body.as_ref());
        let parts = req.parts_mut();
        (parts.method, parts.target, parts.body) = (method, target, body);
        req
    }

    /// A request from the parts another framing gives (an HTTP/2 header list): method,
    /// target, then each field as it came; the body is empty until
    /// [`append_body`](Request::append_body).
    pub(crate) fn from_fields<'f>(
        method: &str,
        target: &str,
        fields: impl Iterator<Item = (&'f str, &'f [u8])>,
    ) -> Request {
        let mut req = Request {
            parts: Some(pool::take()),
        };
        let method = req.push(method.as_bytes());
        let target = req.push(target.as_bytes());
        for (name, value) in fields {
            req.append_header(name, value);
        }
        let parts = req.parts_mut();
        (parts.method, parts.target) = (method, target);
        parts.body = Span::new(parts.bytes.len(), 0);
        req
    }

    /// A parsed head: `parts.bytes` holds the head's bytes, `parts.lines` its header lines,
    /// `parts.method` and `parts.target` are set; the body is empty until
    /// [`append_body`](Request::append_body).
    #[inline]
    pub(crate) fn from_head(mut parts: Box<Parts>) -> Request {
        parts.body = Span::new(parts.bytes.len(), 0);
        Request { parts: Some(parts) }
    }

    /// Where the request came from.
    pub(crate) fn caller(&self) -> super::Caller {
        self.parts
            .as_deref()
            .map_or_else(Default::default, |p| p.caller)
    }

    pub(crate) fn caller_mut(&mut self) -> &mut super::Caller {
        &mut self.parts_mut().caller
    }

    /// The parts, made (from the pool) for an empty request about to be changed.
    pub(super) fn parts_mut(&mut self) -> &mut Parts {
        self.parts.get_or_insert_with(pool::take)
    }

    /// Where a part lies (an empty span in the empty request).
    pub(super) fn span(&self, part: fn(&Parts) -> Span) -> Span {
        self.parts.as_deref().map_or(Span::default(), part)
    }

    /// Appends bytes at the end of the buffer and says where they went.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Span {
        let buf = &mut self.parts_mut().bytes;
        let at = buf.len();
        buf.extend_from_slice(bytes);
        Span::new(at, bytes.len())
    }

    fn bytes(&self, span: Span) -> &[u8] {
        self.parts
            .as_deref()
            .and_then(|p| p.bytes.get(span.at..span.end()))
            .unwrap_or_default()
    }

    /// The header lines' positions.
    fn lines(&self) -> &[Line] {
        self.parts.as_deref().map_or(&[], |p| &p.lines)
    }

    /// Text of a span: method, target and names are valid UTF-8 by construction (the parser
    /// admits tokens and a UTF-8 target; the other constructors take `&str`), checked anyway.
    pub(super) fn text(&self, span: Span) -> &str {
        super::text::as_text(self.bytes(span))
    }

    /// The bytes before the body (the head as received, its lines in place): for a reader
    /// that shares them rather than copy each part (the tower bridge).
    #[cfg(feature = "tower")]
    pub(crate) fn head_bytes(&self) -> &[u8] {
        self.parts
            .as_deref()
            .map_or(&[], |p| p.bytes.get(..p.body.at).unwrap_or_default())
    }

    /// Where `method SP target` lies in the bytes the head was parsed from (as HTTP/1.1's
    /// request line has them), and the method's length.
    pub(crate) fn request_line(&self) -> (std::ops::Range<usize>, usize) {
        let (method, target) = (self.span(|p| p.method), self.span(|p| p.target));
        (method.at..target.end(), method.len)
    }

    /// The request method token, as sent (methods are case-sensitive).
    ///
    /// ```
    /// let req = web::http::parse_request(b"DELETE /n/1 HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    /// assert_eq!(req.method(), "DELETE");
    /// ```
    pub fn method(&self) -> &str {
        self.text(self.span(|p| p.method))
    }

    /// Whether the method is `method` (compared as bytes, without a UTF-8 check).
    pub(crate) fn method_is(&self, method: &str) -> bool {
        self.bytes(self.span(|p| p.method)) == method.as_bytes()
    }

    /// The request target exactly as sent, query string included.
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET /a?b=c HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    /// assert_eq!(req.path(), "/a?b=c");
    /// assert_eq!(web::http::path_of(req.path()), "/a");
    /// ```
    pub fn path(&self) -> &str {
        self.text(self.span(|p| p.target))
    }

    /// The header lines in the order received (names lower-cased in a received request).
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n").unwrap();
    /// let names: Vec<&str> = req.headers().map(|h| h.name()).collect();
    /// assert_eq!(names, ["host", "accept"]);
    /// ```
    pub fn headers(&self) -> Headers<'_> {
        Headers {
            req: self,
            lines: self.lines().iter(),
        }
    }

    /// The value of header `name` (compared without regard to case) as text; `""` when absent,
    /// and also when its bytes are not valid UTF-8 (read those with
    /// [`header_bytes`](Request::header_bytes)). When the header appears more than once, the
    /// first line wins. The same as [`header`](crate::http::header).
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nAccept: text/html\r\n\r\n").unwrap();
    /// assert_eq!(req.header("ACCEPT"), "text/html");
    /// assert_eq!(req.header("cookie"), "");
    /// ```
    pub fn header(&self, name: &str) -> &str {
        super::text::as_text(self.header_bytes(name))
    }

    /// The bytes of header `name`'s value as received; empty when absent.
    ///
    /// ```
    /// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nX-Name: Andr\xe9\r\n\r\n").unwrap();
    /// assert_eq!(req.header_bytes("x-name"), b"Andr\xe9");
    /// assert_eq!(req.header("x-name"), ""); // not UTF-8
    /// ```
    pub fn header_bytes(&self, name: &str) -> &[u8] {
        self.headers()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map_or(&[], |h| h.value)
    }

    /// The body: what followed the head (de-chunked when it was sent chunked).
    ///
    /// ```
    /// let req = web::http::parse_request(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi").unwrap();
    /// assert_eq!(req.body(), b"hi");
    /// ```
    pub fn body(&self) -> &[u8] {
        self.bytes(self.span(|p| p.body))
    }

    /// The body as an owned vector. A body that is most of the request's buffer, at its end
    /// (a large upload), takes the buffer itself: the body is moved to its front, no new
    /// allocation is made. A smaller one is copied, and an empty one allocates nothing: the
    /// buffer, sized for the head, goes back to the worker's pool for the next request.
    ///
    /// ```
    /// let req = web::http::parse_request(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi").unwrap();
    /// let body: Vec<u8> = req.into_body();
    /// assert_eq!(body, b"hi");
    /// ```
    pub fn into_body(mut self) -> Vec<u8> {
        let Some(parts) = self.parts.as_deref_mut() else {
            return Vec::new();
        };
        let body = parts.body;
        if body.len <= parts.bytes.capacity() / 2 {
            return parts
                .bytes
                .get(body.at..body.end())
                .unwrap_or_default()
                .to_vec();
        }
        let mut bytes = std::mem::take(&mut parts.bytes);
        if body.end() == bytes.len() {
            bytes.copy_within(body.at.., 0);
            bytes.truncate(body.len);
            bytes
        } else {
            bytes.get(body.at..body.end()).unwrap_or_default().to_vec()
        }
    }

    /// Replaces the target (path and query). Writes in place when the new one is not longer,
    /// else appends it to the buffer.
    ///
    /// ```
    /// let mut req = web::http::Request::new("GET", "/Admin/Users", vec![], "");
    /// let lower = req.path().to_ascii_lowercase();
    /// req.set_path(&lower);
    /// assert_eq!(req.path(), "/admin/users");
    /// ```
    pub fn set_path(&mut self, path: &str) {
        let span = self.replace(self.span(|p| p.target), path.as_bytes());
        self.parts_mut().target = span;
    }

    /// Replaces the method.
    ///
    /// ```
    /// let mut req = web::http::Request::new("POST", "/", vec![], "");
    /// req.set_method("PUT");
    /// assert_eq!(req.method(), "PUT");
    /// ```
    pub fn set_method(&mut self, method: &str) {
        let span = self.replace(self.span(|p| p.method), method.as_bytes());
        self.parts_mut().method = span;
    }

    fn replace(&mut self, old: Span, new: &[u8]) -> Span {
        match self
            .parts_mut()
            .bytes
            .get_mut(old.at..old.at + new.len().min(old.len))
        {
            Some(room) if new.len() <= old.len => {
                room.copy_from_slice(new);
                Span::new(old.at, new.len())
            }
            _ => self.push(new),
        }
    }

    /// Adds a header line after the existing ones (the name kept as given).
    ///
    /// ```
    /// let mut req = web::http::Request::new("GET", "/", vec![], "");
    /// req.append_header("x-user", "ada");
    /// assert_eq!(req.header("X-User"), "ada");
    /// ```
    pub fn append_header(&mut self, name: &str, value: impl AsRef<[u8]>) {
        let name = self.push(name.as_bytes());
        let value = self.push(value.as_ref());
        self.parts_mut().lines.push(Line { name, value });
    }

    /// Removes every line of header `name` (compared without regard to case); returns how many
    /// went.
    ///
    /// ```
    /// let mut req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nCookie: x=1\r\n\r\n").unwrap();
    /// assert_eq!(req.remove_header("cookie"), 1);
    /// assert_eq!(req.header("cookie"), "");
    /// ```
    pub fn remove_header(&mut self, name: &str) -> usize {
        let Some(parts) = self.parts.as_deref_mut() else {
            return 0;
        };
        let before = parts.lines.len();
        let bytes = &parts.bytes;
        parts.lines.retain(|line| {
            !bytes
                .get(line.name.at..line.name.end())
                .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
        });
        before - parts.lines.len()
    }

    /// Replaces every line of header `name` by one line with `value`.
    ///
    /// ```
    /// let mut req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-A: 2\r\n\r\n").unwrap();
    /// req.set_header("x-a", "3");
    /// assert_eq!(req.headers().filter(|h| h.name() == "x-a").count(), 1);
    /// assert_eq!(req.header("x-a"), "3");
    /// ```
    pub fn set_header(&mut self, name: &str, value: impl AsRef<[u8]>) {
        self.remove_header(name);
        self.append_header(name, value);
    }

    /// Replaces the body.
    ///
    /// ```
    /// let mut req = web::http::Request::new("POST", "/", vec![], "raw");
    /// req.set_body("cooked");
    /// assert_eq!(req.body(), b"cooked");
    /// ```
    pub fn set_body(&mut self, body: impl AsRef<[u8]>) {
        let parts = self.parts_mut();
        if parts.body.end() == parts.bytes.len() {
            parts.bytes.truncate(parts.body.at);
        }
        let span = self.push(body.as_ref());
        self.parts_mut().body = span;
    }

    /// Appends bytes to the body, which must end the buffer (true while a request is read).
    pub(crate) fn append_body(&mut self, bytes: &[u8]) {
        let parts = self.parts_mut();
        debug_assert_eq!(parts.body.end(), parts.bytes.len());
        parts.bytes.extend_from_slice(bytes);
        parts.body.len += bytes.len();
    }

    /// The buffer the body is written into, for decoders that append to a `Vec` (call
    /// [`body_written`](Request::body_written) afterwards).
    pub(crate) fn body_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.parts_mut().bytes
    }

    /// Takes note of bytes appended through [`body_buffer`](Request::body_buffer).
    pub(crate) fn body_written(&mut self) {
        let parts = self.parts_mut();
        parts.body.len = parts.bytes.len().saturating_sub(parts.body.at);
    }

    /// Heap bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.parts.as_deref().map_or(0, Parts::held_bytes)
    }
}

impl Drop for Request {
    #[inline]
    fn drop(&mut self) {
        if let Some(parts) = self.parts.take() {
            pool::give(parts);
        }
    }
}

impl Default for Request {
    /// An empty request (no method, target, headers or body); allocates nothing.
    fn default() -> Request {
        Request { parts: None }
    }
}

impl Clone for Request {
    fn clone(&self) -> Request {
        Request {
            parts: self.parts.clone(),
        }
    }
}

/// Two requests are equal when method, target, header lines (in order) and body are.
impl PartialEq for Request {
    fn eq(&self, other: &Request) -> bool {
        self.method() == other.method()
            && self.path() == other.path()
            && self.headers().eq(other.headers())
            && self.body() == other.body()
    }
}

impl Eq for Request {}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method())
            .field("path", &self.path())
            .field("headers", &self.headers().collect::<Vec<_>>())
            .field("body", &String::from_utf8_lossy(self.body()))
            .finish()
    }
}

/// The header lines of a [`Request`], in order: see [`Request::headers`].
///
/// ```
/// let req = web::http::parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n").unwrap();
/// let headers: web::http::Headers<'_> = req.headers();
/// assert_eq!(headers.len(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Headers<'a> {
    req: &'a Request,
    lines: std::slice::Iter<'a, Line>,
}

impl<'a> Headers<'a> {
    fn view(&self, line: &Line) -> HeaderRef<'a> {
        HeaderRef {
            name: self.req.text(line.name),
            value: self.req.bytes(line.value),
        }
    }
}

impl<'a> Iterator for Headers<'a> {
    type Item = HeaderRef<'a>;

    fn next(&mut self) -> Option<HeaderRef<'a>> {
        let line = *self.lines.next()?;
        Some(self.view(&line))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.lines.size_hint()
    }
}

impl DoubleEndedIterator for Headers<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let line = *self.lines.next_back()?;
        Some(self.view(&line))
    }
}

impl ExactSizeIterator for Headers<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Request {
        Request::new(
            "POST",
            "/a?b=c",
            vec![Header::new("Host", "x"), Header::new("X-A", "1")],
            "body",
        )
    }

    #[test]
    fn accessors_read_what_new_wrote() {
        let req = sample();
        assert_eq!(
            (req.method(), req.path(), req.body()),
            ("POST", "/a?b=c", &b"body"[..])
        );
        let lines: Vec<(&str, &[u8])> = req.headers().map(|h| (h.name(), h.value())).collect();
        assert_eq!(lines, [("Host", &b"x"[..]), ("X-A", &b"1"[..])]);
        assert_eq!((req.header("host"), req.header("x-b")), ("x", ""));
        assert_eq!(req.headers().next_back().map(|h| h.name()), Some("X-A"));
    }

    #[test]
    fn changes_are_seen_and_the_rest_is_intact() {
        type Change = fn(&mut Request);
        let cases: &[(&str, Change)] = &[
            ("shorter path in place", |r| r.set_path("/z")),
            ("longer path appended", |r| {
                r.set_path("/a/much/longer/path")
            }),
            ("method", |r| r.set_method("PUT")),
            ("header added", |r| r.append_header("x-new", "v")),
            ("header replaced", |r| r.set_header("x-a", "2")),
            ("header removed", |r| assert_eq!(r.remove_header("X-A"), 1)),
            ("body replaced", |r| r.set_body("other")),
        ];
        for (what, change) in cases {
            let mut req = sample();
            change(&mut req);
            let untouched = sample();
            match *what {
                "shorter path in place" => assert_eq!(req.path(), "/z"),
                "longer path appended" => assert_eq!(req.path(), "/a/much/longer/path"),
                "method" => assert_eq!(req.method(), "PUT"),
                "header added" => assert_eq!(req.header("x-new"), "v"),
                "header replaced" => assert_eq!(req.header("x-a"), "2"),
                "header removed" => assert_eq!(req.header("x-a"), ""),
                _ => assert_eq!(req.body(), b"other"),
            }
            assert_eq!(req.header("host"), "x", "{what}");
            if !what.starts_with("body") {
                assert_eq!(req.body(), untouched.body(), "{what}");
            }
        }
    }

    #[test]
    fn into_body_takes_the_buffer_when_the_body_is_most_of_it() {
        let upload = vec![b'u'; 4096];
        let req = Request::new(
            "POST",
            "/up",
            vec![Header::new("Host", "x")],
            upload.clone(),
        );
        let ptr = req.bytes(Span::new(0, 1)).as_ptr();
        let body = req.into_body();
        assert_eq!((body.as_slice(), body.as_ptr()), (&upload[..], ptr));
        let mut moved = Request::new("POST", "/up", vec![], upload.clone());
        moved.set_path("/a/path/longer/than/before");
        assert_eq!(moved.into_body(), upload);
    }

    #[test]
    fn into_body_copies_a_small_body_and_allocates_nothing_for_none() {
        let req = sample();
        let ptr = req.bytes(Span::new(0, 1)).as_ptr();
        let body = req.into_body();
        assert_eq!(body, b"body");
        assert_ne!(
            body.as_ptr(),
            ptr,
            "copied: the buffer stays with the request"
        );
        let mut moved = sample();
        moved.set_path("/a/path/longer/than/before");
        assert_eq!(moved.into_body(), b"body");
        let empty = Request::new("GET", "/", vec![Header::new("Host", "x")], "").into_body();
        assert_eq!((empty.len(), empty.capacity()), (0, 0));
    }

    #[test]
    fn equality_clone_and_debug() {
        let a = sample();
        let b = a.clone();
        assert_eq!(a, b);
        let mut c = a.clone();
        c.set_header("x-a", "2");
        assert_ne!(a, c);
        let text = format!("{a:?}");
        assert!(
            text.contains("\"POST\"") && text.contains("\"/a?b=c\""),
            "{text}"
        );
        assert_eq!(Request::default().method(), "");
    }
}
