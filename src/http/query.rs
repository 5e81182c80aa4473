//! Targets, query strings and percent-coding (RFC 3986 §2.1, and the `+`-for-space rule of
//! `application/x-www-form-urlencoded`).

use super::message::Header;

/// The target with its query removed; unchanged if it has none.
///
/// ```
/// assert_eq!(web::http::path_of("/a/b?c=d"), "/a/b");
/// assert_eq!(web::http::path_of("/a/b"), "/a/b");
/// ```
pub fn path_of(target: &str) -> &str {
    target.split_once('?').map_or(target, |(path, _)| path)
}

/// The query string without the `?`; `""` if there is none.
///
/// ```
/// assert_eq!(web::http::query_of("/a?c=d&e"), "c=d&e");
/// assert_eq!(web::http::query_of("/a"), "");
/// ```
pub fn query_of(target: &str) -> &str {
    target.split_once('?').map_or("", |(_, query)| query)
}

/// The decoded value of parameter `name` in query string `qs`; `""` if absent.
///
/// When a name repeats, the **first** occurrence wins (as Go's `Values.Get` and most
/// frameworks do); [`params`] gives them all. Names are compared after decoding, so
/// `a%62=1` is parameter `ab`. Decoded bytes that are not UTF-8 become U+FFFD.
///
/// ```
/// use web::http::param;
/// assert_eq!(param("q=hello+world&n=%31&q=second", "q"), "hello world");
/// assert_eq!(param("q=1", "missing"), "");
/// ```
pub fn param(qs: &str, name: &str) -> String {
    pairs(qs)
        .find(|(n, _)| text(n) == name)
        .map(|(_, v)| text(v))
        .unwrap_or_default()
}

/// Every parameter as a `Header(name, value)`, in written order, both decoded. A piece without
/// `=` is a name with an empty value; empty pieces (`a=1&&b=2`) are skipped.
///
/// ```
/// use web::http::{params, Header};
/// assert_eq!(params("a=1&b&c=%2F"), vec![Header::new("a", "1"), Header::new("b", ""), Header::new("c", "/")]);
/// ```
pub fn params(qs: &str) -> Vec<Header> {
    pairs(qs)
        .map(|(n, v)| Header::new(text(n), text(v)))
        .collect()
}

/// The `name=value` pieces of a query string, still encoded.
fn pairs(qs: &str) -> impl Iterator<Item = (&str, &str)> {
    qs.split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| piece.split_once('=').unwrap_or((piece, "")))
}

/// Decodes to text, replacing bytes that are not UTF-8 with U+FFFD.
fn text(s: &str) -> String {
    match String::from_utf8(decoded(s)) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Percent-decoding: `%XX` becomes the byte, `+` becomes a space, and a `%` not followed by two
/// hex digits stays a literal `%`. Never an error.
///
/// ```
/// use web::http::decoded;
/// assert_eq!(decoded("a%20b+c"), b"a b c");
/// assert_eq!(decoded("100%"), b"100%");
/// assert_eq!(decoded("%zz%4"), b"%zz%4");
/// assert_eq!(decoded("%e2%82%ac"), "€".as_bytes());
/// ```
pub fn decoded(s: impl AsRef<[u8]>) -> Vec<u8> {
    let s = s.as_ref();
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' => match (s.get(i + 1).and_then(hex), s.get(i + 2).and_then(hex)) {
                (Some(hi), Some(lo)) => {
                    out.push(hi << 4 | lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    out
}

fn hex(b: &u8) -> Option<u8> {
    (*b as char).to_digit(16).map(|d| d as u8)
}

/// Percent-encoding: every byte except the unreserved characters `A-Z a-z 0-9 - . _ ~` becomes
/// `%XX` with upper-case hex digits (RFC 3986 §2.1 recommends upper case).
///
/// ```
/// assert_eq!(web::http::encoded("a b/ü~"), "a%20b%2F%C3%BC~");
/// ```
pub fn encoded(s: impl AsRef<[u8]>) -> String {
    percent_encoded(s.as_ref(), |b| {
        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
    })
}

/// `bytes` with every byte `keep` refuses written as `%XX` (upper-case hex): the one
/// percent-encoder, for query strings and for cookies.
pub(crate) fn percent_encoded(bytes: &[u8], keep: impl Fn(u8) -> bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_and_query_split_at_the_first_question_mark() {
        let cases = [
            ("/a?b=c", "/a", "b=c"),
            ("/a", "/a", ""),
            ("/a?", "/a", ""),
            ("/a?b?c", "/a", "b?c"),
            ("?x", "", "x"),
            ("", "", ""),
        ];
        for (t, p, q) in cases {
            assert_eq!((path_of(t), query_of(t)), (p, q), "{t}");
        }
    }

    #[test]
    fn decoded_rules() {
        let cases: &[(&str, &[u8])] = &[
            ("", b""),
            ("plain", b"plain"),
            ("%41%62", b"Ab"),
            ("%4a%4A", b"JJ"),
            ("a+b", b"a b"),
            ("%2B", b"+"),
            ("%", b"%"),
            ("%4", b"%4"),
            ("%G1", b"%G1"),
            ("%%41", b"%A"),
            ("50%+off", b"50% off"),
            ("%00", b"\0"),
            ("%FF", b"\xff"),
        ];
        for (input, want) in cases {
            assert_eq!(decoded(input), *want, "{input}");
        }
    }

    #[test]
    fn encoded_rules() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"AZaz09-._~", "AZaz09-._~"),
            (b" ", "%20"),
            (b"+&=?/#%", "%2B%26%3D%3F%2F%23%25"),
            (b"\0\xff", "%00%FF"),
        ];
        for (input, want) in cases {
            assert_eq!(encoded(input), *want);
        }
    }

    #[test]
    fn param_and_params() {
        let qs = "a=1&b=two+words&a=3&c&=empty-name&d=%ZZ&e=%FF";
        assert_eq!(param(qs, "a"), "1", "the first occurrence wins");
        assert_eq!(param(qs, "b"), "two words");
        assert_eq!(param(qs, "c"), "");
        assert_eq!(param(qs, ""), "empty-name");
        assert_eq!(param(qs, "d"), "%ZZ");
        assert_eq!(param(qs, "e"), "\u{fffd}");
        assert_eq!(param(qs, "zz"), "");
        assert_eq!(param("a%20b=1", "a b"), "1");
        let all = params(qs);
        let names: Vec<&str> = all.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "a", "c", "", "d", "e"]);
        assert_eq!(all[2].value, "3");
        assert!(params("").is_empty());
        assert!(params("&&").is_empty());
    }
}
