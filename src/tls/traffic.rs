//! A connection after its handshake, with records of our own (`records.rs`): rustls keeps
//! only what a TLS 1.3 key update needs (its kernel connection); the traffic keys are ours.
//! What arrives is opened in place, what the peer is owed in return (its key update answered,
//! a refused renegotiation) is sealed at once.

use rustls::ProtocolVersion;
use rustls::kernel::KernelConnection;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};

use super::records::{self, ALERT, APPLICATION_DATA, HANDSHAKE, Keys, RecordError, Version};

/// The alerts this side sends (RFC 8446 §6).
const CLOSE_NOTIFY: [u8; 2] = [1, 0];
const NO_RENEGOTIATION: [u8; 2] = [1, 100];
const UNEXPECTED_MESSAGE: [u8; 2] = [2, 10];
const BAD_RECORD_MAC: [u8; 2] = [2, 20];
const RECORD_OVERFLOW: [u8; 2] = [2, 22];
const DECODE_ERROR: [u8; 2] = [2, 50];

/// Handshake message types met after the handshake.
const CLIENT_HELLO: u8 = 1;
const KEY_UPDATE: u8 = 24;

pub(crate) struct Traffic {
    kernel: KernelConnection<ServerConnectionData>,
    version: Version,
    tx: Keys,
    rx: Keys,
}

/// What opening a run of records gave.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    /// Plaintext bytes now at the front of `into`.
    pub(crate) plain: usize,
    /// Ciphertext bytes used (whole records); the rest is the start of a record.
    pub(crate) used: usize,
    /// Bytes sealed into `out` for the peer (a key update, a warning), to send now.
    pub(crate) sealed: usize,
    /// The peer said `close_notify`.
    pub(crate) peer_closed: bool,
}

/// A record the connection cannot go on after: what to tell the peer, and the error.
#[derive(Debug)]
pub(crate) struct Broken {
    /// A fatal alert sealed into `out` (its length), if one could be.
    pub(crate) alert: usize,
    pub(crate) why: &'static str,
}

impl Traffic {
    /// Takes the keys of a connection whose handshake is done and which owes nothing (no
    /// handshake record unsent, no plaintext unread). `None`: rustls would not give them (a
    /// configuration without secret extraction, an unknown algorithm) and the connection is
    /// gone — the caller only asks when they will be given.
    pub(crate) fn take_over(conn: UnbufferedServerConnection) -> Option<Traffic> {
        let (secrets, kernel) = conn.dangerous_into_kernel_connection().ok()?;
        let version = match kernel.protocol_version() {
            ProtocolVersion::TLSv1_3 => Version::Tls13,
            ProtocolVersion::TLSv1_2 => Version::Tls12,
            _ => return None,
        };
        Some(Traffic {
            version,
            tx: Keys::new(secrets.tx.0, &secrets.tx.1)?,
            rx: Keys::new(secrets.rx.0, &secrets.rx.1)?,
            kernel,
        })
    }

    /// Opens the whole records at the front of `incoming`, their plaintext copied to `into`
    /// (which is at least as long as `incoming`: plaintext is shorter than its record).
    pub(crate) fn open(
        &mut self,
        incoming: &mut [u8],
        into: &mut [u8],
        out: &mut [u8],
    ) -> Result<Opened, Broken> {
        let mut done = Opened::default();
        let Some(mut key) = self.rx.expand() else {
            return Err(self.broken(out, 0, DECODE_ERROR, "a key that cannot be made"));
        };
        while !done.peer_closed {
            let record =
                match records::open(self.version, &mut self.rx, &key, &mut incoming[done.used..]) {
                    Ok(Some(record)) => record,
                    Ok(None) => break,
                    Err(e) => {
                        let (alert, why) = match e {
                            RecordError::Decrypt => {
                                (BAD_RECORD_MAC, "a TLS record that does not decrypt")
                            }
                            RecordError::Overflow => (RECORD_OVERFLOW, "a TLS record over 16 KiB"),
                            _ => (DECODE_ERROR, "a malformed TLS record"),
                        };
                        return Err(self.broken(out, done.sealed, alert, why));
                    }
                };
            let at = done.used;
            let plain = at + record.plain.start..at + record.plain.end;
            done.used += record.len;
            match (record.kind, self.version) {
                (APPLICATION_DATA, _) => {
                    let text = &incoming[plain];
                    let Some(to) = into.get_mut(done.plain..done.plain + text.len()) else {
                        return Err(self.broken(
                            out,
                            done.sealed,
                            RECORD_OVERFLOW,
                            "plaintext past the buffer",
                        ));
                    };
                    to.copy_from_slice(text);
                    done.plain += text.len();
                }
                (ALERT, _) => match incoming[plain] {
                    // close_notify, and user_canceled (a close_notify follows).
                    [_, 0] => done.peer_closed = true,
                    [_, 90] => {}
                    // TLS 1.2 warnings carry on; every other alert ends the connection.
                    [1, _] if self.version == Version::Tls12 => {}
                    _ => {
                        return Err(Broken {
                            alert: done.sealed,
                            why: "the peer sent a fatal alert",
                        });
                    }
                },
                (HANDSHAKE, Version::Tls13) => match incoming[plain] {
                    [KEY_UPDATE, 0, 0, 1, request @ (0 | 1)] => {
                        let request = request == 1;
                        let Some(rx) = self
                            .kernel
                            .update_rx_secret()
                            .ok()
                            .and_then(|(seq, s)| Keys::new(seq, &s))
                        else {
                            return Err(self.broken(
                                out,
                                done.sealed,
                                DECODE_ERROR,
                                "a key update that failed",
                            ));
                        };
                        self.rx = rx;
                        key = match self.rx.expand() {
                            Some(key) => key,
                            None => {
                                return Err(self.broken(
                                    out,
                                    done.sealed,
                                    DECODE_ERROR,
                                    "a key that cannot be made",
                                ));
                            }
                        };
                        if request {
                            // Ours goes out under the old key; what follows, under the new.
                            done.sealed += self
                                .seal_one(
                                    HANDSHAKE,
                                    &[KEY_UPDATE, 0, 0, 1, 0],
                                    &mut out[done.sealed..],
                                )
                                .map_err(|_| Broken {
                                    alert: done.sealed,
                                    why: "no room to answer a key update",
                                })?;
                            let Some(tx) = self
                                .kernel
                                .update_tx_secret()
                                .ok()
                                .and_then(|(seq, s)| Keys::new(seq, &s))
                            else {
                                return Err(Broken {
                                    alert: done.sealed,
                                    why: "a key update that failed",
                                });
                            };
                            self.tx = tx;
                        }
                    }
                    _ => {
                        return Err(self.broken(
                            out,
                            done.sealed,
                            UNEXPECTED_MESSAGE,
                            "an unexpected handshake message",
                        ));
                    }
                },
                (HANDSHAKE, Version::Tls12)
                    if incoming[plain.clone()].first() == Some(&CLIENT_HELLO) =>
                {
                    // Renegotiation is refused, the connection goes on (RFC 5746 §4.4).
                    done.sealed += self
                        .seal_one(ALERT, &NO_RENEGOTIATION, &mut out[done.sealed..])
                        .map_err(|_| Broken {
                            alert: done.sealed,
                            why: "no room to refuse a renegotiation",
                        })?;
                }
                _ => {
                    return Err(self.broken(
                        out,
                        done.sealed,
                        UNEXPECTED_MESSAGE,
                        "an unexpected TLS record",
                    ));
                }
            }
        }
        Ok(done)
    }

    /// Seals `plain` as records of at most 16 KiB into `out`; answers the bytes written.
    pub(crate) fn seal(&mut self, plain: &[u8], out: &mut [u8]) -> Result<usize, RecordError> {
        let key = self.tx.expand().ok_or(RecordError::Decrypt)?;
        let mut sealed = 0;
        for chunk in plain.chunks(records::MAX_PLAINTEXT) {
            sealed += records::seal(
                self.version,
                &mut self.tx,
                &key,
                APPLICATION_DATA,
                chunk,
                &mut out[sealed..],
            )?;
        }
        Ok(sealed)
    }

    /// Seals our `close_notify` into `out`.
    pub(crate) fn close_notify(&mut self, out: &mut [u8]) -> Result<usize, RecordError> {
        self.seal_one(ALERT, &CLOSE_NOTIFY, out)
    }

    fn seal_one(&mut self, kind: u8, plain: &[u8], out: &mut [u8]) -> Result<usize, RecordError> {
        let key = self.tx.expand().ok_or(RecordError::Decrypt)?;
        records::seal(self.version, &mut self.tx, &key, kind, plain, out)
    }

    /// A fatal alert sealed after the `sealed` bytes already in `out` (if it fits).
    fn broken(
        &mut self,
        out: &mut [u8],
        sealed: usize,
        alert: [u8; 2],
        why: &'static str,
    ) -> Broken {
        let extra = self
            .seal_one(ALERT, &alert, &mut out[sealed..])
            .unwrap_or(0);
        Broken {
            alert: sealed + extra,
            why,
        }
    }
}
