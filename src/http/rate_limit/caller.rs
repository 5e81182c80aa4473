//! Who a request is from, as a rate limiter counts callers: [`client_of`], from the
//! `X-Forwarded-For` entries the server's own proxies appended.

use super::super::message::{Request, forwarded};
use super::{ANYONE, UNKNOWN_CALLER};

/// The specification's `client_of(req, hops)`: the name of the caller a rate limiter counts.
///
/// | `hops` | `X-Forwarded-For` | result |
/// |---|---|---|
/// | 0 | not read | [`ANYONE`] (`"anyone"`): all callers share one bucket |
/// | ≥ 1 | at least `hops` entries | the entry `hops`-th from the right, whitespace trimmed (1: the last) |
/// | ≥ 1 | fewer entries (or no header) | [`UNKNOWN_CALLER`] (`"unknown"`): such callers share one bucket |
///
/// `hops` is the number of proxies you run in front of the server, each appending the address it
/// received the request from (nginx: `proxy_set_header X-Forwarded-For
/// $proxy_add_x_forwarded_for;`). The entries left of the one chosen were written by the client
/// and are ignored, so a client cannot pick its own name by sending the header.
///
/// The header's value is a comma-separated list (RFC 9110 §5.6.1): several `X-Forwarded-For`
/// lines are one list joined in order (§5.3), and empty elements (`a, , b`) are not counted
/// (§5.6.1.2: they "do not contribute to the count of elements present").
///
/// ```
/// use web::http::{client_of, Header, Request};
/// let req = Request::new("GET", "/", vec![Header::new("x-forwarded-for", "6.6.6.6, 10.0.0.7, 127.0.0.1")], "");
/// assert_eq!(client_of(&req, 0), "anyone");
/// assert_eq!(client_of(&req, 1), "127.0.0.1");
/// assert_eq!(client_of(&req, 2), "10.0.0.7");
/// assert_eq!(client_of(&req, 4), "unknown");
/// ```
pub fn client_of(req: &Request, hops: usize) -> &str {
    if hops == 0 {
        return ANYONE;
    }
    match forwarded(req, hops) {
        // An entry that is not text (obs-text) cannot name a caller: shared bucket.
        Some(entry) => std::str::from_utf8(entry).unwrap_or(UNKNOWN_CALLER),
        None => UNKNOWN_CALLER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::message::Header;
    fn forwarded(lines: &[&str]) -> Request {
        let headers = lines
            .iter()
            .map(|v| Header::new("x-forwarded-for", *v))
            .collect();
        Request::new("GET", "/", headers, "")
    }
    #[test]
    fn client_of_follows_the_specification_table() {
        #[rustfmt::skip]
        let cases: &[(&[&str], usize, &str)] = &[
            // hops 0: the header is not read.
            (&[], 0, "anyone"),
            (&["1.1.1.1"], 0, "anyone"),
            (&["1.1.1.1, 2.2.2.2"], 0, "anyone"),
            // hops >= 1: the entry hops-th from the right, trimmed.
            (&["1.1.1.1"], 1, "1.1.1.1"),
            (&["1.1.1.1, 2.2.2.2"], 1, "2.2.2.2"),
            (&["1.1.1.1, 2.2.2.2"], 2, "1.1.1.1"),
            (&["  1.1.1.1 ,\t2.2.2.2\t"], 2, "1.1.1.1"),
            (&["a,b,c,d"], 3, "b"),
            (&["2001:db8::1, 10.0.0.1"], 2, "2001:db8::1"),
            // Spoofed entries on the left are ignored: the proxy's entry is still the one read.
            (&["6.6.6.6, 127.0.0.2"], 1, "127.0.0.2"),
            (&["anyone, unknown, 6.6.6.6, 127.0.0.3"], 1, "127.0.0.3"),
            (&["6.6.6.6, 5.5.5.5, 10.0.0.9, 127.0.0.1"], 2, "10.0.0.9"),
            // Fewer entries than hops: one shared bucket, never unlimited.
            (&[], 1, "unknown"),
            (&["1.1.1.1"], 2, "unknown"),
            (&["1.1.1.1, 2.2.2.2"], 3, "unknown"),
            (&[""], 1, "unknown"),
            (&[" , ,"], 1, "unknown"),
            // Empty elements do not count (RFC 9110 §5.6.1.2).
            (&["1.1.1.1, , 2.2.2.2,"], 2, "1.1.1.1"),
            // Several lines are one list, joined in order (RFC 9110 §5.3).
            (&["1.1.1.1", "2.2.2.2"], 1, "2.2.2.2"),
            (&["1.1.1.1", "2.2.2.2"], 2, "1.1.1.1"),
            (&["6.6.6.6, 1.1.1.1", "2.2.2.2, 3.3.3.3"], 3, "1.1.1.1"),
            (&["1.1.1.1", "2.2.2.2"], 3, "unknown"),
        ];
        for &(lines, hops, want) in cases {
            assert_eq!(
                client_of(&forwarded(lines), hops),
                want,
                "{lines:?} hops {hops}"
            );
        }
    }

    #[test]
    fn client_of_matches_the_header_name_in_any_case_and_ignores_other_headers() {
        let req = Request::new(
            "GET",
            "/",
            vec![
                Header::new("X-Forwarded-For", "1.1.1.1"),
                Header::new("forwarded", "for=9.9.9.9"),
                Header::new("x-real-ip", "8.8.8.8"),
                Header::new("X-FORWARDED-FOR", "2.2.2.2"),
            ],
            "",
        );
        assert_eq!(client_of(&req, 1), "2.2.2.2");
        assert_eq!(client_of(&req, 2), "1.1.1.1");
    }
}
