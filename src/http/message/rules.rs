//! What a request allows its reply, decided once from its head.

use super::head::{RequestHead, Version};

/// What a request allows its reply, decided once when its head is parsed and carried with it
/// to wherever the reply is written (at once, deferred, streamed): whether the connection may
/// stay open after it, whether the reply is its head alone (`HEAD`), and whether a body of
/// unknown length must end with the connection (an HTTP/1.0 client knows no chunks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReplyRules {
    /// The connection may stay open after the reply (the request allowed it).
    pub(crate) keep_alive: bool,
    /// A `HEAD` request: the reply's head only.
    pub(crate) head_only: bool,
    /// An HTTP/1.0 request: a body of unknown length is close-delimited.
    pub(crate) http10: bool,
}

impl ReplyRules {
    /// The rules of the request `head` opens.
    pub(crate) fn of(head: &RequestHead) -> ReplyRules {
        ReplyRules {
            keep_alive: head.keep_alive,
            head_only: head.request.method_is("HEAD"),
            http10: head.version == Version::Http10,
        }
    }

    /// The same rules, the connection to end after this reply unless `keep` (a server that
    /// stops, a spent budget).
    pub(crate) fn keeping(self, keep: bool) -> ReplyRules {
        ReplyRules {
            keep_alive: self.keep_alive && keep,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{HeadLimits, HeadParser};

    fn rules(head: &[u8]) -> ReplyRules {
        let mut parser = HeadParser::new(HeadLimits::default());
        let head = parser.parse(head).unwrap().unwrap();
        ReplyRules::of(&head)
    }

    #[test]
    fn each_request_gets_its_rules_from_its_head() {
        let table: [(&[u8], bool, bool, bool); 5] = [
            (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true, false, false),
            (b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", true, true, false),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                false,
                false,
                false,
            ),
            (b"GET / HTTP/1.0\r\n\r\n", false, false, true),
            (
                b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                true,
                true,
                true,
            ),
        ];
        for (head, keep_alive, head_only, http10) in table {
            let want = ReplyRules {
                keep_alive,
                head_only,
                http10,
            };
            assert_eq!(rules(head), want, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn keeping_only_ever_closes() {
        let open = rules(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert!(open.keeping(true).keep_alive);
        assert!(!open.keeping(false).keep_alive);
        let closing = rules(b"GET / HTTP/1.0\r\n\r\n");
        assert!(!closing.keeping(true).keep_alive);
    }
}
