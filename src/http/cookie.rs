//! Reading cookies sent by the browser (RFC 6265 §5.4: `Cookie: a=1; b=2`).

use super::message::Request;

/// The value of cookie `name` from the request's `Cookie` header, a list of `name=value` pairs
/// separated by `;`; `""` when absent.
///
/// Names are compared exactly (cookie names are case-sensitive). When a name appears more than
/// once, the first pair wins (browsers send the most specific cookie first). Should a client
/// send several `Cookie` lines (HTTP/2 gateways may), they are read in order as one list.
/// The value is returned as sent, quotes included. A `Cookie` line that is not valid UTF-8 is
/// skipped.
///
/// ```
/// use web::http::{cookie, Header, Request};
/// let req = Request::new("GET", "/", vec![Header::new("cookie", "a=1; session=xyz")], "");
/// assert_eq!(cookie(&req, "session"), "xyz");
/// assert_eq!(cookie(&req, "Session"), "");
/// ```
pub fn cookie<'a>(req: &'a Request, name: &str) -> &'a str {
    req.headers()
        .filter(|h| h.name().eq_ignore_ascii_case("cookie"))
        .filter_map(|h| h.text())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair_value(pair, name))
        .unwrap_or("")
}

/// The same lookup as [`cookie`] over pairs already split at `;`. A pair with leading (or
/// trailing) whitespace still matches its name.
///
/// ```
/// use web::http::cookie_in;
/// assert_eq!(cookie_in(&["a=1", " b=2"], "b"), "2");
/// assert_eq!(cookie_in(&["a=1"], "c"), "");
/// ```
pub fn cookie_in<'a, S: AsRef<str>>(pairs: &'a [S], name: &str) -> &'a str {
    pairs
        .iter()
        .find_map(|pair| pair_value(pair.as_ref(), name))
        .unwrap_or("")
}

/// The value of cookie `name` as [`set_cookie`](crate::http::set_cookie) meant it: the sent
/// value with each `%XX` turned back into its byte (what `set_cookie` encodes). Bytes that do not
/// form UTF-8 become U+FFFD; `+` stays `+` (unlike [`decoded`](crate::http::decoded), which is
/// for query strings).
///
/// ```
/// use web::http::{cookie, cookie_decoded, set_cookie, text_response, Header, Request};
/// let res = set_cookie(text_response(200, ""), "note", "a; Domain=evil.example", "");
/// assert_eq!(res.headers[0].value, "note=a%3B%20Domain=evil.example"); // no attribute injected
/// let req = Request::new("GET", "/", vec![Header::new("cookie", "note=a%3B%20Domain=evil.example")], "");
/// assert_eq!(cookie(&req, "note"), "a%3B%20Domain=evil.example");
/// assert_eq!(cookie_decoded(&req, "note"), "a; Domain=evil.example");
/// ```
pub fn cookie_decoded(req: &Request, name: &str) -> String {
    let value = cookie(req, &encode_cookie_part(name, is_name_byte)).as_bytes();
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while let Some(&b) = value.get(i) {
        let hex = |j: usize| value.get(j).and_then(|&h| (h as char).to_digit(16));
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `cookie-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E` (RFC 6265 §4.1.1): no control,
/// space, `"`, `,`, `;` or `\`; here `%` is kept out too, as the escape.
fn is_value_byte(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x24 | 0x26..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E)
}

/// A cookie name is a token (RFC 6265 §4.1.1, RFC 9110 §5.6.2); `%` is kept as the escape.
fn is_name_byte(b: u8) -> bool {
    b != b'%' && super::grammar::is_tchar(b)
}

/// `part` with every byte that `allowed` refuses written as `%XX` (upper-case hex): what
/// [`set_cookie`](crate::http::set_cookie) does to a cookie's name and value so that neither
/// can end the pair or add an attribute.
pub(crate) fn encode_cookie_part(part: &str, allowed: fn(u8) -> bool) -> String {
    super::query::percent_encoded(part.as_bytes(), allowed)
}

/// A cookie name as [`set_cookie`](crate::http::set_cookie) writes it.
pub(crate) fn encode_cookie_name(name: &str) -> String {
    encode_cookie_part(name, is_name_byte)
}

/// A cookie value as [`set_cookie`](crate::http::set_cookie) writes it.
pub(crate) fn encode_cookie_value(value: &str) -> String {
    encode_cookie_part(value, is_value_byte)
}

/// The value of `pair` when it is `name=value` (surrounding whitespace ignored).
fn pair_value<'a>(pair: &'a str, name: &str) -> Option<&'a str> {
    let (n, v) = pair.trim_matches([' ', '\t']).split_once('=')?;
    (n.trim_end_matches([' ', '\t']) == name).then(|| v.trim_start_matches([' ', '\t']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Header;

    #[test]
    fn set_cookie_encoding_round_trips_and_never_injects() {
        let cases = [
            ("sid", "42", "sid=42"),
            (
                "a",
                "x; Domain=evil.example",
                "a=x%3B%20Domain=evil.example",
            ),
            ("a", "q\"uote,comma\\back", "a=q%22uote%2Ccomma%5Cback"),
            ("a", "50%", "a=50%25"),
            (
                "a",
                "caf\u{e9}\r\nX-Evil: 1",
                "a=caf%C3%A9%0D%0AX-Evil:%201",
            ),
            ("bad name;", "v", "bad%20name%3B=v"),
            // `=` ends a name, not a value; tab and DEL are controls.
            ("a=b", "c=d", "a%3Db=c=d"),
            ("t", "tab\there\u{7f}", "t=tab%09here%7F"),
            ("e", "", "e="),
            ("plus", "a+b", "plus=a+b"),
        ];
        for (name, value, line) in cases {
            let written = format!(
                "{}={}",
                encode_cookie_name(name),
                encode_cookie_value(value)
            );
            assert_eq!(written, line);
            assert!(!written.contains([';', ' ', ',', '"', '\\', '\r', '\n']));
            let req = Request::new("GET", "/", vec![Header::new("cookie", &written)], "");
            assert_eq!(cookie_decoded(&req, name), value, "{name}");
        }
    }

    #[test]
    fn cookie_cases() {
        let req = Request::new(
            "GET",
            "/",
            vec![
                Header::new("cookie", "a=1; b=; c=x=y;d=4 ;  e = 5"),
                Header::new("cookie", "f=6; a=ignored"),
            ],
            "",
        );
        let cases = [
            ("a", "1"),
            ("b", ""),
            ("c", "x=y"),
            ("d", "4"),
            ("e", "5"),
            ("f", "6"),
            ("A", ""),
            ("missing", ""),
            ("", ""),
        ];
        for (name, want) in cases {
            assert_eq!(cookie(&req, name), want, "{name}");
        }
        assert_eq!(cookie(&Request::default(), "a"), "");
    }

    #[test]
    fn cookie_in_cases() {
        let pairs = vec![
            String::from("a=1"),
            String::from(" b=2"),
            String::from("noequals"),
            String::from("\tc=3"),
        ];
        assert_eq!(cookie_in(&pairs, "a"), "1");
        assert_eq!(cookie_in(&pairs, "b"), "2");
        assert_eq!(cookie_in(&pairs, "c"), "3");
        assert_eq!(cookie_in(&pairs, "noequals"), "");
        assert_eq!(cookie_in::<&str>(&[], "a"), "");
    }
}
