//! `http://`/`https://` (RFC 9110 §4.2) and `ws://`/`wss://` (RFC 6455 §3) URLs: scheme, host,
//! port and the request target — what the clients need to connect and send a request.

use std::io;

/// Which pair of schemes a URL may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schemes {
    /// `http://` (port 80) and `https://` (443).
    Http,
    /// `ws://` (port 80) and `wss://` (443).
    Ws,
}

impl Schemes {
    /// The plain scheme's name and the secure one's.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Schemes::Http => ("http", "https"),
            Schemes::Ws => ("ws", "wss"),
        }
    }
}

/// A URL taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    /// `https://` or `wss://`.
    pub(crate) secure: bool,
    /// The host as written (an IPv6 address keeps its brackets).
    pub(crate) host: String,
    pub(crate) port: u16,
    /// Path and query, `/` when the URL has none (a fragment is not allowed).
    pub(crate) target: String,
}

impl Url {
    /// Parses `url`, which must have one of `schemes`; an `InvalidInput` error says what is
    /// wrong with it.
    pub(crate) fn parse(url: &str, schemes: Schemes) -> io::Result<Url> {
        let bad =
            |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{why}: {url:?}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL"))?;
        let (plain, tls) = schemes.names();
        let scheme = scheme.to_ascii_lowercase();
        let secure = if scheme == plain {
            false
        } else if scheme == tls {
            true
        } else {
            return Err(bad(&format!("not a {plain}:// or {tls}:// URL")));
        };
        // A fragment is never sent (RFC 9110 §4.2.5); a WebSocket URL may not have one.
        let rest = match (schemes, rest.split_once('#')) {
            (_, None) => rest,
            (Schemes::Http, Some((before, _))) => before,
            (Schemes::Ws, Some(_)) => return Err(bad("a WebSocket URL has no fragment")),
        };
        if rest.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(bad("a URL holds no spaces or control characters"));
        }
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        let target = match target {
            "" => "/".to_owned(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_owned(),
        };
        if authority.contains('@') {
            return Err(bad("user information is not supported"));
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (addr, after) = v6
                    .split_once(']')
                    .ok_or_else(|| bad("unclosed [ in the host"))?;
                (format!("[{addr}]"), after)
            }
            None => match authority.rfind(':') {
                Some(at) => (authority[..at].to_owned(), &authority[at..]),
                None => (authority.to_owned(), ""),
            },
        };
        if host.is_empty() || host == "[]" {
            return Err(bad("no host"));
        }
        let port = match port {
            "" => {
                if secure {
                    443
                } else {
                    80
                }
            }
            p => p
                .strip_prefix(':')
                .and_then(|p| p.parse().ok())
                .filter(|&p| p != 0)
                .ok_or_else(|| bad("bad port"))?,
        };
        Ok(Url {
            secure,
            host,
            port,
            target,
        })
    }

    /// The `Host` header's value: the host, with the port unless it is the scheme's default.
    pub(crate) fn host_header(&self) -> String {
        let default = if self.secure { 443 } else { 80 };
        if self.port == default {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The host to connect to (an IPv6 address without its brackets).
    pub(crate) fn connect_host(&self) -> &str {
        self.host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&self.host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_taken_apart() {
        // (url, secure, host, port, target, Host header)
        let table = [
            (
                "ws://example.com",
                false,
                "example.com",
                80,
                "/",
                "example.com",
            ),
            (
                "ws://example.com/chat?room=a",
                false,
                "example.com",
                80,
                "/chat?room=a",
                "example.com",
            ),
            (
                "wss://example.com/",
                true,
                "example.com",
                443,
                "/",
                "example.com",
            ),
            (
                "ws://127.0.0.1:9001",
                false,
                "127.0.0.1",
                9001,
                "/",
                "127.0.0.1:9001",
            ),
            ("WS://h:80/x", false, "h", 80, "/x", "h"),
            ("ws://h?q=1", false, "h", 80, "/?q=1", "h"),
            (
                "ws://[::1]:9001/p",
                false,
                "[::1]",
                9001,
                "/p",
                "[::1]:9001",
            ),
            ("wss://[::1]/p", true, "[::1]", 443, "/p", "[::1]"),
        ];
        for (url, secure, host, port, target, header) in table {
            let u = Url::parse(url, Schemes::Ws).unwrap();
            assert_eq!(
                (u.secure, u.host.as_str(), u.port, u.target.as_str()),
                (secure, host, port, target),
                "{url}"
            );
            assert_eq!(u.host_header(), header, "{url}");
        }
        assert_eq!(
            Url::parse("ws://[::1]/", Schemes::Ws)
                .unwrap()
                .connect_host(),
            "::1"
        );
        let http = Url::parse("http://example.com:8080/a?b#frag", Schemes::Http).unwrap();
        assert_eq!(
            (
                http.secure,
                http.host.as_str(),
                http.port,
                http.target.as_str()
            ),
            (false, "example.com", 8080, "/a?b")
        );
        assert_eq!(Url::parse("https://h", Schemes::Http).unwrap().port, 443);
    }

    #[test]
    fn bad_urls_are_refused_with_a_reason() {
        for (url, why) in [
            ("http://h/", "not a ws:// or wss:// URL"),
            ("h/path", "not a URL"),
            ("ws:///path", "no host"),
            ("ws://h:0/", "bad port"),
            ("ws://h:70000/", "bad port"),
            ("ws://h:x/", "bad port"),
            ("ws://h/#top", "no fragment"),
            ("ws://h/a b", "no spaces"),
            ("ws://h/a\r\nX: y", "no spaces or control"),
            ("ws://u:p@h/", "user information"),
            ("ws://[::1/", "unclosed ["),
        ] {
            let err = Url::parse(url, Schemes::Ws).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{url}");
            assert!(err.to_string().contains(why), "{url}: {err}");
        }
        for (url, why) in [
            ("ws://h/", "not a http:// or https:// URL"),
            ("http://h/a b", "no spaces"),
        ] {
            let err = Url::parse(url, Schemes::Http).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{url}");
            assert!(err.to_string().contains(why), "{url}: {err}");
        }
    }

    proptest::proptest! {
        /// Any string is parsed or refused, never a panic; what is parsed holds no byte that
        /// could end a request line, and its target starts with `/`.
        #[test]
        fn any_string_is_parsed_or_refused(url in "(ws|wss|http|https|WS|x)?(://)?[ -~\\[\\]:@/?#%\r\n\t]{0,40}") {
            for schemes in [Schemes::Ws, Schemes::Http] {
                if let Ok(u) = Url::parse(&url, schemes) {
                    proptest::prop_assert!(u.target.starts_with('/'));
                    proptest::prop_assert!(u.port != 0);
                    let line = format!("{} {}", u.host_header(), u.target);
                    proptest::prop_assert!(!line.bytes().any(|b| b.is_ascii_control()));
                    proptest::prop_assert!(!u.host.is_empty() && !u.host.contains(['/', '?', '#', ' ']));
                }
            }
        }
    }
}
