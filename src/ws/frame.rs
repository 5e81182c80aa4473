//! Frames (RFC 6455 §5.2): encoding, masking, and the strict parsing of a frame's head.
//!
//! ```text
//!  0                   1                   2                   3
//! +-+-+-+-+-------+-+-------------+-------------------------------+
//! |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
//! |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
//! |N|V|V|V|       |S|             |   (if payload len==126/127)   |
//! +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
//! |     Extended payload length continued, if payload len == 127  |
//! + - - - - - - - - - - - - - - - +-------------------------------+
//! |                               |Masking-key, if MASK set to 1  |
//! +-------------------------------+-------------------------------+
//! ```

use super::close::WsError;

/// Continuation frame.
pub const OP_CONTINUATION: u8 = 0x0;
/// Text frame.
pub const OP_TEXT: u8 = 0x1;
/// Binary frame.
pub const OP_BINARY: u8 = 0x2;
/// Close frame.
pub const OP_CLOSE: u8 = 0x8;
/// Ping frame.
pub const OP_PING: u8 = 0x9;
/// Pong frame.
pub const OP_PONG: u8 = 0xA;

/// A frame's opcode (RFC 6455 §5.2) with its rules: which opcodes exist (the others are
/// refused, 1002) and which are control frames. The `OP_*` numbers are the same opcodes as
/// bytes, for the specification's functions that take one.
///
/// ```
/// use web::ws::Opcode;
/// assert_eq!(Opcode::from_u8(0x9), Some(Opcode::Ping));
/// assert!(Opcode::Ping.is_control() && !Opcode::Text.is_control());
/// assert_eq!(Opcode::from_u8(0x3), None); // reserved
/// assert_eq!(Opcode::Close.as_u8(), web::ws::OP_CLOSE);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// 0x0: the next frame of a fragmented message.
    Continuation,
    /// 0x1: the first frame of a text message.
    Text,
    /// 0x2: the first frame of a binary message.
    Binary,
    /// 0x8: close.
    Close,
    /// 0x9: ping.
    Ping,
    /// 0xA: pong.
    Pong,
}

impl Opcode {
    /// The opcode of these four bits; `None` for the reserved ones (0x3–0x7, 0xB–0xF).
    pub fn from_u8(bits: u8) -> Option<Opcode> {
        Some(match bits {
            OP_CONTINUATION => Opcode::Continuation,
            OP_TEXT => Opcode::Text,
            OP_BINARY => Opcode::Binary,
            OP_CLOSE => Opcode::Close,
            OP_PING => Opcode::Ping,
            OP_PONG => Opcode::Pong,
            _ => return None,
        })
    }

    /// The opcode's four bits.
    pub const fn as_u8(self) -> u8 {
        match self {
            Opcode::Continuation => OP_CONTINUATION,
            Opcode::Text => OP_TEXT,
            Opcode::Binary => OP_BINARY,
            Opcode::Close => OP_CLOSE,
            Opcode::Ping => OP_PING,
            Opcode::Pong => OP_PONG,
        }
    }

    /// The first byte of a frame of this opcode that ends its message (FIN set, no RSV bit):
    /// what a whole message in one frame, or a control frame, starts with.
    ///
    /// ```
    /// use web::ws::Opcode;
    /// assert_eq!(Opcode::Text.fin(), 0x81);
    /// assert_eq!(Opcode::Close.fin(), 0x88);
    /// ```
    pub const fn fin(self) -> u8 {
        0x80 | self.as_u8()
    }

    /// Whether frames of this opcode are control frames (close, ping, pong: never fragmented,
    /// at most 125 bytes, allowed between the frames of a message).
    pub fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// The fixed mask key of [`client_frame`](crate::ws::client_frame) and
/// [`client_frame_bin`](crate::ws::client_frame_bin). A client library should use a fresh random
/// key per frame (RFC 6455 §5.3); these two functions are the specification's, for tests.
pub const FIXED_MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// The head of a frame, as parsed.
///
/// ```
/// use web::ws::{parse_frame_head, Role, ws_frame};
/// let head = parse_frame_head(&ws_frame("hi"), Role::Client).unwrap().unwrap();
/// assert_eq!((head.opcode, head.len, head.fin), (web::ws::Opcode::Text, 2, true));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHead {
    /// FIN: the last frame of a message.
    pub fin: bool,
    /// The opcode (low four bits of the first byte).
    pub opcode: Opcode,
    /// The masking key, when the frame is masked.
    pub mask: Option<[u8; 4]>,
    /// Payload length.
    pub len: u64,
    /// Bytes the head took.
    pub head_len: usize,
    /// RSV1: the message this frame starts is compressed (permessage-deflate, RFC 7692). Only
    /// where that extension was agreed; [`parse_frame_head`] refuses it.
    pub rsv1: bool,
}

impl FrameHead {
    /// Whether this is a control frame (close, ping, pong).
    ///
    /// ```
    /// use web::ws::{parse_frame_head, Role};
    /// let ping = parse_frame_head(&[0x89, 0x00], Role::Client).unwrap().unwrap();
    /// assert!(ping.is_control());
    /// ```
    pub fn is_control(&self) -> bool {
        self.opcode.is_control()
    }
}

/// Which side's frames are being read: a server reads masked frames, a client unmasked ones.
///
/// ```
/// use web::ws::{parse_frame_head, Role};
/// // A server refuses unmasked frames (close 1002): clients must mask.
/// assert_eq!(parse_frame_head(&[0x81, 0x02], Role::Server), Err(web::ws::WsError::Protocol));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Reading a client's frames: they must be masked.
    Server,
    /// Reading a server's frames: they must not be masked.
    Client,
}

/// Parses a frame head from the start of `buf`: `Ok(None)` while incomplete, an error when
/// the frame breaks RFC 6455 §5 ([`WsError::Protocol`](crate::ws::WsError), 1002): a frame masked the wrong
/// way for `role`, set RSV bits (no extension is negotiated), an unknown opcode, a fragmented or
/// longer-than-125-byte control frame, or a 64-bit length with its top bit set.
///
/// ```
/// use web::ws::{parse_frame_head, Opcode, Role};
/// let frame = web::ws::client_frame("hi");
/// let head = parse_frame_head(&frame, Role::Server).unwrap().unwrap();
/// assert_eq!((head.fin, head.opcode, head.len, head.head_len), (true, Opcode::Text, 2, 6));
/// assert_eq!(parse_frame_head(&frame[..1], Role::Server), Ok(None));
/// ```
pub fn parse_frame_head(buf: &[u8], role: Role) -> Result<Option<FrameHead>, WsError> {
    parse_head(buf, role, false)
}

/// [`parse_frame_head`], with RSV1 allowed on data frames when `deflate` (permessage-deflate
/// was agreed; whether the frame may carry it is the message's rule, checked by the decoder).
pub(crate) fn parse_head(
    buf: &[u8],
    role: Role,
    deflate: bool,
) -> Result<Option<FrameHead>, WsError> {
    let (Some(&b0), Some(&b1)) = (buf.first(), buf.get(1)) else {
        return Ok(None);
    };
    let fin = b0 & 0x80 != 0;
    let rsv1 = b0 & 0x40 != 0;
    let Some(opcode) = Opcode::from_u8(b0 & 0x0f) else {
        return Err(WsError::Protocol);
    };
    let masked = b1 & 0x80 != 0;
    let control = opcode.is_control();
    let reserved = if deflate && !control { 0x30 } else { 0x70 };
    if b0 & reserved != 0 {
        return Err(WsError::Protocol);
    }
    if masked != (role == Role::Server) {
        return Err(WsError::Protocol);
    }
    let short = u64::from(b1 & 0x7f);
    if control && (!fin || short > 125) {
        return Err(WsError::Protocol);
    }
    let (len, mut at) = match short {
        126 => match buf.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            Some(b) => {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(b);
                let len = u64::from_be_bytes(bytes);
                if len >> 63 != 0 {
                    return Err(WsError::Protocol);
                }
                (len, 10)
            }
            None => return Ok(None),
        },
        n => (n, 2),
    };
    let mask = if masked {
        let Some(key) = buf.get(at..at + 4) else {
            return Ok(None);
        };
        at += 4;
        Some([key[0], key[1], key[2], key[3]])
    } else {
        None
    };
    Ok(Some(FrameHead {
        fin,
        opcode,
        mask,
        len,
        head_len: at,
        rsv1,
    }))
}

/// XORs `data` with `key`, where `offset` bytes of the payload came before `data`.
///
/// ```
/// let mut data = *b"hi";
/// web::ws::apply_mask(&mut data, [1, 2, 3, 4], 0);
/// web::ws::apply_mask(&mut data, [1, 2, 3, 4], 0);
/// assert_eq!(&data, b"hi"); // masking twice restores
/// ```
pub fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    let mut rotated = [0u8; 4];
    for (i, r) in rotated.iter_mut().enumerate() {
        *r = key[(offset % 4 + i) % 4];
    }
    let word = u32::from_ne_bytes(rotated);
    let wide = u64::from(word) | (u64::from(word) << 32);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ wide).to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= rotated[i % 4];
    }
}

/// Appends a frame: `first` is the first byte (FIN and opcode, e.g. `0x81` for a final text
/// frame), then the length in its shortest form, the mask key when given, and the payload
/// (masked with it).
///
/// ```
/// let mut out = Vec::new();
/// web::ws::write_frame(&mut out, 0x81, b"hi", None);
/// assert_eq!(out, [0x81, 0x02, b'h', b'i']);
/// ```
pub fn write_frame(out: &mut Vec<u8>, first: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    // Room for the whole frame at once (the longest head is 14 bytes with its key): one
    // allocation for an empty buffer, where growing by the head and then the payload took two.
    out.reserve(payload.len().saturating_add(14));
    write_head(out, first, payload.len(), mask.is_some());
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            let start = out.len();
            out.extend_from_slice(payload);
            apply_mask(&mut out[start..], key, 0);
        }
        None => out.extend_from_slice(payload),
    }
}

/// A message's unmasked frame, encoded once for every recipient (a broadcast, a room).
pub(crate) fn encode(msg: &crate::rooms::Message) -> std::sync::Arc<[u8]> {
    match msg {
        crate::rooms::Message::Text(t) => encode_whole(Opcode::Text, t.as_bytes()),
        crate::rooms::Message::Binary(b) => encode_whole(Opcode::Binary, b),
    }
}

/// A whole message's unmasked frame, in a buffer of its own size.
pub(crate) fn encode_whole(opcode: Opcode, payload: &[u8]) -> std::sync::Arc<[u8]> {
    let mut frame = Vec::with_capacity(payload.len() + 10);
    write_frame(&mut frame, opcode.fin(), payload, None);
    frame.into()
}

/// Appends a frame head without a mask key: `first`, then `len` in its shortest form (the
/// mask bit set when `masked`, the key for the caller to append).
pub(crate) fn write_head(out: &mut Vec<u8>, first: u8, len: usize, masked: bool) {
    let mask_bit = if masked { 0x80 } else { 0 };
    out.push(first);
    match len {
        n @ 0..=125 => out.push(mask_bit | n as u8),
        n @ 126..=0xffff => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_accepted() {
        let cases: &[(&[u8], Role, FrameHead)] = &[
            (
                &[0x81, 0x82, 1, 2, 3, 4],
                Role::Server,
                FrameHead {
                    fin: true,
                    opcode: Opcode::Text,
                    mask: Some([1, 2, 3, 4]),
                    len: 2,
                    head_len: 6,
                    rsv1: false,
                },
            ),
            (
                &[0x02, 0xfe, 0x01, 0x00, 0, 0, 0, 0],
                Role::Server,
                FrameHead {
                    fin: false,
                    opcode: Opcode::Binary,
                    mask: Some([0; 4]),
                    len: 256,
                    head_len: 8,
                    rsv1: false,
                },
            ),
            (
                &[0x80, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 9, 9, 9, 9],
                Role::Server,
                FrameHead {
                    fin: true,
                    opcode: Opcode::Continuation,
                    mask: Some([9; 4]),
                    len: 65536,
                    head_len: 14,
                    rsv1: false,
                },
            ),
            (
                &[0x89, 0x00],
                Role::Client,
                FrameHead {
                    fin: true,
                    opcode: Opcode::Ping,
                    mask: None,
                    len: 0,
                    head_len: 2,
                    rsv1: false,
                },
            ),
            (
                &[0x88, 0xfd, 0, 0, 0, 0],
                Role::Server,
                FrameHead {
                    fin: true,
                    opcode: Opcode::Close,
                    mask: Some([0; 4]),
                    len: 125,
                    head_len: 6,
                    rsv1: false,
                },
            ),
        ];
        for (buf, role, want) in cases {
            assert_eq!(parse_frame_head(buf, *role), Ok(Some(*want)), "{buf:?}");
            for cut in 0..buf.len() {
                assert_eq!(
                    parse_frame_head(&buf[..cut], *role),
                    Ok(None),
                    "{buf:?} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn heads_refused_with_1002() {
        let cases: &[(&[u8], Role)] = &[
            (&[0x81, 0x02], Role::Server),             // unmasked client frame
            (&[0x81, 0x82, 0, 0, 0, 0], Role::Client), // masked server frame
            (&[0xc1, 0x80, 0, 0, 0, 0], Role::Server), // RSV1
            (&[0xa1, 0x80, 0, 0, 0, 0], Role::Server), // RSV2
            (&[0x91, 0x80, 0, 0, 0, 0], Role::Server), // RSV3
            (&[0x83, 0x80, 0, 0, 0, 0], Role::Server), // reserved data opcode
            (&[0x8b, 0x80, 0, 0, 0, 0], Role::Server), // reserved control opcode
            (&[0x09, 0x80, 0, 0, 0, 0], Role::Server), // fragmented ping
            (&[0x89, 0xfe, 0, 126, 0, 0, 0, 0], Role::Server), // long ping
            (&[0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0], Role::Server), // 64-bit length, top bit set
        ];
        for (buf, role) in cases {
            assert_eq!(
                parse_frame_head(buf, *role),
                Err(WsError::Protocol),
                "{buf:?}"
            );
        }
    }

    #[test]
    fn rsv1_only_on_data_frames_and_only_with_deflate() {
        let compressed = [0xc1, 0x80, 0, 0, 0, 0];
        assert_eq!(
            parse_frame_head(&compressed, Role::Server),
            Err(WsError::Protocol)
        );
        let head = parse_head(&compressed, Role::Server, true)
            .unwrap()
            .unwrap();
        assert!(head.rsv1);
        for refused in [
            [0xc9, 0x80, 0, 0, 0, 0], // RSV1 on a ping
            [0xc8, 0x80, 0, 0, 0, 0], // RSV1 on a close
            [0xe1, 0x80, 0, 0, 0, 0], // RSV2 beside it
            [0xd1, 0x80, 0, 0, 0, 0], // RSV3 beside it
        ] {
            assert_eq!(
                parse_head(&refused, Role::Server, true),
                Err(WsError::Protocol),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn mask_round_trips_at_every_offset() {
        let key = [0xde, 0xad, 0xbe, 0xef];
        let data: Vec<u8> = (0..50u8).collect();
        for split in 0..data.len() {
            let mut masked = data.clone();
            apply_mask(&mut masked, key, 0);
            for (i, b) in masked.iter().enumerate() {
                assert_eq!(*b, data[i] ^ key[i % 4]);
            }
            let (a, b) = masked.split_at_mut(split);
            apply_mask(a, key, 0);
            apply_mask(b, key, split);
            assert_eq!(masked, data);
        }
    }

    #[test]
    fn masking_at_offsets_near_the_top_does_not_overflow() {
        // Regression: the key index was computed as `(offset + i) % 4`, which overflows.
        let mut data = [0u8; 3];
        apply_mask(&mut data, [1, 2, 3, 4], usize::MAX);
        assert_eq!(data, [4, 1, 2]);
    }

    #[test]
    fn lengths_use_their_shortest_form() {
        for (len, head) in [
            (0usize, 2usize),
            (125, 2),
            (126, 4),
            (65535, 4),
            (65536, 10),
        ] {
            let mut out = Vec::new();
            write_frame(&mut out, 0x82, &vec![7; len], None);
            assert_eq!(out.len(), head + len);
            let parsed = parse_frame_head(&out, Role::Client).unwrap().unwrap();
            assert_eq!((parsed.len, parsed.head_len), (len as u64, head));
        }
    }
}
