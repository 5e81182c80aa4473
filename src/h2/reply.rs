//! A reply's head as HTTP/2 carries it (RFC 9113 §8.3.2, §8.2.2): `:status`, the fields the
//! library writes (`content-type`, `content-length`, `date`), then the response's own headers
//! lower-cased, HPACK-encoded without a table. The same rules as an HTTP/1.1 reply (one place:
//! `http::render`): a 1xx or out-of-range status is sent as 500, framing and `Date` are the
//! library's, control bytes in a value become spaces; and those of HTTP/2: the fields of a
//! connection (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`,
//! `upgrade`) are never sent.

use crate::http::message::text::as_text;
use crate::http::render::{
    content_type_of, field_value, final_status, has_body, may_trail, reserved_or_bad,
};
use crate::http::{Header, Response};

use super::hpack::encoder::{write_field, write_status};

/// Names longer than this are lower-cased on the heap (rare), shorter ones on the stack.
const NAME_ON_STACK: usize = 64;

/// Fields that name a connection's properties, which HTTP/2 has no place for (RFC 9113
/// §8.2.2: a message carrying one is malformed).
const CONNECTION_FIELDS: [&str; 3] = ["keep-alive", "proxy-connection", "upgrade"];

/// How the body's length is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Length {
    /// `content-length` with this value.
    Known(u64),
    /// Not told: the body ends with the stream (a streamed reply, an event stream).
    Open,
}

/// Appends `res`'s head to `block`; `date` is the `Date` value. Returns the status sent.
pub(crate) fn write_head(block: &mut Vec<u8>, res: &Response, date: &[u8], length: Length) -> u16 {
    let status = final_status(res.status);
    write_status(block, status);
    let content_type = content_type_of(res);
    if !content_type.is_empty() {
        write_field(block, "content-type", &field_value(content_type));
    }
    if let (true, Length::Known(n)) = (has_body(status), length) {
        let mut digits = [0u8; 20];
        write_field(block, "content-length", decimal(n, &mut digits));
    }
    write_field(block, "date", date);
    for h in &res.headers {
        if reserved_or_bad(&h.name)
            || CONNECTION_FIELDS
                .iter()
                .any(|c| h.name.eq_ignore_ascii_case(c))
        {
            continue;
        }
        write_lower_cased(block, h);
    }
    status
}

/// Appends `trailers` to `block`: a trailer section's fields, lower-cased, what may not trail
/// left out (`render::may_trail`: framing, routing, connection control, ...).
pub(crate) fn write_trailers(block: &mut Vec<u8>, trailers: &[Header]) {
    for h in trailers.iter().filter(|h| may_trail(&h.name)) {
        write_lower_cased(block, h);
    }
}

/// Appends field `h`, its name lower-cased as HTTP/2 requires (on the stack when short).
fn write_lower_cased(block: &mut Vec<u8>, h: &Header) {
    let value = field_value(&h.value);
    let mut on_stack = [0u8; NAME_ON_STACK];
    match on_stack.get_mut(..h.name.len()) {
        Some(name) => {
            name.copy_from_slice(h.name.as_bytes());
            name.make_ascii_lowercase();
            // A token is ASCII: lower-cased it stays UTF-8.
            write_field(block, as_text(name), &value);
        }
        None => write_field(block, &h.name.to_ascii_lowercase(), &value),
    }
}

/// `n` in decimal, in `digits`.
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &digits[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::hpack::{Decoder, Scratch};
    use super::*;
    use crate::http::{Header, Response};

    fn decoded(block: &[u8]) -> Vec<(String, String)> {
        let mut got = Vec::new();
        Decoder::new(0)
            .decode(block, &mut Scratch::default(), |n, v| {
                got.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ))
            })
            .expect("decodes");
        got
    }

    fn head(res: &Response, length: Length) -> Vec<(String, String)> {
        let mut block = Vec::new();
        write_head(&mut block, res, b"Thu, 01 Jan 2026 00:00:00 GMT", length);
        decoded(&block)
    }

    fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
        want.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_reply_head_is_its_status_the_library_fields_then_its_own_lower_cased() {
        let res = Response::new(
            201,
            "text/plain",
            vec![
                Header::new("X-Request-Id", "7"),
                Header::new("Set-Cookie", "a=1"),
            ],
            "made",
        );
        assert_eq!(
            head(&res, Length::Known(4)),
            pairs(&[
                (":status", "201"),
                ("content-type", "text/plain"),
                ("content-length", "4"),
                ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
                ("x-request-id", "7"),
                ("set-cookie", "a=1"),
            ])
        );
    }

    #[test]
    fn connection_fields_framing_and_bad_names_are_never_sent() {
        let res = Response::new(
            200,
            "",
            vec![
                Header::new("Connection", "close"),
                Header::new("Keep-Alive", "timeout=5"),
                Header::new("Transfer-Encoding", "chunked"),
                Header::new("Upgrade", "h2c"),
                Header::new("Proxy-Connection", "x"),
                Header::new("Content-Length", "99"),
                Header::new("bad name", "x"),
                Header::new("X-Split", "a\r\nb: c"),
            ],
            "",
        );
        assert_eq!(
            head(&res, Length::Open),
            pairs(&[
                (":status", "200"),
                ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
                ("x-split", "a  b: c"),
            ])
        );
    }

    #[test]
    fn statuses_the_reply_cannot_be_are_500_and_bodiless_ones_have_no_length() {
        let table = [
            (101, "500", true),
            (99, "500", true),
            (204, "204", false),
            (304, "304", false),
        ];
        for (status, sent, length) in table {
            let res = Response::new(status, "", vec![], "");
            let got = head(&res, Length::Known(0));
            assert_eq!(got[0], (":status".into(), sent.into()), "{status}");
            assert_eq!(
                got.iter().any(|(n, _)| n == "content-length"),
                length,
                "{status}"
            );
        }
    }

    #[test]
    fn a_long_name_is_lower_cased_too() {
        let name = format!("X-{}", "A".repeat(100));
        let res = Response::new(200, "", vec![Header::new(&name, "v")], "");
        let got = head(&res, Length::Open);
        assert_eq!(
            got.last().map(|(n, _)| n.clone()),
            Some(name.to_ascii_lowercase())
        );
    }
}
