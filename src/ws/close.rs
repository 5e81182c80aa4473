//! Close codes (RFC 6455 §7.4) and the close frame's payload.

/// A close code (RFC 6455 §7.4): the named codes the library sends, and the one rule for
/// which codes may be on the wire. The specification's functions take and give a `u16`
/// ([`NORMAL`], [`close_payload`], ...); this is the type behind them.
///
/// ```
/// use web::ws::CloseCode;
/// assert_eq!(CloseCode::GOING_AWAY.get(), 1001);
/// assert!(CloseCode::new(4000).may_be_sent());
/// assert!(!CloseCode::new(1006).may_be_sent()); // "no close frame": never on the wire
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CloseCode(u16);

impl CloseCode {
    /// 1000: normal closure.
    pub const NORMAL: CloseCode = CloseCode(1000);
    /// 1001: the endpoint is going away (server shutting down).
    pub const GOING_AWAY: CloseCode = CloseCode(1001);
    /// 1002: protocol error.
    pub const PROTOCOL_ERROR: CloseCode = CloseCode(1002);
    /// 1007: a text message (or close reason) that is not UTF-8.
    pub const INVALID_DATA: CloseCode = CloseCode(1007);
    /// 1008: policy violation (used when a peer does not read what it is sent).
    pub const POLICY: CloseCode = CloseCode(1008);
    /// 1009: a message too big to process.
    pub const TOO_BIG: CloseCode = CloseCode(1009);
    /// 1011: the server met an unexpected condition.
    pub const INTERNAL_ERROR: CloseCode = CloseCode(1011);

    /// The code `code`, whatever it is (what may be sent of it is [`may_be_sent`]'s to say).
    ///
    /// ```
    /// assert_eq!(web::ws::CloseCode::new(1000), web::ws::CloseCode::NORMAL);
    /// ```
    ///
    /// [`may_be_sent`]: CloseCode::may_be_sent
    pub const fn new(code: u16) -> CloseCode {
        CloseCode(code)
    }

    /// The number.
    ///
    /// ```
    /// assert_eq!(web::ws::CloseCode::TOO_BIG.get(), 1009);
    /// ```
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Whether the code may be in a close frame: 1000–1003, 1007–1011 and the later
    /// registered 1012–1014, and 3000–4999 (registered and private use). 1004–1006 and 1015
    /// are reserved never to be sent; anything else is unassigned.
    ///
    /// ```
    /// assert!(web::ws::CloseCode::POLICY.may_be_sent());
    /// assert!(!web::ws::CloseCode::new(1005).may_be_sent());
    /// ```
    pub const fn may_be_sent(self) -> bool {
        matches!(self.0, 1000..=1003 | 1007..=1014 | 3000..=4999)
    }

    /// The payload of a close frame sent for this code: the code when it
    /// [may be sent](CloseCode::may_be_sent), else nothing (an empty payload is what 1005,
    /// "no code", stands for). Every close frame the library writes takes its payload from
    /// here.
    ///
    /// ```
    /// assert_eq!(web::ws::CloseCode::NORMAL.payload(), [0x03, 0xe8]);
    /// assert!(web::ws::CloseCode::new(1015).payload().is_empty());
    /// ```
    pub fn payload(self) -> Vec<u8> {
        if self.may_be_sent() {
            self.0.to_be_bytes().to_vec()
        } else {
            Vec::new()
        }
    }
}

impl From<u16> for CloseCode {
    fn from(code: u16) -> CloseCode {
        CloseCode(code)
    }
}

impl From<CloseCode> for u16 {
    fn from(code: CloseCode) -> u16 {
        code.0
    }
}

/// 1000: normal closure.
pub const NORMAL: u16 = CloseCode::NORMAL.get();
/// 1001: the endpoint is going away (server shutting down).
pub const GOING_AWAY: u16 = CloseCode::GOING_AWAY.get();
/// 1002: protocol error.
pub const PROTOCOL_ERROR: u16 = CloseCode::PROTOCOL_ERROR.get();
/// 1007: a text message (or close reason) that is not UTF-8.
pub const INVALID_DATA: u16 = CloseCode::INVALID_DATA.get();
/// 1008: policy violation (used when a peer does not read what it is sent).
pub const POLICY: u16 = CloseCode::POLICY.get();
/// 1009: a message too big to process.
pub const TOO_BIG: u16 = CloseCode::TOO_BIG.get();
/// 1011: the server met an unexpected condition.
pub const INTERNAL_ERROR: u16 = CloseCode::INTERNAL_ERROR.get();

/// Why a WebSocket peer's input was refused, each with the close code it earns (RFC 6455 §7.4):
/// the one place a broken rule meets its code.
///
/// ```
/// use web::ws::{parse_frame_head, Role, WsError};
/// // A server refuses unmasked frames: clients must mask.
/// let err = parse_frame_head(&[0x81, 0x02], Role::Server).unwrap_err();
/// assert_eq!((err, err.code()), (WsError::Protocol, 1002));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WsError {
    /// 1002: a frame or message breaks the protocol (masking, reserved bits, an unknown
    /// opcode, a control frame's rules, fragmentation, a close frame's payload).
    Protocol,
    /// 1007: a text message or close reason that is not UTF-8, or compressed data that does
    /// not decompress.
    InvalidData,
    /// 1009: a message larger than the limit.
    TooBig,
}

impl WsError {
    /// The close code to close the connection with.
    ///
    /// ```
    /// assert_eq!(web::ws::WsError::TooBig.code(), 1009);
    /// ```
    pub fn code(self) -> u16 {
        self.close_code().get()
    }

    /// The close code to close the connection with, as a [`CloseCode`].
    ///
    /// ```
    /// use web::ws::{CloseCode, WsError};
    /// assert_eq!(WsError::Protocol.close_code(), CloseCode::PROTOCOL_ERROR);
    /// ```
    pub fn close_code(self) -> CloseCode {
        match self {
            WsError::Protocol => CloseCode::PROTOCOL_ERROR,
            WsError::InvalidData => CloseCode::INVALID_DATA,
            WsError::TooBig => CloseCode::TOO_BIG,
        }
    }
}

impl std::fmt::Display for WsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WsError::Protocol => "WebSocket protocol error (close 1002)",
            WsError::InvalidData => "invalid WebSocket data (close 1007)",
            WsError::TooBig => "WebSocket message too big (close 1009)",
        })
    }
}

impl std::error::Error for WsError {}

impl From<WsError> for std::io::Error {
    fn from(e: WsError) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    }
}

/// Whether a peer may send `code` in a close frame ([`CloseCode::may_be_sent`]).
///
/// ```
/// assert!(web::ws::is_valid_code(1000));
/// assert!(!web::ws::is_valid_code(1005)); // reserved: never sent
/// ```
pub fn is_valid_code(code: u16) -> bool {
    CloseCode::new(code).may_be_sent()
}

/// The payload of a close frame we send for `code` ([`CloseCode::payload`]): the code itself
/// when a peer may send it ([`is_valid_code`]), else no code at all. RFC 6455 §7.4 keeps 1005,
/// 1006 and 1015 off the wire (they stand for "no code", "no close frame" and "TLS failed"),
/// and the unassigned codes mean nothing to a peer.
///
/// ```
/// assert_eq!(web::ws::close_payload(1000), vec![0x03, 0xe8]);
/// assert_eq!(web::ws::close_payload(1006), Vec::<u8>::new());
/// ```
pub fn close_payload(code: u16) -> Vec<u8> {
    CloseCode::new(code).payload()
}

/// A close frame's payload taken apart: `Ok(None)` when empty, `Ok(Some((code, reason)))`, or
/// what the frame broke: [`WsError::Protocol`] (1002) for a one-byte payload or an invalid code,
/// [`WsError::InvalidData`] (1007) for a reason that is not UTF-8.
///
/// ```
/// assert_eq!(web::ws::parse_close(&[0x03, 0xe8, b'o', b'k']), Ok(Some((1000, "ok"))));
/// assert_eq!(web::ws::parse_close(&[]), Ok(None));
/// ```
pub fn parse_close(payload: &[u8]) -> Result<Option<(u16, &str)>, WsError> {
    match payload {
        [] => Ok(None),
        [_] => Err(WsError::Protocol),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            if !is_valid_code(code) {
                return Err(WsError::Protocol);
            }
            let reason = std::str::from_utf8(reason).map_err(|_| WsError::InvalidData)?;
            Ok(Some((code, reason)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_payloads() {
        type Case = (&'static [u8], Result<Option<(u16, &'static str)>, WsError>);
        let cases: &[Case] = &[
            (b"", Ok(None)),
            (&[0x03], Err(WsError::Protocol)),
            (&[0x03, 0xe8], Ok(Some((1000, "")))),
            (&[0x03, 0xe8, b'b', b'y', b'e'], Ok(Some((1000, "bye")))),
            (&[0x0b, 0xb8], Ok(Some((3000, "")))),
            (&[0x13, 0x87], Ok(Some((4999, "")))),
            (&[0x03, 0xec], Err(WsError::Protocol)), // 1004
            (&[0x03, 0xed], Err(WsError::Protocol)), // 1005
            (&[0x03, 0xee], Err(WsError::Protocol)), // 1006
            (&[0x03, 0xf7], Err(WsError::Protocol)), // 1015
            (&[0x03, 0xe7], Err(WsError::Protocol)), // 999
            (&[0x07, 0xd0], Err(WsError::Protocol)), // 2000
            (&[0x13, 0x88], Err(WsError::Protocol)), // 5000
            (&[0x03, 0xe8, 0xff], Err(WsError::InvalidData)),
        ];
        for (payload, want) in cases {
            assert_eq!(parse_close(payload), *want, "{payload:?}");
        }
    }

    #[test]
    fn what_we_send_is_what_a_peer_accepts() {
        for code in 0..=u16::MAX {
            let payload = close_payload(code);
            match parse_close(&payload) {
                Ok(Some((sent, ""))) => assert_eq!(sent, code),
                Ok(None) => assert!(!is_valid_code(code), "{code}"),
                other => panic!("{code}: {other:?}"),
            }
        }
        for reserved in [1004, 1005, 1006, 1015, 0, 999, 2999, 5000] {
            assert!(close_payload(reserved).is_empty(), "{reserved}");
        }
    }
}
