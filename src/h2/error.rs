//! HTTP/2 error codes (RFC 9113 §7) and what a broken rule ends: the stream, or the whole
//! connection.

/// An error code of RST_STREAM and GOAWAY frames (RFC 9113 §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ErrorCode {
    /// 0x0: not an error (a graceful GOAWAY, a stream no longer wanted).
    NoError,
    /// 0x1: a rule of the protocol broken.
    Protocol,
    /// 0x2: the endpoint failed on its own.
    Internal,
    /// 0x3: flow control broken.
    FlowControl,
    /// 0x4: SETTINGS not acknowledged in time.
    SettingsTimeout,
    /// 0x5: a frame on a closed stream.
    StreamClosed,
    /// 0x6: a frame of the wrong size.
    FrameSize,
    /// 0x7: the stream was refused before any of it was processed (safe to retry).
    RefusedStream,
    /// 0x8: the stream is not wanted any more.
    Cancel,
    /// 0x9: the header compression state cannot be kept.
    Compression,
    /// 0xa: a CONNECT tunnel's connection was reset or closed.
    Connect,
    /// 0xb: the peer generates load the endpoint will not carry.
    EnhanceYourCalm,
    /// 0xc: the transport does not meet the minimum security.
    InadequateSecurity,
    /// 0xd: the endpoint requires HTTP/1.1 instead.
    Http11Required,
}

impl ErrorCode {
    /// The code on the wire.
    pub(crate) const fn code(self) -> u32 {
        match self {
            ErrorCode::NoError => 0x0,
            ErrorCode::Protocol => 0x1,
            ErrorCode::Internal => 0x2,
            ErrorCode::FlowControl => 0x3,
            ErrorCode::SettingsTimeout => 0x4,
            ErrorCode::StreamClosed => 0x5,
            ErrorCode::FrameSize => 0x6,
            ErrorCode::RefusedStream => 0x7,
            ErrorCode::Cancel => 0x8,
            ErrorCode::Compression => 0x9,
            ErrorCode::Connect => 0xa,
            ErrorCode::EnhanceYourCalm => 0xb,
            ErrorCode::InadequateSecurity => 0xc,
            ErrorCode::Http11Required => 0xd,
        }
    }

    /// The code a peer sent; an unknown one is read as INTERNAL_ERROR (RFC 9113 §7: "MUST NOT
    /// trigger any special behavior").
    pub(crate) fn from_code(code: u32) -> ErrorCode {
        match code {
            0x0 => ErrorCode::NoError,
            0x1 => ErrorCode::Protocol,
            0x3 => ErrorCode::FlowControl,
            0x4 => ErrorCode::SettingsTimeout,
            0x5 => ErrorCode::StreamClosed,
            0x6 => ErrorCode::FrameSize,
            0x7 => ErrorCode::RefusedStream,
            0x8 => ErrorCode::Cancel,
            0x9 => ErrorCode::Compression,
            0xa => ErrorCode::Connect,
            0xb => ErrorCode::EnhanceYourCalm,
            0xc => ErrorCode::InadequateSecurity,
            0xd => ErrorCode::Http11Required,
            _ => ErrorCode::Internal,
        }
    }
}

/// A broken rule and what it ends (RFC 9113 §5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum H2Error {
    /// The whole connection: GOAWAY with the code, then close.
    Connection(ErrorCode),
    /// One stream: RST_STREAM with the code; the connection goes on.
    Stream(u32, ErrorCode),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_as_itself_and_unknown_ones_as_internal() {
        for code in 0..=0xd {
            assert_eq!(ErrorCode::from_code(code).code(), code);
        }
        assert_eq!(ErrorCode::from_code(0xe), ErrorCode::Internal);
        assert_eq!(ErrorCode::from_code(u32::MAX), ErrorCode::Internal);
    }
}
