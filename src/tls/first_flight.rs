//! The records a client sends before the server first answers — its ClientHello — walked as
//! they arrive, before rustls reads them: they are plaintext, so a record over 2^14 bytes is
//! `record_overflow` (RFC 8446 §5.1) and application data among them is `unexpected_message`
//! (no early data is accepted). rustls accepts the first and closes without an alert on the
//! second. A pure walker over the bytes as read, keeping a header's bytes at most.

use super::records::MAX_PLAINTEXT;

const HEADER: usize = 5;
const APPLICATION_DATA: u8 = 23;

/// Why the first flight is refused, by its alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `record_overflow`: a plaintext record over 2^14 bytes.
    Overflow,
    /// `unexpected_message`: application data before the handshake.
    Unexpected,
}

impl Refused {
    /// The plaintext fatal alert record that says so.
    pub(crate) fn alert(self) -> [u8; 7] {
        let description = match self {
            Refused::Overflow => 22,
            Refused::Unexpected => 10,
        };
        [21, 3, 3, 0, 2, 2, description]
    }
}

/// Where the walk stands (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FirstFlight {
    header: [u8; HEADER],
    /// Bytes of `header` read.
    have: u8,
    /// Bytes of the current record's body still to come.
    left: u16,
}

impl Default for FirstFlight {
    fn default() -> FirstFlight {
        FirstFlight {
            header: [0; HEADER],
            have: 0,
            left: 0,
        }
    }
}

impl FirstFlight {
    /// Walks `bytes`, the next ones read from the client.
    pub(crate) fn walk(&mut self, mut bytes: &[u8]) -> Result<(), Refused> {
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = bytes.len().min(usize::from(self.left));
                bytes = &bytes[n..];
                // n ≤ left, a u16.
                self.left -= n as u16;
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, len: usize) -> Vec<u8> {
        let mut r = vec![kind, 3, 1, (len >> 8) as u8, len as u8];
        r.resize(HEADER + len, 0xab);
        r
    }

    #[test]
    fn a_table_of_first_flights_split_every_way() {
        let hello = record(22, 300);
        let largest = record(22, MAX_PLAINTEXT);
        let cases: Vec<(Vec<u8>, Result<(), Refused>)> = vec![
            (hello.clone(), Ok(())),
            ([hello.clone(), record(22, 10)].concat(), Ok(())),
            (largest.clone(), Ok(())),
            // A ChangeCipherSpec or an alert is rustls' to judge.
            (
                [hello.clone(), record(20, 1), record(21, 2)].concat(),
                Ok(()),
            ),
            (record(22, MAX_PLAINTEXT + 1), Err(Refused::Overflow)),
            (record(22, 0xffff), Err(Refused::Overflow)),
            // Between two records of the ClientHello's fragments.
            (
                [record(22, 100), record(23, 0)].concat(),
                Err(Refused::Unexpected),
            ),
            (
                [hello.clone(), record(23, 0)].concat(),
                Err(Refused::Unexpected),
            ),
            (
                [hello.clone(), record(23, 20)].concat(),
                Err(Refused::Unexpected),
            ),
        ];
        for (bytes, want) in cases {
            for cut in [1, 2, 4, 5, 7, 100, 4096, bytes.len()] {
                let mut walk = FirstFlight::default();
                let got = bytes.chunks(cut).try_for_each(|piece| walk.walk(piece));
                assert_eq!(got, want, "{} bytes in pieces of {cut}", bytes.len());
            }
        }
    }

    #[test]
    fn the_alerts_are_plaintext_fatal_records() {
        assert_eq!(Refused::Overflow.alert(), [21, 3, 3, 0, 2, 2, 22]);
        assert_eq!(Refused::Unexpected.alert(), [21, 3, 3, 0, 2, 2, 10]);
    }
}
