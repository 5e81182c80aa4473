//! The opening handshake (RFC 6455 §4): checking a client's upgrade request, the server's 101
//! reply, and the client's request.

use base64::Engine as _;
use sha1::{Digest, Sha1};

use crate::http::fields::has_token;
use crate::http::grammar::{Lines, is_sendable_target_byte};
use crate::http::{HeadLimits, HeadParser, Refusal, Request, Response, Version, response_bytes};

/// The GUID RFC 6455 §1.3 appends to the key before hashing.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The value of header `name` in raw message text, the name matched without regard to case and
/// passed with its trailing colon and space (`"Sec-WebSocket-Key: "`; without them works too).
/// The value is read from the original bytes, case intact, without surrounding whitespace; `""`
/// when absent. Only the head (up to the first empty line) is searched.
///
/// ```
/// let raw = b"GET / HTTP/1.1\r\nsec-websocket-key: AbC==\r\n\r\n";
/// assert_eq!(web::ws::header_value(raw, "Sec-WebSocket-Key: "), "AbC==");
/// assert_eq!(web::ws::header_value(raw, "Upgrade: "), "");
/// ```
pub fn header_value(raw: &[u8], name: &str) -> String {
    let name = name.trim_end_matches(' ').trim_end_matches(':').as_bytes();
    field_lines(raw)
        .find_map(|line| {
            let (n, rest) = (line.get(..name.len())?, line.get(name.len()..)?);
            let value = rest.strip_prefix(b":")?;
            n.eq_ignore_ascii_case(name)
                .then(|| String::from_utf8_lossy(value.trim_ascii()).into_owned())
        })
        .unwrap_or_default()
}

/// The field lines of a raw head, without their line ends: what follows the request line, up to
/// the first empty line. Empty lines before the request line are skipped, as the server's parser
/// skips them (RFC 9112 §2.2), so these helpers and [`upgrade_reply`] read the same lines.
fn field_lines(raw: &[u8]) -> impl Iterator<Item = &[u8]> {
    Lines::all(raw)
        .skip_while(|line| line.is_empty())
        .skip(1)
        .take_while(|line| !line.is_empty())
}

/// The `Sec-WebSocket-Accept` value for a client's `Sec-WebSocket-Key`: base64 of the SHA-1 of
/// the key followed by the RFC's GUID.
///
/// ```
/// assert_eq!(web::ws::accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
/// ```
pub fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.trim().as_bytes());
    sha.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// Whether the raw request carries a `Sec-WebSocket-Key` header (name matched case-blind).
///
/// ```
/// assert!(web::ws::ws_wanted(b"GET / HTTP/1.1\r\nSEC-WEBSOCKET-KEY: x\r\n\r\n"));
/// assert!(!web::ws::ws_wanted(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
/// ```
pub fn ws_wanted(request_raw: &[u8]) -> bool {
    raw_has_header(request_raw, b"sec-websocket-key")
}

fn raw_has_header(raw: &[u8], name: &[u8]) -> bool {
    field_lines(raw).any(|line| {
        line.len() > name.len()
            && line[name.len()] == b':'
            && line[..name.len()].eq_ignore_ascii_case(name)
    })
}

/// Checks an upgrade request (RFC 6455 §4.2.1) and returns the reply to write: the 101 that
/// opens the WebSocket (`Ok`), or the HTTP refusal (`Err`): 400 for a request that is not a
/// valid upgrade (not GET, not HTTP/1.1, `Upgrade` without `websocket`, `Connection` without
/// `upgrade`, a key that does not decode to 16 bytes), 426 with `Upgrade: websocket` and
/// `Sec-WebSocket-Version: 13` for another version. No subprotocol or extension is accepted.
///
/// ```
/// let raw = b"GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
/// Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
/// let reply = web::ws::upgrade_reply(raw).unwrap();
/// assert!(reply.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
/// let refusal = web::ws::upgrade_reply(b"POST /chat HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err();
/// assert!(refusal.starts_with(b"HTTP/1.1 400 Bad Request\r\n"));
/// ```
pub fn upgrade_reply(request_raw: &[u8]) -> Result<Vec<u8>, Vec<u8>> {
    let checked = match HeadParser::new(HeadLimits::default()).parse(request_raw) {
        Ok(Some(head)) => check_upgrade(&head.request, head.version),
        Ok(None) => Err(bad("incomplete request")),
        Err(e) => Err(bad(e.reason())),
    };
    checked
        .map(|accept| switching_protocols(&accept, None))
        .map_err(|refusal| response_bytes(&refusal, false))
}

/// A 400 refusal of an upgrade, with its reason.
fn bad(reason: &str) -> Response {
    Refusal::BadUpgrade(reason).response()
}

/// The checks of RFC 6455 §4.2.1 on an upgrade request: `Ok` with the `Sec-WebSocket-Accept`
/// value, or the refusal to answer with.
pub(crate) fn check_upgrade(req: &Request, version: Version) -> Result<String, Response> {
    let has_token = |name: &str, token: &str| {
        req.headers()
            .filter(|h| h.name().eq_ignore_ascii_case(name))
            .any(|h| has_token(h.value(), token))
    };
    if req.method() != "GET" || version != Version::Http11 {
        return Err(bad("a WebSocket upgrade is a GET over HTTP/1.1"));
    }
    if !has_token("upgrade", "websocket") || !has_token("connection", "upgrade") {
        return Err(bad(
            "not a WebSocket upgrade (Upgrade: websocket, Connection: Upgrade)",
        ));
    }
    let key = req.header("sec-websocket-key").trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(key)
        .unwrap_or_default();
    if decoded.len() != 16 {
        return Err(bad("Sec-WebSocket-Key must be 16 bytes in base64"));
    }
    if req.header("sec-websocket-version").trim() != "13" {
        return Err(Refusal::WebSocketVersion.response());
    }
    Ok(accept_key(key))
}

/// The 101 reply that switches the connection to WebSocket (a 1xx is never a handler's
/// `Response`: it is written here, once), with the extensions agreed, if any.
pub(crate) fn switching_protocols(accept: &str, extensions: Option<&str>) -> Vec<u8> {
    let extensions = extensions
        .map(|e| format!("Sec-WebSocket-Extensions: {e}\r\n"))
        .unwrap_or_default();
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n{extensions}\r\n"
    )
    .into_bytes()
}

/// The values of every `Sec-WebSocket-Extensions` line of `req`.
pub(crate) fn extensions_of(req: &Request) -> Vec<&str> {
    req.headers()
        .filter(|h| h.name().eq_ignore_ascii_case("sec-websocket-extensions"))
        .filter_map(|h| std::str::from_utf8(h.value()).ok())
        .collect()
}

/// A client's upgrade request: `GET <path> HTTP/1.1`, `Host: <host>`, `Upgrade: websocket`,
/// then `Connection: Upgrade`, a fresh random `Sec-WebSocket-Key` and
/// `Sec-WebSocket-Version: 13`.
///
/// `host` and `path` are sent as one line each, whatever they hold: a byte that may not stand
/// in a request line (a space, CR, LF or another control byte, checked as the HTTP client
/// checks its requests) is sent percent-encoded, so no input can end the line early and add
/// headers or a second request; a server refuses such a target or host as it sees fit.
///
/// ```
/// let req = web::ws::ws_handshake_request("example.com", "/chat");
/// assert!(req.starts_with(b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n"));
/// let smuggled = web::ws::ws_handshake_request("h", "/a\r\n\r\nGET /other");
/// assert!(smuggled.starts_with(b"GET /a%0D%0A%0D%0AGET%20/other HTTP/1.1\r\nHost: h\r\n"));
/// ```
pub fn ws_handshake_request(host: &str, path: &str) -> Vec<u8> {
    let key = base64::engine::general_purpose::STANDARD.encode(random_16());
    let (host, path) = (sendable(host), sendable(path));
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes()
}

/// `part` with every byte that may not stand in a request line percent-encoded.
fn sendable(part: &str) -> std::borrow::Cow<'_, str> {
    if part.bytes().all(is_sendable_target_byte) {
        return part.into();
    }
    let mut out = String::with_capacity(part.len() + 8);
    for c in part.chars() {
        if c.is_ascii() && !is_sendable_target_byte(c as u8) {
            out.push_str(&format!("%{:02X}", c as u8));
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// 16 unpredictable bytes (for a fresh key: RFC 6455 asks for a random nonce, so that caches
/// and intermediaries cannot take one connection for another). Made with std's portable
/// randomness: SipHash under the keys std draws from the operating system for each thread
/// (`RandomState`), over a process-wide counter, so no two keys repeat.
pub(crate) fn random_16() -> [u8; 16] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 16];
    for half in bytes.chunks_exact_mut(8) {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        half.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_keys_do_not_repeat_and_use_every_byte() {
        let keys: std::collections::HashSet<[u8; 16]> = (0..10_000).map(|_| random_16()).collect();
        assert_eq!(keys.len(), 10_000);
        // Every byte position takes many values (not a counter in plain sight).
        for at in 0..16 {
            let values: std::collections::HashSet<u8> = keys.iter().map(|k| k[at]).collect();
            assert!(values.len() > 200, "byte {at}: {} values", values.len());
        }
    }

    const GOOD: &str = "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

    #[test]
    fn the_rfc_example_is_accepted() {
        let reply = String::from_utf8(upgrade_reply(GOOD.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            reply,
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
        let lists = GOOD
            .replace("Upgrade: websocket", "Upgrade: foo, WebSocket")
            .replace("Connection: Upgrade", "Connection: keep-alive, upgrade");
        assert!(upgrade_reply(lists.as_bytes()).is_ok());
    }

    #[test]
    fn bad_upgrades_are_refused_with_400_or_426() {
        let cases: &[(&str, &str, &str)] = &[
            ("GET /chat", "POST /chat", "HTTP/1.1 400 "),
            ("HTTP/1.1\r\nHost", "HTTP/1.0\r\nHost", "HTTP/1.1 400 "),
            ("Upgrade: websocket", "Upgrade: h2c", "HTTP/1.1 400 "),
            (
                "Connection: Upgrade",
                "Connection: keep-alive",
                "HTTP/1.1 400 ",
            ),
            (
                "dGhlIHNhbXBsZSBub25jZQ==",
                "dGhlIHNhbXBsZQ==",
                "HTTP/1.1 400 ",
            ),
            ("dGhlIHNhbXBsZSBub25jZQ==", "not base64!", "HTTP/1.1 400 "),
            (
                "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Version: 8",
                "HTTP/1.1 426 ",
            ),
            ("Sec-WebSocket-Version: 13\r\n", "", "HTTP/1.1 426 "),
            ("Host: server.example.com\r\n", "", "HTTP/1.1 400 "),
        ];
        for (from, to, status) in cases {
            let raw = GOOD.replace(from, to);
            let reply = String::from_utf8(upgrade_reply(raw.as_bytes()).unwrap_err()).unwrap();
            assert!(reply.starts_with(status), "{from} -> {to}: {reply}");
            assert!(reply.contains("Connection: close\r\n"));
            assert_eq!(
                reply.contains("Sec-WebSocket-Version: 13\r\n"),
                status.contains("426")
            );
            assert_eq!(
                reply.contains("Upgrade: websocket\r\n"),
                status.contains("426")
            );
        }
    }

    #[test]
    fn header_value_cases() {
        let raw =
            b"GET / HTTP/1.1\r\nHost: a\r\nX-Key:   MiXeD Case  \r\nx-other: 1\r\n\r\nX-Body: no";
        let cases = [
            ("X-Key: ", "MiXeD Case"),
            ("x-key: ", "MiXeD Case"),
            ("X-KEY", "MiXeD Case"),
            ("X-Other: ", "1"),
            ("X-Body: ", ""),
            ("X: ", ""),
            ("GET / HTTP/1.1", ""),
        ];
        for (name, want) in cases {
            assert_eq!(header_value(raw, name), want, "{name}");
        }
    }

    /// Regression (fuzz target `handshake`): empty lines before the request line, which the
    /// parser skips, made `ws_wanted` and `header_value` see no fields while `upgrade_reply`
    /// answered 101.
    #[test]
    fn raw_helpers_skip_empty_lines_before_the_request_line_as_the_parser_does() {
        let head = "GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        for lead in ["", "\r\n", "\r\n\r\n"] {
            let raw = format!("{lead}{head}");
            let raw = raw.as_bytes();
            assert!(ws_wanted(raw), "{lead:?}");
            assert_eq!(
                header_value(raw, "Sec-WebSocket-Key: "),
                "dGhlIHNhbXBsZSBub25jZQ=="
            );
            assert_eq!(header_value(raw, "Host"), "a");
            assert_eq!(header_value(raw, "GET /chat HTTP/1.1"), "");
            assert!(upgrade_reply(raw).is_ok(), "{lead:?}");
        }
    }

    #[test]
    fn handshake_requests_have_fresh_16_byte_keys() {
        let a = ws_handshake_request("h", "/");
        let b = ws_handshake_request("h", "/");
        let key_a = header_value(&a, "Sec-WebSocket-Key: ");
        assert_ne!(key_a, header_value(&b, "Sec-WebSocket-Key: "));
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&key_a)
                .unwrap()
                .len(),
            16
        );
        assert!(
            upgrade_reply(&a).is_ok(),
            "our own request is a valid upgrade"
        );
    }
}
