//! The records that carry a client's ClientHello, walked as they arrive, before rustls reads
//! them: they are plaintext, so one over 2^14 bytes is `record_overflow` (RFC 8446 §5.1), and
//! a record of application data between two of its fragments is `unexpected_message`
//! (handshake messages are not interleaved with other records, §5.1). Once the ClientHello is
//! whole the walk ends: what follows (early data a client may send, which rustls skips) is
//! rustls' to judge. rustls accepts the first and closes without an alert on the second. A pure
//! walker over the bytes as read, keeping a record header's bytes at most.

use super::alert::{RECORD_OVERFLOW, UNEXPECTED_MESSAGE};
use super::records::{ALERT, MAX_PLAINTEXT};

const HEADER: usize = 5;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;

/// Why the first flight is refused, by its alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `record_overflow`: a plaintext record over 2^14 bytes.
    Overflow,
    /// `unexpected_message`: application data inside the ClientHello.
    Unexpected,
}

impl Refused {
    /// The plaintext fatal alert record that says so.
    pub(crate) fn alert(self) -> [u8; 7] {
        let [level, description] = match self {
            Refused::Overflow => RECORD_OVERFLOW,
            Refused::Unexpected => UNEXPECTED_MESSAGE,
        };
        [ALERT, 3, 3, 0, 2, level, description]
    }
}

/// Where the walk stands (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FirstFlight {
    header: [u8; HEADER],
    /// Bytes of `header` read.
    have: u8,
    /// Bytes of the current record's body still to come.
    left: u16,
    /// Bytes of the ClientHello's 4-byte message header read.
    hello_have: u8,
    /// Bytes of the ClientHello's body still to come, once its header is read.
    hello_left: u32,
}

impl FirstFlight {
    /// Walks `bytes`, the next ones read from the client: `Ok(true)` once the ClientHello is
    /// whole (the walk is over; the rest is not looked at).
    pub(crate) fn walk(&mut self, mut bytes: &[u8]) -> Result<bool, Refused> {
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = bytes.len().min(usize::from(self.left));
                // n ≤ left, a u16.
                self.left -= n as u16;
                if self.header[0] == HANDSHAKE && self.hello(&bytes[..n]) {
                    return Ok(true);
                }
                bytes = &bytes[n..];
                continue;
            }
            let have = usize::from(self.have);
            let n = bytes.len().min(HEADER - have);
            self.header[have..have + n].copy_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            self.have += n as u8;
            if usize::from(self.have) == HEADER {
                let len = u16::from_be_bytes([self.header[3], self.header[4]]);
                if self.header[0] == APPLICATION_DATA {
                    return Err(Refused::Unexpected);
                }
                if usize::from(len) > MAX_PLAINTEXT {
                    return Err(Refused::Overflow);
                }
                self.have = 0;
                self.left = len;
            }
        }
        Ok(false)
    }

    /// Takes handshake bytes of the ClientHello; whether it is now whole.
    fn hello(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.hello_have < 4 {
                // The type, then a 24-bit length.
                if self.hello_have > 0 {
                    self.hello_left = self.hello_left << 8 | u32::from(bytes[0]);
                }
                self.hello_have += 1;
                bytes = &bytes[1..];
                if self.hello_have == 4 && self.hello_left == 0 {
                    return true;
                }
                continue;
            }
            let n = bytes.len().min(self.hello_left as usize);
            // n ≤ hello_left, a u32.
            self.hello_left -= n as u32;
            bytes = &bytes[n..];
            if self.hello_left == 0 {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, body: &[u8]) -> Vec<u8> {
        let len = body.len();
        [&[kind, 3, 1, (len >> 8) as u8, len as u8][..], body].concat()
    }

    /// A ClientHello message of `len` body bytes.
    fn hello(len: usize) -> Vec<u8> {
        let mut m = vec![1, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        m.resize(4 + len, 0xab);
        m
    }

    /// Walks `bytes` in pieces of `cut` until the walk ends or refuses.
    fn walked(bytes: &[u8], cut: usize) -> Result<bool, Refused> {
        let mut walk = FirstFlight::default();
        for piece in bytes.chunks(cut) {
            if walk.walk(piece)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    #[test]
    fn a_table_of_first_flights_split_every_way() {
        let h = hello(300);
        let big = hello(MAX_PLAINTEXT - 4);
        let cases: Vec<(&str, Vec<u8>, Result<bool, Refused>)> = vec![
            ("one record", record(22, &h), Ok(true)),
            (
                "two records",
                [record(22, &h[..100]), record(22, &h[100..])].concat(),
                Ok(true),
            ),
            ("cut short", record(22, &h[..200]), Ok(false)),
            ("2^14 bytes in one record", record(22, &big), Ok(true)),
            (
                "a ChangeCipherSpec and an alert are rustls' to judge",
                [record(20, &[1]), record(21, &[1, 0]), record(22, &h)].concat(),
                Ok(true),
            ),
            (
                "early data after the whole ClientHello is rustls' to judge",
                [record(22, &h), record(23, &[7; 40])].concat(),
                Ok(true),
            ),
            (
                "application data between two fragments",
                [
                    record(22, &h[..100]),
                    record(23, &[]),
                    record(22, &h[100..]),
                ]
                .concat(),
                Err(Refused::Unexpected),
            ),
            (
                "application data first",
                record(23, &[0; 20]),
                Err(Refused::Unexpected),
            ),
            (
                "a record of 2^14 + 1 bytes",
                record(22, &hello(MAX_PLAINTEXT - 3)),
                Err(Refused::Overflow),
            ),
            (
                "a record announcing 0xffff bytes",
                vec![22, 3, 1, 0xff, 0xff, 1, 0],
                Err(Refused::Overflow),
            ),
        ];
        for (what, bytes, want) in cases {
            for cut in [1, 2, 4, 5, 7, 100, 4096, bytes.len()] {
                assert_eq!(walked(&bytes, cut), want, "{what}, in pieces of {cut}");
            }
        }
    }

    #[test]
    fn the_alerts_are_plaintext_fatal_records() {
        assert_eq!(Refused::Overflow.alert(), [21, 3, 3, 0, 2, 2, 22]);
        assert_eq!(Refused::Unexpected.alert(), [21, 3, 3, 0, 2, 2, 10]);
    }
}
