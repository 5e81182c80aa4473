//! The three message types of the specification (`Header`, `Request`, `Response`) and the
//! response builders.

/// One header line: a name and a value.
///
/// Headers of a received request have their names folded to lower case; values are as received,
/// with the optional whitespace around them trimmed.
///
/// ```
/// use web::http::Header;
/// let h = Header::new("X-Trace", "abc");
/// assert_eq!((h.name.as_str(), h.value.as_str()), ("X-Trace", "abc"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Header {
    /// The field name (lower case for headers received in a request).
    pub name: String,
    /// The field value.
    pub value: String,
}

impl Header {
    /// The specification's `Header(name, value)`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// A request as the handler sees it.
///
/// ```
/// use web::http::{Header, Request};
/// let req = Request::new("GET", "/a?b=c", vec![Header::new("host", "x")], "");
/// assert_eq!(req.path, "/a?b=c");
/// assert!(req.body.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// The request method token, as sent (methods are case-sensitive).
    pub method: String,
    /// The request target exactly as sent, query string included.
    pub path: String,
    /// The header lines in the order received, names lower-cased.
    pub headers: Vec<Header>,
    /// The body, de-chunked when it was sent chunked.
    pub body: Vec<u8>,
}

impl Request {
    /// The specification's `Request(method, path, headers, body)`.
    pub fn new(
        method: impl Into<String>,
        path: impl Into<String>,
        headers: Vec<Header>,
        body: impl Into<Vec<u8>>,
    ) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            headers,
            body: body.into(),
        }
    }
}

/// A response as a handler returns it.
///
/// `Content-Type`, `Content-Length`, `Connection` and `Date` are written by the library (see
/// [`response_bytes`](crate::http::response_bytes)); `headers` holds the extra lines.
///
/// ```
/// use web::http::Response;
/// let res = Response::new(201, "text/plain", vec![], "made");
/// assert_eq!(res.status, 201);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Sent as the `Content-Type` header.
    pub content_type: String,
    /// Extra header lines, sent after the standard ones in this order.
    pub headers: Vec<Header>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The specification's `Response(status, content_type, headers, body)`.
    pub fn new(
        status: u16,
        content_type: impl Into<String>,
        headers: Vec<Header>,
        body: impl Into<Vec<u8>>,
    ) -> Response {
        Response {
            status,
            content_type: content_type.into(),
            headers,
            body: body.into(),
        }
    }
}

/// Content type set by [`text_response`].
pub const TEXT: &str = "text/plain";
/// Content type set by [`html_response`].
pub const HTML: &str = "text/html; charset=utf-8";
/// Content type set by [`json_response`].
pub const JSON: &str = "application/json";

/// A `text/plain` response with no extra headers.
///
/// ```
/// let res = web::http::text_response(200, "hi");
/// assert_eq!(res.content_type, "text/plain");
/// assert!(res.headers.is_empty());
/// ```
pub fn text_response(status: u16, body: impl Into<Vec<u8>>) -> Response {
    Response::new(status, TEXT, Vec::new(), body)
}

/// A `text/html; charset=utf-8` response with no extra headers.
///
/// ```
/// let res = web::http::html_response(200, "<p>hi</p>");
/// assert_eq!(res.content_type, "text/html; charset=utf-8");
/// ```
pub fn html_response(status: u16, body: impl Into<Vec<u8>>) -> Response {
    Response::new(status, HTML, Vec::new(), body)
}

/// An `application/json` response with no extra headers.
///
/// ```
/// let res = web::http::json_response(200, r#"{"ok":true}"#);
/// assert_eq!(res.content_type, "application/json");
/// ```
pub fn json_response(status: u16, body: impl Into<Vec<u8>>) -> Response {
    Response::new(status, JSON, Vec::new(), body)
}

/// The response with one more header line, appended after the existing ones (so lines are sent
/// in the order they were added).
///
/// ```
/// use web::http::{text_response, with_header};
/// let res = with_header(text_response(200, "x"), "Cache-Control", "no-store");
/// assert_eq!(res.headers[0].name, "Cache-Control");
/// ```
pub fn with_header(
    mut res: Response,
    name: impl Into<String>,
    value: impl Into<String>,
) -> Response {
    res.headers.push(Header::new(name, value));
    res
}

/// The response with one more `Set-Cookie` header whose value is `<name>=<value>` followed
/// directly by `rest` (cookie attributes written as a browser expects them, starting with `; `).
/// Several cookies may be set on one response; each gets its own line.
///
/// ```
/// use web::http::{set_cookie, text_response};
/// let res = set_cookie(text_response(200, ""), "sid", "42", "; Path=/; HttpOnly");
/// let res = set_cookie(res, "theme", "dark", "");
/// assert_eq!(res.headers[0].value, "sid=42; Path=/; HttpOnly");
/// assert_eq!(res.headers[1].value, "theme=dark");
/// ```
pub fn set_cookie(res: Response, name: &str, value: &str, rest: &str) -> Response {
    let mut line = String::with_capacity(name.len() + 1 + value.len() + rest.len());
    line.push_str(name);
    line.push('=');
    line.push_str(value);
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
    fn with_header_appends_in_order() {
        let res = with_header(with_header(text_response(200, ""), "A", "1"), "B", "2");
        assert_eq!(
            res.headers,
            vec![Header::new("A", "1"), Header::new("B", "2")]
        );
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
