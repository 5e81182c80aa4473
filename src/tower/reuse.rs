//! What a thread keeps between the requests it converts, so that a request made into `http`
//! types allocates no more than it must: the last response's header map, cleared, becomes the
//! next request's (as hyper does), and request heads are copied into one shared buffer whose
//! space comes back once the requests that point into it are gone.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// The buffer heads are copied into; a head longer than this gets a buffer of its own. A
/// request that waits (a long-poll) holds the buffer it shares with its neighbours, so this is
/// also what one waiting request may keep alive at most, beyond its own bytes: small, where
/// hyper's requests share their connection's read buffer of 8 KiB or more.
const HEAD_BUFFER: usize = 2048;

/// A map with room for more lines than this is not kept (one peer's long head, one handler's
/// long answer, would otherwise stay held by the thread).
const MAX_KEPT_LINES: usize = 64;

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept {
        headers: None,
        heads: BytesMut::new(),
    });
}

struct Kept {
    headers: Option<http::HeaderMap>,
    heads: BytesMut,
}

/// An empty header map: the one [`keep_headers`] kept last, or a new one.
pub(super) fn headers() -> http::HeaderMap {
    KEPT.with(|kept| kept.borrow_mut().headers.take())
        .unwrap_or_default()
}

/// Keeps `map`, emptied, for the next request on this thread (unless it grew large).
pub(super) fn keep_headers(mut map: http::HeaderMap) {
    if map.capacity() > MAX_KEPT_LINES {
        return;
    }
    map.clear();
    KEPT.with(|kept| kept.borrow_mut().headers = Some(map));
}

/// `head` as shared bytes, copied into this thread's head buffer. Once every request sharing
/// the buffer has been dropped, the next copy reuses its space; until then a new buffer is
/// taken, and the old one lives as long as what points into it.
pub(super) fn share_head(head: &[u8]) -> Bytes {
    if head.len() > HEAD_BUFFER {
        return Bytes::copy_from_slice(head);
    }
    KEPT.with(|kept| {
        let heads = &mut kept.borrow_mut().heads;
        if heads.capacity() < head.len() {
            heads.reserve(HEAD_BUFFER);
        }
        heads.extend_from_slice(head);
        heads.split().freeze()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_copied_whole() {
        let bytes = share_head(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(&bytes[..], b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    }

    #[test]
    fn heads_alive_together_keep_their_own_bytes() {
        let heads: Vec<Bytes> = (0..2000u32)
            .map(|i| share_head(format!("GET /{i} HTTP/1.1\r\n\r\n").as_bytes()))
            .collect();
        for (i, head) in heads.iter().enumerate() {
            assert_eq!(&head[..], format!("GET /{i} HTTP/1.1\r\n\r\n").as_bytes());
        }
    }

    #[test]
    fn the_buffer_is_reused_once_its_heads_are_dropped() {
        let first = share_head(b"GET /a HTTP/1.1\r\n\r\n");
        let at = first.as_ptr();
        drop(first);
        // Enough copies to pass the end of the buffer: its space comes back.
        let again = (0..HEAD_BUFFER).any(|_| share_head(b"GET /b HTTP/1.1\r\n\r\n").as_ptr() == at);
        assert!(again, "the head buffer's space was not reused");
    }

    #[test]
    fn a_head_longer_than_the_buffer_is_copied_on_its_own() {
        let long = vec![b'a'; HEAD_BUFFER + 1];
        assert_eq!(&share_head(&long)[..], &long[..]);
    }

    #[test]
    fn a_kept_map_comes_back_empty() {
        let mut map = http::HeaderMap::new();
        map.insert(http::header::HOST, http::HeaderValue::from_static("x"));
        keep_headers(map);
        let map = headers();
        assert!(map.is_empty());
        assert!(map.capacity() > 0, "the kept map's room was not kept");
    }

    #[test]
    fn a_large_map_is_not_kept() {
        let mut map = http::HeaderMap::with_capacity(MAX_KEPT_LINES * 4);
        map.insert(http::header::HOST, http::HeaderValue::from_static("x"));
        keep_headers(map);
        assert_eq!(headers().capacity(), 0);
    }
}
