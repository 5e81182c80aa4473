//! Why a message was refused, and — in one place — the status code each reason is answered with:
//! [`ParseError`] for what the parsers refuse, [`Refusal`] for every answer the library gives in
//! place of the application's.

use std::fmt;

use super::message::{Response, text_response, with_header};

/// A reason the request parser, the chunked decoder or the reply parser refused its input.
///
/// [`status`](ParseError::status) maps every kind to the HTTP status a server answers it with;
/// this is the only place that mapping is written.
///
/// ```
/// use web::http::{parse_request, ParseError};
/// let err = parse_request(b"GET / HTTP/1.1\r\n\r\n").unwrap_err();
/// assert_eq!(err, ParseError::MissingHost);
/// assert_eq!(err.status(), 400);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseError {
    /// The input ended before the message did (only from whole-message functions such as
    /// [`parse_request`](crate::http::parse_request)).
    Incomplete,
    /// A line ended in a bare LF, or a CR was not followed by LF.
    LineEnding,
    /// The request line is not `method SP request-target SP HTTP-version`.
    RequestLine,
    /// The method is not a token.
    Method,
    /// The request target has a byte that may not appear in it, or a form its method does not
    /// allow (`*` outside `OPTIONS`).
    Target,
    /// The version is not `HTTP/<digit>.<digit>`.
    Version,
    /// A major version other than 1.
    UnsupportedVersion,
    /// The request line is longer than the head limit.
    UriTooLong,
    /// The head (request line and header lines) is longer than the limit.
    HeadTooLarge,
    /// More header lines than the limit.
    TooManyHeaders,
    /// A field name is empty or has a byte that is not a token character.
    HeaderName,
    /// Whitespace between a field name and its colon (RFC 9112 §5.1).
    SpaceBeforeColon,
    /// A line starting with whitespace: obsolete line folding (RFC 9112 §5.2).
    ObsFold,
    /// A field value holds a control byte (NUL, a lone CR, DEL, ...).
    HeaderValue,
    /// The head is not valid UTF-8.
    NotUtf8,
    /// An HTTP/1.1 request without `Host`.
    MissingHost,
    /// More than one `Host` line.
    DuplicateHost,
    /// A `Host` value with a byte a host and port cannot contain.
    BadHost,
    /// A `Content-Length` that is not plain digits, overflows, or disagrees with another.
    ContentLength,
    /// Both `Content-Length` and `Transfer-Encoding`.
    LengthAndTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    TransferEncodingInHttp10,
    /// A malformed `Transfer-Encoding` (empty, or `chunked` applied twice).
    TransferEncoding,
    /// A transfer coding other than `chunked`, or one after `chunked` (RFC 9112 §6.1).
    UnsupportedTransferCoding,
    /// An `Expect` other than `100-continue` (RFC 9110 §10.1.1).
    Expectation,
    /// A chunk-size line that is not hex digits with optional extensions.
    ChunkSize,
    /// A chunk size that does not fit in 64 bits.
    ChunkSizeOverflow,
    /// Chunk data not followed by CRLF.
    ChunkDataEnd,
    /// Chunk extensions longer than their limit.
    ChunkExtensionTooLong,
    /// Trailer lines longer than their limit, or malformed.
    Trailers,
    /// A body longer than the limit.
    BodyTooLarge,
    /// A reply whose status line is not `HTTP/1.x NNN reason`.
    StatusLine,
}

impl ParseError {
    /// The status code a server answers this refusal with.
    ///
    /// ```
    /// use web::http::ParseError;
    /// assert_eq!(ParseError::UnsupportedVersion.status(), 505);
    /// assert_eq!(ParseError::HeadTooLarge.status(), 431);
    /// ```
    pub fn status(self) -> u16 {
        use ParseError::*;
        match self {
            UriTooLong => 414,
            HeadTooLarge | TooManyHeaders => 431,
            UnsupportedTransferCoding => 501,
            UnsupportedVersion => 505,
            Expectation => 417,
            BodyTooLarge => 413,
            Incomplete
            | LineEnding
            | RequestLine
            | Method
            | Target
            | Version
            | HeaderName
            | SpaceBeforeColon
            | ObsFold
            | HeaderValue
            | NotUtf8
            | MissingHost
            | DuplicateHost
            | BadHost
            | ContentLength
            | LengthAndTransferEncoding
            | TransferEncodingInHttp10
            | TransferEncoding
            | ChunkSize
            | ChunkSizeOverflow
            | ChunkDataEnd
            | ChunkExtensionTooLong
            | Trailers
            | StatusLine => 400,
        }
    }

    /// A short sentence saying what was wrong, used as the body of the error reply.
    ///
    /// ```
    /// assert_eq!(web::http::ParseError::MissingHost.reason(), "HTTP/1.1 request without Host");
    /// ```
    pub fn reason(self) -> &'static str {
        use ParseError::*;
        match self {
            Incomplete => "the message ended early",
            LineEnding => "a line does not end in CRLF",
            RequestLine => "malformed request line",
            Method => "malformed method",
            Target => "malformed request target",
            Version => "malformed HTTP version",
            UnsupportedVersion => "only HTTP/1.x is supported",
            UriTooLong => "request target too long",
            HeadTooLarge => "request head too large",
            TooManyHeaders => "too many header lines",
            HeaderName => "malformed header name",
            SpaceBeforeColon => "whitespace between header name and colon",
            ObsFold => "obsolete line folding",
            HeaderValue => "control character in a header value",
            NotUtf8 => "request head is not valid UTF-8",
            MissingHost => "HTTP/1.1 request without Host",
            DuplicateHost => "more than one Host header",
            BadHost => "malformed Host header",
            ContentLength => "invalid Content-Length",
            LengthAndTransferEncoding => "both Content-Length and Transfer-Encoding",
            TransferEncodingInHttp10 => "Transfer-Encoding in an HTTP/1.0 request",
            TransferEncoding => "malformed Transfer-Encoding",
            UnsupportedTransferCoding => "unsupported transfer coding",
            Expectation => "unsupported expectation",
            ChunkSize => "malformed chunk size",
            ChunkSizeOverflow => "chunk size too large",
            ChunkDataEnd => "chunk data not followed by CRLF",
            ChunkExtensionTooLong => "chunk extensions too long",
            Trailers => "malformed or too large trailers",
            BodyTooLarge => "body too large",
            StatusLine => "malformed status line",
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason(), self.status())
    }
}

impl std::error::Error for ParseError {}

impl From<ParseError> for std::io::Error {
    fn from(e: ParseError) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    }
}

/// Every answer the library itself gives instead of the application's: the table of their
/// statuses and reasons. (A rate limit's 429 is the application's middleware, configured
/// there.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal<'a> {
    /// A request that could not be read: the status [`ParseError::status`] gives.
    Malformed(ParseError),
    /// 408: a request not whole within the header timeout.
    Timeout,
    /// 500: the handler, or an application's accept callback, panicked.
    Panicked,
    /// 500: a deferred request's `Reply` was dropped unanswered.
    ReplyDropped,
    /// 503: a deferred request's reply did not come within the reply timeout.
    ReplyLate,
    /// 503: an upgrade to a WebSocket route of a server not serving WebSocket (no workers).
    NoWebSocket,
    /// 503: a request for an event-stream route of a server not serving them (no workers).
    NoEventStreams,
    /// 400: an upgrade request that breaks RFC 6455 §4.2.1, with what is wrong.
    BadUpgrade(&'a str),
    /// 426: an upgrade for a WebSocket version other than 13 (RFC 9110 §15.5.22: the answer
    /// names the protocol, and RFC 6455 §4.4 the versions served).
    WebSocketVersion,
}

impl Refusal<'_> {
    /// The status code.
    pub(crate) fn status(self) -> u16 {
        match self {
            Refusal::Malformed(e) => e.status(),
            Refusal::Timeout => 408,
            Refusal::Panicked | Refusal::ReplyDropped => 500,
            Refusal::ReplyLate | Refusal::NoWebSocket | Refusal::NoEventStreams => 503,
            Refusal::BadUpgrade(_) => 400,
            Refusal::WebSocketVersion => 426,
        }
    }

    /// The response: the status, a one-line `text/plain` reason, and the headers the status
    /// calls for.
    pub(crate) fn response(self) -> Response {
        let reason = match self {
            Refusal::Malformed(e) => e.reason(),
            Refusal::Timeout => "request timeout",
            Refusal::Panicked => "internal server error",
            Refusal::ReplyDropped => "the reply was dropped unanswered",
            Refusal::ReplyLate => "the reply did not come in time",
            Refusal::NoWebSocket => "WebSocket is not served here",
            Refusal::NoEventStreams => "event streams are not served here",
            Refusal::BadUpgrade(reason) => reason,
            Refusal::WebSocketVersion => "only WebSocket version 13 is supported",
        };
        let response = text_response(self.status(), format!("{reason}\n"));
        match self {
            Refusal::WebSocketVersion => with_header(
                with_header(response, "Upgrade", "websocket"),
                "Sec-WebSocket-Version",
                "13",
            ),
            _ => response,
        }
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;

    /// (refusal, status, body, header lines)
    type Case = (
        Refusal<'static>,
        u16,
        &'static str,
        &'static [(&'static str, &'static str)],
    );

    #[test]
    fn each_refusal_has_its_status_reason_and_headers() {
        let cases: [Case; 9] = [
            (
                Refusal::Malformed(ParseError::MissingHost),
                400,
                "HTTP/1.1 request without Host\n",
                &[],
            ),
            (Refusal::Timeout, 408, "request timeout\n", &[]),
            (Refusal::Panicked, 500, "internal server error\n", &[]),
            (
                Refusal::ReplyDropped,
                500,
                "the reply was dropped unanswered\n",
                &[],
            ),
            (
                Refusal::ReplyLate,
                503,
                "the reply did not come in time\n",
                &[],
            ),
            (
                Refusal::NoWebSocket,
                503,
                "WebSocket is not served here\n",
                &[],
            ),
            (
                Refusal::NoEventStreams,
                503,
                "event streams are not served here\n",
                &[],
            ),
            (Refusal::BadUpgrade("no key"), 400, "no key\n", &[]),
            (
                Refusal::WebSocketVersion,
                426,
                "only WebSocket version 13 is supported\n",
                &[("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13")],
            ),
        ];
        for (refusal, status, body, headers) in cases {
            let res = refusal.response();
            assert_eq!(
                (res.status, res.body.as_slice()),
                (status, body.as_bytes()),
                "{refusal:?}"
            );
            let got: Vec<(&str, &str)> = res
                .headers
                .iter()
                .map(|h| (h.name.as_str(), h.value.as_str()))
                .collect();
            assert_eq!(got, headers, "{refusal:?}");
        }
    }
}
