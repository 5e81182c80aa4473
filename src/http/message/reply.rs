//! Taking a raw reply apart, for the client side: [`status_of`], [`content_length`],
//! [`response_body`] and the reply-head parser they share with the client.

use super::Header;
use crate::http::chunked;
use crate::http::error::ParseError;
use crate::http::fields::{ContentLength, TransferCodings};
use crate::http::grammar::{Lines, check_field_value, parse_digits, split_field_line};
use crate::http::head::Version;

/// How the body of a reply is delimited (RFC 9112 §6.3).
///
/// ```
/// use web::http::{parse_reply_head, ReplyFraming};
/// let head = parse_reply_head(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap().unwrap();
/// assert_eq!(head.framing, ReplyFraming::None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyFraming {
    /// No body: 1xx, 204 and 304 replies (and any reply to HEAD, which the caller knows).
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding` ending in `chunked`.
    Chunked,
    /// Everything up to the end of the connection.
    UntilClose,
}

/// A complete reply head.
///
/// ```
/// let head = web::http::parse_reply_head(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").unwrap().unwrap();
/// assert_eq!((head.status, head.headers[0].name.as_str()), (404, "content-length"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyHead {
    /// The version of the status line (`HTTP/1.x` with x > 1 read as 1.1).
    pub version: Version,
    /// The status code.
    pub status: u16,
    /// The header lines, names lower-cased.
    pub headers: Vec<Header>,
    /// Bytes the head took, through the blank line.
    pub len: usize,
    /// How the body that follows is delimited.
    pub framing: ReplyFraming,
}

/// Parses a reply head from the start of `raw`: `Ok(None)` while it is incomplete.
///
/// As a client should be lenient in what it reads (RFC 9112 §2.2), a line may end in a bare LF.
/// A body whose length cannot be told — differing `Content-Length`s — is an error.
///
/// ```
/// use web::http::{parse_reply_head, ReplyFraming};
/// let head = parse_reply_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello").unwrap().unwrap();
/// assert_eq!((head.status, head.framing, head.len), (200, ReplyFraming::Length(5), 38));
/// ```
pub fn parse_reply_head(raw: &[u8]) -> Result<Option<ReplyHead>, ParseError> {
    let mut lines = Lines::terminated(raw);
    let Some(status_line) = lines.next() else {
        return Ok(None);
    };
    let (version, status) = parse_status_line(status_line).ok_or(ParseError::StatusLine)?;
    let mut headers = Vec::new();
    loop {
        let Some(line) = lines.next() else {
            return Ok(None);
        };
        if line.is_empty() {
            break;
        }
        let (name, value) = split_field_line(line)?;
        check_field_value(value)?;
        headers.push(Header {
            name: String::from_utf8_lossy(name).to_ascii_lowercase(),
            value: std::str::from_utf8(value)
                .map_err(|_| ParseError::NotUtf8)?
                .to_owned(),
        });
    }
    let framing = reply_framing(status, &headers)?;
    Ok(Some(ReplyHead {
        version,
        status,
        headers,
        len: lines.at(),
        framing,
    }))
}

/// `status-line = HTTP-version SP status-code SP [ reason-phrase ]` (RFC 9112 §4); the space
/// before an empty reason may be missing.
fn parse_status_line(line: &[u8]) -> Option<(Version, u16)> {
    match line {
        [
            b'H',
            b'T',
            b'T',
            b'P',
            b'/',
            b'1',
            b'.',
            minor,
            b' ',
            a,
            b,
            c,
            rest @ ..,
        ] if minor.is_ascii_digit() && matches!(rest.first(), None | Some(b' ')) => {
            let code = parse_digits(&[*a, *b, *c])?;
            let status = u16::try_from(code).ok().filter(|c| *c >= 100)?;
            let version = match minor {
                b'0' => Version::Http10,
                _ => Version::Http11,
            };
            Some((version, status))
        }
        _ => None,
    }
}

fn reply_framing(status: u16, headers: &[Header]) -> Result<ReplyFraming, ParseError> {
    if matches!(status, 100..=199 | 204 | 304) {
        return Ok(ReplyFraming::None);
    }
    let mut codings = TransferCodings::default();
    for h in headers.iter().filter(|h| h.name == "transfer-encoding") {
        codings.note(h.value.as_bytes());
    }
    if codings.present() {
        // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length; a final coding other than
        // chunked means the body runs to the end of the connection.
        return Ok(if codings.ends_chunked() {
            ReplyFraming::Chunked
        } else {
            ReplyFraming::UntilClose
        });
    }
    Ok(match length_of(headers)? {
        Some(n) => ReplyFraming::Length(n),
        None => ReplyFraming::UntilClose,
    })
}

/// The `Content-Length` of a header list: `None` when absent, an error when invalid or
/// conflicting.
fn length_of(headers: &[Header]) -> Result<Option<u64>, ParseError> {
    let mut length = ContentLength::default();
    for h in headers.iter().filter(|h| h.name == "content-length") {
        length.note(h.value.as_bytes());
    }
    length.get()
}

/// The status code of a raw reply; `None` when it does not start with a status line
/// `HTTP/1.x NNN ...`.
///
/// ```
/// assert_eq!(web::http::status_of(b"HTTP/1.1 404 Not Found\r\n\r\n"), Some(404));
/// assert_eq!(web::http::status_of(b"garbage"), None);
/// ```
pub fn status_of(raw: &[u8]) -> Option<u16> {
    let line = Lines::all(raw).next()?;
    parse_status_line(line).map(|(_, status)| status)
}

/// The `Content-Length` of a raw reply; `None` when the head is incomplete or malformed, or the
/// header is absent, not plain digits, or given twice with different values.
///
/// ```
/// assert_eq!(web::http::content_length(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n"), Some(12));
/// assert_eq!(web::http::content_length(b"HTTP/1.1 200 OK\r\n\r\n"), None);
/// ```
pub fn content_length(raw: &[u8]) -> Option<u64> {
    let head = parse_reply_head(raw).ok()??;
    length_of(&head.headers).ok()?
}

/// The body of a raw reply: the `Content-Length` bytes after the head, the de-chunked data of a
/// chunked reply, or everything after the head of a close-delimited one. 1xx, 204 and 304
/// replies have none.
///
/// A reply with nothing at all after a head announcing a length is taken as the reply to a HEAD
/// request and has an empty body. An incomplete or malformed reply — a head without its blank
/// line, a body cut short, a broken chunk — is an error, never a silently shortened body.
///
/// ```
/// use web::http::response_body;
/// assert_eq!(response_body(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi").unwrap(), b"hi");
/// let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
/// assert_eq!(response_body(chunked).unwrap(), b"hi");
/// assert!(response_body(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi").is_err());
/// ```
pub fn response_body(raw: &[u8]) -> Result<Vec<u8>, ParseError> {
    let head = parse_reply_head(raw)?.ok_or(ParseError::Incomplete)?;
    let rest = &raw[head.len..];
    match head.framing {
        ReplyFraming::None => Ok(Vec::new()),
        ReplyFraming::Length(_) if rest.is_empty() => Ok(Vec::new()),
        ReplyFraming::Length(n) => usize::try_from(n)
            .ok()
            .and_then(|n| rest.get(..n))
            .map(<[u8]>::to_vec)
            .ok_or(ParseError::Incomplete),
        ReplyFraming::Chunked => Ok(chunked::decode_all(rest, u64::MAX)?.0),
        ReplyFraming::UntilClose => Ok(rest.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Case = (&'static [u8], Result<&'static [u8], ParseError>);

    #[test]
    fn status_of_cases() {
        let cases: &[(&[u8], Option<u16>)] = &[
            (b"HTTP/1.1 200 OK\r\n", Some(200)),
            (b"HTTP/1.0 503 Service Unavailable\r\n\r\n", Some(503)),
            (b"HTTP/1.1 204\r\n", Some(204)),
            (b"HTTP/1.1 299 \r\n", Some(299)),
            (b"HTTP/1.1 200 OK", Some(200)),
            (b"HTTP/1.1 099 Low\r\n", None),
            (b"HTTP/1.1 2000 OK\r\n", None),
            (b"HTTP/1.1 20x OK\r\n", None),
            (b"HTTP/2 200\r\n", None),
            (b"", None),
            (b"hello", None),
        ];
        for (raw, want) in cases {
            assert_eq!(status_of(raw), *want, "{raw:?}");
        }
    }

    #[test]
    fn framing_of_replies() {
        let cases: &[(&[u8], ReplyFraming)] = &[
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n",
                ReplyFraming::Length(3),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                ReplyFraming::Chunked,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
                ReplyFraming::Chunked,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                ReplyFraming::UntilClose,
            ),
            (b"HTTP/1.0 200 OK\r\n\r\n", ReplyFraming::UntilClose),
            (
                b"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
                ReplyFraming::None,
            ),
            (b"HTTP/1.1 304 Not Modified\r\n\r\n", ReplyFraming::None),
            (b"HTTP/1.1 100 Continue\r\n\r\n", ReplyFraming::None),
            (
                b"HTTP/1.1 200 OK\nContent-Length: 1\n\n",
                ReplyFraming::Length(1),
            ),
        ];
        for (raw, want) in cases {
            let head = parse_reply_head(raw).unwrap().unwrap();
            assert_eq!((head.framing, head.len), (*want, raw.len()), "{raw:?}");
        }
        assert_eq!(
            parse_reply_head(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"),
            Ok(None)
        );
        assert_eq!(
            parse_reply_head(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
            Err(ParseError::ContentLength)
        );
        assert_eq!(
            parse_reply_head(b"SSH-2.0-OpenSSH\r\n"),
            Err(ParseError::StatusLine)
        );
    }

    #[test]
    fn content_length_cases() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", Some(42)),
            (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", Some(0)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", None),
            (b"HTTP/1.1 200 OK\r\n\r\n", None),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n", None),
        ];
        for (raw, want) in cases {
            assert_eq!(content_length(raw), *want, "{raw:?}");
        }
    }

    #[test]
    fn response_body_cases() {
        let cases: &[Case] = &[
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA",
                Ok(b"hello"),
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", Ok(b"")),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
                Err(ParseError::Incomplete),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                Ok(b"hello"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                Err(ParseError::Incomplete),
            ),
            (b"HTTP/1.0 200 OK\r\n\r\nto the end", Ok(b"to the end")),
            (b"HTTP/1.1 204 No Content\r\n\r\n", Ok(b"")),
            (b"HTTP/1.1 200 OK\r\n", Err(ParseError::Incomplete)),
            (b"nonsense", Err(ParseError::Incomplete)),
            (b"nonsense\r\n\r\n", Err(ParseError::StatusLine)),
        ];
        for (raw, want) in cases {
            assert_eq!(response_body(raw), want.map(|b| b.to_vec()), "{raw:?}");
        }
    }
}
