//! The envelope of a message crossing instances: what one instance PUBLISHes on a room's
//! channel and every other subscribed instance decodes. A pure codec; the channel names the
//! room.
//!
//! ```text
//! byte 0       version (1)
//! bytes 1..9   the publishing instance's id, big-endian (a receiver drops its own echo)
//! byte 9       kind: 1 text, 2 binary, 3 posted (a text in the room's order, with its id)
//! bytes 10..   the message's payload (text: UTF-8)
//!              posted: its history entry, the id in decimal, a space, the text (Redis's
//!              script publishes it: the instance bytes are zero, as no one skips a post)
//! ```

use crate::rooms::Message;

/// What an envelope carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Carried {
    /// A message published with `Rooms::publish`.
    Message(Message),
    /// A message posted with `Rooms::post`: its id (the same on every instance) and its text.
    Posted(u64, String),
}

/// The envelope format this code writes and reads.
pub(crate) const VERSION: u8 = 1;
/// Bytes before the payload.
const HEAD: usize = 10;
const TEXT: u8 = 1;
const BINARY: u8 = 2;
const POSTED: u8 = 3;

/// Why an envelope could not be read (counted as a fleet error, the message dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EnvelopeError {
    /// Fewer bytes than the head.
    Short,
    /// Another format version (an instance of another release of this library).
    Version(u8),
    /// An unknown kind byte.
    Kind(u8),
    /// A text message whose payload is not UTF-8.
    NotUtf8,
    /// A posted message that is not a history entry.
    Entry,
}

/// `msg`, published by instance `from`.
pub(crate) fn encode(from: u64, msg: &Message) -> Vec<u8> {
    match msg {
        Message::Text(t) => with_head(from, TEXT, &[], t.as_bytes()),
        Message::Binary(b) => with_head(from, BINARY, &[], b),
    }
}

/// Message `id` of text `text`, posted by instance `from`.
/// The head Redis's script puts before a posted message's history entry.
pub(crate) fn posted_head() -> Vec<u8> {
    with_head(0, POSTED, &[], &[])
}

fn with_head(from: u64, kind: u8, before: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + before.len() + payload.len());
    out.push(VERSION);
    out.extend_from_slice(&from.to_be_bytes());
    out.push(kind);
    out.extend_from_slice(before);
    out.extend_from_slice(payload);
    out
}

/// The publishing instance and what it sent.
pub(crate) fn decode(bytes: &[u8]) -> Result<(u64, Carried), EnvelopeError> {
    let (Some(head), Some(payload)) = (bytes.get(..HEAD), bytes.get(HEAD..)) else {
        return Err(EnvelopeError::Short);
    };
    if head[0] != VERSION {
        return Err(EnvelopeError::Version(head[0]));
    }
    let mut from = [0u8; 8];
    from.copy_from_slice(&head[1..9]);
    let text = |t: &[u8]| {
        std::str::from_utf8(t)
            .map(str::to_owned)
            .map_err(|_| EnvelopeError::NotUtf8)
    };
    let carried = match head[9] {
        TEXT => Carried::Message(Message::Text(text(payload)?)),
        BINARY => Carried::Message(Message::Binary(payload.to_vec())),
        POSTED => {
            let (id, text) = super::history::parse_entry(payload).ok_or(EnvelopeError::Entry)?;
            Carried::Posted(id, text.to_string())
        }
        other => return Err(EnvelopeError::Kind(other)),
    };
    Ok((u64::from_be_bytes(from), carried))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_the_envelope() {
        let cases = [
            (0, Message::Text(String::new())),
            (1, Message::Text("hi".into())),
            (u64::MAX, Message::Text("ünïcode ✓".into())),
            (0x0102_0304_0506_0708, Message::Binary(vec![])),
            (7, Message::Binary(vec![0, 255, 1, 10, 13])),
            (9, Message::Text("x".repeat(70_000))),
        ];
        for (from, msg) in cases {
            let bytes = encode(from, &msg);
            let payload = match &msg {
                Message::Text(t) => t.len(),
                Message::Binary(b) => b.len(),
            };
            assert_eq!(bytes.len(), HEAD + payload);
            assert_eq!(
                decode(&bytes),
                Ok((from, Carried::Message(msg.clone()))),
                "{from}"
            );
        }
    }

    /// What Redis's script publishes for a post: the head, then the history entry.
    fn encode_posted(id: u64, text: &str) -> Vec<u8> {
        [posted_head(), super::super::history::entry(id, text)].concat()
    }

    #[test]
    fn posted_messages_carry_their_id() {
        let cases = [(0, ""), (17, "hi"), (u64::MAX, "ünï ✓ a b")];
        for (id, text) in cases {
            let bytes = encode_posted(id, text);
            assert_eq!(bytes.len(), HEAD + id.to_string().len() + 1 + text.len());
            assert_eq!(
                decode(&bytes),
                Ok((0, Carried::Posted(id, text.into()))),
                "{id}"
            );
        }
        assert_eq!(
            encode_posted(2571, "ok"),
            b"\x01\0\0\0\0\0\0\0\0\x032571 ok"
        );
    }

    #[test]
    fn the_envelope_s_bytes_are_the_documented_layout() {
        assert_eq!(
            encode(0x0102_0304_0506_0708, &Message::Text("ok".into())),
            b"\x01\x01\x02\x03\x04\x05\x06\x07\x08\x01ok"
        );
        assert_eq!(
            encode(1, &Message::Binary(vec![0xff])),
            b"\x01\0\0\0\0\0\0\0\x01\x02\xff"
        );
    }

    #[test]
    fn broken_envelopes_are_refused_with_the_reason() {
        #[rustfmt::skip]
        let cases: &[(&[u8], EnvelopeError)] = &[
            (b"", EnvelopeError::Short),
            (b"\x01", EnvelopeError::Short),
            (b"\x01\0\0\0\0\0\0\0\x01", EnvelopeError::Short),
            (b"\x02\0\0\0\0\0\0\0\x01\x01hi", EnvelopeError::Version(2)),
            (b"\x00\0\0\0\0\0\0\0\x01\x01hi", EnvelopeError::Version(0)),
            (b"\x01\0\0\0\0\0\0\0\x01\x04hi", EnvelopeError::Kind(4)),
            (b"\x01\0\0\0\0\0\0\0\x01\x0317", EnvelopeError::Entry),
            (b"\x01\0\0\0\0\0\0\0\x01\x03x y", EnvelopeError::Entry),
            (b"\x01\0\0\0\0\0\0\0\x01\x031 \xff", EnvelopeError::Entry),
            (b"\x01\0\0\0\0\0\0\0\x01\x00", EnvelopeError::Kind(0)),
            (b"\x01\0\0\0\0\0\0\0\x01\x01\xff\xfe", EnvelopeError::NotUtf8),
            (b"\x01\0\0\0\0\0\0\0\x01\x01\xe2\x82", EnvelopeError::NotUtf8),
        ];
        for &(bytes, want) in cases {
            assert_eq!(decode(bytes), Err(want), "{bytes:?}");
        }
        // The same bytes as binary are fine: any payload.
        assert_eq!(
            decode(b"\x01\0\0\0\0\0\0\0\x01\x02\xff\xfe"),
            Ok((1, Carried::Message(Message::Binary(vec![0xff, 0xfe]))))
        );
    }

    proptest::proptest! {
        /// Any bytes decode or are refused, never a panic; what decodes encodes back to the
        /// same bytes.
        #[test]
        fn any_bytes_decode_or_are_refused(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            if let Ok((from, carried)) = decode(&bytes) {
                let again = match &carried {
                    Carried::Message(msg) => encode(from, msg),
                    Carried::Posted(id, text) => {
                        // Ids are read with leading zeros, written without; the instance is
                        // any.
                        let mut again = encode_posted(*id, text);
                        again[1..9].copy_from_slice(&from.to_be_bytes());
                        again
                    }
                };
                let canonical = !matches!(carried, Carried::Posted(..))
                    || !bytes[HEAD..].starts_with(b"0")
                    || bytes[HEAD..].starts_with(b"0 ");
                if canonical {
                    proptest::prop_assert_eq!(again, bytes);
                }
            }
        }

        #[test]
        fn posted_messages_round_trip(id: u64, text in ".{0,40}") {
            let carried = decode(&encode_posted(id, &text));
            proptest::prop_assert_eq!(carried, Ok((0, Carried::Posted(id, text))));
        }
    }
}
