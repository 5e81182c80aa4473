//! One request/response exchange, I/O-free: [`RequestReader`] turns received bytes into whole
//! requests (head and body), and [`answer`] runs the handler and renders its reply. The reactor
//! strand and the blocking [`handle_conn`](crate::http::handle_conn) are two thin drivers around
//! these.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::chunked::ChunkedDecoder;
use super::error::ParseError;
use super::head::{Framing, HeadLimits, HeadParser, RequestHead};
use super::message::{Body, Request, Response};
use super::render::{has_body, write_head};

/// Bytes of body that extend a request's deadline by another header timeout: a body must
/// arrive at 1 KiB per header timeout at least (100 B/s with the defaults).
pub(crate) const MIN_BODY_PROGRESS: usize = 1024;

/// The interim reply sent before reading the body of an `Expect: 100-continue` request.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// What the bytes received so far amount to.
#[derive(Debug)]
pub(crate) enum Step {
    /// An incomplete request: keep the bytes and call again with more.
    More,
    /// The client waits for `100 Continue` before it sends the body: send it, then call again.
    Continue,
    /// A whole request, which took the first `used` bytes.
    Done {
        request: Request,
        keep_alive: bool,
        /// `Connection: upgrade` was asked for.
        upgrade: bool,
        used: usize,
    },
    /// A request that cannot be served: answer `ParseError::status` and close.
    Refuse(ParseError),
}

/// The body of a request whose head is complete.
#[derive(Debug)]
struct BodyState {
    /// The head; a chunked body is de-chunked straight into its request's buffer.
    head: RequestHead,
    chunked: Option<ChunkedDecoder>,
    /// Bytes of input the chunked decoder consumed, head included.
    at: usize,
    continued: bool,
}

/// Reads requests from a byte stream, strictly and incrementally.
///
/// Call [`step`](RequestReader::step) with the unconsumed bytes, starting at the first byte of
/// the request being read; each call's bytes extend the previous call's until it answers
/// `Done` or `Refuse`, after which the reader starts over for the next request.
#[derive(Debug)]
pub(crate) struct RequestReader {
    head: HeadParser,
    body: Option<BodyState>,
    max_body: u64,
    /// Input length when the body deadline was last extended.
    progress_mark: usize,
}

impl RequestReader {
    pub(crate) fn new(limits: HeadLimits, max_body: u64) -> RequestReader {
        RequestReader {
            head: HeadParser::new(limits),
            body: None,
            max_body,
            progress_mark: 0,
        }
    }

    /// Whether no byte of the next request has been read.
    pub(crate) fn is_fresh(&self) -> bool {
        self.head.is_fresh() && self.body.is_none()
    }

    /// Whether a body being read has brought [`MIN_BODY_PROGRESS`] more bytes since the last
    /// time this said yes (`have`: the request's bytes so far). The request deadline is extended
    /// only then, so a body trickling in a byte at a time cannot hold a connection forever.
    pub(crate) fn body_progressed(&mut self, have: usize) -> bool {
        if self.body.is_none() || have < self.progress_mark + MIN_BODY_PROGRESS {
            return false;
        }
        self.progress_mark = have;
        true
    }

    /// Whether part of a request has been read.
    pub(crate) fn is_mid_request(&self) -> bool {
        self.body.is_some()
    }

    /// Heap bytes held for the request being read.
    pub(crate) fn held_bytes(&self) -> usize {
        self.head.held_bytes() + self.body.as_ref().map_or(0, |b| b.head.request.held_bytes())
    }

    pub(crate) fn step(&mut self, buf: &[u8]) -> Step {
        let body = match &mut self.body {
            Some(body) => body,
            None => match self.head.parse(buf) {
                Ok(None) => return Step::More,
                Err(e) => return Step::Refuse(e),
                Ok(Some(head)) => {
                    if let Framing::Length(n) = head.framing {
                        if n > self.max_body {
                            return Step::Refuse(ParseError::BodyTooLarge);
                        }
                    }
                    let chunked = (head.framing == Framing::Chunked)
                        .then(|| ChunkedDecoder::new(self.max_body));
                    let at = head.len;
                    self.body.insert(BodyState {
                        head,
                        chunked,
                        at,
                        continued: false,
                    })
                }
            },
        };
        let used = match (body.head.framing, &mut body.chunked) {
            (Framing::None, _) => Some(body.head.len),
            (Framing::Length(n), _) => {
                let end = body.head.len as u64 + n;
                (buf.len() as u64 >= end).then_some(end as usize)
            }
            (Framing::Chunked, Some(decoder)) => {
                let input = buf.get(body.at..).unwrap_or_default();
                let decoded = decoder.decode(input, body.head.request.body_buffer());
                body.head.request.body_written();
                match decoded {
                    Ok(n) => body.at += n,
                    Err(e) => {
                        self.body = None;
                        return Step::Refuse(e);
                    }
                }
                decoder.is_done().then_some(body.at)
            }
            (Framing::Chunked, None) => Some(body.head.len),
        };
        match used {
            Some(used) => {
                let Some(BodyState { head, .. }) = self.body.take() else {
                    return Step::More;
                };
                let mut request = head.request;
                if let Framing::Length(_) = head.framing {
                    request.append_body(buf.get(head.len..used).unwrap_or_default());
                }
                Step::Done {
                    request,
                    keep_alive: head.keep_alive,
                    upgrade: head.upgrade,
                    used,
                }
            }
            // RFC 9110 §10.1.1: a server that has received none of the body yet sends 100.
            None if body.head.expect_continue && !body.continued && buf.len() == body.head.len => {
                body.continued = true;
                Step::Continue
            }
            None => Step::More,
        }
    }
}

/// How many bytes of empty lines (CRLF) `buf` starts with. RFC 9112 §2.2: a server ignores
/// empty lines received before a request line — typically the CRLF some clients send after a
/// body. Skipped between requests, they neither start a request (and its timer) nor stay
/// buffered.
pub(crate) fn empty_lines(buf: &[u8]) -> usize {
    buf.chunks_exact(2)
        .take_while(|pair| pair == b"\r\n")
        .count()
        * 2
}

/// Runs the handler on `request`. A handler that panics gets a 500 reply.
pub(crate) fn respond(handler: &dyn Fn(Request) -> Response, request: Request) -> Response {
    catch_unwind(AssertUnwindSafe(|| handler(request))).unwrap_or_else(|_| {
        let mut res = super::message::text_response(500, "internal server error\n");
        res.headers
            .push(super::message::Header::new("Connection", "close"));
        res
    })
}

/// The reply a refused request gets: its status, a one-line reason, and `Connection: close`.
pub(crate) fn refusal(e: ParseError) -> Response {
    super::message::text_response(e.status(), format!("{}\n", e.reason()))
}

/// Renders `res` as the reply to a request (`head_only` for HEAD: the head with the length a
/// GET would get, no body). Appends the head to `out`; the body is appended too when it is
/// shorter than `inline_limit`, else handed back to be written from its own buffer (so a large
/// body is never copied). Returns whether the connection stays open, and the body left to write.
pub(crate) fn render(
    out: &mut Vec<u8>,
    res: Response,
    keep: bool,
    head_only: bool,
    date: &[u8],
    inline_limit: usize,
) -> (bool, Body) {
    let keep = write_head(out, &res, keep, date, res.body.len() as u64);
    if head_only || !has_body(res.status) {
        return (keep, Body::default());
    }
    if res.body.len() < inline_limit {
        out.extend_from_slice(&res.body);
        return (keep, Body::default());
    }
    (keep, res.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader() -> RequestReader {
        RequestReader::new(HeadLimits::default(), 100)
    }

    #[test]
    fn bodies_by_length_chunked_and_none() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"GET / HTTP/1.1\r\nHost: a\r\n\r\nNEXT", b""),
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcNEXT", b"abc"),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nNEXT", b"abc"),
        ];
        for (raw, body) in cases {
            match reader().step(raw) {
                Step::Done { request, used, .. } => {
                    assert_eq!(
                        (request.body(), &raw[used..]),
                        (*body, &b"NEXT"[..])
                    )
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn body_limits_are_refused_with_413() {
        let raw = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n";
        assert!(matches!(
            reader().step(raw),
            Step::Refuse(ParseError::BodyTooLarge)
        ));
        let mut chunked =
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n".to_vec();
        assert!(matches!(
            reader().step(&chunked),
            Step::Refuse(ParseError::BodyTooLarge)
        ));
        chunked.truncate(chunked.len() - 4);
        chunked.extend_from_slice(b"64\r\n");
        assert!(matches!(reader().step(&chunked), Step::More));
    }

    #[test]
    fn continue_is_asked_for_once_and_only_before_the_body() {
        let raw =
            b"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nok";
        let head_len = raw.len() - 2;
        let mut r = reader();
        assert!(matches!(r.step(&raw[..head_len]), Step::Continue));
        assert!(matches!(r.step(&raw[..head_len]), Step::More));
        assert!(matches!(r.step(&raw[..head_len + 1]), Step::More));
        assert!(matches!(r.step(raw), Step::Done { .. }));
        // The body arrived with the head: no 100.
        assert!(matches!(reader().step(raw), Step::Done { .. }));
    }

    #[test]
    fn a_request_fed_byte_by_byte_completes_once() {
        let raw =
            b"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n";
        let mut r = reader();
        for end in 0..raw.len() {
            assert!(matches!(r.step(&raw[..end]), Step::More), "at {end}");
        }
        assert!(matches!(r.step(raw), Step::Done { used, .. } if used == raw.len()));
        assert!(!r.is_mid_request());
    }

    #[test]
    fn render_inlines_small_bodies_and_hands_back_large_ones() {
        let date = b"Sun, 06 Nov 1994 08:49:37 GMT";
        let mut out = Vec::new();
        let (keep, rest) = render(
            &mut out,
            super::super::message::text_response(200, "hi"),
            true,
            false,
            date,
            16,
        );
        assert!(keep && rest.is_empty() && out.ends_with(b"\r\n\r\nhi"));
        let mut out = Vec::new();
        let (_, rest) = render(
            &mut out,
            super::super::message::text_response(200, vec![b'x'; 16]),
            true,
            false,
            date,
            16,
        );
        assert_eq!(rest.len(), 16);
        assert!(out.ends_with(b"Content-Length: 16\r\nConnection: keep-alive\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"));
        let mut out = Vec::new();
        let (_, rest) = render(
            &mut out,
            super::super::message::text_response(200, "body"),
            true,
            true,
            date,
            16,
        );
        assert!(
            rest.is_empty()
                && out.ends_with(b"\r\n\r\n")
                && std::str::from_utf8(&out)
                    .unwrap()
                    .contains("Content-Length: 4\r\n")
        );
    }

    #[test]
    fn empty_lines_are_whole_crlf_pairs_only() {
        let cases: &[(&[u8], usize)] = &[
            (b"", 0),
            (b"\r\n", 2),
            (b"\r\n\r\nGET", 4),
            (b"\r", 0),
            (b"\r\n\r", 2),
            (b"\n\r\n", 0),
            (b"GET / HTTP/1.1\r\n", 0),
        ];
        for (buf, want) in cases {
            assert_eq!(empty_lines(buf), *want, "{buf:?}");
        }
    }

    #[test]
    fn a_panicking_handler_gets_a_500_that_closes() {
        let res = respond(&|_req| panic!("boom"), Request::default());
        assert_eq!(res.status, 500);
        assert!(super::super::render::wants_close(&res));
    }
}
