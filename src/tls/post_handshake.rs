//! Handshake messages a client may send once the handshake is done, joined across records:
//! in TLS 1.3 a KeyUpdate (RFC 8446 §4.6.3), in TLS 1.2 a ClientHello asking to renegotiate,
//! which is refused (RFC 5746 §4.4). Any other message ends the connection. A pure codec: it
//! keeps at most a message's 4-byte header, never a body (a KeyUpdate's is one byte, read as
//! it arrives; a refused ClientHello's is skipped).
//!
//! The record rules of RFC 8446 §5.1 are here too: no empty handshake record, and a message
//! ends its record when a key change follows it — we apply that to every message, as the only
//! messages accepted either change keys or are refused.

use super::records::Version;

/// Handshake message types met after the handshake.
const CLIENT_HELLO: u8 = 1;
const KEY_UPDATE: u8 = 24;
/// The largest ClientHello a renegotiation attempt may carry (rustls' limit on a handshake
/// message).
const MAX_CLIENT_HELLO: u32 = 0xffff;

/// A whole message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// The peer changed its key; `requested`: it asks us to change ours.
    KeyUpdate { requested: bool },
    /// A TLS 1.2 renegotiation request.
    ClientHello,
}

/// Why the connection cannot go on, by the alert it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `unexpected_message`: a message not allowed now, an empty handshake record, bytes after
    /// a message in its record.
    Unexpected,
    /// `decode_error`: a length that does not fit the message.
    Decode,
    /// `illegal_parameter`: a KeyUpdate asking for neither of its two answers.
    Illegal,
}

/// Which message a body belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    KeyUpdate,
    ClientHello,
}

/// Where the joiner stands between records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Joining {
    /// Between messages: the next handshake byte starts one.
    Aligned,
    /// The first `have` bytes of a message's 4-byte header.
    Head { bytes: [u8; 4], have: u8 },
    /// A message's body, `left` bytes of it still to come.
    Body { kind: Kind, left: u32 },
}

/// Joins one connection's post-handshake messages (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Joiner {
    joining: Joining,
}

impl Default for Joiner {
    fn default() -> Joiner {
        Joiner {
            joining: Joining::Aligned,
        }
    }
}

impl Joiner {
    /// Whether no message is cut short: only then may a record of another type arrive (RFC
    /// 8446 §5.1, "handshake messages MUST NOT be interleaved with other record types").
    pub(crate) fn aligned(&self) -> bool {
        self.joining == Joining::Aligned
    }

    /// Takes one handshake record's content: the message it completes, if any.
    pub(crate) fn take(
        &mut self,
        version: Version,
        record: &[u8],
    ) -> Result<Option<Message>, Refused> {
        if record.is_empty() {
            return Err(Refused::Unexpected);
        }
        let mut rest = record;
        let mut done = None;
        while !rest.is_empty() {
            if done.is_some() {
                return Err(Refused::Unexpected);
            }
            match &mut self.joining {
                Joining::Aligned => {
                    match (version, rest[0]) {
                        (Version::Tls13, KEY_UPDATE) | (Version::Tls12, CLIENT_HELLO) => {}
                        _ => return Err(Refused::Unexpected),
                    }
                    self.joining = Joining::Head {
                        bytes: [rest[0], 0, 0, 0],
                        have: 1,
                    };
                    rest = &rest[1..];
                }
                Joining::Head { bytes, have } => {
                    bytes[usize::from(*have)] = rest[0];
                    *have += 1;
                    rest = &rest[1..];
                    if *have == 4 {
                        let len = u32::from_be_bytes([0, bytes[1], bytes[2], bytes[3]]);
                        let kind = match bytes[0] {
                            KEY_UPDATE if len == 1 => Kind::KeyUpdate,
                            CLIENT_HELLO if (1..=MAX_CLIENT_HELLO).contains(&len) => {
                                Kind::ClientHello
                            }
                            _ => return Err(Refused::Decode),
                        };
                        self.joining = Joining::Body { kind, left: len };
                    }
                }
                Joining::Body { kind, left } => {
                    let kind = *kind;
                    if kind == Kind::KeyUpdate {
                        done = match rest[0] {
                            0 => Some(Message::KeyUpdate { requested: false }),
                            1 => Some(Message::KeyUpdate { requested: true }),
                            _ => return Err(Refused::Illegal),
                        };
                        rest = &rest[1..];
                        self.joining = Joining::Aligned;
                        continue;
                    }
                    let n = rest.len().min(*left as usize);
                    rest = &rest[n..];
                    // n ≤ left, which is a u32.
                    *left -= n as u32;
                    if *left == 0 {
                        done = Some(Message::ClientHello);
                        self.joining = Joining::Aligned;
                    }
                }
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KU_REQUESTED: [u8; 5] = [KEY_UPDATE, 0, 0, 1, 1];
    const KU_NOT: [u8; 5] = [KEY_UPDATE, 0, 0, 1, 0];

    /// Each case: the version, the records in order, and what the last one gives.
    #[test]
    fn a_table_of_records_and_what_they_give() {
        use Message::*;
        use Refused::*;
        type Case = (
            Version,
            &'static [&'static [u8]],
            Result<Option<Message>, Refused>,
        );
        let cases: &[Case] = &[
            (
                Version::Tls13,
                &[&KU_REQUESTED],
                Ok(Some(KeyUpdate { requested: true })),
            ),
            (
                Version::Tls13,
                &[&KU_NOT],
                Ok(Some(KeyUpdate { requested: false })),
            ),
            // Split anywhere: the message is whole at its last byte.
            (
                Version::Tls13,
                &[&[24], &[0, 0, 1, 1]],
                Ok(Some(KeyUpdate { requested: true })),
            ),
            (
                Version::Tls13,
                &[&[24, 0, 0], &[1], &[0]],
                Ok(Some(KeyUpdate { requested: false })),
            ),
            (Version::Tls13, &[&[24, 0]], Ok(None)),
            // Two in one record: the first changes keys, so nothing may follow it.
            (
                Version::Tls13,
                &[&[24, 0, 0, 1, 0, 24, 0, 0, 1, 0]],
                Err(Unexpected),
            ),
            (Version::Tls13, &[&[24, 0, 0, 1, 0, 0]], Err(Unexpected)),
            // Empty record, other messages.
            (Version::Tls13, &[&[]], Err(Unexpected)),
            (Version::Tls13, &[&[1, 0, 0, 1, 0]], Err(Unexpected)),
            (Version::Tls13, &[&[4, 0, 0, 1, 0]], Err(Unexpected)),
            (Version::Tls12, &[&KU_NOT], Err(Unexpected)),
            // Lengths: a KeyUpdate is one byte.
            (Version::Tls13, &[&[24, 0, 0, 0]], Err(Decode)),
            (Version::Tls13, &[&[24, 0, 0, 2, 0, 0]], Err(Decode)),
            (Version::Tls13, &[&[24, 0xff, 0xff, 0xff]], Err(Decode)),
            // The request is 0 or 1.
            (Version::Tls13, &[&[24, 0, 0, 1, 2]], Err(Illegal)),
            (Version::Tls13, &[&[24, 0, 0, 1, 255]], Err(Illegal)),
            // TLS 1.2: a ClientHello, whole or in pieces, its body skipped.
            (
                Version::Tls12,
                &[&[1, 0, 0, 3, 9, 9, 9]],
                Ok(Some(ClientHello)),
            ),
            (
                Version::Tls12,
                &[&[1, 0, 0, 3, 9], &[9], &[9]],
                Ok(Some(ClientHello)),
            ),
            (Version::Tls12, &[&[1, 0, 0, 3, 9, 9]], Ok(None)),
            (Version::Tls12, &[&[1, 0, 0, 0]], Err(Decode)),
            (Version::Tls12, &[&[1, 1, 0, 0]], Err(Decode)),
            (Version::Tls12, &[&[1, 0, 0, 1, 0, 1]], Err(Unexpected)),
        ];
        for (version, records, last) in cases {
            let mut joiner = Joiner::default();
            let (end, before) = records.split_last().unwrap();
            for record in before {
                assert_eq!(joiner.take(*version, record), Ok(None), "{records:?}");
                assert!(!joiner.aligned());
            }
            assert_eq!(joiner.take(*version, end), *last, "{version:?} {records:?}");
            if let Ok(Some(_)) = last {
                assert!(joiner.aligned());
            }
        }
    }

    proptest! {
        /// Any split of a run of KeyUpdates into records (each ending at a message's end)
        /// gives each message once, in order.
        #[test]
        fn any_split_of_a_message_gives_it_once(
            requests in proptest::collection::vec(any::<bool>(), 1..8),
            cuts in proptest::collection::vec(1usize..5, 0..4),
        ) {
            let mut joiner = Joiner::default();
            for requested in requests {
                let message = [KEY_UPDATE, 0, 0, 1, u8::from(requested)];
                let mut at = 0;
                let mut got = Vec::new();
                for cut in cuts.iter().copied().filter(|&c| c < 5) {
                    if cut > at {
                        got.push(joiner.take(Version::Tls13, &message[at..cut]).unwrap());
                        at = cut;
                    }
                }
                got.push(joiner.take(Version::Tls13, &message[at..]).unwrap());
                let (last, before) = got.split_last().unwrap();
                prop_assert!(before.iter().all(Option::is_none));
                prop_assert_eq!(*last, Some(Message::KeyUpdate { requested }));
                prop_assert!(joiner.aligned());
            }
        }

        /// Arbitrary bytes never panic, and whatever is kept is a header at most.
        #[test]
        fn arbitrary_records_never_panic(
            records in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..12),
                1..6,
            ),
            tls13 in any::<bool>(),
        ) {
            let version = if tls13 { Version::Tls13 } else { Version::Tls12 };
            let mut joiner = Joiner::default();
            for record in &records {
                if joiner.take(version, record).is_err() {
                    break;
                }
            }
            prop_assert!(std::mem::size_of::<Joiner>() <= 12);
        }
    }
}
