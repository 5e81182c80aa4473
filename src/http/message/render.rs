//! Rendering a response on the wire (RFC 9112 §4, §6).

use super::{Body, Header, Response};
use crate::http::date;
use crate::http::fields::{frames_body, has_token};
use crate::http::grammar::{is_field_byte, is_token};
use crate::http::status::status_text;
use crate::http::stream_framing::StreamFraming;
use std::borrow::Cow;
use std::cell::RefCell;
use std::time::Instant;

/// Renders a reply: the status line `HTTP/1.1 <status> <reason>`, then `Content-Type`,
/// `Content-Length` (the body length in bytes), `Connection: close` (or `keep-alive` when
/// `keep` is true), `Date`, then the response's own headers in their order, a blank line and the
/// body. Every line ends CRLF.
///
/// What a handler cannot break:
/// - **No header injection.** A header whose name is not a token (empty, or holding CR, LF, NUL,
///   a space, a colon, ...) is left out. In a value — and in `content_type` — each CR, LF, NUL
///   and other control byte except HTAB is written as a space
///   ([`try_with_header`](crate::http::try_with_header) refuses such a line where it is made).
/// - **Framing belongs to the library.** The response's own `Content-Length`,
///   `Transfer-Encoding`, `Connection` and `Date` lines are not written (the library writes
///   these); a `Connection: close` among them turns the Connection line to `close` even when
///   `keep` is true. A `Content-Type` among them replaces `content_type`.
/// - **Bodiless statuses.** 204 and 304 replies get neither `Content-Length` nor a body
///   (RFC 9110 §8.6, RFC 9112 §6.3); an empty `content_type` leaves out the `Content-Type` line.
/// - A status outside 200–999 is sent as 500: a 1xx is an interim reply, which a client would
///   take as a promise of the final one (the server sends `100 Continue` itself).
///
/// ```
/// use web::http::{response_bytes, text_response};
/// let raw = response_bytes(&text_response(200, "hi"), false);
/// let text = String::from_utf8(raw).unwrap();
/// assert!(text.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\nDate: "));
/// assert!(text.ends_with(" GMT\r\n\r\nhi"));
/// ```
pub fn response_bytes(res: &Response, keep: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + res.body.len());
    date::with_date(Instant::now(), |date| {
        write_head(&mut out, res, keep, date, res.body.len() as u64)
    });
    if has_body(res.status) {
        out.extend_from_slice(&res.body);
    }
    out
}

/// Renders `res` as the reply to a request — the path every reply of the server takes (the
/// reactor's strands, [`handle_conn`](crate::http::handle_conn), refusals and timeouts).
///
/// `head_only` for a reply to HEAD: the head with the length a GET would get, no body
/// (RFC 9110 §9.3.2; refusals of a HEAD request included). Appends the head to `out`; the body
/// too when it is shorter than `inline_limit`, else it is handed back to be written from its own
/// buffer (a large body is never copied). `now` is the caller's clock reading: the Date is
/// formatted at most once a second per thread. Returns whether the connection stays open, and
/// the body left to write.
#[inline]
pub(crate) fn render(
    out: &mut Vec<u8>,
    mut res: Response,
    keep: bool,
    head_only: bool,
    now: Instant,
    inline_limit: usize,
) -> (bool, Body) {
    render_in_place(out, &mut res, keep, head_only, now, inline_limit)
}

/// [`render`] of a response by reference (a large body is taken out of it): the server renders
/// a handler's reply where it holds it, without moving it into an argument first (a copy of a
/// struct just written costs store-forwarding stalls on the busy path).
#[inline]
pub(crate) fn render_in_place(
    out: &mut Vec<u8>,
    res: &mut Response,
    keep: bool,
    head_only: bool,
    now: Instant,
    inline_limit: usize,
) -> (bool, Body) {
    let keep = write_head_cached(out, res, keep, now, res.body.len() as u64);
    if head_only || !has_body(res.status) {
        return (keep, Body::default());
    }
    if res.body.len() < inline_limit {
        out.extend_from_slice(&res.body);
        return (keep, Body::default());
    }
    (keep, std::mem::take(&mut res.body))
}

/// What makes two heads the same bytes, for a response with no extra headers and a `'static`
/// content type (compared by address: `'static` data never changes).
#[derive(Clone, Copy, PartialEq, Eq)]
struct HeadKey {
    status: u16,
    keep: bool,
    body_len: u64,
    content_type: (usize, usize),
}

impl HeadKey {
    fn of(res: &Response, keep: bool, body_len: u64) -> Option<HeadKey> {
        match (&res.content_type, res.headers.is_empty()) {
            (Cow::Borrowed(ct), true) => Some(HeadKey {
                status: res.status,
                keep,
                body_len,
                content_type: (ct.as_ptr() as usize, ct.len()),
            }),
            _ => None,
        }
    }
}

/// The last head this thread rendered for a cacheable response, and until when the date it
/// carries is current.
struct LastHead {
    key: Option<HeadKey>,
    stale_at: Option<Instant>,
    keep: bool,
    len: usize,
    bytes: [u8; 192],
}

thread_local! {
    static LAST_HEAD: RefCell<LastHead> = const {
        RefCell::new(LastHead { key: None, stale_at: None, keep: false, len: 0, bytes: [0; 192] })
    };
}

/// [`write_head`] with the current date, but a head identical to the last one this thread
/// wrote (same status, content type, length and connection, no extra headers, within the same
/// wall-clock second) is copied from a cache: a server answering the same kind of reply again
/// and again formats its head once a second.
#[inline]
fn write_head_cached(
    out: &mut Vec<u8>,
    res: &Response,
    keep: bool,
    now: Instant,
    body_len: u64,
) -> bool {
    let Some(key) = HeadKey::of(res, keep, body_len) else {
        return date::with_date(now, |date| write_head(out, res, keep, date, body_len));
    };
    // A hit is a copy; a miss formats the head out of line, so the hit's path stays short.
    let hit = LAST_HEAD.with_borrow(|last| {
        let fresh = last.key == Some(key) && last.stale_at.is_some_and(|t| now < t);
        fresh.then(|| {
            out.extend_from_slice(&last.bytes[..last.len]);
            last.keep
        })
    });
    match hit {
        Some(keep) => keep,
        None => write_head_and_keep(out, res, (keep, body_len), key, now),
    }
}

/// The miss of [`write_head_cached`]: formats the head and keeps it for the next reply.
#[inline(never)]
fn write_head_and_keep(
    out: &mut Vec<u8>,
    res: &Response,
    (keep, body_len): (bool, u64),
    key: HeadKey,
    now: Instant,
) -> bool {
    LAST_HEAD.with_borrow_mut(|last| {
        date::with_date_until(now, |date, stale_at| {
            let start = out.len();
            let keep = write_head(out, res, keep, date, body_len);
            let head = &out[start..];
            if let Some(room) = last.bytes.get_mut(..head.len()) {
                room.copy_from_slice(head);
                last.len = head.len();
                last.key = Some(key);
                last.stale_at = Some(stale_at);
                last.keep = keep;
            }
            keep
        })
    })
}

/// Whether a reply with this status carries a body and `Content-Length` (a 1xx is sent as 500,
/// which does).
pub(crate) fn has_body(status: u16) -> bool {
    !matches!(status, 204 | 304)
}

/// Whether the response asks for the connection to close after it.
pub(crate) fn wants_close(res: &Response) -> bool {
    res.headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .any(|h| has_token(h.value.as_bytes(), "close"))
}

/// Appends the head of a reply whose body is delimited by the connection's close (no length,
/// `Connection: close`): what an event stream sends before its first event. `res`'s body is
/// not written.
pub(crate) fn render_open_ended(out: &mut Vec<u8>, res: &Response, now: Instant) {
    date::with_date(now, |date| head(out, res, false, date, Announce::Nothing));
}

/// Appends the head of a streamed reply framed by `framing`: its `Content-Length`,
/// `Transfer-Encoding: chunked`, or neither (a close-delimited body, `Connection: close`).
/// `res`'s body is not written. Returns whether the connection stays open after the body.
pub(crate) fn render_stream_head(
    out: &mut Vec<u8>,
    res: &Response,
    keep: bool,
    framing: StreamFraming,
    now: Instant,
) -> bool {
    let announce = match framing {
        StreamFraming::Length { left } => Announce::Length(left),
        StreamFraming::Chunked => Announce::Chunked,
        StreamFraming::UntilClose => Announce::Nothing,
    };
    let keep = keep && framing.allows_keep_alive();
    date::with_date(now, |date| head(out, res, keep, date, announce))
}

/// What a head says about the length of its body.
#[derive(Clone, Copy)]
enum Announce {
    Length(u64),
    Chunked,
    /// Nothing: the body ends with the connection.
    Nothing,
}

/// Appends the head of `res` — status line through the blank line — to `out`, announcing a body
/// of `body_len` bytes (for a reply to HEAD, the length a GET would get). Returns whether the
/// connection stays open after the reply.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    res: &Response,
    keep: bool,
    date: &[u8],
    body_len: u64,
) -> bool {
    head(out, res, keep, date, Announce::Length(body_len))
}

/// [`write_head`], the body's length announced as `announce` says.
fn head(out: &mut Vec<u8>, res: &Response, keep: bool, date: &[u8], announce: Announce) -> bool {
    let status = final_status(res.status);
    let keep = keep && !wants_close(res);
    let content_type = content_type_of(res);
    let reason = status_text(status);
    // Room for the fixed lines at once (the extra headers reserve their own).
    out.reserve(96 + reason.len() + content_type.len() + date.len());
    // `status` is three digits (200..=999).
    let digits = [
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
        b' ',
    ];
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(&digits);
    out.extend_from_slice(reason.as_bytes());
    if !content_type.is_empty() {
        out.extend_from_slice(b"\r\nContent-Type: ");
        push_value(out, content_type);
    }
    match (has_body(status), announce) {
        (true, Announce::Length(len)) => {
            out.extend_from_slice(b"\r\nContent-Length: ");
            push_u64(out, len);
        }
        (true, Announce::Chunked) => out.extend_from_slice(b"\r\nTransfer-Encoding: chunked"),
        _ => {}
    }
    out.extend_from_slice(if keep {
        &b"\r\nConnection: keep-alive\r\nDate: "[..]
    } else {
        b"\r\nConnection: close\r\nDate: "
    });
    out.extend_from_slice(date);
    for h in &res.headers {
        if reserved_or_bad(&h.name) {
            continue;
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        push_value(out, &h.value);
    }
    out.extend_from_slice(b"\r\n\r\n");
    keep
}

/// Appends a field value, each control byte but HTAB written as a space.
fn push_value(out: &mut Vec<u8>, value: &str) {
    out.extend_from_slice(&field_value(value));
}

/// A field value as it may be sent: each control byte but HTAB (CR, LF, NUL, ...) a space, so
/// no value can end its line or smuggle another (one rule for HTTP/1.1 and HTTP/2 replies).
pub(crate) fn field_value(value: &str) -> Cow<'_, [u8]> {
    let bytes = value.as_bytes();
    if bytes.iter().all(|&b| is_field_byte(b)) {
        Cow::Borrowed(bytes)
    } else {
        Cow::Owned(
            bytes
                .iter()
                .map(|&b| if is_field_byte(b) { b } else { b' ' })
                .collect(),
        )
    }
}

/// Whether a response's own header `name` is left out of the reply: the library writes the
/// framing (`Content-Length`, `Transfer-Encoding`), `Connection`, `Date` and `Content-Type`
/// itself, and a name that is not a token is never written.
pub(crate) fn reserved_or_bad(name: &str) -> bool {
    frames_body(name)
        || ["content-type", "connection", "date"]
            .iter()
            .any(|r| name.eq_ignore_ascii_case(r))
        || !is_token(name.as_bytes())
}

/// Whether a trailer field `name` may be sent: a token, and none of the fields a recipient
/// needs before the content — framing, routing, connection control, authentication, response
/// controls, the content's format (RFC 9110 §6.5.1) — which are left out.
pub(crate) fn may_trail(name: &str) -> bool {
    const NOT_IN_TRAILERS: [&str; 22] = [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "authorization",
        "proxy-authenticate",
        "proxy-authorization",
        "www-authenticate",
        "set-cookie",
        "cache-control",
        "expires",
        "age",
        "date",
        "location",
        "retry-after",
        "vary",
        "content-type",
        "content-encoding",
        "content-range",
    ];
    is_token(name.as_bytes())
        && !frames_body(name)
        && !NOT_IN_TRAILERS.iter().any(|n| name.eq_ignore_ascii_case(n))
}

/// Appends `trailers` as HTTP/1.1 trailer lines (`Name: value\r\n` each; what may not trail
/// is left out, see [`may_trail`]).
pub(crate) fn push_trailer_lines(out: &mut Vec<u8>, trailers: &[Header]) {
    for h in trailers.iter().filter(|h| may_trail(&h.name)) {
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        push_value(out, &h.value);
        out.extend_from_slice(b"\r\n");
    }
}

/// The content type a reply is sent with: a `Content-Type` among its headers, else its
/// `content_type`.
pub(crate) fn content_type_of(res: &Response) -> &str {
    res.headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-type"))
        .map_or(&*res.content_type, |h| h.value.as_str())
}

/// The status a reply is sent with: a 1xx is interim, never the reply itself (a handler
/// returning one would leave the client waiting for the final reply), so it and anything
/// outside 200–999 is sent as 500.
pub(crate) fn final_status(status: u16) -> u16 {
    if (200..=999).contains(&status) {
        status
    } else {
        500
    }
}

/// Appends `n` in lowercase hexadecimal (a chunk size).
pub(crate) fn push_hex(out: &mut Vec<u8>, n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = DIGITS[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `n` in decimal (two digits per step, from a table).
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        digits[i] = b'0' + n as u8;
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Header, json_response, set_cookie, text_response, with_header};
    use std::time::Duration;

    const DATE: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    fn render(res: &Response, keep: bool) -> String {
        let mut out = Vec::new();
        write_head(&mut out, res, keep, DATE, res.body.len() as u64);
        if has_body(res.status) {
            out.extend_from_slice(&res.body);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn layout_with_keep_false_and_true() {
        let res = text_response(404, "nope");
        assert_eq!(
            render(&res, false),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nnope"
        );
        let res = set_cookie(
            with_header(json_response(200, "{}"), "X-A", "1"),
            "s",
            "v",
            "; Path=/",
        );
        assert_eq!(
            render(&res, true),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nX-A: 1\r\nSet-Cookie: s=v; Path=/\r\n\r\n{}"
        );
    }

    #[test]
    fn content_length_counts_bytes_not_chars() {
        assert!(render(&text_response(200, "héllo €"), true).contains("Content-Length: 10\r\n"));
        assert!(render(&text_response(200, ""), true).contains("Content-Length: 0\r\n"));
    }

    #[test]
    fn header_injection_is_impossible() {
        let res = Response::new(
            200,
            "text/plain\r\nX-Evil: 1",
            vec![
                Header::new("X-Ok", "a\r\nSet-Cookie: evil=1"),
                Header::new("X-Bad\r\nSet-Cookie", "evil=2"),
                Header::new("X-Nul", "a\0b"),
                Header::new("", "nameless"),
                Header::new("X Space", "v"),
                Header::new("X-Tab", "a\tb"),
            ],
            "",
        );
        let text = render(&res, true);
        assert_eq!(text.matches("\r\n").count(), 9, "{text}");
        assert!(text.contains("Content-Type: text/plain  X-Evil: 1\r\n"));
        assert!(text.contains("X-Ok: a  Set-Cookie: evil=1\r\n"));
        assert!(text.contains("X-Nul: a b\r\n"));
        assert!(text.contains("X-Tab: a\tb\r\n"));
        assert!(
            !text.contains("evil=2") && !text.contains("nameless") && !text.contains("X Space")
        );
    }

    #[test]
    fn framing_headers_belong_to_the_library() {
        let res = Response::new(
            200,
            "text/plain",
            vec![
                Header::new("Content-Length", "999"),
                Header::new("transfer-encoding", "chunked"),
                Header::new("Date", "yesterday"),
                Header::new("Content-Type", "image/png"),
                Header::new("Connection", "close"),
            ],
            "abc",
        );
        let mut out = Vec::new();
        assert!(
            !write_head(&mut out, &res, true, DATE, 3),
            "Connection: close in the response closes"
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 3\r\nConnection: close\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"
        );
    }

    #[test]
    fn bodiless_statuses_and_odd_codes() {
        let cases = [
            (
                204,
                "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\n",
            ),
            (
                304,
                "HTTP/1.1 304 Not Modified\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\n",
            ),
            (
                103,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n",
            ),
            (
                42,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n",
            ),
            (
                299,
                "HTTP/1.1 299 \r\nContent-Type: text/plain\r\nContent-Length: 4\r\n",
            ),
        ];
        for (status, start) in cases {
            let text = render(&text_response(status, "body"), true);
            assert!(text.starts_with(start), "{text}");
            assert_eq!(
                text.ends_with("body"),
                !matches!(status, 204 | 304),
                "{status}"
            );
        }
        let empty_type = Response::new(200, "", vec![], "x");
        assert!(!render(&empty_type, true).contains("Content-Type"));
    }

    #[test]
    fn response_bytes_uses_the_current_date() {
        let text = String::from_utf8(response_bytes(&text_response(200, "ok"), true)).unwrap();
        let date = text
            .split("\r\nDate: ")
            .nth(1)
            .unwrap()
            .split("\r\n")
            .next()
            .unwrap();
        assert_eq!(date.len(), 29);
        assert!(httpdate::parse_http_date(date).is_ok());
        assert!(text.ends_with("\r\n\r\nok"));
    }

    #[test]
    fn a_cached_head_is_the_head_written_afresh() {
        let cases = [
            (text_response(200, "Hello"), true),
            (text_response(200, "Hello"), true),
            (text_response(200, "Hello"), false),
            (text_response(404, "Hello"), false),
            (text_response(200, "Hello!"), false),
            (json_response(200, "Hello!"), false),
            (
                with_header(text_response(200, "Hello!"), "Connection", "close"),
                true,
            ),
            (
                Response::new(200, String::from("text/plain"), vec![], "x"),
                true,
            ),
        ];
        let start = Instant::now();
        // The same second twice, then later seconds: a cached head never carries a stale date.
        for now in [
            start,
            start,
            start + Duration::from_secs(2),
            start + Duration::from_secs(5),
        ] {
            for (res, keep) in &cases {
                let len = res.body.len() as u64;
                let mut cached = b"before".to_vec();
                let kept = write_head_cached(&mut cached, res, *keep, now, len);
                let mut fresh = b"before".to_vec();
                let kept_fresh =
                    date::with_date(now, |date| write_head(&mut fresh, res, *keep, date, len));
                assert_eq!(
                    (kept, String::from_utf8(cached).unwrap()),
                    (kept_fresh, String::from_utf8(fresh).unwrap())
                );
            }
        }
    }

    #[test]
    fn push_hex_cases() {
        for n in [0u64, 1, 9, 10, 15, 16, 255, 4096, 65535, 1 << 40, u64::MAX] {
            let mut out = Vec::new();
            push_hex(&mut out, n);
            assert_eq!(out, format!("{n:x}").as_bytes());
        }
    }

    #[test]
    fn stream_heads_announce_their_framing() {
        let res = text_response(200, "");
        let now = Instant::now();
        // (framing, keep asked, line expected, keep kept)
        let table = [
            (
                StreamFraming::Chunked,
                true,
                "\r\nTransfer-Encoding: chunked\r\n",
                true,
            ),
            (
                StreamFraming::Length { left: 7 },
                true,
                "\r\nContent-Length: 7\r\n",
                true,
            ),
            (
                StreamFraming::UntilClose,
                true,
                "\r\nConnection: close\r\n",
                false,
            ),
        ];
        for (framing, keep, line, kept) in table {
            let mut out = Vec::new();
            assert_eq!(render_stream_head(&mut out, &res, keep, framing, now), kept);
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(line), "{text}");
            assert!(text.ends_with("\r\n\r\n"));
            let lengths =
                text.matches("Content-Length").count() + text.matches("Transfer-Encoding").count();
            assert_eq!(
                lengths,
                usize::from(framing != StreamFraming::UntilClose),
                "{text}"
            );
        }
    }

    #[test]
    fn push_u64_cases() {
        for n in [
            0u64,
            7,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            12345,
            1234567890,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
        for n in (0..100_000u64).chain((1..64).map(|s| (1u64 << s) - 1)) {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }
}
