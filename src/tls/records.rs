//! Record protection once the handshake is done (RFC 8446 §5.2 for TLS 1.3; RFC 5288 and
//! RFC 7905 for TLS 1.2's AES-GCM and ChaCha20-Poly1305): sealing and opening application
//! records in place with the traffic keys rustls derived. Keeps 2 × 56 bytes of key material
//! and counters instead of rustls' expanded keys and record machinery, so an idle connection
//! costs what it must. A pure codec: no socket, no buffer of its own.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::ConnectionTrafficSecrets;
use zeroize::Zeroize;

/// The largest plaintext of a record (RFC 8446 §5.1, RFC 5246 §6.2.1).
pub(crate) const MAX_PLAINTEXT: usize = 1 << 14;
/// The largest ciphertext payload accepted: 2^14 + 256 in TLS 1.3, + 2048 in TLS 1.2.
const MAX_CIPHERTEXT_13: usize = MAX_PLAINTEXT + 256;
const MAX_CIPHERTEXT_12: usize = MAX_PLAINTEXT + 2048;
const HEADER: usize = 5;
const TAG: usize = 16;
/// TLS 1.2 AES-GCM sends the last 8 bytes of the nonce with each record.
const EXPLICIT: usize = 8;

/// Content types (RFC 8446 §5.1).
pub(crate) const ALERT: u8 = 21;
pub(crate) const HANDSHAKE: u8 = 22;
pub(crate) const APPLICATION_DATA: u8 = 23;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    Tls12,
    Tls13,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algorithm {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

impl Algorithm {
    /// How many records one key may seal (RFC 8446 §5.5; rustls' figures): 2^24 for AES-GCM,
    /// and for ChaCha20-Poly1305 no limit short of the sequence number's.
    fn confidentiality_limit(self) -> u64 {
        match self {
            Algorithm::Aes128Gcm | Algorithm::Aes256Gcm => 1 << 24,
            Algorithm::Chacha20Poly1305 => u64::MAX,
        }
    }
}

/// One direction's traffic key, its IV and the next record's sequence number.
pub(crate) struct Keys {
    algorithm: Algorithm,
    key: [u8; 32],
    iv: [u8; 12],
    seq: u64,
}

impl Keys {
    /// The keys rustls derived; `None` for an algorithm this codec does not know (rustls then
    /// keeps the connection).
    pub(crate) fn new(seq: u64, secrets: &ConnectionTrafficSecrets) -> Option<Keys> {
        let (algorithm, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (Algorithm::Aes128Gcm, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (Algorithm::Aes256Gcm, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (Algorithm::Chacha20Poly1305, key, iv)
            }
            _ => return None,
        };
        let (key, iv) = (key.as_ref(), iv.as_ref());
        let expected = match algorithm {
            Algorithm::Aes128Gcm => 16,
            Algorithm::Aes256Gcm | Algorithm::Chacha20Poly1305 => 32,
        };
        if key.len() != expected || iv.len() != 12 {
            return None;
        }
        let mut keys = Keys {
            algorithm,
            key: [0; 32],
            iv: [0; 12],
            seq,
        };
        keys.key[..key.len()].copy_from_slice(key);
        keys.iv.copy_from_slice(iv);
        Some(keys)
    }

    /// How many records this key may seal in all, at most `wanted`.
    pub(crate) fn record_limit(&self, wanted: u64) -> u64 {
        self.algorithm.confidentiality_limit().min(wanted)
    }

    /// Records sealed (or opened) under this key so far.
    pub(crate) fn records(&self) -> u64 {
        self.seq
    }

    /// The expanded key for one batch of records: from the worker's cache of the keys its
    /// busiest connections used last, else made (expanding a key is cheaper than keeping the
    /// expanded bytes for every idle connection).
    pub(crate) fn expand(&self) -> Option<LessSafeKey> {
        EXPANDED.with_borrow_mut(|cache| cache.get(self.algorithm, &self.key))
    }

    /// The per-record nonce: the IV with the sequence number XORed into its last 8 bytes.
    fn nonce(&self) -> [u8; 12] {
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *n ^= s;
        }
        nonce
    }

    /// Whether TLS 1.2 records carry an explicit nonce (AES-GCM does, ChaCha20 does not).
    fn explicit(&self, version: Version) -> usize {
        match (version, self.algorithm) {
            (Version::Tls12, Algorithm::Aes128Gcm | Algorithm::Aes256Gcm) => EXPLICIT,
            _ => 0,
        }
    }
}

/// A connection's key is gone (closed, or replaced by a key update): its bytes are zeroed,
/// and the worker's cache forgets its expanded form.
impl Drop for Keys {
    fn drop(&mut self) {
        let _ = EXPANDED.try_with(|cache| {
            if let Ok(mut cache) = cache.try_borrow_mut() {
                cache.forget(self.algorithm, &self.key);
            }
        });
        self.key.zeroize();
        self.iv.zeroize();
    }
}

/// Expanded keys a worker used last, so that a busy connection does not expand its keys for
/// every read and write; bounded, and only on workers that speak TLS.
const CACHED_KEYS: usize = 32;

struct KeyCache {
    slots: Vec<(Algorithm, [u8; 32], LessSafeKey)>,
    /// The slot the next new key replaces once the cache is full.
    next: usize,
}

thread_local! {
    static EXPANDED: std::cell::RefCell<KeyCache> = const {
        std::cell::RefCell::new(KeyCache { slots: Vec::new(), next: 0 })
    };
}

impl KeyCache {
    fn get(&mut self, algorithm: Algorithm, key: &[u8; 32]) -> Option<LessSafeKey> {
        if let Some((_, _, expanded)) = self
            .slots
            .iter()
            .find(|(a, k, _)| *a == algorithm && k == key)
        {
            return Some(expanded.clone());
        }
        let (aead, len) = match algorithm {
            Algorithm::Aes128Gcm => (&aead::AES_128_GCM, 16),
            Algorithm::Aes256Gcm => (&aead::AES_256_GCM, 32),
            Algorithm::Chacha20Poly1305 => (&aead::CHACHA20_POLY1305, 32),
        };
        let expanded = LessSafeKey::new(UnboundKey::new(aead, &key[..len]).ok()?);
        let slot = (algorithm, *key, expanded.clone());
        if self.slots.len() < CACHED_KEYS {
            self.slots.push(slot);
        } else {
            self.slots[self.next] = slot;
            self.next = (self.next + 1) % CACHED_KEYS;
        }
        Some(expanded)
    }

    /// Drops `key`'s slot, if it has one (its bytes zeroed).
    fn forget(&mut self, algorithm: Algorithm, key: &[u8; 32]) {
        if let Some(at) = self
            .slots
            .iter()
            .position(|(a, k, _)| *a == algorithm && k == key)
        {
            let mut gone = self.slots.swap_remove(at);
            gone.1.zeroize();
            self.next %= CACHED_KEYS;
        }
    }
}

/// Forgets the worker's expanded keys (its last connection closed).
pub(crate) fn forget_keys() {
    EXPANDED.with_borrow_mut(|cache| {
        cache.slots.iter_mut().for_each(|slot| slot.1.zeroize());
        cache.slots = Vec::new();
        cache.next = 0;
    });
}

/// Why a record could not be opened or sealed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// Not a record at all (version, a body too short to hold a tag).
    Malformed,
    /// A record type this connection cannot be sent now: a plaintext record after the
    /// handshake (a ChangeCipherSpec among them), or an inner plaintext of zeros alone
    /// (RFC 8446 §5, §5.4).
    Unexpected,
    /// The tag did not verify (or the key could not be made).
    Decrypt,
    /// A ciphertext over its limit, or a plaintext over 2^14 bytes (with its type and padding,
    /// over 2^14 + 1 in TLS 1.3).
    Overflow,
    /// 2^64 records: the key is spent.
    Exhausted,
    /// The output buffer is too small.
    NoRoom,
}

/// A record opened in place: its content type and where its plaintext lies in the buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Opened {
    pub(crate) kind: u8,
    pub(crate) plain: std::ops::Range<usize>,
    /// The whole record's length, header included.
    pub(crate) len: usize,
}

/// How many bytes a record sealing `plain` bytes takes.
pub(crate) fn sealed_len(version: Version, keys: &Keys, plain: usize) -> usize {
    HEADER + keys.explicit(version) + plain + TAG + usize::from(version == Version::Tls13)
}

/// The length of the record at the front of `buf` when it is whole there (by its header's
/// length, whatever it says).
pub(crate) fn whole_len(buf: &[u8]) -> Option<usize> {
    let header = buf.get(..HEADER)?;
    let len = HEADER + usize::from(u16::from_be_bytes([header[3], header[4]]));
    (buf.len() >= len).then_some(len)
}

/// Seals `plain` (at most [`MAX_PLAINTEXT`]) as one record of content type `kind` at the front
/// of `out`; answers its length.
pub(crate) fn seal(
    version: Version,
    keys: &mut Keys,
    key: &LessSafeKey,
    kind: u8,
    plain: &[u8],
    out: &mut [u8],
) -> Result<usize, RecordError> {
    if plain.len() > MAX_PLAINTEXT {
        return Err(RecordError::Overflow);
    }
    let total = sealed_len(version, keys, plain.len());
    let out = out.get_mut(..total).ok_or(RecordError::NoRoom)?;
    let explicit = keys.explicit(version);
    let nonce = keys.nonce();
    let seq = keys.seq;
    keys.seq = keys.seq.checked_add(1).ok_or(RecordError::Exhausted)?;
    let outer = match version {
        Version::Tls13 => APPLICATION_DATA,
        Version::Tls12 => kind,
    };
    let body = total - HEADER;
    out[..HEADER].copy_from_slice(&[outer, 3, 3, (body >> 8) as u8, body as u8]);
    out[HEADER..HEADER + explicit].copy_from_slice(&nonce[12 - explicit..]);
    let start = HEADER + explicit;
    out[start..start + plain.len()].copy_from_slice(plain);
    let mut end = start + plain.len();
    let aad = match version {
        Version::Tls13 => {
            out[end] = kind;
            end += 1;
            aad13(body)
        }
        Version::Tls12 => aad12(seq, kind, plain.len()),
    };
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad[..aad_len(version)]),
            &mut out[start..end],
        )
        .map_err(|_| RecordError::Decrypt)?;
    out[end..end + TAG].copy_from_slice(tag.as_ref());
    Ok(total)
}

/// Opens the record at the front of `buf` in place, if it is whole there (`Ok(None)`: not yet).
pub(crate) fn open(
    version: Version,
    keys: &mut Keys,
    key: &LessSafeKey,
    buf: &mut [u8],
) -> Result<Option<Opened>, RecordError> {
    let Some(header) = buf.get(..HEADER) else {
        return Ok(None);
    };
    let (outer, major) = (header[0], header[1]);
    let body = usize::from(u16::from_be_bytes([header[3], header[4]]));
    let limit = match version {
        Version::Tls13 => MAX_CIPHERTEXT_13,
        Version::Tls12 => MAX_CIPHERTEXT_12,
    };
    let explicit = keys.explicit(version);
    let allowed = match version {
        Version::Tls13 => outer == APPLICATION_DATA,
        Version::Tls12 => matches!(outer, ALERT | HANDSHAKE | APPLICATION_DATA),
    };
    if !allowed {
        return Err(RecordError::Unexpected);
    }
    if major != 3 || body < explicit + TAG {
        return Err(RecordError::Malformed);
    }
    if body > limit {
        return Err(RecordError::Overflow);
    }
    let len = HEADER + body;
    let Some(record) = buf.get_mut(..len) else {
        return Ok(None);
    };
    let mut nonce = keys.nonce();
    if explicit > 0 {
        nonce[4..].copy_from_slice(&record[HEADER..HEADER + EXPLICIT]);
    }
    let sealed = body - explicit;
    let aad = match version {
        Version::Tls13 => aad13(body),
        Version::Tls12 => aad12(keys.seq, outer, sealed - TAG),
    };
    let start = HEADER + explicit;
    let plain_len = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad[..aad_len(version)]),
            &mut record[start..],
        )
        .map_err(|_| RecordError::Decrypt)?
        .len();
    keys.seq = keys.seq.checked_add(1).ok_or(RecordError::Exhausted)?;
    let (kind, plain_len) = match version {
        Version::Tls12 if plain_len > MAX_PLAINTEXT => return Err(RecordError::Overflow),
        Version::Tls12 => (outer, plain_len),
        Version::Tls13 => {
            // The inner plaintext is the content, its type and padding: 2^14 + 1 bytes at
            // most, padding included (RFC 8446 §5.4).
            if plain_len > MAX_PLAINTEXT + 1 {
                return Err(RecordError::Overflow);
            }
            // The inner type is the last non-zero byte; zeros after it are padding.
            let inner = &record[start..start + plain_len];
            let at = inner
                .iter()
                .rposition(|&b| b != 0)
                .ok_or(RecordError::Unexpected)?;
            (inner[at], at)
        }
    };
    Ok(Some(Opened {
        kind,
        plain: start..start + plain_len,
        len,
    }))
}

fn aad_len(version: Version) -> usize {
    match version {
        Version::Tls13 => HEADER,
        Version::Tls12 => 13,
    }
}

/// TLS 1.3's additional data: the record header (RFC 8446 §5.2).
fn aad13(body: usize) -> [u8; 13] {
    let mut aad = [0; 13];
    aad[..HEADER].copy_from_slice(&[APPLICATION_DATA, 3, 3, (body >> 8) as u8, body as u8]);
    aad
}

/// TLS 1.2's additional data: sequence number, type, version, plaintext length (RFC 5246 §6.2.3.3).
fn aad12(seq: u64, kind: u8, plain: usize) -> [u8; 13] {
    let mut aad = [0; 13];
    aad[..8].copy_from_slice(&seq.to_be_bytes());
    aad[8..].copy_from_slice(&[kind, 3, 3, (plain >> 8) as u8, plain as u8]);
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_direction_s_keys_are_56_bytes() {
        assert_eq!(std::mem::size_of::<Keys>(), 56);
    }

    fn keys(algorithm: Algorithm) -> Keys {
        Keys {
            algorithm,
            key: [7; 32],
            iv: [9; 12],
            seq: 0,
        }
    }

    const ALL: [Algorithm; 3] = [
        Algorithm::Aes128Gcm,
        Algorithm::Aes256Gcm,
        Algorithm::Chacha20Poly1305,
    ];

    #[test]
    fn every_suite_and_version_opens_what_it_sealed_in_order() {
        for version in [Version::Tls12, Version::Tls13] {
            for algorithm in ALL {
                let (mut tx, mut rx) = (keys(algorithm), keys(algorithm));
                let key = tx.expand().unwrap();
                let mut wire = Vec::new();
                for (kind, text) in [
                    (APPLICATION_DATA, &b"hello"[..]),
                    (ALERT, b"\x01\x00"),
                    (APPLICATION_DATA, b""),
                ] {
                    let mut out = vec![0; 100];
                    let n = seal(version, &mut tx, &key, kind, text, &mut out).unwrap();
                    assert_eq!(n, sealed_len(version, &tx, text.len()));
                    wire.extend_from_slice(&out[..n]);
                }
                let mut at = 0;
                for (kind, text) in [
                    (APPLICATION_DATA, &b"hello"[..]),
                    (ALERT, b"\x01\x00"),
                    (APPLICATION_DATA, b""),
                ] {
                    let opened = open(version, &mut rx, &key, &mut wire[at..])
                        .unwrap()
                        .unwrap();
                    assert_eq!(opened.kind, kind, "{version:?} {algorithm:?}");
                    assert_eq!(&wire[at..][opened.plain.clone()], text);
                    at += opened.len;
                }
                assert_eq!(at, wire.len());
            }
        }
    }

    #[test]
    fn a_record_cut_short_is_not_yet_and_a_changed_byte_fails() {
        let (mut tx, key) = (
            keys(Algorithm::Aes128Gcm),
            keys(Algorithm::Aes128Gcm).expand().unwrap(),
        );
        let mut out = vec![0; 64];
        let n = seal(
            Version::Tls13,
            &mut tx,
            &key,
            APPLICATION_DATA,
            b"abc",
            &mut out,
        )
        .unwrap();
        for cut in 0..n {
            let mut rx = keys(Algorithm::Aes128Gcm);
            assert_eq!(
                open(Version::Tls13, &mut rx, &key, &mut out[..cut].to_vec()),
                Ok(None)
            );
        }
        for at in HEADER..n {
            let mut changed = out[..n].to_vec();
            changed[at] ^= 1;
            let mut rx = keys(Algorithm::Aes128Gcm);
            assert_eq!(
                open(Version::Tls13, &mut rx, &key, &mut changed),
                Err(RecordError::Decrypt)
            );
        }
    }

    #[test]
    fn wrong_headers_get_their_error_before_any_decryption() {
        let key = keys(Algorithm::Aes128Gcm).expand().unwrap();
        let cases: [(&[u8], Version, RecordError); 7] = [
            // Plaintext types after a TLS 1.3 handshake (ChangeCipherSpec, handshake, alert).
            (
                b"\x14\x03\x03\x00\x01",
                Version::Tls13,
                RecordError::Unexpected,
            ),
            (
                b"\x16\x03\x03\x00\x20",
                Version::Tls13,
                RecordError::Unexpected,
            ),
            (
                b"\x15\x03\x03\x00\x02",
                Version::Tls13,
                RecordError::Unexpected,
            ),
            (
                b"\x14\x03\x03\x00\x01",
                Version::Tls12,
                RecordError::Unexpected,
            ),
            (
                b"\x17\x02\x03\x00\x20",
                Version::Tls13,
                RecordError::Malformed,
            ),
            // 2^14 + 256 + 1 bytes of ciphertext: over TLS 1.3's limit, whatever its tag.
            (
                b"\x17\x03\x03\x41\x01",
                Version::Tls13,
                RecordError::Overflow,
            ),
            (
                b"\x17\x03\x03\x00\x05",
                Version::Tls12,
                RecordError::Malformed,
            ),
        ];
        for (header, version, error) in cases {
            let mut rx = keys(Algorithm::Aes128Gcm);
            let mut buf = header.to_vec();
            buf.resize(64, 0);
            assert_eq!(
                open(version, &mut rx, &key, &mut buf),
                Err(error),
                "{header:?}"
            );
        }
    }

    /// RFC 8446 §5.4: the inner plaintext (content, type, padding) is 2^14 + 1 bytes at most,
    /// and one of zeros alone has no type.
    #[test]
    fn padding_counts_toward_the_limit_and_zeros_alone_are_unexpected() {
        let cases: [(usize, usize, Result<usize, RecordError>); 4] = [
            (MAX_PLAINTEXT, 0, Ok(MAX_PLAINTEXT)),
            (10, MAX_PLAINTEXT - 10, Ok(10)),
            (10, MAX_PLAINTEXT - 9, Err(RecordError::Overflow)),
            (MAX_PLAINTEXT - 100, 108, Err(RecordError::Overflow)),
        ];
        for (content, padding, want) in cases {
            // Sealed by hand: content, its type, then zeros.
            let mut inner = vec![b'x'; content];
            inner.push(APPLICATION_DATA);
            inner.resize(content + 1 + padding, 0);
            let got = open_inner(&inner).map(|opened| opened.plain.len());
            assert_eq!(got, want, "{content} + {padding}");
        }
        assert_eq!(open_inner(&[0; 20]), Err(RecordError::Unexpected));
    }

    /// Seals `inner` as a TLS 1.3 record's inner plaintext, then opens it.
    fn open_inner(inner: &[u8]) -> Result<Opened, RecordError> {
        let tx = keys(Algorithm::Aes128Gcm);
        let key = tx.expand().unwrap();
        let body = inner.len() + TAG;
        let mut record = vec![APPLICATION_DATA, 3, 3, (body >> 8) as u8, body as u8];
        let mut sealed = inner.to_vec();
        let tag = key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(tx.nonce()),
                Aad::from(&aad13(body)[..HEADER]),
                &mut sealed,
            )
            .unwrap();
        record.extend_from_slice(&sealed);
        record.extend_from_slice(tag.as_ref());
        let mut rx = keys(Algorithm::Aes128Gcm);
        open(Version::Tls13, &mut rx, &key, &mut record).map(Option::unwrap)
    }

    #[test]
    fn the_worker_keeps_at_most_32_expanded_keys_and_each_is_the_right_one() {
        // The connections' keys stay alive (a dropped key is forgotten at once).
        let mut alive = Vec::new();
        for _round in 0..2 {
            for n in 0..40u8 {
                let mut tx = keys(Algorithm::Aes256Gcm);
                tx.key = [n; 32];
                let cached = tx.expand().unwrap();
                let mut out = vec![0; 64];
                let len = seal(
                    Version::Tls13,
                    &mut tx,
                    &cached,
                    APPLICATION_DATA,
                    b"k",
                    &mut out,
                )
                .unwrap();
                // Opened with the key made from its bytes directly: the cache gave that key.
                let direct =
                    LessSafeKey::new(UnboundKey::new(&aead::AES_256_GCM, &[n; 32]).unwrap());
                let mut rx = keys(Algorithm::Aes256Gcm);
                rx.key = [n; 32];
                let opened = open(Version::Tls13, &mut rx, &direct, &mut out[..len])
                    .unwrap()
                    .unwrap();
                assert_eq!(&out[opened.plain], b"k");
                alive.push((tx, rx));
            }
        }
        EXPANDED.with_borrow(|cache| assert_eq!(cache.slots.len(), CACHED_KEYS));
        forget_keys();
        EXPANDED.with_borrow(|cache| assert!(cache.slots.is_empty()));
    }

    #[test]
    fn a_dropped_key_leaves_the_cache_and_the_others_stay() {
        let mut a = keys(Algorithm::Aes128Gcm);
        a.key = [1; 32];
        let mut b = keys(Algorithm::Aes128Gcm);
        b.key = [2; 32];
        a.expand().unwrap();
        b.expand().unwrap();
        let cached = |key: [u8; 32]| EXPANDED.with_borrow(|c| c.slots.iter().any(|s| s.1 == key));
        assert!(cached([1; 32]) && cached([2; 32]));
        drop(a);
        assert!(!cached([1; 32]));
        assert!(cached([2; 32]));
        drop(b);
        assert!(!cached([2; 32]));
    }

    #[test]
    fn a_sequence_number_moves_the_nonce() {
        let mut k = keys(Algorithm::Chacha20Poly1305);
        let first = k.nonce();
        k.seq = 1;
        assert_ne!(first, k.nonce());
        assert_eq!(first[..4], k.nonce()[..4]);
    }

    /// Our records against rustls' own record layer (its `MessageEncrypter` and
    /// `MessageDecrypter` for the same suites): for random keys, IVs, sequence numbers, content
    /// types and plaintexts, our sealing equals rustls' byte for byte, and each opens the
    /// other's records — every suite we speak, both versions.
    mod against_rustls {
        use super::*;
        use proptest::prelude::*;
        use rustls::crypto::cipher::{
            InboundOpaqueMessage, Iv, MessageDecrypter, MessageEncrypter, OutboundChunks,
            OutboundPlainMessage,
        };
        use rustls::crypto::ring::cipher_suite as suite;
        use rustls::crypto::tls13::OkmBlock;
        use rustls::{ContentType, ProtocolVersion, SupportedCipherSuite};

        /// The TLS 1.3 suites, and for TLS 1.2 the suite with the same AEAD.
        fn suites() -> [(SupportedCipherSuite, SupportedCipherSuite); 3] {
            [
                (
                    suite::TLS13_AES_128_GCM_SHA256,
                    suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                ),
                (
                    suite::TLS13_AES_256_GCM_SHA384,
                    suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                ),
                (
                    suite::TLS13_CHACHA20_POLY1305_SHA256,
                    suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
                ),
            ]
        }

        /// rustls' encrypter and decrypter, and our keys at `seq`, for one suite from `secret`
        /// (the key is derived from it) and `iv`.
        fn both(
            version: Version,
            which: usize,
            secret: &[u8; 32],
            iv: [u8; 12],
            seq: u64,
        ) -> (Box<dyn MessageEncrypter>, Box<dyn MessageDecrypter>, Keys) {
            let (SupportedCipherSuite::Tls13(s13), SupportedCipherSuite::Tls12(s12)) =
                suites()[which]
            else {
                unreachable!("the table's order")
            };
            // An AEAD key of the suite's length, whatever its bytes.
            let key = || {
                let expander = s13.hkdf_provider.expander_for_okm(&OkmBlock::new(secret));
                rustls::internal::derive_traffic_key(&*expander, s13.aead_alg)
            };
            let (enc, dec, secrets) = match version {
                Version::Tls13 => (
                    s13.aead_alg.encrypter(key(), Iv::from(iv)),
                    s13.aead_alg.decrypter(key(), Iv::from(iv)),
                    s13.aead_alg.extract_keys(key(), Iv::from(iv)).unwrap(),
                ),
                Version::Tls12 => {
                    let shape = s12.aead_alg.key_block_shape();
                    let (fixed, explicit) = iv.split_at(shape.fixed_iv_len);
                    let explicit = &explicit[..shape.explicit_nonce_len];
                    (
                        s12.aead_alg.encrypter(key(), fixed, explicit),
                        s12.aead_alg.decrypter(key(), fixed),
                        s12.aead_alg.extract_keys(key(), fixed, explicit).unwrap(),
                    )
                }
            };
            (enc, dec, Keys::new(seq, &secrets).unwrap())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(96))]
            #[test]
            fn our_records_are_rustls_records(
                tls13 in any::<bool>(),
                which in 0usize..3,
                secret in any::<[u8; 32]>(),
                iv in any::<[u8; 12]>(),
                seq in 0u64..u64::MAX - 1,
                kind in prop::sample::select(vec![ALERT, HANDSHAKE, APPLICATION_DATA]),
                plain in proptest::collection::vec(any::<u8>(), 0..2048),
            ) {
                let version = if tls13 { Version::Tls13 } else { Version::Tls12 };
                let (mut enc, mut dec, mut ours) = both(version, which, &secret, iv, seq);
                let key = ours.expand().unwrap();
                // Sealed by rustls and by us: the same bytes.
                let theirs = enc
                    .encrypt(
                        OutboundPlainMessage {
                            typ: ContentType::from(kind),
                            version: ProtocolVersion::TLSv1_2,
                            payload: OutboundChunks::Single(&plain),
                        },
                        seq,
                    )
                    .unwrap()
                    .encode();
                let mut mine = vec![0; plain.len() + 64];
                let n = seal(version, &mut ours, &key, kind, &plain, &mut mine).unwrap();
                mine.truncate(n);
                prop_assert_eq!(&mine, &theirs);
                // We open rustls' record.
                let mut rx = both(version, which, &secret, iv, seq).2;
                let mut record = theirs.clone();
                let opened = open(version, &mut rx, &key, &mut record).unwrap().unwrap();
                prop_assert_eq!(opened.kind, kind);
                prop_assert_eq!(&record[opened.plain], &plain[..]);
                prop_assert_eq!(rx.seq, seq + 1);
                // rustls opens ours.
                let mut body = mine[HEADER..].to_vec();
                let message = InboundOpaqueMessage::new(
                    ContentType::from(mine[0]),
                    ProtocolVersion::TLSv1_2,
                    &mut body,
                );
                let got = dec.decrypt(message, seq).unwrap();
                prop_assert_eq!(u8::from(got.typ), kind);
                prop_assert_eq!(got.payload, &plain[..]);
            }
        }
    }
}
