//! The chat's rules for what a caller sends, one place for every way in (the WebSocket upgrade
//! and `POST /api/messages`): room and member names, the query parameters they come in, and
//! which pages may open a WebSocket.

use web::http::decoded;

/// The longest room or member name, and the longest message, in bytes.
pub const MAX_NAME: usize = 64;
pub const MAX_TEXT: usize = 4096;

/// Query parameter `name` of `query`, decoded and required to be UTF-8 (`Ok(None)` when it is
/// absent): a name that is not UTF-8 is refused rather than merged with another by a lossy
/// decoding (`x%ff%fe` and `x%c0%af` would both read `x��`).
pub fn text_param(query: &str, name: &str) -> Result<Option<String>, String> {
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if decoded(key) != name.as_bytes() {
            continue;
        }
        return String::from_utf8(decoded(value))
            .map(Some)
            .map_err(|_| format!("the {name} must be UTF-8"));
    }
    Ok(None)
}

/// Checks a room or member name (`what` says which): 1 to [`MAX_NAME`] bytes, not only white
/// space, and no control characters (NUL, line breaks, ...).
pub fn check_name(what: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || value.len() > MAX_NAME {
        return Err(format!("a {what} of 1 to {MAX_NAME} bytes is needed"));
    }
    if value.trim().is_empty() {
        return Err(format!("a {what} of white space alone is not a {what}"));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("a {what} may not hold control characters"));
    }
    Ok(())
}

/// Which pages may open a WebSocket (the upgrade's `Origin`): those of the chat's own host by
/// default, or the origins given with `--allow-origin` (`*`: any).
#[derive(Clone, Debug, Default)]
pub enum Origins {
    /// An `Origin` whose host is the `Host` the request was sent to (ports aside: a proxy in
    /// front may listen on another), or no `Origin` (not a browser).
    #[default]
    SameHost,
    /// Exactly these origins (`scheme://host[:port]`), or no `Origin`.
    List(Vec<String>),
    /// Any.
    Any,
}

impl Origins {
    /// From `--allow-origin`'s value: `*`, or origins separated by commas.
    pub fn parse(value: &str) -> Origins {
        if value.trim() == "*" {
            return Origins::Any;
        }
        Origins::List(
            value
                .split(',')
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
        )
    }

    /// Whether a page of `origin` (the header, `""` when absent) may connect to `host`.
    pub fn allows(&self, origin: &str, host: &str) -> bool {
        if origin.is_empty() {
            return true;
        }
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        match self {
            Origins::Any => true,
            Origins::List(list) => list.contains(&origin),
            Origins::SameHost => {
                let authority = origin.split_once("://").map_or("", |(_, a)| a);
                host_of(authority) == host_of(&host.to_ascii_lowercase())
            }
        }
    }
}

/// The host of an authority (`host[:port]`, `[v6]:port`), without the port.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_one_rule() {
        let cases = [
            ("lobby", true),
            ("a", true),
            ("été", true),
            (&*"x".repeat(MAX_NAME), true),
            (&*"x".repeat(MAX_NAME + 1), false),
            ("", false),
            ("   ", false),
            ("\t", false),
            ("a\0b", false),
            ("\0", false),
            ("a\nb", false),
        ];
        for (name, ok) in cases {
            assert_eq!(check_name("room", name).is_ok(), ok, "{name:?}");
        }
    }

    #[test]
    fn parameters_must_be_utf8_and_are_never_merged() {
        assert_eq!(text_param("room=a+b&x=1", "room"), Ok(Some("a b".into())));
        assert_eq!(text_param("x=1", "room"), Ok(None));
        assert_eq!(text_param("room=%E2%82%AC", "room"), Ok(Some("€".into())));
        assert!(text_param("room=x%ff%fe", "room").is_err());
        assert!(text_param("room=x%c0%af", "room").is_err());
        assert_eq!(text_param("r%6fom=y", "room"), Ok(Some("y".into())));
    }

    #[test]
    fn origins() {
        let same = Origins::SameHost;
        assert!(same.allows("", "chat.example:8080"));
        assert!(same.allows("http://chat.example:8080", "chat.example:8080"));
        assert!(same.allows("https://CHAT.example", "chat.example"));
        assert!(same.allows("http://127.0.0.1:9000", "127.0.0.1"));
        assert!(same.allows("http://[::1]:8080", "[::1]:8080"));
        assert!(!same.allows("http://evil.example", "chat.example"));
        assert!(!same.allows("null", "chat.example"));
        let list = Origins::parse("https://a.example, https://b.example/");
        assert!(list.allows("https://b.example", "whatever"));
        assert!(!list.allows("https://c.example", "c.example"));
        assert!(Origins::parse("*").allows("http://anything", "x"));
    }
}
