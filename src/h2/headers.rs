//! A request's header list as HTTP/2 carries it (RFC 9113 §8.2, §8.3, RFC 8441 §4): fields in
//! one buffer, the pseudo-headers apart, and every rule whose breaking makes a request
//! malformed (a stream error, PROTOCOL_ERROR) checked as the fields arrive.

use crate::http::fields::{ContentLength, valid_host};
use crate::http::grammar::{is_scheme, is_token};
use crate::http::head::check_target;

/// Where one name or value is in the list's buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    at: u32,
    len: u32,
}

/// The pseudo-headers a request may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pseudo {
    Method,
    Scheme,
    Authority,
    Path,
    /// RFC 8441's `:protocol`, of an extended CONNECT.
    Protocol,
}

impl Pseudo {
    fn of(name: &[u8]) -> Option<Pseudo> {
        Some(match name {
            b":method" => Pseudo::Method,
            b":scheme" => Pseudo::Scheme,
            b":authority" => Pseudo::Authority,
            b":path" => Pseudo::Path,
            b":protocol" => Pseudo::Protocol,
            _ => return None,
        })
    }
}

/// Why a header list was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A rule of RFC 9113 §8 broken: the stream is reset with PROTOCOL_ERROR.
    Malformed(&'static str),
    /// Larger than SETTINGS_MAX_HEADER_LIST_SIZE: answered 431 on its stream.
    TooLarge,
}

/// A request's header list, or a trailer section's.
#[derive(Debug, Default)]
pub(crate) struct HeaderList {
    buf: Vec<u8>,
    fields: Vec<(Span, Span)>,
    pseudo: [Option<Span>; 5],
    /// Its size as SETTINGS_MAX_HEADER_LIST_SIZE counts it.
    size: usize,
    /// A regular field came: no pseudo-header may follow.
    regular: bool,
    refused: Option<Refused>,
}

impl HeaderList {
    /// Empty, its buffers kept for the next list (given back when large).
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.fields.clear();
        self.pseudo = [None; 5];
        self.size = 0;
        self.regular = false;
        self.refused = None;
        if self.buf.capacity() > 16 * 1024 {
            *self = HeaderList::default();
        }
    }

    /// Takes one field in the order it came; what breaks a rule is remembered (the block is
    /// still decoded to its end, to keep HPACK in step).
    pub(crate) fn push(&mut self, name: &[u8], value: &[u8], max_size: usize, trailers: bool) {
        if self.refused.is_some() {
            return;
        }
        self.size = self.size.saturating_add(name.len() + value.len() + 32);
        if self.size > max_size {
            self.refused = Some(Refused::TooLarge);
            return;
        }
        if let Err(why) = self.check(name, value, trailers) {
            self.refused = Some(Refused::Malformed(why));
            return;
        }
        let name_span = self.keep(name);
        let value_span = self.keep(value);
        match Pseudo::of(name) {
            Some(p) => self.pseudo[p as usize] = Some(value_span),
            None => self.fields.push((name_span, value_span)),
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8], trailers: bool) -> Result<(), &'static str> {
        if value.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n')) {
            return Err("a field value with NUL, CR or LF");
        }
        let blank = |b: &u8| *b == b' ' || *b == b'\t';
        if value.first().is_some_and(blank) || value.last().is_some_and(blank) {
            return Err("a field value with whitespace at an end");
        }
        if name.starts_with(b":") {
            let Some(p) = Pseudo::of(name) else {
                return Err("an unknown pseudo-header");
            };
            if trailers {
                return Err("a pseudo-header in trailers");
            }
            if self.regular {
                return Err("a pseudo-header after a regular field");
            }
            if self.pseudo[p as usize].is_some() {
                return Err("a pseudo-header twice");
            }
            return Ok(());
        }
        self.regular = true;
        if !is_token(name) || name.iter().any(u8::is_ascii_uppercase) {
            return Err("a field name that is not a lower-case token");
        }
        match name {
            b"connection" | b"proxy-connection" | b"keep-alive" | b"transfer-encoding"
            | b"upgrade" => Err("a connection-specific field"),
            b"te" if value != b"trailers" => Err("te other than trailers"),
            _ => Ok(()),
        }
    }

    fn keep(&mut self, bytes: &[u8]) -> Span {
        let span = Span {
            at: self.buf.len() as u32,
            len: bytes.len() as u32,
        };
        self.buf.extend_from_slice(bytes);
        span
    }

    /// The list is whole: a request's pseudo-headers as RFC 9113 §8.3.1 and RFC 8441 §4 want
    /// them (`connect_protocol`: whether this side enabled extended CONNECT).
    pub(crate) fn finish_request(&self, connect_protocol: bool) -> Result<(), Refused> {
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        let has = |p: Pseudo| self.pseudo[p as usize].is_some();
        let malformed = |why| Err(Refused::Malformed(why));
        if !has(Pseudo::Method) {
            return malformed("no :method");
        }
        if self.method() == b"CONNECT" {
            if has(Pseudo::Protocol) {
                if !connect_protocol {
                    return malformed(":protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL");
                }
                if !(has(Pseudo::Scheme) && has(Pseudo::Path) && has(Pseudo::Authority)) {
                    return malformed("an extended CONNECT without :scheme, :path or :authority");
                }
            } else if has(Pseudo::Scheme) || has(Pseudo::Path) || !has(Pseudo::Authority) {
                return malformed("a CONNECT with :scheme or :path, or without :authority");
            }
        } else {
            if has(Pseudo::Protocol) {
                return malformed(":protocol on a request other than CONNECT");
            }
            if !has(Pseudo::Scheme) || !has(Pseudo::Path) {
                return malformed("no :scheme or :path");
            }
        }
        // The values, by the rules an HTTP/1.1 request line and `Host` are held to (RFC 9113
        // §8.3.1, RFC 9110 §7.1–7.2).
        if !is_token(self.method()) {
            return malformed("a :method that is not a token");
        }
        if has(Pseudo::Scheme) && !is_scheme(self.pseudo(Pseudo::Scheme)) {
            return malformed("a :scheme that is not a scheme");
        }
        if has(Pseudo::Authority) && !valid_host(self.authority()) {
            return malformed("an :authority that is not host[:port]");
        }
        if has(Pseudo::Path) {
            check_path(self.method(), self.path())?;
        }
        Ok(())
    }

    /// The request's `content-length` over all its fields (RFC 9110 §8.6): digits only,
    /// several equal values taken as one; `Err` for anything else.
    pub(crate) fn content_length(&self) -> Result<Option<u64>, Refused> {
        let mut length = ContentLength::default();
        for (_, value) in self.fields().filter(|(n, _)| *n == b"content-length") {
            length.note(value);
        }
        length
            .get()
            .map_err(|_| Refused::Malformed("a content-length that is not one number"))
    }

    /// The list is whole, as trailers.
    pub(crate) fn finish_trailers(&self) -> Result<(), Refused> {
        self.refused.map_or(Ok(()), Err)
    }

    fn get(&self, span: Span) -> &[u8] {
        &self.buf[span.at as usize..(span.at + span.len) as usize]
    }

    fn pseudo(&self, p: Pseudo) -> &[u8] {
        self.pseudo[p as usize].map_or(&[][..], |s| self.get(s))
    }

    pub(crate) fn method(&self) -> &[u8] {
        self.pseudo(Pseudo::Method)
    }

    pub(crate) fn path(&self) -> &[u8] {
        self.pseudo(Pseudo::Path)
    }

    pub(crate) fn authority(&self) -> &[u8] {
        self.pseudo(Pseudo::Authority)
    }

    pub(crate) fn protocol(&self) -> &[u8] {
        self.pseudo(Pseudo::Protocol)
    }

    /// The regular fields, in order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().map(|&(n, v)| (self.get(n), self.get(v)))
    }

    /// The value of the first `name` field, if any.
    pub(crate) fn field(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// `:path` (RFC 9113 §8.3.1): a request target as HTTP/1.1 reads one ([`check_target`]:
/// visible ASCII or UTF-8, `*` for OPTIONS alone) in origin-form or `*` — never absolute-form —
/// with no fragment, and no DEL (which HTTP/1.1's scan of the line refuses before).
fn check_path(method: &[u8], path: &[u8]) -> Result<(), Refused> {
    if !(path.starts_with(b"/") || path == b"*") {
        return Err(Refused::Malformed(
            "a :path that is neither origin-form nor *",
        ));
    }
    if path.iter().any(|&b| b == b'#' || b == 0x7f) {
        return Err(Refused::Malformed("a :path with a fragment or DEL"));
    }
    check_target(method, path).map_err(|_| Refused::Malformed("a :path that is not a target"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(fields: &[(&str, &str)]) -> HeaderList {
        let mut l = HeaderList::default();
        for (n, v) in fields {
            l.push(n.as_bytes(), v.as_bytes(), 16_384, false);
        }
        l
    }

    const GET: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", "/a?b"),
    ];

    #[test]
    fn a_whole_request_is_read_back() {
        let mut fields = GET.to_vec();
        fields.push(("accept", "*/*"));
        fields.push(("te", "trailers"));
        let l = list(&fields);
        assert_eq!(l.finish_request(false), Ok(()));
        assert_eq!(
            (l.method(), l.path(), l.authority()),
            (&b"GET"[..], &b"/a?b"[..], &b"example.com"[..])
        );
        assert_eq!(l.field(b"accept"), Some(&b"*/*"[..]));
        assert_eq!(l.fields().count(), 2);
    }

    /// RFC 9113 §8.2–8.3 and RFC 8441 §4, one row a rule.
    #[test]
    fn each_broken_rule_makes_the_request_malformed() {
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut f = GET.to_vec();
            f.extend_from_slice(extra);
            f
        };
        let table: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (with(&[("Accept", "x")]), "an upper-case name"),
            (with(&[("connection", "close")]), "connection"),
            (
                with(&[("transfer-encoding", "chunked")]),
                "transfer-encoding",
            ),
            (with(&[("upgrade", "websocket")]), "upgrade"),
            (with(&[("keep-alive", "1")]), "keep-alive"),
            (with(&[("te", "gzip")]), "te other than trailers"),
            (with(&[("x", "a\nb")]), "LF in a value"),
            (with(&[("x", " a")]), "leading space"),
            (with(&[("x", "a\t")]), "trailing tab"),
            (with(&[(":foo", "x")]), "an unknown pseudo-header"),
            (with(&[(":status", "200")]), "a response pseudo-header"),
            (
                with(&[("accept", "x"), (":method", "GET")]),
                "a pseudo-header after a field",
            ),
            (with(&[(":path", "/b")]), "a pseudo-header twice"),
            (vec![(":scheme", "https"), (":path", "/")], "no :method"),
            (vec![(":method", "GET"), (":path", "/")], "no :scheme"),
            (vec![(":method", "GET"), (":scheme", "http")], "no :path"),
            (
                vec![(":method", "GET"), (":scheme", "http"), (":path", "")],
                "an empty :path",
            ),
            (
                vec![
                    (":method", "CONNECT"),
                    (":authority", "a:443"),
                    (":path", "/"),
                ],
                "a CONNECT with :path",
            ),
            (vec![(":method", "CONNECT")], "a CONNECT without :authority"),
            (with(&[(":protocol", "websocket")]), ":protocol on a GET"),
        ];
        // The values of the pseudo-headers, as an HTTP/1.1 request line's.
        let value = |name: &'static str, v: &'static str| {
            GET.iter()
                .map(|&(n, old)| (n, if n == name { v } else { old }))
                .collect::<Vec<_>>()
        };
        let table = table.into_iter().chain([
            (value(":path", "a"), ":path not starting with /"),
            (value(":path", "http://a/b"), "absolute-form"),
            (value(":path", "*"), "* on GET"),
            (value(":path", "/a b"), "a space in :path"),
            (value(":path", "/a\tb"), "a tab in :path"),
            (value(":path", "/a\x7fb"), "DEL in :path"),
            (value(":path", "/a\x1bb"), "ESC in :path"),
            (value(":path", "/a#frag"), "a fragment"),
            (value(":method", ""), "an empty :method"),
            (value(":method", "G T"), "a space in :method"),
            (value(":method", "GE(T"), "a non-token :method"),
            (value(":scheme", ""), "an empty :scheme"),
            (value(":scheme", "ht tp"), "a space in :scheme"),
            (value(":authority", "a b"), "a space in :authority"),
            (value(":authority", "user@example.com"), "userinfo"),
        ]);
        for (fields, rule) in table {
            assert!(
                matches!(
                    list(&fields).finish_request(true),
                    Err(Refused::Malformed(_))
                ),
                "{rule}"
            );
        }
    }

    #[test]
    fn a_path_that_is_not_utf8_is_malformed_and_options_may_ask_for_star() {
        let mut l = HeaderList::default();
        for (n, v) in [
            (":method", &b"GET"[..]),
            (":scheme", b"http"),
            (":path", b"/\xff"),
        ] {
            l.push(n.as_bytes(), v, 16_384, false);
        }
        assert!(matches!(
            l.finish_request(false),
            Err(Refused::Malformed(_))
        ));
        let star = [(":method", "OPTIONS"), (":scheme", "http"), (":path", "*")];
        assert_eq!(list(&star).finish_request(false), Ok(()));
        let utf8 = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/caf\u{e9}?q=\u{e9}"),
        ];
        assert_eq!(list(&utf8).finish_request(false), Ok(()));
        let port = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "[::1]:8443"),
            (":path", "/"),
        ];
        assert_eq!(list(&port).finish_request(false), Ok(()));
    }

    #[test]
    fn content_length_is_digits_and_one_value() {
        let with = |values: &[&'static str]| {
            let mut f = GET.to_vec();
            f.extend(values.iter().map(|v| ("content-length", *v)));
            list(&f).content_length()
        };
        assert_eq!(with(&[]), Ok(None));
        assert_eq!(with(&["5"]), Ok(Some(5)));
        assert_eq!(with(&["5", "5"]), Ok(Some(5)));
        for bad in [
            &["+5"][..],
            &["-1"],
            &["5", "6"],
            &["5, 6"],
            &[""],
            &["0x5"],
            &["99999999999999999999999"],
        ] {
            assert!(with(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn extended_connect_needs_the_setting_and_its_pseudo_headers() {
        let ws = [
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "https"),
            (":path", "/chat"),
            (":authority", "example.com"),
        ];
        assert_eq!(list(&ws).finish_request(true), Ok(()));
        assert_eq!(list(&ws).protocol(), b"websocket");
        assert!(list(&ws).finish_request(false).is_err(), "not enabled");
        assert!(
            list(&ws[..4]).finish_request(true).is_err(),
            "no :authority"
        );
        let plain = [(":method", "CONNECT"), (":authority", "example.com:443")];
        assert_eq!(list(&plain).finish_request(true), Ok(()));
    }

    #[test]
    fn a_list_over_its_size_is_too_large_and_trailers_take_no_pseudo_headers() {
        let mut l = HeaderList::default();
        for (n, v) in GET {
            l.push(n.as_bytes(), v.as_bytes(), 150, false);
        }
        assert_eq!(l.finish_request(false), Err(Refused::TooLarge));
        let mut t = HeaderList::default();
        t.push(b"x-checksum", b"1", 1000, true);
        assert_eq!(t.finish_trailers(), Ok(()));
        t.push(b":path", b"/", 1000, true);
        assert!(matches!(t.finish_trailers(), Err(Refused::Malformed(_))));
    }
}
