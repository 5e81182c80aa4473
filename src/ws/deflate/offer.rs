//! Negotiating permessage-deflate (RFC 7692 §5, §7.1): the offers in a client's
//! `Sec-WebSocket-Extensions`, the server's choice and response, and the client's check of it.
//!
//! Pure functions over header values, with table-driven tests below.

use super::{Agreed, Deflate};

/// The extension's name.
pub(crate) const NAME: &str = "permessage-deflate";

/// What the client offers: the extension with `client_max_window_bits` (so the server may
/// shrink our window), our messages and theirs with context takeover as the server allows.
pub(crate) const CLIENT_OFFER: &str = "permessage-deflate; client_max_window_bits";

/// One extension parameter: its name and value, if any (a quoted value unquoted).
type Param<'a> = (&'a str, Option<&'a str>);

/// The parameters of one `permessage-deflate` offer or response, each at most once and valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) server_no_context_takeover: bool,
    pub(crate) client_no_context_takeover: bool,
    pub(crate) server_max_window_bits: Option<u8>,
    /// `Some(None)`: present without a value (allowed in an offer only).
    pub(crate) client_max_window_bits: Option<Option<u8>>,
}

/// Splits `s` at `sep` where it is not inside a quoted string.
fn split_outside_quotes(s: &str, sep: u8) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    let mut escaped = false;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, b) in s.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            _ if b == sep && !quoted => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter()
}

/// The extensions listed in `values` (every `Sec-WebSocket-Extensions` line), each as its name
/// and parameters.
fn extensions<'a>(values: &[&'a str]) -> Vec<(&'a str, Vec<Param<'a>>)> {
    let mut out = Vec::new();
    for value in values {
        for ext in split_outside_quotes(value, b',') {
            let mut parts = split_outside_quotes(ext, b';').map(str::trim);
            let name = parts.next().unwrap_or("");
            if name.is_empty() {
                continue;
            }
            let params = parts
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => {
                        let v = v.trim();
                        let v = v
                            .strip_prefix('"')
                            .and_then(|v| v.strip_suffix('"'))
                            .unwrap_or(v);
                        (k.trim(), Some(v))
                    }
                    None => (p, None),
                })
                .collect();
            out.push((name, params));
        }
    }
    out
}

/// A window size: a decimal 8 to 15 without a leading zero (RFC 7692 §7.1.2).
fn window_bits(v: &str) -> Option<u8> {
    match v.as_bytes() {
        [b'8'] => Some(8),
        [b'9'] => Some(9),
        [b'1', d @ b'0'..=b'5'] => Some(10 + (d - b'0')),
        _ => None,
    }
}

/// The parameters of one offer or response, or `None` when one is unknown, repeated, or has a
/// value it may not have (such an offer is declined; such a response fails the handshake).
fn params(list: &[Param<'_>]) -> Option<Params> {
    let mut p = Params::default();
    let mut seen = [false; 4];
    for &(name, value) in list {
        let which = match name.to_ascii_lowercase().as_str() {
            "server_no_context_takeover" => {
                value.is_none().then_some(())?;
                p.server_no_context_takeover = true;
                0
            }
            "client_no_context_takeover" => {
                value.is_none().then_some(())?;
                p.client_no_context_takeover = true;
                1
            }
            "server_max_window_bits" => {
                p.server_max_window_bits = Some(window_bits(value?)?);
                2
            }
            "client_max_window_bits" => {
                p.client_max_window_bits = Some(match value {
                    Some(v) => Some(window_bits(v)?),
                    None => None,
                });
                3
            }
            _ => return None,
        };
        if std::mem::replace(&mut seen[which], true) {
            return None;
        }
    }
    Some(p)
}

/// The server's choice among a client's offers (`values`: its `Sec-WebSocket-Extensions`
/// lines): the first `permessage-deflate` offer it can honour, what it means for this
/// connection, and the response header's value. `None`: no extension (never a failed
/// handshake).
///
/// The server always asks for `client_no_context_takeover`, so that one decompressor per worker
/// serves every connection; its own messages keep no context unless `config` allows a window
/// per connection and the client did not ask for `server_no_context_takeover`.
pub(crate) fn agree(values: &[&str], config: &Deflate) -> Option<(Agreed, String)> {
    extensions(values)
        .into_iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case(NAME))
        .find_map(|(_, list)| params(&list))
        .map(|offer| {
            let takeover = config
                .takeover
                .filter(|_| !offer.server_no_context_takeover);
            // Our window: what the client allows us, and no more than a kept window.
            let allowed = offer.server_max_window_bits.unwrap_or(15);
            let window = takeover.map_or(allowed, |w| w.min(allowed));
            let mut response = String::from(NAME);
            if takeover.is_none() {
                response.push_str("; server_no_context_takeover");
            }
            response.push_str("; client_no_context_takeover");
            if offer.server_max_window_bits.is_some() || takeover.is_some() {
                response.push_str(&format!("; server_max_window_bits={window}"));
            }
            let agreed = Agreed {
                window,
                takeover: takeover.is_some(),
                level: config.level,
                min_size: config.min_size,
            };
            (agreed, response)
        })
}

/// What a client agreed with the server, from the server's response to [`CLIENT_OFFER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientAgreed {
    /// How the client compresses its messages.
    pub(crate) ours: Agreed,
    /// Whether the server's messages keep their context (the client's decompressor keeps its
    /// window between messages).
    pub(crate) theirs_take_over: bool,
}

/// A client's check of the server's `Sec-WebSocket-Extensions` (`values`): `Ok(None)` when the
/// server chose no extension, `Ok(Some(..))` for a valid `permessage-deflate` response to our
/// offer, `Err` with the reason for anything else (RFC 6455 §9.1: the client fails the
/// connection).
pub(crate) fn accept_response(values: &[&str]) -> Result<Option<ClientAgreed>, String> {
    let exts = extensions(values);
    let [(name, list)] = exts.as_slice() else {
        return match exts.len() {
            0 => Ok(None),
            n => Err(format!("the server chose {n} extensions; we offered one")),
        };
    };
    if !name.eq_ignore_ascii_case(NAME) {
        return Err(format!(
            "the server chose extension {name:?}, which was not offered"
        ));
    }
    let p = params(list).ok_or("the server's permessage-deflate parameters are not valid")?;
    let client_window = match p.client_max_window_bits {
        Some(Some(bits)) => bits,
        Some(None) => return Err("client_max_window_bits without a value in a response".into()),
        None => 15,
    };
    Ok(Some(ClientAgreed {
        ours: Agreed {
            window: client_window,
            takeover: !p.client_no_context_takeover,
            level: super::LEVEL,
            min_size: super::MIN_SIZE,
        },
        theirs_take_over: !p.server_no_context_takeover,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Deflate {
        Deflate::default()
    }

    /// Offer lines, and the response with our window and takeover (`None`: declined).
    type ServerCase<'a> = (&'a [&'a str], Option<(&'a str, u8, bool)>);
    /// Response lines, and what the client then uses: its window, whether its messages and the
    /// server's keep their context (`None`: no extension).
    type ClientCase<'a> = (&'a [&'a str], Option<(u8, bool, bool)>);

    #[test]
    fn offers_and_what_the_server_answers() {
        let none = "";
        let cases: &[ServerCase<'_>] = &[
            (
                &["permessage-deflate"],
                Some((
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                    15,
                    false,
                )),
            ),
            (
                &["permessage-deflate; client_max_window_bits"],
                Some((
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                    15,
                    false,
                )),
            ),
            (
                &["Permessage-Deflate; Server_Max_Window_Bits=10"],
                Some((
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10",
                    10,
                    false,
                )),
            ),
            (
                &["permessage-deflate; server_max_window_bits=\"8\""],
                Some((
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=8",
                    8,
                    false,
                )),
            ),
            (
                &["permessage-deflate; client_no_context_takeover; server_no_context_takeover"],
                Some((
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                    15,
                    false,
                )),
            ),
            // The first offer we can honour wins, across extensions and lines.
            (
                &[
                    "x-webkit-deflate-frame",
                    "permessage-deflate; server_max_window_bits=16, permessage-deflate; client_max_window_bits=9",
                ],
                Some((
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                    15,
                    false,
                )),
            ),
            // Declined: no extension, never a failed handshake.
            (&["permessage-deflate; server_max_window_bits"], None),
            (&["permessage-deflate; server_max_window_bits=7"], None),
            (&["permessage-deflate; server_max_window_bits=08"], None),
            (&["permessage-deflate; client_max_window_bits=16"], None),
            (&["permessage-deflate; server_no_context_takeover=1"], None),
            (
                &["permessage-deflate; client_no_context_takeover; client_no_context_takeover"],
                None,
            ),
            (&["permessage-deflate; mystery"], None),
            (&["x-webkit-deflate-frame"], None),
            (&[none], None),
            (&[], None),
        ];
        for (values, want) in cases {
            let got = agree(values, &shared());
            match (got, want) {
                (None, None) => {}
                (Some((agreed, response)), Some((r, window, takeover))) => {
                    assert_eq!(response, *r, "{values:?}");
                    assert_eq!(
                        (agreed.window, agreed.takeover),
                        (*window, *takeover),
                        "{values:?}"
                    );
                }
                (got, want) => panic!("{values:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_kept_window_is_offered_unless_the_client_refuses_it() {
        let config = Deflate::default().context_takeover(12);
        let (agreed, response) = agree(&["permessage-deflate"], &config).unwrap();
        assert_eq!(
            response,
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=12"
        );
        assert_eq!((agreed.window, agreed.takeover), (12, true));
        let (agreed, _) =
            agree(&["permessage-deflate; server_max_window_bits=10"], &config).unwrap();
        assert_eq!((agreed.window, agreed.takeover), (10, true));
        let (agreed, response) =
            agree(&["permessage-deflate; server_no_context_takeover"], &config).unwrap();
        assert!(!agreed.takeover);
        assert!(response.contains("server_no_context_takeover"));
    }

    #[test]
    fn responses_a_client_accepts_or_refuses() {
        let ok: &[ClientCase<'_>] = &[
            (&[], None),
            (&["permessage-deflate"], Some((15, true, true))),
            (
                &["permessage-deflate; server_no_context_takeover; client_no_context_takeover"],
                Some((15, false, false)),
            ),
            (
                &["permessage-deflate; client_max_window_bits=9; server_max_window_bits=10"],
                Some((9, true, true)),
            ),
        ];
        for (values, want) in ok {
            let got = accept_response(values).unwrap();
            assert_eq!(
                got.map(|a| (a.ours.window, a.ours.takeover, a.theirs_take_over)),
                *want,
                "{values:?}"
            );
        }
        let refused: &[&[&str]] = &[
            &["x-other"],
            &["permessage-deflate, permessage-deflate"],
            &["permessage-deflate; client_max_window_bits"],
            &["permessage-deflate; server_max_window_bits=20"],
            &["permessage-deflate; unknown"],
        ];
        for values in refused {
            assert!(accept_response(values).is_err(), "{values:?}");
        }
    }

    #[test]
    fn quoted_values_may_hold_separators() {
        let exts = extensions(&["a; p=\"x,y;z\", b"]);
        assert_eq!(exts.len(), 2);
        assert_eq!(exts[0].1, vec![("p", Some("x,y;z"))]);
    }
}
