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
