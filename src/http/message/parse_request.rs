//! A request from raw bytes: [`parse_request`].

use super::Request;
use crate::http::chunked;
use crate::http::error::ParseError;
use crate::http::head::{Framing, HeadParser};

/// Splits raw request text into method, target (with its query), headers (names lower-cased)
/// and body.
///
/// The head goes through the same strict parser as the server, with the server's default limits
/// ([`MAX_HEAD_BYTES`](crate::http::MAX_HEAD_BYTES), [`MAX_HEADERS`](crate::http::MAX_HEADERS)),
/// so `parse_request` accepts exactly what the server accepts. The body is:
/// - with `Content-Length: n`, the `n` bytes after the head (anything after them is ignored);
/// - with `Transfer-Encoding: chunked`, the de-chunked data;
/// - otherwise everything after the head, as the specification says.
///
/// A head that is incomplete or invalid, or a body shorter than its framing announces, is an
/// error; [`ParseError::status`] says which status a server would answer it with.
///
/// ```
/// let req = web::http::parse_request(b"POST /form?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi").unwrap();
/// assert_eq!((req.method(), req.path()), ("POST", "/form?x=1"));
/// assert_eq!(req.headers().nth(1).unwrap().name(), "content-length");
/// assert_eq!(req.body(), b"hi");
/// assert_eq!(web::http::parse_request(b"GET / HTTP/1.1\r\n\r\n").unwrap_err().status(), 400);
/// ```
pub fn parse_request(raw: &[u8]) -> Result<Request, ParseError> {
    let head = HeadParser::default()
        .parse(raw)?
        .ok_or(ParseError::Incomplete)?;
    let rest = &raw[head.len..];
    let mut request = head.request;
    match head.framing {
        Framing::None => request.append_body(rest),
        Framing::Length(n) => {
            let n = usize::try_from(n).map_err(|_| ParseError::Incomplete)?;
            request.append_body(rest.get(..n).ok_or(ParseError::Incomplete)?);
        }
        Framing::Chunked => {
            let mut decoder = chunked::ChunkedDecoder::new(u64::MAX);
            decoder.decode(rest, request.body_buffer())?;
            request.body_written();
            if !decoder.is_done() {
                return Err(ParseError::Incomplete);
            }
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Header, header};

    type Case = (&'static [u8], Result<&'static [u8], ParseError>);

    #[test]
    fn parse_request_examples() {
        let req = parse_request(b"GET /a/b?c=d&e HTTP/1.1\r\nHost: x\r\nX-Mixed-Case: V\r\n\r\n")
            .unwrap();
        assert_eq!(req.method(), "GET");
        assert_eq!(req.path(), "/a/b?c=d&e");
        assert_eq!(
            req,
            Request::new(
                "GET",
                "/a/b?c=d&e",
                vec![Header::new("host", "x"), Header::new("x-mixed-case", "V")],
                ""
            )
        );
        assert!(req.body().is_empty());
    }

    #[test]
    fn parse_request_bodies() {
        let cases: &[Case] = &[
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcNEXT", Ok(b"abc")),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nab", Err(ParseError::Incomplete)),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n", Ok(b"abc")),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", Err(ParseError::Incomplete)),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", Err(ParseError::ChunkSize)),
            (b"POST / HTTP/1.1\r\nHost: a\r\n\r\nwhatever follows", Ok(b"whatever follows")),
            (b"GET / HTTP/1.1\r\nHost: a\r\n", Err(ParseError::Incomplete)),
        ];
        for (raw, want) in cases {
            assert_eq!(
                parse_request(raw).map(|r| r.into_body()),
                want.map(|b| b.to_vec()),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn trailers_are_not_merged_into_headers() {
        let raw = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Late: 1\r\n\r\n";
        let req = parse_request(raw).unwrap();
        assert_eq!(header(&req, "x-late"), "");
        assert_eq!(req.headers().len(), 2);
    }
}
