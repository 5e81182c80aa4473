//! Reading requests from a byte stream, I/O-free: [`RequestReader`] turns received bytes into
//! whole requests (head and body). The server's dispatch (`dispatch.rs`) drives it
//! for both the reactor strand and the blocking [`handle_conn`](crate::http::handle_conn).

use crate::http::{
    ChunkedDecoder, Framing, HeadLimits, HeadParser, ParseError, ReplyRules, Request, RequestHead,
    Version,
};

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
        version: Version,
        /// What the request allows its reply.
        rules: ReplyRules,
        used: usize,
    },
    /// A request that cannot be served: answer `ParseError::status` and close. `head_only`
    /// when it was a HEAD request (its refusal then carries no body, RFC 9110 §9.3.2).
    Refuse { error: ParseError, head_only: bool },
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
    #[inline]
    pub(crate) fn new(limits: HeadLimits, max_body: u64) -> RequestReader {
        RequestReader {
            head: HeadParser::new(limits),
            body: None,
            max_body,
            progress_mark: 0,
        }
    }

    /// Whether no byte of the next request has been read.
    #[inline]
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

    /// Whether the request being read is a HEAD request (as far as is known: its request line
    /// may not have arrived yet).
    pub(crate) fn is_head(&self) -> bool {
        match &self.body {
            Some(body) => body.head.request.method_is("HEAD"),
            None => self.head.is_head(),
        }
    }

    /// Heap bytes held for the request being read.
    pub(crate) fn held_bytes(&self) -> usize {
        self.head.held_bytes()
            + self
                .body
                .as_ref()
                .map_or(0, |b| b.head.request.held_bytes())
    }

    #[inline]
    pub(crate) fn step(&mut self, buf: &[u8]) -> Step {
        let body = match &mut self.body {
            Some(body) => body,
            None => match self.head.parse(buf) {
                Ok(None) => return Step::More,
                Err(error) => {
                    return Step::Refuse {
                        error,
                        head_only: self.head.refused_head(),
                    };
                }
                Ok(Some(head)) => {
                    if let Framing::Length(n) = head.framing {
                        // The body is held in memory with its head: a length past the limit,
                        // or one that cannot be added to the head's in memory, is refused
                        // before any of it is read.
                        if n > self.max_body || request_end(head.len, n).is_none() {
                            return Step::Refuse {
                                error: ParseError::BodyTooLarge,
                                head_only: head.request.method_is("HEAD"),
                            };
                        }
                    }
                    if head.framing == Framing::None {
                        // No body: done at once, without keeping any state.
                        return Step::Done {
                            used: head.len,
                            version: head.version,
                            rules: ReplyRules::of(&head),
                            request: head.request,
                        };
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
                request_end(body.head.len, n).filter(|&end| buf.len() >= end)
            }
            (Framing::Chunked, Some(decoder)) => {
                let input = buf.get(body.at..).unwrap_or_default();
                let decoded = decoder.decode(input, body.head.request.body_buffer());
                body.head.request.body_written();
                match decoded {
                    Ok(n) => body.at += n,
                    Err(error) => {
                        let head_only = body.head.request.method_is("HEAD");
                        self.body = None;
                        return Step::Refuse { error, head_only };
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
                let rules = ReplyRules::of(&head);
                let mut request = head.request;
                if let Framing::Length(_) = head.framing {
                    request.append_body(buf.get(head.len..used).unwrap_or_default());
                }
                Step::Done {
                    request,
                    version: head.version,
                    rules,
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

/// Where a request whose head took `head_len` bytes and whose body is `body_len` bytes ends in
/// the input, when that fits in memory (`None` for a length no buffer can hold: the peer's
/// number never wraps into a short body).
fn request_end(head_len: usize, body_len: u64) -> Option<usize> {
    let end = u64::try_from(head_len).ok()?.checked_add(body_len)?;
    usize::try_from(end)
        .ok()
        .filter(|&end| end <= isize::MAX as usize)
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
                    assert_eq!((request.body(), &raw[used..]), (*body, &b"NEXT"[..]))
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
            Step::Refuse {
                error: ParseError::BodyTooLarge,
                ..
            }
        ));
        let mut chunked =
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n".to_vec();
        assert!(matches!(
            reader().step(&chunked),
            Step::Refuse {
                error: ParseError::BodyTooLarge,
                ..
            }
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
    fn a_length_that_cannot_be_held_is_refused_whatever_the_body_limit() {
        for n in [u64::MAX, u64::MAX - 1, 1 << 63] {
            let raw = format!(
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {n}\r\n\r\nGET / HTTP/1.1\r\n\r\n"
            );
            let mut r = RequestReader::new(HeadLimits::default(), u64::MAX);
            assert!(
                matches!(
                    r.step(raw.as_bytes()),
                    Step::Refuse {
                        error: ParseError::BodyTooLarge,
                        ..
                    }
                ),
                "{n}"
            );
        }
        assert_eq!(request_end(10, 5), Some(15));
        assert_eq!(request_end(usize::MAX, 1), None);
        assert_eq!(request_end(1, isize::MAX as u64), None);
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
}
