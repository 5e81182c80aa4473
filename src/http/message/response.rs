//! [`Response`], its [`Body`], and the response builders.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use super::header::{Header, InvalidHeader};

/// A response body: bytes either borrowed for the whole program (`&'static`, so
/// `text_response(200, "Hello")` allocates nothing) or owned.
///
/// Made from `&'static str`, `&'static [u8]`, byte-string literals, `String` and `Vec<u8>`;
/// reads as `&[u8]` (it derefs to a slice) and compares with all of those.
///
/// ```
/// use web::http::Body;
/// let fixed: Body = "Hello".into();         // borrowed: no allocation
/// let made: Body = format!("{}!", 42).into(); // owned
/// assert_eq!(fixed, "Hello");
/// assert_eq!(made.len(), 3);
/// assert_eq!(made.into_vec(), b"42!");
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Body(Cow<'static, [u8]>);

impl Body {
    /// The bytes.
    ///
    /// ```
    /// let body: web::http::Body = "hi".into();
    /// assert_eq!(body.as_slice(), b"hi");
    /// ```
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    /// The bytes as an owned vector (copied only when borrowed).
    ///
    /// ```
    /// let body: web::http::Body = vec![1u8, 2].into();
    /// assert_eq!(body.into_vec(), [1, 2]);
    /// ```
    pub fn into_vec(self) -> Vec<u8> {
        self.0.into_owned()
    }

    /// The bytes, borrowed or owned as they are.
    ///
    /// ```
    /// let body: web::http::Body = "hi".into();
    /// assert!(matches!(body.into_cow(), std::borrow::Cow::Borrowed(_)));
    /// ```
    pub fn into_cow(self) -> Cow<'static, [u8]> {
        self.0
    }

    /// Heap bytes held (none for a `'static` body).
    pub(crate) fn held_bytes(&self) -> usize {
        match &self.0 {
            Cow::Borrowed(_) => 0,
            Cow::Owned(v) => v.capacity(),
        }
    }
}

impl Deref for Body {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&String::from_utf8_lossy(&self.0), f)
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Body {
        Body(Cow::Borrowed(s.as_bytes()))
    }
}

impl From<&'static [u8]> for Body {
    fn from(b: &'static [u8]) -> Body {
        Body(Cow::Borrowed(b))
    }
}

impl<const N: usize> From<&'static [u8; N]> for Body {
    fn from(b: &'static [u8; N]) -> Body {
        Body(Cow::Borrowed(b))
    }
}

impl From<String> for Body {
    fn from(s: String) -> Body {
        Body(Cow::Owned(s.into_bytes()))
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Body(Cow::Owned(v))
    }
}

impl From<Cow<'static, [u8]>> for Body {
    fn from(c: Cow<'static, [u8]>) -> Body {
        Body(c)
    }
}

impl From<Cow<'static, str>> for Body {
    fn from(c: Cow<'static, str>) -> Body {
        match c {
            Cow::Borrowed(s) => s.into(),
            Cow::Owned(s) => s.into(),
        }
    }
}

impl PartialEq<[u8]> for Body {
    fn eq(&self, other: &[u8]) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&[u8]> for Body {
    fn eq(&self, other: &&[u8]) -> bool {
        *self.0 == **other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Body {
    fn eq(&self, other: &&[u8; N]) -> bool {
        *self.0 == other[..]
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Body {
    fn eq(&self, other: &[u8; N]) -> bool {
        *self.0 == other[..]
    }
}

impl PartialEq<Vec<u8>> for Body {
    fn eq(&self, other: &Vec<u8>) -> bool {
        *self.0 == other[..]
    }
}

impl PartialEq<str> for Body {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other.as_bytes()
    }
}

impl PartialEq<&str> for Body {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == *other.as_bytes()
    }
}

/// A response as a handler returns it: the specification's `Response(status, content_type,
/// headers, body)`.
///
/// `Content-Type`, `Content-Length`, `Connection` and `Date` are written by the library (see
/// [`response_bytes`](crate::http::response_bytes)); `headers` holds the extra lines. The content
/// type and the body may be `'static` (no allocation) or owned.
///
/// ```
/// use web::http::Response;
/// let res = Response::new(201, "text/plain", vec![], "made");
/// assert_eq!(res.status, 201);
/// assert_eq!(res.body, "made");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Sent as the `Content-Type` header (left out when empty).
    pub content_type: Cow<'static, str>,
    /// Extra header lines, sent after the standard ones in this order.
    pub headers: Vec<Header>,
    /// The body.
    pub body: Body,
}

impl Response {
    /// The specification's `Response(status, content_type, headers, body)`.
    ///
    /// ```
    /// let res = web::http::Response::new(202, "application/json", vec![], r#"{"queued":true}"#);
    /// assert_eq!(res.status, 202);
    /// ```
    pub fn new(
        status: u16,
        content_type: impl Into<Cow<'static, str>>,
        headers: Vec<Header>,
        body: impl Into<Body>,
    ) -> Response {
        Response {
            status,
            content_type: content_type.into(),
            headers,
            body: body.into(),
        }
    }

    /// The value of extra header `name` (compared without regard to case; the first line
    /// wins); `""` when absent.
    ///
    /// ```
    /// let res = web::http::with_header(web::http::text_response(200, ""), "Cache-Control", "no-store");
    /// assert_eq!(res.header("cache-control"), "no-store");
    /// ```
    pub fn header(&self, name: &str) -> &str {
        crate::http::header_in(&self.headers, name)
    }

    /// This response with one more header line, appended after the existing ones (so lines
    /// are sent in the order they were added). A name that is not a token is left out when the
    /// response is sent, and control bytes of a value are sent as spaces; see
    /// [`try_with_header`](Response::try_with_header) to refuse such a line at once. The
    /// specification's free function [`with_header`] is the same.
    ///
    /// ```
    /// use web::http::text_response;
    /// let res = text_response(200, "x").with_header("Cache-Control", "no-store");
    /// assert_eq!(res.header("cache-control"), "no-store");
    /// ```
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Response {
        self.headers.push(Header::new(name, value));
        self
    }

    /// [`with_header`](Response::with_header), the line checked first
    /// ([`Header::try_new`]): a name that is not a token or a value with a control byte is
    /// refused with the reason.
    ///
    /// ```
    /// use web::http::{text_response, InvalidHeader};
    /// let res = text_response(200, "x").try_with_header("Location", "/a\r\nX-Evil: 1");
    /// assert_eq!(res.unwrap_err(), InvalidHeader::Value);
    /// ```
    pub fn try_with_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Response, InvalidHeader> {
        self.headers.push(Header::try_new(name, value)?);
        Ok(self)
    }
}

/// Content type set by [`text_response`].
pub const TEXT: &str = "text/plain";
/// Content type set by [`html_response`].
pub const HTML: &str = "text/html; charset=utf-8";
/// Content type set by [`json_response`].
pub const JSON: &str = "application/json";

/// A `text/plain` response with no extra headers. A `'static` body is not copied.
///
/// ```
/// let res = web::http::text_response(200, "hi");
/// assert_eq!(res.content_type, "text/plain");
/// assert!(res.headers.is_empty());
/// let made = web::http::text_response(200, format!("{} items", 3));
/// assert_eq!(made.body, "3 items");
/// ```
pub fn text_response(status: u16, body: impl Into<Body>) -> Response {
    Response::new(status, TEXT, Vec::new(), body)
}

/// A `text/html; charset=utf-8` response with no extra headers.
///
/// ```
/// let res = web::http::html_response(200, "<p>hi</p>");
/// assert_eq!(res.content_type, "text/html; charset=utf-8");
/// ```
pub fn html_response(status: u16, body: impl Into<Body>) -> Response {
    Response::new(status, HTML, Vec::new(), body)
}

/// An `application/json` response with no extra headers.
///
/// ```
/// let res = web::http::json_response(200, r#"{"ok":true}"#);
/// assert_eq!(res.content_type, "application/json");
/// ```
pub fn json_response(status: u16, body: impl Into<Body>) -> Response {
    Response::new(status, JSON, Vec::new(), body)
}

/// The response with one more header line, appended after the existing ones (so lines are sent
/// in the order they were added): [`Response::with_header`] as the specification's function.
///
/// ```
/// use web::http::{text_response, with_header};
/// let res = with_header(text_response(200, "x"), "Cache-Control", "no-store");
/// assert_eq!(res.headers[0].name, "Cache-Control");
/// ```
pub fn with_header(res: Response, name: impl Into<String>, value: impl Into<String>) -> Response {
    res.with_header(name, value)
}

/// [`with_header`], the line checked first ([`Header::try_new`]): a name that is not a token
/// or a value with a control byte is refused with the reason, instead of being left out or
/// blanked when the response is rendered.
///
/// ```
/// use web::http::{text_response, try_with_header, InvalidHeader};
/// let res = try_with_header(text_response(200, "x"), "Cache-Control", "no-store").unwrap();
/// assert_eq!(res.headers[0].value, "no-store");
/// let refused = try_with_header(text_response(200, "x"), "Location", "/a\r\nX-Evil: 1");
/// assert_eq!(refused.unwrap_err(), InvalidHeader::Value);
/// ```
pub fn try_with_header(
    res: Response,
    name: impl Into<String>,
    value: impl Into<String>,
) -> Result<Response, InvalidHeader> {
    res.try_with_header(name, value)
}

/// The response with one more `Set-Cookie` header whose value is `<name>=<value>` followed
/// directly by `rest` (cookie attributes written as a browser expects them, starting with `; `).
/// Several cookies may be set on one response; each gets its own line.
///
/// The name and the value cannot add attributes or end the pair: each byte RFC 6265 §4.1.1 does
/// not allow there — controls, space, `"`, `,`, `;`, `\`, non-ASCII, and `%` itself — is written
/// as `%XX`, so ordinary values are sent unchanged and
/// [`cookie_decoded`](crate::http::cookie_decoded) reads back exactly what was set. `rest` is
/// the program's own attribute text and is sent as given (control bytes become spaces, as in
/// every header).
///
/// ```
/// use web::http::{set_cookie, text_response};
/// let res = set_cookie(text_response(200, ""), "sid", "42", "; Path=/; HttpOnly");
/// let res = set_cookie(res, "theme", "dark", "");
/// let res = set_cookie(res, "note", "x; Domain=evil.example", "");
/// assert_eq!(res.headers[0].value, "sid=42; Path=/; HttpOnly");
/// assert_eq!(res.headers[1].value, "theme=dark");
/// assert_eq!(res.headers[2].value, "note=x%3B%20Domain=evil.example");
/// ```
pub fn set_cookie(res: Response, name: &str, value: &str, rest: &str) -> Response {
    let name = crate::http::cookie::encode_cookie_name(name);
    let value = crate::http::cookie::encode_cookie_value(value);
    let mut line = String::with_capacity(name.len() + 1 + value.len() + rest.len());
    line.push_str(&name);
    line.push('=');
    line.push_str(&value);
    line.push_str(rest);
    with_header(res, "Set-Cookie", line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_set_the_specified_content_types_and_no_headers() {
        let cases: [(Response, &str); 3] = [
            (text_response(200, "a"), "text/plain"),
            (html_response(404, "b"), "text/html; charset=utf-8"),
            (json_response(500, "{}"), "application/json"),
        ];
        for (res, ct) in cases {
            assert_eq!(res.content_type, ct);
            assert!(res.headers.is_empty());
        }
        assert_eq!(html_response(404, "b").status, 404);
        assert_eq!(json_response(500, "{}").body, b"{}");
    }

    #[test]
    fn static_bodies_and_content_types_are_borrowed() {
        let res = text_response(200, "Hello, World!");
        assert!(matches!(res.content_type, Cow::Borrowed(_)));
        assert!(matches!(res.body.into_cow(), Cow::Borrowed(_)));
        let owned = text_response(200, String::from("x"));
        assert!(matches!(owned.body.into_cow(), Cow::Owned(_)));
    }

    #[test]
    fn with_header_appends_in_order() {
        let res = with_header(with_header(text_response(200, ""), "A", "1"), "B", "2");
        assert_eq!(
            res.headers,
            vec![Header::new("A", "1"), Header::new("B", "2")]
        );
        assert_eq!(res.header("b"), "2");
    }

    #[test]
    fn set_cookie_writes_name_value_then_rest_and_allows_several() {
        let res = set_cookie(text_response(200, ""), "a", "1", "; Max-Age=60");
        let res = set_cookie(res, "b", "2", "; Secure");
        assert_eq!(
            res.headers,
            vec![
                Header::new("Set-Cookie", "a=1; Max-Age=60"),
                Header::new("Set-Cookie", "b=2; Secure"),
            ]
        );
    }
}
