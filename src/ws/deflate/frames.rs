//! A message frame for a connection that agreed to permessage-deflate: compressed (RSV1 set)
//! when that makes it shorter, else as it is; and a frame published to many, compressed once
//! per worker.

use std::cell::RefCell;
use std::sync::Arc;

use super::Agreed;
use super::codec::compress;
use crate::live::Outbox;
use crate::ws::frame::{Opcode, Role, parse_head, write_frame, write_head};

/// RSV1: the message is compressed (RFC 7692 §6).
pub(crate) const RSV1: u8 = 0x40;

/// The window of a connection whose messages keep their context: the last bytes it sent
/// compressed, which its peer's decompressor holds.
#[derive(Debug, Default)]
pub(crate) struct History(Vec<u8>);

impl History {
    pub(crate) fn held_bytes(&self) -> usize {
        self.0.capacity()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `payload` went out compressed: the peer's window now ends with it.
    fn extend(&mut self, payload: &[u8], window: u8) {
        let size = 1usize << window.clamp(8, 15);
        if payload.len() >= size {
            self.0.clear();
            self.0.extend_from_slice(&payload[payload.len() - size..]);
        } else {
            let drop = (self.0.len() + payload.len()).saturating_sub(size);
            self.0.drain(..drop);
            // Never more than the window: grown exactly, not doubled.
            self.0.reserve_exact(payload.len());
            self.0.extend_from_slice(payload);
        }
    }
}

thread_local! {
    /// Where a message is compressed before its frame head can be written.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Scratch kept between messages, at most.
const SCRATCH_KEEP: usize = 64 * 1024;

/// Appends `payload` as one final frame of `opcode` (text or binary) for a peer that agreed to
/// `agreed` (`None`: the extension is not in use), compressed when that makes it shorter.
/// `history`: the connection's window, when its messages keep their context.
#[inline]
pub(crate) fn write_message(
    buf: &mut Vec<u8>,
    opcode: Opcode,
    payload: &[u8],
    agreed: Option<&Agreed>,
    history: Option<&mut History>,
) {
    // Inline where it is called, the plain path a frame head and a copy (every message of a
    // connection without the extension passes here).
    match agreed.filter(|a| payload.len() >= a.min_size as usize) {
        None => write_frame(buf, opcode.fin(), payload, None),
        Some(agreed) => write_compressed(buf, opcode, payload, agreed, history),
    }
}

/// [`write_message`]'s compressed path: the payload deflated (with the connection's history
/// when context takeover was agreed), or plain when compressing does not pay.
fn write_compressed(
    buf: &mut Vec<u8>,
    opcode: Opcode,
    payload: &[u8],
    agreed: &Agreed,
    history: Option<&mut History>,
) {
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        scratch.clear();
        let (takeover, history) = match history {
            Some(h) if agreed.takeover => (true, Some(h)),
            _ => (false, None),
        };
        let dictionary = history.as_ref().map_or(&[][..], |h| &h.0[..]);
        if compress(
            payload,
            agreed.window,
            agreed.level,
            dictionary,
            &mut scratch,
        ) {
            write_frame(buf, opcode.fin() | RSV1, &scratch, None);
            if let (true, Some(h)) = (takeover, history) {
                h.extend(payload, agreed.window);
            }
        } else {
            write_frame(buf, opcode.fin(), payload, None);
        }
        if scratch.capacity() > SCRATCH_KEEP {
            *scratch = Vec::new();
        }
    });
}

/// The last shared frames this worker compressed: (the plain frame, the window it was
/// compressed for, the compressed frame — `None` when compressing did not pay). Holding the
/// plain frame keeps its address from being reused while it is the key.
type Cached = (Arc<[u8]>, u8, u8, Option<Arc<[u8]>>);

thread_local! {
    static COMPRESSED: RefCell<Vec<Cached>> = const { RefCell::new(Vec::new()) };
}

/// The worker has no connection left: its compression scratch and its cache of compressed
/// frames (which holds the last publish's frames) go back.
pub(crate) fn forget_worker_frames() {
    let _ = SCRATCH.try_with(|s| *s.borrow_mut() = Vec::new());
    let _ = COMPRESSED.try_with(|c| *c.borrow_mut() = Vec::new());
}

/// Distinct (window, level) pairs remembered at once: every window a peer may agree to (8 to
/// 15), for two levels (a worker serving two servers) — so a publish is compressed once per
/// worker per agreement in use, whatever the mix of windows among the members.
const CACHED: usize = 16;

/// The compressed form of a shared, already encoded `frame` for peers without context takeover
/// that agreed to `agreed`: made once per worker (the members of a room on this worker get the
/// same `Arc`), `None` when the frame goes as it is (not one whole text or binary frame, too
/// short, or not shorter compressed).
pub(crate) fn shared_frame(frame: &Arc<[u8]>, agreed: &Agreed) -> Option<Arc<[u8]>> {
    let (opcode, payload) = whole_message(frame)?;
    if payload.len() < agreed.min_size as usize {
        return None;
    }
    COMPRESSED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some((_, _, _, done)) = cache.iter().find(|(plain, window, level, _)| {
            Arc::ptr_eq(plain, frame) && *window == agreed.window && *level == agreed.level
        }) {
            return done.clone();
        }
        let mut out = Vec::new();
        write_message(&mut out, opcode, payload, Some(agreed), None);
        let done: Option<Arc<[u8]>> =
            (out.first().is_some_and(|b| b & RSV1 != 0)).then(|| out.into());
        // The same window and level replace their entry: one publish's members come together.
        cache.retain(|(_, window, level, _)| (*window, *level) != (agreed.window, agreed.level));
        if cache.len() >= CACHED {
            cache.remove(0);
        }
        cache.push((Arc::clone(frame), agreed.window, agreed.level, done.clone()));
        done
    })
}

/// Queues a message for a connection that agreed to `agreed` (`None`: not in use).
pub(crate) fn queue_message(
    out: &mut Outbox,
    opcode: Opcode,
    payload: &[u8],
    agreed: Option<&Agreed>,
    history: &mut History,
) {
    out.write(|buf| write_message(buf, opcode, payload, agreed, Some(history)));
}

/// Payloads shorter than this are copied into the connection's own bytes rather than queued as
/// they are (a copy costs less than a piece of their own).
const TAKE_MIN: usize = 1024;

/// Queues a message the caller hands over (`payload` its bytes): as [`queue_message`], but a
/// payload that goes uncompressed is queued as it is, without a copy.
pub(crate) fn queue_owned(
    out: &mut Outbox,
    opcode: Opcode,
    payload: Vec<u8>,
    agreed: Option<&Agreed>,
    history: &mut History,
) {
    let compressible = agreed.is_some_and(|a| payload.len() >= a.min_size as usize);
    if compressible || payload.len() < TAKE_MIN {
        return queue_message(out, opcode, &payload, agreed, history);
    }
    out.write(|buf| write_head(buf, opcode.fin(), payload.len(), false));
    out.push_taken(payload);
}

/// Queues a frame shared with other connections: as it is, or in the compressed form this
/// worker made once for every peer like this one, or — when this peer's messages keep their
/// context — compressed for it alone.
pub(crate) fn queue_shared(
    out: &mut Outbox,
    frame: &Arc<[u8]>,
    agreed: Option<&Agreed>,
    history: &mut History,
) {
    match agreed {
        Some(a) if a.takeover => match whole_message(frame) {
            Some((opcode, payload)) => queue_message(out, opcode, payload, agreed, history),
            None => out.push_shared(frame),
        },
        Some(a) => match shared_frame(frame, a) {
            Some(compressed) => out.push_shared(&compressed),
            None => out.push_shared(frame),
        },
        None => out.push_shared(frame),
    }
}

/// The opcode and payload of `frame` when it is one whole, unmasked, uncompressed text or
/// binary frame (what the library encodes for a publish or a broadcast).
fn whole_message(frame: &[u8]) -> Option<(Opcode, &[u8])> {
    let head = parse_head(frame, Role::Client, true).ok()??;
    let payload = frame.get(head.head_len..)?;
    let whole = head.fin
        && !head.rsv1
        && matches!(head.opcode, Opcode::Text | Opcode::Binary)
        && head.len == payload.len() as u64;
    whole.then_some((head.opcode, payload))
}

#[cfg(all(test, feature = "deflate"))]
mod tests {
    use super::*;
    use crate::ws::deflate::{Inflater, inflate};

    fn agreed(takeover: bool) -> Agreed {
        Agreed {
            window: 15,
            takeover,
            level: 6,
            min_size: 64,
        }
    }

    fn payload_of(frame: &[u8]) -> (bool, Vec<u8>) {
        let head = parse_head(frame, Role::Client, true).unwrap().unwrap();
        (head.rsv1, frame[head.head_len..].to_vec())
    }

    #[test]
    fn short_or_unagreed_messages_go_as_they_are() {
        let text = "x".repeat(200);
        for (agreed, payload) in [
            (None, text.as_bytes()),
            (Some(agreed(false)), &b"short"[..]),
        ] {
            let mut buf = Vec::new();
            write_message(&mut buf, Opcode::Text, payload, agreed.as_ref(), None);
            assert_eq!(payload_of(&buf), (false, payload.to_vec()));
        }
    }

    #[test]
    fn a_compressed_message_sets_rsv1_and_inflates_back() {
        let text = "hello, room! ".repeat(20);
        let mut buf = Vec::new();
        write_message(
            &mut buf,
            Opcode::Text,
            text.as_bytes(),
            Some(&agreed(false)),
            None,
        );
        let (rsv1, data) = payload_of(&buf);
        assert!(rsv1);
        assert_eq!(buf[0] & 0x0f, Opcode::Text.as_u8());
        let back = inflate(&mut Inflater::Shared, &data, 10_000).unwrap();
        assert_eq!(back, text.as_bytes());
    }

    #[test]
    fn with_takeover_later_messages_refer_to_earlier_ones() {
        let text =
            r#"{"type":"message","room":"lobby","user":"ana","text":"good morning, everyone"}"#;
        let mut history = History::default();
        let mut peer = Inflater::own(true);
        let mut sizes = Vec::new();
        for _ in 0..3 {
            let mut buf = Vec::new();
            write_message(
                &mut buf,
                Opcode::Text,
                text.as_bytes(),
                Some(&agreed(true)),
                Some(&mut history),
            );
            let (rsv1, data) = payload_of(&buf);
            assert!(rsv1);
            assert_eq!(inflate(&mut peer, &data, 10_000).unwrap(), text.as_bytes());
            sizes.push(data.len());
        }
        assert!(sizes[1] * 3 < sizes[0], "{sizes:?}");
        assert_eq!(history.0, text.as_bytes().repeat(3));
    }

    #[test]
    fn the_window_keeps_only_its_size() {
        let mut h = History::default();
        h.extend(&[1; 300], 8);
        assert_eq!(h.0.len(), 256);
        h.extend(&[2; 100], 8);
        assert_eq!((h.0.len(), h.0[155], h.0[156]), (256, 1, 2));
        let mut h = History::default();
        for _ in 0..40 {
            h.extend(&[3; 100], 10);
        }
        assert_eq!((h.0.len(), h.held_bytes()), (1024, 1024));
    }

    #[test]
    fn a_published_frame_is_compressed_once_per_worker() {
        let mut plain = Vec::new();
        write_frame(
            &mut plain,
            Opcode::Text.fin(),
            "news for the room ".repeat(10).as_bytes(),
            None,
        );
        let plain: Arc<[u8]> = plain.into();
        let a = shared_frame(&plain, &agreed(false)).unwrap();
        let b = shared_frame(&plain, &agreed(false)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // Another frame with the same bytes is another publish.
        let again: Arc<[u8]> = plain.to_vec().into();
        assert!(!Arc::ptr_eq(
            &a,
            &shared_frame(&again, &agreed(false)).unwrap()
        ));
        // Members in rotation over every window: each window's form made once.
        let windows: Vec<Agreed> = (8..=15)
            .map(|window| Agreed {
                window,
                ..agreed(false)
            })
            .collect();
        let first: Vec<Arc<[u8]>> = windows
            .iter()
            .map(|a| shared_frame(&plain, a).unwrap())
            .collect();
        for member in 0..7_000 {
            let at = member % windows.len();
            let got = shared_frame(&plain, &windows[at]).unwrap();
            assert!(
                Arc::ptr_eq(&got, &first[at]),
                "window {}",
                windows[at].window
            );
        }
        // Fragments, control frames and short frames go as they are.
        for frame in [
            vec![0x01, 0x01, b'x'],
            vec![0x89, 0x00],
            vec![0x81, 0x01, b'x'],
        ] {
            assert_eq!(shared_frame(&frame.into(), &agreed(false)), None);
        }
    }
}
