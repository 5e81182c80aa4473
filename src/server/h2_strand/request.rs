//! A stream's request as a handler sees any request, and what its reply may be.

use crate::h2::headers::HeaderList;
use crate::http::message::text::as_text;
use crate::http::{ReplyRules, Request};

/// What a reply on a stream may be: the connection is not the reply's to keep or close.
pub(super) const REPLY_RULES: ReplyRules = ReplyRules {
    keep_alive: true,
    head_only: false,
    http10: false,
};

/// The request a header list stands for, as a handler sees any request: `:authority` answers
/// `host` (when no `host` field came), cookies split over fields are one `cookie` again
/// (RFC 9113 §8.2.3).
pub(super) fn request_of(head: &HeaderList) -> Request {
    let method = as_text(head.method());
    let path = as_text(head.path());
    let host = match head.field(b"host") {
        None if !head.authority().is_empty() => Some(("host", head.authority())),
        _ => None,
    };
    // Cookies split over several fields are joined (allocating only then).
    let mut cookies = head.fields().filter(|(name, _)| *name == b"cookie");
    let joined = match (cookies.next(), cookies.next()) {
        (Some((_, first)), Some((_, second))) => {
            let mut joined = [first, second].join(&b"; "[..]);
            for (_, more) in cookies {
                joined.extend_from_slice(b"; ");
                joined.extend_from_slice(more);
            }
            Some(joined)
        }
        _ => None,
    };
    let fields = head
        .fields()
        .filter(|(name, _)| joined.is_none() || *name != b"cookie")
        .map(|(name, value)| (as_text(name), value))
        .chain(host)
        .chain(joined.as_deref().map(|j| ("cookie", j)));
    Request::from_fields(method, path, fields)
}

/// What a reply to `request` on a stream may be: its head alone for `HEAD`.
pub(super) fn rules_of(request: &Request) -> ReplyRules {
    ReplyRules {
        head_only: request.method_is("HEAD"),
        ..REPLY_RULES
    }
}
