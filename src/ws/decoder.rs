//! The message-level decoder: frames in, messages out, every rule of RFC 6455 §5 enforced.
//!
//! It reassembles fragmented messages up to a maximum size, checks text as it arrives
//! ([`Utf8Check`]), passes control frames through between fragments, and answers a broken rule
//! with the close code it earns. It holds no heap memory between messages: the data of a
//! message is handed over whole, and the few bytes of a frame head split across reads are kept
//! inline.

use super::close::{WsError, parse_close};
use super::deflate::{Inflater, inflate};
use super::frame::{FrameHead, Opcode, Role, apply_mask, parse_head};
use super::utf8::Utf8Check;

/// Default largest message, in bytes (the specification's 64 KiB).
pub const MAX_MESSAGE: usize = 64 * 1024;

/// What arrived.
///
/// ```
/// use web::ws::{client_frame, Decoder, Event, Role};
/// let mut d = Decoder::new(Role::Server, 1024);
/// let (_, event) = d.next(&client_frame("hi")).unwrap();
/// assert_eq!(event, Some(Event::Text("hi".into())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A whole text message (valid UTF-8).
    Text(String),
    /// A whole binary message.
    Binary(Vec<u8>),
    /// A ping and its payload (to be answered with a pong carrying the same payload).
    Ping(Vec<u8>),
    /// A pong and its payload.
    Pong(Vec<u8>),
    /// A close frame: its code and reason, if it had any (both already checked).
    Close(Option<(u16, String)>),
}

/// A frame being read.
#[derive(Clone, Copy, Debug)]
struct Frame {
    head: FrameHead,
    /// Payload bytes read so far.
    read: u64,
}

/// Turns received bytes into [`Event`]s.
///
/// ```
/// use web::ws::{client_frame, Decoder, Event, Role};
/// let mut d = Decoder::new(Role::Server, 1 << 16);
/// let wire = client_frame("hello");
/// let (used, event) = d.next(&wire).unwrap();
/// assert_eq!((used, event), (wire.len(), Some(Event::Text("hello".into()))));
/// ```
#[derive(Debug)]
pub struct Decoder {
    role: Role,
    max_message: usize,
    /// Bytes of a frame head split across reads.
    head: [u8; 14],
    head_len: u8,
    frame: Option<Frame>,
    /// The message being reassembled: its opcode (text or binary) and data so far.
    message: Option<Opcode>,
    data: Vec<u8>,
    utf8: Utf8Check,
    /// The payload of a control frame split across reads.
    control: Vec<u8>,
    /// The message in progress is compressed (its data is DEFLATE until it is whole).
    compressed: bool,
    /// permessage-deflate is in use: how compressed messages are inflated.
    inflater: Option<Inflater>,
}

impl Decoder {
    /// A decoder reading `role`'s peer, refusing messages over `max_message` bytes (1009).
    ///
    /// ```
    /// let decoder = web::ws::Decoder::new(web::ws::Role::Server, 64 * 1024);
    /// assert!(decoder.is_idle());
    /// ```
    pub fn new(role: Role, max_message: usize) -> Decoder {
        Decoder {
            role,
            max_message,
            head: [0; 14],
            head_len: 0,
            frame: None,
            message: None,
            data: Vec::new(),
            utf8: Utf8Check::default(),
            control: Vec::new(),
            compressed: false,
            inflater: None,
        }
    }

    /// A decoder for a peer that agreed to permessage-deflate without context takeover (RFC
    /// 7692; feature `deflate`): a message whose first frame has RSV1 is inflated on its own
    /// (with the thread's decompressor), and `max_message` limits its inflated size (1009 as
    /// soon as it is passed); RSV1 elsewhere is 1002, data that does not inflate 1007.
    ///
    /// ```
    /// use web::ws::{Decoder, Event, Role};
    /// let mut d = Decoder::deflating(Role::Client, 1024);
    /// // RFC 7692 §7.2.3.1: "Hello", compressed.
    /// let frame = [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    /// assert_eq!(d.next(&frame), Ok((9, Some(Event::Text("Hello".into())))));
    /// ```
    #[cfg(feature = "deflate")]
    pub fn deflating(role: Role, max_message: usize) -> Decoder {
        Decoder::with_deflate(role, max_message, Inflater::Shared)
    }

    /// A decoder for a connection that agreed to permessage-deflate: messages with RSV1 are
    /// inflated with `inflater`, and `max_message` limits their inflated size.
    pub(crate) fn with_deflate(role: Role, max_message: usize, inflater: Inflater) -> Decoder {
        Decoder {
            inflater: Some(inflater),
            ..Decoder::new(role, max_message)
        }
    }

    fn deflate(&self) -> bool {
        self.inflater.is_some()
    }

    /// The largest compressed data a message may have: a little over the limit, as DEFLATE
    /// may grow what does not compress (5 bytes per stored block of 64 KiB).
    fn max_compressed(&self) -> usize {
        self.max_message
            .saturating_add(self.max_message / 1024 + 64)
    }

    /// Whether the decoder is between frames with nothing buffered.
    ///
    /// ```
    /// let mut d = web::ws::Decoder::new(web::ws::Role::Server, 1024);
    /// let frame = web::ws::client_frame("hi");
    /// d.next(&frame[..3]).unwrap(); // half a frame
    /// assert!(!d.is_idle());
    /// ```
    pub fn is_idle(&self) -> bool {
        self.head_len == 0 && self.frame.is_none() && self.message.is_none()
    }

    /// Heap bytes held for a message or control frame in progress.
    ///
    /// ```
    /// let d = web::ws::Decoder::new(web::ws::Role::Server, 1024);
    /// assert_eq!(d.held_bytes(), 0);
    /// ```
    pub fn held_bytes(&self) -> usize {
        self.data.capacity() + self.control.capacity()
    }

    /// Reads from `input` until one event is complete or the input is used up. Returns the
    /// bytes consumed and the event, if one completed; call again with the rest. `Err`:
    /// the peer broke a rule, and the connection is to be closed with the [`WsError`]'s code
    /// (1002 protocol error, 1007 text that is not UTF-8, 1009 message too big).
    ///
    /// ```
    /// use web::ws::{Decoder, Event, Role, ws_frame};
    /// let mut d = Decoder::new(Role::Client, 1024);
    /// let frame = ws_frame("from server");
    /// assert_eq!(d.next(&frame), Ok((frame.len(), Some(Event::Text("from server".into())))));
    /// ```
    pub fn next(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), WsError> {
        let mut at = 0;
        loop {
            let frame = match self.frame {
                Some(frame) => frame,
                None => {
                    let (used, head) = self.read_head(&input[at..])?;
                    at += used;
                    let Some(head) = head else {
                        return Ok((at, None));
                    };
                    self.start_frame(head)?;
                    Frame { head, read: 0 }
                }
            };
            let left = frame.head.len - frame.read;
            let take = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(input.len() - at);
            let bytes = &input[at..at + take];
            at += take;
            if frame.head.is_control() {
                self.control.extend_from_slice(bytes);
            } else {
                let start = self.data.len();
                self.data.extend_from_slice(bytes);
                if let Some(key) = frame.head.mask {
                    apply_mask(&mut self.data[start..], key, frame.read as usize);
                }
                if self.message == Some(Opcode::Text)
                    && !self.compressed
                    && !self.utf8.feed(&self.data[start..])
                {
                    return Err(WsError::InvalidData);
                }
            }
            let read = frame.read + take as u64;
            if read < frame.head.len {
                self.frame = Some(Frame { read, ..frame });
                return Ok((at, None));
            }
            self.frame = None;
            if let Some(event) = self.finish_frame(frame.head)? {
                return Ok((at, Some(event)));
            }
            if at == input.len() {
                return Ok((at, None));
            }
        }
    }

    /// Reads a frame head, keeping a partial one inline.
    fn read_head(&mut self, input: &[u8]) -> Result<(usize, Option<FrameHead>), WsError> {
        let deflate = self.deflate();
        if self.head_len == 0
            && let Some(head) = parse_head(input, self.role, deflate)?
        {
            return Ok((head.head_len, Some(head)));
        }
        // Split across reads: gather the head's bytes (at most 14) inline.
        let had = usize::from(self.head_len);
        let take = (self.head.len() - had).min(input.len());
        self.head[had..had + take].copy_from_slice(&input[..take]);
        let have = had + take;
        match parse_head(&self.head[..have], self.role, deflate)? {
            Some(head) => {
                self.head_len = 0;
                Ok((head.head_len - had, Some(head)))
            }
            None => {
                self.head_len = have as u8;
                Ok((take, None))
            }
        }
    }

    /// The rules a frame head must meet in the light of the message in progress.
    fn start_frame(&mut self, head: FrameHead) -> Result<(), WsError> {
        match head.opcode {
            Opcode::Text | Opcode::Binary if self.message.is_some() => {
                return Err(WsError::Protocol);
            }
            Opcode::Continuation if self.message.is_none() => return Err(WsError::Protocol),
            // RSV1 marks a message's first frame only (RFC 7692 §6.1).
            Opcode::Continuation if head.rsv1 => return Err(WsError::Protocol),
            Opcode::Text | Opcode::Binary => {
                self.message = Some(head.opcode);
                self.utf8 = Utf8Check::default();
                self.compressed = head.rsv1;
            }
            _ => {}
        }
        if !head.is_control() {
            let total = (self.data.len() as u64).saturating_add(head.len);
            let max = if self.compressed {
                self.max_compressed()
            } else {
                self.max_message
            };
            if total > max as u64 {
                return Err(WsError::TooBig);
            }
            // Never more than the limit, nor more than 64 KiB ahead of the data that arrives,
            // whatever length the peer announced.
            self.data.reserve(head.len.min(64 * 1024) as usize);
        }
        Ok(())
    }

    fn finish_frame(&mut self, head: FrameHead) -> Result<Option<Event>, WsError> {
        if head.is_control() {
            let mut payload = std::mem::take(&mut self.control);
            if let Some(key) = head.mask {
                apply_mask(&mut payload, key, 0);
            }
            return Ok(Some(match head.opcode {
                Opcode::Ping => Event::Ping(payload),
                Opcode::Pong => Event::Pong(payload),
                Opcode::Close => Event::Close(
                    parse_close(&payload)?.map(|(code, reason)| (code, reason.to_owned())),
                ),
                _ => return Err(WsError::Protocol),
            }));
        }
        if !head.fin {
            return Ok(None);
        }
        let mut data = std::mem::take(&mut self.data);
        let compressed = std::mem::take(&mut self.compressed);
        if compressed {
            data = self.inflate(&data)?;
        }
        Ok(Some(match self.message.take() {
            Some(Opcode::Text) => {
                if !compressed && !self.utf8.is_complete() {
                    return Err(WsError::InvalidData);
                }
                Event::Text(String::from_utf8(data).map_err(|_| WsError::InvalidData)?)
            }
            _ => Event::Binary(data),
        }))
    }
}

impl Decoder {
    /// A whole compressed message's data, inflated within the message limit.
    fn inflate(&mut self, data: &[u8]) -> Result<Vec<u8>, WsError> {
        match self.inflater.as_mut() {
            Some(inflater) => inflate(inflater, data, self.max_message),
            // Unreachable: RSV1 is refused unless an inflater is there.
            None => Err(WsError::Protocol),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ws::frame::write_frame;

    const KEY: [u8; 4] = [1, 2, 3, 4];

    fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_frame(&mut out, first, payload, Some(KEY));
        out
    }

    fn decode_all(wire: &[u8], max: usize) -> Result<Vec<Event>, WsError> {
        let mut d = Decoder::new(Role::Server, max);
        let mut at = 0;
        let mut events = Vec::new();
        while at < wire.len() {
            let (used, event) = d.next(&wire[at..])?;
            at += used;
            events.extend(event);
            if used == 0 {
                break;
            }
        }
        Ok(events)
    }

    #[test]
    fn messages_and_control_frames() {
        let wire = [
            frame(0x81, b"hi"),
            frame(0x82, &[0, 255]),
            frame(0x89, b"p"),
            frame(0x8a, b""),
            frame(0x88, &[0x03, 0xe8, b'o', b'k']),
        ]
        .concat();
        assert_eq!(
            decode_all(&wire, 100),
            Ok(vec![
                Event::Text("hi".into()),
                Event::Binary(vec![0, 255]),
                Event::Ping(b"p".to_vec()),
                Event::Pong(vec![]),
                Event::Close(Some((1000, "ok".into()))),
            ])
        );
    }

    #[test]
    fn fragments_are_reassembled_with_control_frames_between() {
        let wire = [
            frame(0x01, "κό".as_bytes()),
            frame(0x89, b"x"),
            frame(0x00, &"σμε".as_bytes()[..3]),
            frame(0x80, &"σμε".as_bytes()[3..]),
        ]
        .concat();
        assert_eq!(
            decode_all(&wire, 100),
            Ok(vec![
                Event::Ping(b"x".to_vec()),
                Event::Text("κόσμε".into())
            ])
        );
        let empty = [frame(0x01, b""), frame(0x00, b""), frame(0x80, b"")].concat();
        assert_eq!(
            decode_all(&empty, 100),
            Ok(vec![Event::Text(String::new())])
        );
    }

    #[test]
    fn broken_rules_earn_their_close_codes() {
        let cases: &[(Vec<u8>, WsError)] = &[
            (frame(0x00, b"x"), WsError::Protocol), // continuation without a message
            (
                [frame(0x01, b"a"), frame(0x81, b"b")].concat(),
                WsError::Protocol,
            ), // new message inside one
            (
                [frame(0x02, b"a"), frame(0x82, b"b")].concat(),
                WsError::Protocol,
            ),
            (frame(0x81, b"\xff"), WsError::InvalidData),
            (
                [frame(0x01, b"\xe2\x82"), frame(0x80, b"")].concat(),
                WsError::InvalidData,
            ), // unfinished code point
            (frame(0x88, &[0x03]), WsError::Protocol),
            (frame(0x88, &[0x03, 0xed]), WsError::Protocol),
            (frame(0x88, &[0x03, 0xe8, 0xff]), WsError::InvalidData),
            (frame(0x82, &[0; 101]), WsError::TooBig),
            (
                [frame(0x02, &[0; 60]), frame(0x80, &[0; 41])].concat(),
                WsError::TooBig,
            ),
            (
                vec![0x81, 0x05, b'h', b'e', b'l', b'l', b'o'],
                WsError::Protocol,
            ), // unmasked
        ];
        for (wire, code) in cases {
            assert_eq!(decode_all(wire, 100), Err(*code), "{wire:?}");
        }
    }

    #[test]
    fn invalid_text_fails_before_the_message_ends() {
        let mut d = Decoder::new(Role::Server, 100);
        let first = frame(0x01, b"ok\xf4\x90");
        assert_eq!(d.next(&first), Err(WsError::InvalidData));
    }

    #[test]
    fn a_huge_announced_length_allocates_nothing() {
        let mut d = Decoder::new(Role::Server, 1 << 20);
        let head = [0x82, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4]; // 4 GiB
        assert_eq!(d.next(&head), Err(WsError::TooBig));
        assert_eq!(d.held_bytes(), 0);
    }

    #[test]
    fn a_huge_limit_still_reserves_only_what_can_arrive_soon() {
        // Regression: the decoder reserved the announced length, which with a huge
        // `max_message` let one frame head abort the process.
        let mut d = Decoder::new(Role::Server, usize::MAX);
        let head = [0x82, 0xff, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]; // 2^62 bytes
        assert_eq!(d.next(&head), Ok((14, None)));
        assert!(d.held_bytes() <= 64 * 1024, "{}", d.held_bytes());
    }

    #[test]
    fn idle_between_messages_holds_nothing() {
        let mut d = Decoder::new(Role::Server, 100);
        let wire = [frame(0x01, b"ab"), frame(0x80, b"cd")].concat();
        let (_, e) = d.next(&wire).unwrap();
        assert_eq!(e, Some(Event::Text("abcd".into())));
        assert!(d.is_idle());
        assert_eq!(d.held_bytes(), 0);
    }
}
