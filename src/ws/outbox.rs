//! What a WebSocket connection still owes its peer: its own bytes, or — the common case for an
//! idle member of a room — one frame shared with every other recipient, held without a copy.
//!
//! A frame published to a room is encoded once ([`Arc<[u8]>`](Arc)); each member's outbox
//! holds a reference to it until the end of the worker's turn, when it is written. Only when a
//! second frame arrives before the first is written (several publishes in one turn) are the
//! bytes copied into a buffer of the connection's own — and then one write carries them all.

use std::sync::Arc;

/// Unsent output of one connection: [`Outbox::Own`] bytes from `at`, or the rest of one shared
/// frame. As small as the buffer and offset it replaces (32 bytes; checked below).
pub(crate) enum Outbox {
    /// Bytes of the connection's own; `buf[at..]` is unsent.
    Own { buf: Vec<u8>, at: usize },
    /// A frame shared with other connections; `frame[at..]` is unsent.
    Shared { frame: Arc<[u8]>, at: usize },
}

impl Default for Outbox {
    fn default() -> Outbox {
        Outbox::Own {
            buf: Vec::new(),
            at: 0,
        }
    }
}

impl Outbox {
    /// An outbox starting with `bytes` (the 101 and what the upgrade left).
    pub(crate) fn with(bytes: Vec<u8>) -> Outbox {
        Outbox::Own { buf: bytes, at: 0 }
    }

    /// Bytes not yet written.
    pub(crate) fn pending(&self) -> usize {
        match self {
            Outbox::Own { buf, at } => buf.len() - at,
            Outbox::Shared { frame, at } => frame.len() - at,
        }
    }

    /// The unsent bytes.
    pub(crate) fn unsent(&self) -> &[u8] {
        match self {
            Outbox::Own { buf, at } => &buf[*at..],
            Outbox::Shared { frame, at } => &frame[*at..],
        }
    }

    /// Heap bytes held by this connection alone (a shared frame is the publisher's).
    pub(crate) fn held_bytes(&self) -> usize {
        match self {
            Outbox::Own { buf, .. } => buf.capacity(),
            Outbox::Shared { .. } => 0,
        }
    }

    /// Queues a shared frame: by reference when nothing else is queued, else copied behind what
    /// is.
    pub(crate) fn push_shared(&mut self, frame: &Arc<[u8]>) {
        if self.pending() == 0 {
            *self = Outbox::Shared {
                frame: Arc::clone(frame),
                at: 0,
            };
        } else {
            self.own().extend_from_slice(frame);
        }
    }

    /// A buffer of the connection's own to append frames to, holding what is unsent (a shared
    /// frame's rest is copied into it).
    pub(crate) fn own(&mut self) -> &mut Vec<u8> {
        if let Outbox::Shared { frame, at } = self {
            let rest = frame[*at..].to_vec();
            *self = Outbox::Own { buf: rest, at: 0 };
        }
        match self {
            Outbox::Own { buf, .. } => buf,
            Outbox::Shared { .. } => unreachable!("made Own just above"),
        }
    }

    /// `n` more bytes were written.
    pub(crate) fn advance(&mut self, n: usize) {
        match self {
            Outbox::Own { at, .. } | Outbox::Shared { at, .. } => *at += n,
        }
        if self.pending() == 0 {
            // Written: an idle connection keeps no buffer and no frame.
            *self = Outbox::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(bytes: &[u8]) -> Arc<[u8]> {
        bytes.to_vec().into()
    }

    #[test]
    fn an_outbox_is_no_larger_than_a_buffer_and_an_offset() {
        assert!(std::mem::size_of::<Outbox>() <= std::mem::size_of::<(Vec<u8>, usize)>());
    }

    #[test]
    fn one_shared_frame_is_held_by_reference_then_released() {
        let frame = shared(b"frame");
        let mut out = Outbox::default();
        out.push_shared(&frame);
        assert_eq!(Arc::strong_count(&frame), 2, "held, not copied");
        assert_eq!((out.pending(), out.held_bytes()), (5, 0));
        out.advance(2);
        assert_eq!(out.unsent(), b"ame");
        out.advance(3);
        assert_eq!(Arc::strong_count(&frame), 1, "released once written");
        assert_eq!((out.pending(), out.held_bytes()), (0, 0));
    }

    #[test]
    fn frames_queue_in_order_whatever_came_first() {
        // (what is queued, in order; what the outbox must hold)
        let cases: [(&[&[u8]], &[u8]); 4] = [
            (&[b"ab", b"cd"], b"abcd"),
            (&[b"ab", b"own", b"cd"], b"abowncd"),
            (&[b"own", b"ab"], b"ownab"),
            (&[b"ab"], b"ab"),
        ];
        for (parts, want) in cases {
            let mut out = Outbox::default();
            for part in parts {
                if *part == b"own" {
                    out.own().extend_from_slice(part);
                } else {
                    out.push_shared(&shared(part));
                }
            }
            assert_eq!(out.unsent(), want, "{parts:?}");
        }
    }

    #[test]
    fn a_partly_written_shared_frame_keeps_only_its_rest_when_copied() {
        let mut out = Outbox::default();
        out.push_shared(&shared(b"0123"));
        out.advance(3);
        out.push_shared(&shared(b"45"));
        assert_eq!(out.unsent(), b"345");
        assert!(matches!(out, Outbox::Own { at: 0, .. }));
    }
}
