//! Route patterns: `/topics/:name/posts/:id`, `/files/*path`. A pattern is its segments —
//! the parts between `/` — each literal, a parameter (`:name`, one non-empty segment) or, last,
//! a tail (`*name`, the rest of the path, possibly empty). A path is split the same way, so
//! `/a` and `/a/` are different paths, as they are to a browser resolving relative links.

use std::fmt;

/// One segment of a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Literal(Box<str>),
    Param(Box<str>),
    Tail(Box<str>),
}

/// What is wrong with a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadPattern {
    pattern: String,
    reason: &'static str,
}

impl fmt::Display for BadPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "route pattern {:?}: {}", self.pattern, self.reason)
    }
}

impl std::error::Error for BadPattern {}

pub(crate) fn bad(pattern: &str, reason: &'static str) -> BadPattern {
    BadPattern {
        pattern: pattern.to_owned(),
        reason,
    }
}

/// The most parameters one pattern may name (a match captures them on the stack).
pub(crate) const MAX_PARAMS: usize = 8;
const _: () = assert!(MAX_PARAMS == 8, "the refusal below names the figure");

/// The segments of `pattern`.
pub(crate) fn parse(pattern: &str) -> Result<Vec<Seg>, BadPattern> {
    let bad = |reason| bad(pattern, reason);
    let Some(rest) = pattern.strip_prefix('/') else {
        return Err(bad("it must start with '/'"));
    };
    if pattern.contains(['?', '#']) {
        return Err(bad("a query or fragment is not part of a route"));
    }
    let mut segs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut pieces = rest.split('/').peekable();
    while let Some(piece) = pieces.next() {
        let seg = match piece.as_bytes().first() {
            Some(b':') | Some(b'*') => {
                let name = &piece[1..];
                if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    return Err(bad("a parameter is named with letters, digits and '_'"));
                }
                if names.contains(&name) {
                    return Err(bad("two parameters of the same name"));
                }
                names.push(name);
                if piece.starts_with('*') {
                    if pieces.peek().is_some() {
                        return Err(bad("a '*' tail must be the last segment"));
                    }
                    Seg::Tail(name.into())
                } else {
                    Seg::Param(name.into())
                }
            }
            _ if piece.contains([':', '*']) => {
                return Err(bad("':' and '*' open a segment of their own"));
            }
            _ => Seg::Literal(piece.into()),
        };
        segs.push(seg);
    }
    if names.len() > MAX_PARAMS {
        return Err(bad("more than 8 parameters"));
    }
    Ok(segs)
}

/// The segments of a request path (its query already cut): the path without its leading `/`,
/// or `None` for a path that does not start with one (`*`, an absolute form).
pub(crate) fn path_segments(path: &str) -> Option<&str> {
    path.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Seg {
        Seg::Literal(s.into())
    }

    #[test]
    fn patterns_parse_into_segments_or_say_what_is_wrong() {
        let ok: &[(&str, Vec<Seg>)] = &[
            ("/", vec![lit("")]),
            ("/a", vec![lit("a")]),
            ("/a/", vec![lit("a"), lit("")]),
            (
                "/topics/:name",
                vec![lit("topics"), Seg::Param("name".into())],
            ),
            ("/f/*rest", vec![lit("f"), Seg::Tail("rest".into())]),
            (
                "/:a/:b_2",
                vec![Seg::Param("a".into()), Seg::Param("b_2".into())],
            ),
        ];
        for (pattern, segs) in ok {
            assert_eq!(parse(pattern).as_ref(), Ok(segs), "{pattern}");
        }
        for bad in [
            "", "a", "/a?b", "/:", "/*", "/*a/b", "/a:b", "/:a/:a", "/:a-b", "/x*",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let most: String = (0..MAX_PARAMS).map(|i| format!("/:p{i}")).collect();
        assert!(parse(&most).is_ok());
        let many = format!("{most}/:one_more");
        assert!(parse(&many).is_err());
    }
}
