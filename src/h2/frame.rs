//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte head, each type's payload taken apart with the
//! rules a frame alone can be checked against (its size, its stream, its flags), and the
//! frames this side writes. What depends on the connection's state (which stream may send
//! what, CONTINUATION's order, flow control) is the connection's.

use super::error::{ErrorCode, H2Error};

/// The size of a frame head.
pub(crate) const HEAD_LEN: usize = 9;
/// The smallest SETTINGS_MAX_FRAME_SIZE, and its initial value (RFC 9113 §6.5.2).
pub(crate) const MIN_MAX_FRAME_SIZE: u32 = 1 << 14;
/// The largest SETTINGS_MAX_FRAME_SIZE.
pub(crate) const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub(crate) const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame flags.
pub(crate) mod flags {
    /// DATA, HEADERS: the stream's last frame from its sender.
    pub(crate) const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub(crate) const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block ends here.
    pub(crate) const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: padded.
    pub(crate) const PADDED: u8 = 0x8;
    /// HEADERS: a priority block is present (read and ignored).
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// Frame types (RFC 9113 §6); others are read and ignored (§4.1, §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Data,
    Headers,
    Priority,
    RstStream,
    Settings,
    PushPromise,
    Ping,
    GoAway,
    WindowUpdate,
    Continuation,
    /// A type this side does not know: ignored.
    Unknown(u8),
}

impl Kind {
    fn from_u8(byte: u8) -> Kind {
        match byte {
            0x0 => Kind::Data,
            0x1 => Kind::Headers,
            0x2 => Kind::Priority,
            0x3 => Kind::RstStream,
            0x4 => Kind::Settings,
            0x5 => Kind::PushPromise,
            0x6 => Kind::Ping,
            0x7 => Kind::GoAway,
            0x8 => Kind::WindowUpdate,
            0x9 => Kind::Continuation,
            other => Kind::Unknown(other),
        }
    }

    const fn as_u8(self) -> u8 {
        match self {
            Kind::Data => 0x0,
            Kind::Headers => 0x1,
            Kind::Priority => 0x2,
            Kind::RstStream => 0x3,
            Kind::Settings => 0x4,
            Kind::PushPromise => 0x5,
            Kind::Ping => 0x6,
            Kind::GoAway => 0x7,
            Kind::WindowUpdate => 0x8,
            Kind::Continuation => 0x9,
            Kind::Unknown(other) => other,
        }
    }
}

/// A frame's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// The payload's length.
    pub(crate) len: u32,
    pub(crate) kind: Kind,
    pub(crate) flags: u8,
    /// The stream (the reserved bit dropped, RFC 9113 §4.1).
    pub(crate) stream: u32,
}

impl Head {
    /// The head at the start of `input`, once 9 bytes are there.
    pub(crate) fn parse(input: &[u8]) -> Option<Head> {
        let b: &[u8; HEAD_LEN] = input.get(..HEAD_LEN)?.try_into().ok()?;
        Some(Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: Kind::from_u8(b[3]),
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
        })
    }

    /// Whether `flag` is set.
    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// One SETTINGS parameter this side acts on (RFC 9113 §6.5.2, RFC 8441 §3); unknown ones
/// are ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    HeaderTableSize(u32),
    EnablePush(bool),
    MaxConcurrentStreams(u32),
    InitialWindowSize(u32),
    MaxFrameSize(u32),
    MaxHeaderListSize(u32),
    EnableConnectProtocol(bool),
}

impl Setting {
    /// One 6-byte parameter: `None` for an unknown one, the connection error for a value out
    /// of range.
    fn parse(b: [u8; 6]) -> Result<Option<Setting>, H2Error> {
        let value = u32::from_be_bytes([b[2], b[3], b[4], b[5]]);
        let flag = |v: u32| match v {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(H2Error::Connection(ErrorCode::Protocol)),
        };
        Ok(Some(match u16::from_be_bytes([b[0], b[1]]) {
            0x1 => Setting::HeaderTableSize(value),
            0x2 => Setting::EnablePush(flag(value)?),
            0x3 => Setting::MaxConcurrentStreams(value),
            0x4 if value > MAX_WINDOW => return Err(H2Error::Connection(ErrorCode::FlowControl)),
            0x4 => Setting::InitialWindowSize(value),
            0x5 if !(MIN_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) => {
                return Err(H2Error::Connection(ErrorCode::Protocol));
            }
            0x5 => Setting::MaxFrameSize(value),
            0x6 => Setting::MaxHeaderListSize(value),
            0x8 => Setting::EnableConnectProtocol(flag(value)?),
            _ => return Ok(None),
        }))
    }

    fn id_and_value(self) -> (u16, u32) {
        match self {
            Setting::HeaderTableSize(v) => (0x1, v),
            Setting::EnablePush(on) => (0x2, u32::from(on)),
            Setting::MaxConcurrentStreams(v) => (0x3, v),
            Setting::InitialWindowSize(v) => (0x4, v),
            Setting::MaxFrameSize(v) => (0x5, v),
            Setting::MaxHeaderListSize(v) => (0x6, v),
            Setting::EnableConnectProtocol(on) => (0x8, u32::from(on)),
        }
    }
}

/// A frame taken apart: its payload borrowed from the input, padding and priority removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
        /// What the frame counts against flow control: its whole payload, padding included.
        flow_len: u32,
    },
    Headers {
        stream: u32,
        /// The first fragment of the header block.
        block: &'a [u8],
        end_stream: bool,
        end_headers: bool,
    },
    Priority,
    RstStream {
        stream: u32,
        code: ErrorCode,
    },
    Settings {
        ack: bool,
        /// Six bytes a parameter; read with [`settings`].
        params: &'a [u8],
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: ErrorCode,
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    Continuation {
        stream: u32,
        block: &'a [u8],
        end_headers: bool,
    },
    /// A type this side ignores.
    Unknown,
}

/// The payload of `head`, taken apart, or the error the frame alone earns. `max_frame_size`
/// is the SETTINGS_MAX_FRAME_SIZE this side advertised.
pub(crate) fn parse<'a>(
    head: &Head,
    payload: &'a [u8],
    max_frame_size: u32,
) -> Result<Frame<'a>, H2Error> {
    let conn = |code| Err(H2Error::Connection(code));
    if head.len > max_frame_size {
        // RFC 9113 §4.2: a frame that could alter the connection's state (header blocks,
        // SETTINGS, frames on stream 0) ends it; others end their stream. We end the
        // connection for all: the frame cannot be read whole within our bounds.
        return conn(ErrorCode::FrameSize);
    }
    let stream = head.stream;
    let len = payload.len();
    match head.kind {
        Kind::Data => {
            if stream == 0 {
                return conn(ErrorCode::Protocol);
            }
            let data = unpad(head, payload)?;
            Ok(Frame::Data {
                stream,
                data,
                end_stream: head.has(flags::END_STREAM),
                flow_len: head.len,
            })
        }
        Kind::Headers => {
            if stream == 0 {
                return conn(ErrorCode::Protocol);
            }
            let mut block = unpad(head, payload)?;
            if head.has(flags::PRIORITY) {
                let Some((priority, rest)) = block.split_first_chunk::<5>() else {
                    return conn(ErrorCode::FrameSize);
                };
                if u32::from_be_bytes([priority[0], priority[1], priority[2], priority[3]])
                    & MAX_WINDOW
                    == stream
                {
                    // A stream depending on itself (RFC 9113 §5.3.1).
                    return Err(H2Error::Stream(stream, ErrorCode::Protocol));
                }
                block = rest;
            }
            Ok(Frame::Headers {
                stream,
                block,
                end_stream: head.has(flags::END_STREAM),
                end_headers: head.has(flags::END_HEADERS),
            })
        }
        Kind::Priority => {
            if stream == 0 {
                return conn(ErrorCode::Protocol);
            }
            if len != 5 {
                return Err(H2Error::Stream(stream, ErrorCode::FrameSize));
            }
            if u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & MAX_WINDOW
                == stream
            {
                return Err(H2Error::Stream(stream, ErrorCode::Protocol));
            }
            Ok(Frame::Priority)
        }
        Kind::RstStream => {
            if stream == 0 {
                return conn(ErrorCode::Protocol);
            }
            let Ok(code) = <[u8; 4]>::try_from(payload) else {
                return conn(ErrorCode::FrameSize);
            };
            Ok(Frame::RstStream {
                stream,
                code: ErrorCode::from_code(u32::from_be_bytes(code)),
            })
        }
        Kind::Settings => {
            if stream != 0 {
                return conn(ErrorCode::Protocol);
            }
            let ack = head.has(flags::ACK);
            if (ack && len != 0) || !len.is_multiple_of(6) {
                return conn(ErrorCode::FrameSize);
            }
            // Every value checked now, so that a SETTINGS frame is applied whole or not at all.
            for param in payload.chunks_exact(6) {
                let mut b = [0u8; 6];
                b.copy_from_slice(param);
                Setting::parse(b)?;
            }
            Ok(Frame::Settings {
                ack,
                params: payload,
            })
        }
        // A client never pushes (RFC 9113 §8.4).
        Kind::PushPromise => conn(ErrorCode::Protocol),
        Kind::Ping => {
            if stream != 0 {
                return conn(ErrorCode::Protocol);
            }
            let Ok(data) = <[u8; 8]>::try_from(payload) else {
                return conn(ErrorCode::FrameSize);
            };
            Ok(Frame::Ping {
                ack: head.has(flags::ACK),
                data,
            })
        }
        Kind::GoAway => {
            if stream != 0 {
                return conn(ErrorCode::Protocol);
            }
            let Some((fixed, _debug)) = payload.split_first_chunk::<8>() else {
                return conn(ErrorCode::FrameSize);
            };
            Ok(Frame::GoAway {
                last_stream: u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]])
                    & MAX_WINDOW,
                code: ErrorCode::from_code(u32::from_be_bytes([
                    fixed[4], fixed[5], fixed[6], fixed[7],
                ])),
            })
        }
        Kind::WindowUpdate => {
            let Ok(b) = <[u8; 4]>::try_from(payload) else {
                return conn(ErrorCode::FrameSize);
            };
            let increment = u32::from_be_bytes(b) & MAX_WINDOW;
            if increment == 0 {
                return Err(match stream {
                    0 => H2Error::Connection(ErrorCode::Protocol),
                    s => H2Error::Stream(s, ErrorCode::Protocol),
                });
            }
            Ok(Frame::WindowUpdate { stream, increment })
        }
        Kind::Continuation => {
            if stream == 0 {
                return conn(ErrorCode::Protocol);
            }
            Ok(Frame::Continuation {
                stream,
                block: payload,
                end_headers: head.has(flags::END_HEADERS),
            })
        }
        Kind::Unknown(_) => Ok(Frame::Unknown),
    }
}

/// The parameters of a SETTINGS frame [`parse`] accepted, in order.
pub(crate) fn settings(params: &[u8]) -> impl Iterator<Item = Setting> + '_ {
    params.chunks_exact(6).filter_map(|p| {
        let mut b = [0u8; 6];
        b.copy_from_slice(p);
        Setting::parse(b).ok().flatten()
    })
}

/// A padded frame's content: the pad length and padding taken off (RFC 9113 §6.1).
fn unpad<'a>(head: &Head, payload: &'a [u8]) -> Result<&'a [u8], H2Error> {
    if !head.has(flags::PADDED) {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(H2Error::Connection(ErrorCode::FrameSize));
    };
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
        .ok_or(H2Error::Connection(ErrorCode::Protocol))
}

/// Appends a frame head.
pub(crate) fn write_head(out: &mut Vec<u8>, len: usize, kind: Kind, flags: u8, stream: u32) {
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind.as_u8(), flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// Appends a SETTINGS frame with `params`.
pub(crate) fn write_settings(out: &mut Vec<u8>, params: &[Setting]) {
    write_head(out, params.len() * 6, Kind::Settings, 0, 0);
    for p in params {
        let (id, value) = p.id_and_value();
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends the acknowledgement of the peer's SETTINGS.
pub(crate) fn write_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, Kind::Settings, flags::ACK, 0);
}

/// Appends a PING (or its answer, `ack`).
pub(crate) fn write_ping(out: &mut Vec<u8>, data: [u8; 8], ack: bool) {
    write_head(out, 8, Kind::Ping, if ack { flags::ACK } else { 0 }, 0);
    out.extend_from_slice(&data);
}

/// Appends a GOAWAY.
pub(crate) fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode) {
    write_head(out, 8, Kind::GoAway, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&code.code().to_be_bytes());
}

/// Appends an RST_STREAM.
pub(crate) fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    write_head(out, 4, Kind::RstStream, 0, stream);
    out.extend_from_slice(&code.code().to_be_bytes());
}

/// Appends a WINDOW_UPDATE.
pub(crate) fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_head(out, 4, Kind::WindowUpdate, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_head(&mut out, payload.len(), Kind::from_u8(kind), flags, stream);
        out.extend_from_slice(payload);
        out
    }

    fn read(bytes: &[u8]) -> Result<Frame<'_>, H2Error> {
        let head = Head::parse(bytes).unwrap();
        parse(&head, &bytes[HEAD_LEN..], MIN_MAX_FRAME_SIZE)
    }

    const CONN_PROTOCOL: H2Error = H2Error::Connection(ErrorCode::Protocol);
    const CONN_SIZE: H2Error = H2Error::Connection(ErrorCode::FrameSize);

    /// What each frame alone earns (RFC 9113 §6), one row a rule.
    #[test]
    fn each_frame_rule_earns_its_error() {
        let table: Vec<(Vec<u8>, H2Error, &str)> = vec![
            (frame(0x0, 0, 0, b"x"), CONN_PROTOCOL, "DATA on stream 0"),
            (
                frame(0x0, flags::PADDED, 1, &[5, 1, 2]),
                CONN_PROTOCOL,
                "padding past the payload",
            ),
            (
                frame(0x0, flags::PADDED, 1, &[]),
                CONN_SIZE,
                "PADDED without a pad length",
            ),
            (frame(0x1, 0, 0, b""), CONN_PROTOCOL, "HEADERS on stream 0"),
            (
                frame(0x1, flags::PRIORITY, 3, &[0, 0, 0, 3, 16]),
                H2Error::Stream(3, ErrorCode::Protocol),
                "HEADERS depending on itself",
            ),
            (
                frame(0x1, flags::PRIORITY, 3, &[0, 0]),
                CONN_SIZE,
                "HEADERS with a short priority",
            ),
            (
                frame(0x2, 0, 0, &[0; 5]),
                CONN_PROTOCOL,
                "PRIORITY on stream 0",
            ),
            (
                frame(0x2, 0, 1, &[0; 4]),
                H2Error::Stream(1, ErrorCode::FrameSize),
                "PRIORITY of 4 bytes",
            ),
            (
                frame(0x2, 0, 1, &[0, 0, 0, 1, 0]),
                H2Error::Stream(1, ErrorCode::Protocol),
                "PRIORITY on itself",
            ),
            (
                frame(0x3, 0, 0, &[0; 4]),
                CONN_PROTOCOL,
                "RST_STREAM on stream 0",
            ),
            (
                frame(0x3, 0, 1, &[0; 3]),
                CONN_SIZE,
                "RST_STREAM of 3 bytes",
            ),
            (frame(0x4, 0, 1, b""), CONN_PROTOCOL, "SETTINGS on a stream"),
            (
                frame(0x4, flags::ACK, 0, &[0; 6]),
                CONN_SIZE,
                "SETTINGS ACK with a payload",
            ),
            (frame(0x4, 0, 0, &[0; 5]), CONN_SIZE, "SETTINGS of 5 bytes"),
            (
                frame(0x4, 0, 0, &[0, 2, 0, 0, 0, 2]),
                CONN_PROTOCOL,
                "ENABLE_PUSH 2",
            ),
            (
                frame(0x4, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
                H2Error::Connection(ErrorCode::FlowControl),
                "INITIAL_WINDOW_SIZE 2^31",
            ),
            (
                frame(0x4, 0, 0, &[0, 5, 0, 0, 0x3f, 0xff]),
                CONN_PROTOCOL,
                "MAX_FRAME_SIZE below 2^14",
            ),
            (
                frame(0x4, 0, 0, &[0, 5, 1, 0, 0, 0]),
                CONN_PROTOCOL,
                "MAX_FRAME_SIZE 2^24",
            ),
            (
                frame(0x4, 0, 0, &[0, 8, 0, 0, 0, 2]),
                CONN_PROTOCOL,
                "ENABLE_CONNECT_PROTOCOL 2",
            ),
            (
                frame(0x5, 0, 1, &[0; 4]),
                CONN_PROTOCOL,
                "PUSH_PROMISE from a client",
            ),
            (frame(0x6, 0, 1, &[0; 8]), CONN_PROTOCOL, "PING on a stream"),
            (frame(0x6, 0, 0, &[0; 7]), CONN_SIZE, "PING of 7 bytes"),
            (
                frame(0x7, 0, 1, &[0; 8]),
                CONN_PROTOCOL,
                "GOAWAY on a stream",
            ),
            (frame(0x7, 0, 0, &[0; 7]), CONN_SIZE, "GOAWAY of 7 bytes"),
            (
                frame(0x8, 0, 0, &[0; 3]),
                CONN_SIZE,
                "WINDOW_UPDATE of 3 bytes",
            ),
            (
                frame(0x8, 0, 0, &[0; 4]),
                CONN_PROTOCOL,
                "WINDOW_UPDATE of 0 on the connection",
            ),
            (
                frame(0x8, 0, 5, &[0; 4]),
                H2Error::Stream(5, ErrorCode::Protocol),
                "WINDOW_UPDATE of 0 on a stream",
            ),
            (
                frame(0x9, 0, 0, b""),
                CONN_PROTOCOL,
                "CONTINUATION on stream 0",
            ),
            (
                frame(0x0, 0, 1, &[0; 16_385]),
                CONN_SIZE,
                "a frame past MAX_FRAME_SIZE",
            ),
        ];
        for (bytes, want, rule) in table {
            assert_eq!(read(&bytes), Err(want), "{rule}");
        }
    }

    #[test]
    fn frames_are_read_with_padding_and_priority_removed() {
        assert_eq!(
            read(&frame(
                0x0,
                flags::PADDED | flags::END_STREAM,
                1,
                &[2, b'h', b'i', 0, 0]
            )),
            Ok(Frame::Data {
                stream: 1,
                data: b"hi",
                end_stream: true,
                flow_len: 5
            })
        );
        assert_eq!(
            read(&frame(
                0x1,
                flags::PRIORITY | flags::PADDED | flags::END_HEADERS,
                3,
                &[1, 0, 0, 0, 1, 16, 0x82, 0]
            )),
            Ok(Frame::Headers {
                stream: 3,
                block: &[0x82],
                end_stream: false,
                end_headers: true
            })
        );
        assert_eq!(
            read(&frame(0x6, flags::ACK, 0, b"12345678")),
            Ok(Frame::Ping {
                ack: true,
                data: *b"12345678"
            })
        );
        assert_eq!(
            read(&frame(0x7, 0, 0, &[0x80, 0, 0, 7, 0, 0, 0, 0xb, b'x'])),
            Ok(Frame::GoAway {
                last_stream: 7,
                code: ErrorCode::EnhanceYourCalm
            })
        );
        assert_eq!(
            read(&frame(0x8, 0, 0, &[0x80, 0, 0, 1])),
            Ok(Frame::WindowUpdate {
                stream: 0,
                increment: 1
            }),
            "the reserved bit is dropped"
        );
        assert_eq!(read(&frame(0xf0, 0xff, 9, b"anything")), Ok(Frame::Unknown));
        let params = [0, 3, 0, 0, 0, 100, 0, 0x99, 0, 0, 0, 1, 0, 4, 0, 1, 0, 0];
        let bytes = frame(0x4, 0, 0, &params);
        let Ok(Frame::Settings { ack: false, params }) = read(&bytes) else {
            panic!("SETTINGS");
        };
        assert_eq!(
            settings(params).collect::<Vec<_>>(),
            [
                Setting::MaxConcurrentStreams(100),
                Setting::InitialWindowSize(65_536)
            ],
            "an unknown parameter is ignored"
        );
    }

    #[test]
    fn written_frames_read_back() {
        let mut out = Vec::new();
        write_settings(
            &mut out,
            &[
                Setting::MaxConcurrentStreams(250),
                Setting::EnableConnectProtocol(true),
            ],
        );
        write_settings_ack(&mut out);
        write_ping(&mut out, *b"pingpong", true);
        write_goaway(&mut out, 9, ErrorCode::NoError);
        write_rst_stream(&mut out, 3, ErrorCode::Cancel);
        write_window_update(&mut out, 0, 1 << 20);
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while let Some(head) = Head::parse(rest) {
            let end = HEAD_LEN + head.len as usize;
            frames.push(format!(
                "{:?}",
                parse(&head, &rest[HEAD_LEN..end], MIN_MAX_FRAME_SIZE).unwrap()
            ));
            rest = &rest[end..];
        }
        assert!(rest.is_empty());
        assert_eq!(frames.len(), 6);
        assert!(frames[2].contains("Ping { ack: true"));
        assert!(frames[3].contains("last_stream: 9, code: NoError"));
        assert!(frames[4].contains("stream: 3, code: Cancel"));
        assert!(frames[5].contains("increment: 1048576"));
    }

    proptest::proptest! {
        #[test]
        fn any_frame_reads_or_is_refused_without_panic(
            kind in 0u8..12, flags in proptest::num::u8::ANY, stream in 0u32..4,
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        ) {
            let bytes = frame(kind, flags, stream, &payload);
            let _ = read(&bytes);
        }
    }
}
