//! The routes as a tree of path segments: at each node the literal segments that may follow
//! (found by comparing one word each: length and first bytes), one parameter child and one
//! tail. A path is matched one segment at a time, a literal before a parameter before a tail,
//! going back only when a branch ends without a route (each node is visited at most once), so
//! matching costs one look per segment over the literals that may follow it.

use super::pattern::{MAX_PARAMS, Seg};

/// The parameters a match captured: where each value lies in the path (from the `/` that
/// starts it), in the pattern's order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Captures {
    spans: [(u32, u32); MAX_PARAMS],
    len: usize,
}

impl Captures {
    /// Each value's start and length.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.spans[..self.len]
            .iter()
            .map(|&(at, len)| (at as usize, len as usize))
    }

    /// Records a value (false past [`MAX_PARAMS`], or for a path past 4 GiB).
    fn push(&mut self, at: usize, len: usize) -> bool {
        let (Some(slot), Ok(at), Ok(len)) = (
            self.spans.get_mut(self.len),
            u32::try_from(at),
            u32::try_from(len),
        ) else {
            return false;
        };
        *slot = (at, len);
        self.len += 1;
        true
    }
}

/// A segment's length and first seven bytes in one word: literals are told apart by one
/// comparison of words before any of bytes (most differ there).
fn key(seg: &str) -> u64 {
    let mut word = [0u8; 8];
    let head = seg.len().min(7);
    word[..head].copy_from_slice(&seg.as_bytes()[..head]);
    word[7] = seg.len().min(255) as u8;
    u64::from_le_bytes(word)
}

#[derive(Debug, Default)]
pub(crate) struct Node {
    /// The literal segments' [`key`]s, in the order of `statics`.
    keys: Vec<u64>,
    statics: Vec<(Box<str>, Node)>,
    param: Option<Box<Node>>,
    /// The route a tail here ends in.
    tail: Option<usize>,
    /// The route a path ending here is.
    end: Option<usize>,
}

impl Node {
    /// Where a route of `segs` ends: its place, made if new (`Err`: the route index already
    /// there).
    pub(crate) fn insert(&mut self, segs: &[Seg], route: usize) -> Result<(), usize> {
        let Some((first, rest)) = segs.split_first() else {
            return match self.end {
                Some(have) => Err(have),
                None => {
                    self.end = Some(route);
                    Ok(())
                }
            };
        };
        match first {
            Seg::Literal(lit) => {
                let i = match self.literal(lit) {
                    Some(i) => i,
                    None => {
                        self.keys.push(key(lit));
                        self.statics.push((lit.clone(), Node::default()));
                        self.statics.len() - 1
                    }
                };
                self.statics[i].1.insert(rest, route)
            }
            Seg::Param(_) => self.param.get_or_insert_default().insert(rest, route),
            Seg::Tail(_) => match self.tail {
                Some(have) => Err(have),
                None => {
                    self.tail = Some(route);
                    Ok(())
                }
            },
        }
    }

    /// The route `rest` (a path without its leading `/`, which started at `at`) matches.
    pub(crate) fn find(&self, rest: &str, at: usize, caps: &mut Captures) -> Option<usize> {
        // Segments are short: a plain loop finds the slash sooner than a vectorized search.
        let (seg, next) = match rest.bytes().position(|b| b == b'/') {
            Some(slash) => (&rest[..slash], Some(&rest[slash + 1..])),
            None => (rest, None),
        };
        let after = at + seg.len() + 1;
        if let Some(i) = self.literal(seg)
            && let Some(found) = self.statics[i].1.follow(next, after, caps)
        {
            return Some(found);
        }
        if let Some(param) = &self.param
            && !seg.is_empty()
        {
            let before = caps.len;
            if caps.push(at, seg.len())
                && let Some(found) = param.follow(next, after, caps)
            {
                return Some(found);
            }
            caps.len = before;
        }
        let tail = self.tail?;
        caps.push(at, rest.len()).then_some(tail)
    }

    /// Where literal `seg` is among `statics`.
    fn literal(&self, seg: &str) -> Option<usize> {
        let want = key(seg);
        let mut at = 0;
        while let Some(found) = self.keys[at..].iter().position(|&k| k == want) {
            let i = at + found;
            if seg.len() <= 7 || *self.statics[i].0 == *seg {
                return Some(i);
            }
            at = i + 1;
        }
        None
    }

    /// The route the path continues to from this node: this node's own if it ends here.
    fn follow(&self, next: Option<&str>, at: usize, caps: &mut Captures) -> Option<usize> {
        match next {
            None => self.end,
            Some(rest) => self.find(rest, at, caps),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pattern::{parse, path_segments};
    use super::*;

    #[test]
    fn literals_win_over_parameters_over_tails_going_back_where_a_branch_ends() {
        let patterns = [
            "/",
            "/a",
            "/a/",
            "/a/b",
            "/a/:x",
            "/a/:x/c",
            "/a/b/d",
            "/f/*rest",
            "/f/special",
            "/:p/z",
        ];
        let mut root = Node::default();
        for (i, p) in patterns.iter().enumerate() {
            root.insert(&parse(p).unwrap(), i).unwrap();
        }
        fn find<'p>(root: &Node, path: &'p str) -> Option<(usize, Vec<&'p str>)> {
            let mut caps = Captures::default();
            let found = root.find(path_segments(path)?, 1, &mut caps)?;
            let values = caps.iter().map(|(at, len)| &path[at..at + len]);
            Some((found, values.collect()))
        }
        // (path, the pattern it matches and the values it captures)
        type Case<'a> = (&'a str, Option<(&'a str, &'a [&'a str])>);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("/", Some(("/", &[]))),
            ("/a", Some(("/a", &[]))),
            ("/a/", Some(("/a/", &[]))),
            ("/a/b", Some(("/a/b", &[]))),
            ("/a/q", Some(("/a/:x", &["q"]))),
            ("/a/q/c", Some(("/a/:x/c", &["q"]))),
            // `b` is a literal child of /a, but /a/b/c only exists through the parameter.
            ("/a/b/c", Some(("/a/:x/c", &["b"]))),
            ("/a/b/d", Some(("/a/b/d", &[]))),
            ("/a/q/d", None),
            ("/a//c", None),
            ("/f/special", Some(("/f/special", &[]))),
            ("/f/x/y/z", Some(("/f/*rest", &["x/y/z"]))),
            ("/f/", Some(("/f/*rest", &[""]))),
            ("/f", None),
            ("/a/z", Some(("/a/:x", &["z"]))),
            ("/q/z", Some(("/:p/z", &["q"]))),
            ("/q/y", None),
            ("*", None),
        ];
        for (path, want) in cases {
            let got = find(&root, path).map(|(i, v)| (patterns[i], v));
            let want = want.map(|(p, v)| (p, v.to_vec()));
            assert_eq!(got, want, "{path}");
        }
    }

    /// Whether `segs` matches `path` on its own, and the kinds of its segments (literal 0,
    /// parameter 1, tail 2): among patterns that match, the tree picks the least kinds.
    fn alone(segs: &[Seg], path: &str) -> Option<Vec<u8>> {
        let mut rest = Some(path.strip_prefix('/')?);
        let mut kinds = Vec::new();
        for seg in segs {
            let here = rest?;
            let (piece, next) = match here.split_once('/') {
                Some((p, n)) => (p, Some(n)),
                None => (here, None),
            };
            match seg {
                Seg::Literal(l) if **l == *piece => kinds.push(0),
                Seg::Param(_) if !piece.is_empty() => kinds.push(1),
                Seg::Tail(_) => {
                    kinds.push(2);
                    return Some(kinds);
                }
                _ => return None,
            }
            rest = next;
        }
        rest.is_none().then_some(kinds)
    }

    proptest::proptest! {
        #[test]
        fn the_tree_finds_the_route_a_plain_look_at_every_pattern_finds(
            patterns in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec!["a", "b", ":p", "*t", ""]), 1..4),
                1..12,
            ),
            paths in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec!["a", "b", "c", ""]), 1..5),
                1..20,
            ),
        ) {
            let mut root = Node::default();
            let mut kept: Vec<Vec<Seg>> = Vec::new();
            for pieces in &patterns {
                let Ok(segs) = parse(&format!("/{}", pieces.join("/"))) else { continue };
                if root.insert(&segs, kept.len()).is_ok() {
                    kept.push(segs);
                }
            }
            for pieces in &paths {
                let path = format!("/{}", pieces.join("/"));
                let want = kept
                    .iter()
                    .enumerate()
                    .filter_map(|(i, segs)| alone(segs, &path).map(|k| (k, i)))
                    .min()
                    .map(|(_, i)| i);
                let mut caps = Captures::default();
                let got = root.find(&path[1..], 1, &mut caps);
                proptest::prop_assert_eq!(got, want, "{}", path);
            }
        }
    }

    #[test]
    fn a_second_route_of_the_same_shape_is_refused() {
        let mut root = Node::default();
        root.insert(&parse("/a/:x").unwrap(), 0).unwrap();
        assert_eq!(root.insert(&parse("/a/:y").unwrap(), 1), Err(0));
        root.insert(&parse("/f/*r").unwrap(), 2).unwrap();
        assert_eq!(root.insert(&parse("/f/*s").unwrap(), 3), Err(2));
    }
}
