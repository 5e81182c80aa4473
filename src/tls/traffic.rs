//! A connection after its handshake, with records of our own (`records.rs`): rustls keeps
//! only what a TLS 1.3 key update needs (its kernel connection); the traffic keys are ours.
//! What arrives is opened in place; what rustls bounds on records is bounded here too
//! (`peer_limits.rs`), and what the peer is owed stays small: key updates asking for ours get
//! one KeyUpdate once the read's records are opened (a client may wait for it before it sends
//! more, as tlsfuzzer's do), and none more until we have sent data under the new key (RFC 8446
//! §4.6.3: several received while silent get one answer); a renegotiation is refused once,
//! then fatal.

use rustls::ProtocolVersion;
use rustls::kernel::KernelConnection;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};

use super::alert::{
    BAD_RECORD_MAC, CLOSE, CLOSE_NOTIFY, DECODE_ERROR, FATAL, ILLEGAL_PARAMETER, INTERNAL_ERROR,
    NO_RENEGOTIATION, RECORD_OVERFLOW, UNEXPECTED_MESSAGE, USER_CANCELED, WARNING,
};
use super::peer_limits::PeerLimits;
use super::post_handshake::{Joiner, Message, Refused};
use super::records::{self, ALERT, APPLICATION_DATA, HANDSHAKE, Keys, RecordError, Version};

/// Our answer to a key update request: a KeyUpdate not asking for one back.
const KEY_UPDATE_NOT_REQUESTED: [u8; 5] = [24, 0, 0, 1, 0];

/// What one record costs a turn's read budget beyond its bytes (opening one, even empty, is
/// worth about this many bytes of decryption).
pub(crate) const RECORD_COST: usize = 1024;
/// What a key update costs beyond its record: a key schedule step and a key expansion, worth
/// about this many bytes of decryption.
pub(crate) const KEY_UPDATE_COST: usize = 8 * 1024;

pub(crate) struct Traffic {
    kernel: KernelConnection<ServerConnectionData>,
    version: Version,
    tx: Keys,
    rx: Keys,
    /// Records one of our keys seals at most: then TLS 1.3 updates it, TLS 1.2 closes.
    records_per_key: u64,
    /// Where our answer to the peer's requests for a key update stands.
    answer: Answer,
    joiner: Joiner,
    limits: PeerLimits,
}

/// Where our answer to the peer's requests for a key update stands (RFC 8446 §4.6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// Our key has sealed application data since our last KeyUpdate (or since the handshake):
    /// a request is owed an answer.
    Idle,
    /// A request came: our KeyUpdate goes once the read's records are opened (or before our
    /// next record of data, whichever comes first).
    Owed,
    /// Our KeyUpdate went and our new key has sealed no data yet: a request now is answered
    /// already (several received while we are silent get one answer).
    Given,
}

/// What opening a run of records gave.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    /// Plaintext bytes now at the front of `into`.
    pub(crate) plain: usize,
    /// Ciphertext bytes used (whole records); the rest is the start of a record, or records
    /// left for the next turn once `cost` reached the budget.
    pub(crate) used: usize,
    /// Bytes sealed into `out` for the peer (a refused renegotiation, our key update), to send
    /// now.
    pub(crate) sealed: usize,
    /// The peer said `close_notify`.
    pub(crate) peer_closed: bool,
    /// What the records opened cost: their bytes, [`RECORD_COST`] each, and
    /// [`KEY_UPDATE_COST`] for each key update.
    pub(crate) cost: usize,
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
    /// handshake record unsent, no plaintext unread); `records_per_key` bounds our keys below
    /// their AEAD's own limit. `None`: rustls would not give them (a configuration without
    /// secret extraction, an unknown algorithm) and the connection is gone — the caller only
    /// asks when they will be given.
    pub(crate) fn take_over(
        conn: UnbufferedServerConnection,
        records_per_key: u64,
    ) -> Option<Traffic> {
        let (secrets, kernel) = conn.dangerous_into_kernel_connection().ok()?;
        let version = match kernel.protocol_version() {
            ProtocolVersion::TLSv1_3 => Version::Tls13,
            ProtocolVersion::TLSv1_2 => Version::Tls12,
            _ => return None,
        };
        let tx = Keys::new(secrets.tx.0, &secrets.tx.1)?;
        Some(Traffic {
            version,
            records_per_key: tx.record_limit(records_per_key),
            tx,
            rx: Keys::new(secrets.rx.0, &secrets.rx.1)?,
            answer: Answer::Idle,
            joiner: Joiner::default(),
            limits: PeerLimits::default(),
            kernel,
        })
    }

    /// Opens the whole records at the front of `incoming`, their plaintext copied to `into`
    /// (which is at least as long as `incoming`: plaintext is shorter than its record), until
    /// what they cost reaches `budget` (one record at least).
    pub(crate) fn open(
        &mut self,
        incoming: &mut [u8],
        into: &mut [u8],
        out: &mut [u8],
        budget: usize,
    ) -> Result<Opened, Broken> {
        let mut done = Opened::default();
        let Some(mut key) = self.rx.expand() else {
            return Err(self.broken(out, 0, INTERNAL_ERROR, "a key that cannot be made"));
        };
        while !done.peer_closed && done.cost < budget {
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
                            RecordError::Unexpected => {
                                (UNEXPECTED_MESSAGE, "a TLS record of a type not allowed now")
                            }
                            _ => (DECODE_ERROR, "a malformed TLS record"),
                        };
                        return Err(self.broken(out, done.sealed, alert, why));
                    }
                };
            let at = done.used;
            let content = at + record.plain.start..at + record.plain.end;
            done.used += record.len;
            done.cost += record.len + RECORD_COST;
            if let Err(too_many) = self.limits.record(content.len()) {
                return Err(self.broken(out, done.sealed, UNEXPECTED_MESSAGE, too_many.why()));
            }
            if record.kind != HANDSHAKE && !self.joiner.aligned() {
                return Err(self.broken(
                    out,
                    done.sealed,
                    UNEXPECTED_MESSAGE,
                    "a TLS record inside a handshake message",
                ));
            }
            match record.kind {
                APPLICATION_DATA => {
                    let text = &incoming[content];
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
                    if !text.is_empty() {
                        self.limits.application_data();
                    }
                }
                ALERT => match self.alert(&incoming[content]) {
                    Ok(closed) => done.peer_closed = closed,
                    Err((alert, why)) => {
                        return Err(match alert {
                            Some(alert) => self.broken(out, done.sealed, alert, why),
                            None => Broken {
                                alert: done.sealed,
                                why,
                            },
                        });
                    }
                },
                HANDSHAKE => match self.handshake(&incoming[content]) {
                    Ok(None) => {}
                    Ok(Some(Message::KeyUpdate { requested })) => {
                        // The peer's next key, and its expanded form for the records after.
                        let next = self
                            .kernel
                            .update_rx_secret()
                            .ok()
                            .and_then(|(seq, s)| Keys::new(seq, &s))
                            .and_then(|rx| Some((rx.expand()?, rx)));
                        let Some((expanded, rx)) = next else {
                            return Err(self.broken(
                                out,
                                done.sealed,
                                INTERNAL_ERROR,
                                "a key update that failed",
                            ));
                        };
                        self.rx = rx;
                        key = expanded;
                        if requested && self.answer == Answer::Idle {
                            self.answer = Answer::Owed;
                        }
                        done.cost += KEY_UPDATE_COST;
                    }
                    Ok(Some(Message::ClientHello)) => {
                        // Renegotiation is refused, the connection goes on (RFC 5746 §4.4);
                        // once (`peer_limits`), so this answer is owed once at most.
                        done.sealed += self
                            .seal_one(ALERT, &NO_RENEGOTIATION, &mut out[done.sealed..])
                            .map_err(|_| Broken {
                                alert: done.sealed,
                                why: "no room to refuse a renegotiation",
                            })?;
                    }
                    Err((alert, why)) => return Err(self.broken(out, done.sealed, alert, why)),
                },
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
        // The key update the records asked for, one however many asked.
        done.sealed += self
            .update_key(&mut out[done.sealed..])
            .map_err(|_| Broken {
                alert: done.sealed,
                why: "no room to answer a key update",
            })?;
        Ok(done)
    }

    /// An alert's record: `Ok(true)` for `close_notify`, `Ok(false)` for a warning that lets
    /// the connection go on; else the alert we answer with (none to a fatal alert) and why.
    fn alert(&mut self, alert: &[u8]) -> Result<bool, (Option<[u8; 2]>, &'static str)> {
        let &[level, description] = alert else {
            // Alerts are two bytes and never split across records (RFC 8446 §5.1); an empty
            // one is a zero-length fragment of a type that may not have one.
            return Err(match alert.len() {
                0 => (Some(UNEXPECTED_MESSAGE), "an empty TLS alert"),
                _ => (Some(DECODE_ERROR), "a TLS alert that is not two bytes"),
            });
        };
        match (level, description) {
            (WARNING | FATAL, CLOSE) => Ok(true),
            (FATAL, _) => Err((None, "the peer sent a fatal alert")),
            (WARNING, _) => {
                if let Err(too_many) = self.limits.warning() {
                    return Err((Some(UNEXPECTED_MESSAGE), too_many.why()));
                }
                // TLS 1.3 has no warnings but `user_canceled` (RFC 8446 §6).
                if self.version == Version::Tls13 && description != USER_CANCELED {
                    return Err((Some(DECODE_ERROR), "a TLS 1.3 warning alert"));
                }
                Ok(false)
            }
            _ => Err((Some(ILLEGAL_PARAMETER), "a TLS alert of no known level")),
        }
    }

    /// A handshake record's content: the message it completes, counted against its bound.
    fn handshake(&mut self, content: &[u8]) -> Result<Option<Message>, ([u8; 2], &'static str)> {
        let message = self
            .joiner
            .take(self.version, content)
            .map_err(|e| match e {
                Refused::Unexpected => (UNEXPECTED_MESSAGE, "an unexpected TLS handshake message"),
                Refused::Decode => (DECODE_ERROR, "a TLS handshake message of a wrong length"),
                Refused::Illegal => (ILLEGAL_PARAMETER, "a key update asking for neither answer"),
            })?;
        let counted = match message {
            Some(Message::KeyUpdate { .. }) => self.limits.key_update(),
            Some(Message::ClientHello) => self.limits.renegotiation(),
            None => Ok(()),
        };
        counted.map_err(|too_many| (UNEXPECTED_MESSAGE, too_many.why()))?;
        Ok(message)
    }

    /// Seals `plain` as records of at most 16 KiB into `out`, after the key update owed or
    /// due (our key at its limit); answers the bytes written. TLS 1.2 cannot update keys: a
    /// write that would pass the limit is refused ([`RecordError::Exhausted`]) and the
    /// connection is to close.
    pub(crate) fn seal(&mut self, plain: &[u8], out: &mut [u8]) -> Result<usize, RecordError> {
        let records = plain.len().div_ceil(records::MAX_PLAINTEXT).max(1) as u64;
        if self.version == Version::Tls12
            && self.tx.records().saturating_add(records) > self.records_per_key
        {
            return Err(RecordError::Exhausted);
        }
        let mut sealed = 0;
        // Expanded once for the write, and again only after a key update.
        let mut key = self.tx.expand().ok_or(RecordError::Decrypt)?;
        for chunk in plain.chunks(records::MAX_PLAINTEXT) {
            let update = self.update_key(&mut out[sealed..])?;
            if update > 0 {
                sealed += update;
                key = self.tx.expand().ok_or(RecordError::Decrypt)?;
            }
            sealed += records::seal(
                self.version,
                &mut self.tx,
                &key,
                APPLICATION_DATA,
                chunk,
                &mut out[sealed..],
            )?;
            self.answer = Answer::Idle;
        }
        Ok(sealed)
    }

    /// In TLS 1.3, our KeyUpdate when one is owed or our key could seal only it: sealed under
    /// the old key, then the new one is ours. Answers the bytes written.
    fn update_key(&mut self, out: &mut [u8]) -> Result<usize, RecordError> {
        let due = self.tx.records().saturating_add(1) >= self.records_per_key;
        if self.version != Version::Tls13 || !(self.answer == Answer::Owed || due) {
            return Ok(0);
        }
        let n = self.seal_one(HANDSHAKE, &KEY_UPDATE_NOT_REQUESTED, out)?;
        let (seq, secrets) = self
            .kernel
            .update_tx_secret()
            .map_err(|_| RecordError::Exhausted)?;
        self.tx = Keys::new(seq, &secrets).ok_or(RecordError::Exhausted)?;
        self.answer = Answer::Given;
        Ok(n)
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
