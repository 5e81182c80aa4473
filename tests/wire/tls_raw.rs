//! A TLS client whose records after the handshake are its own: rustls does the handshake, then
//! every record is sealed and opened here with `ring`, written from the RFCs (TLS 1.3: RFC 8446
//! §5.2, §5.3, §7.1–7.3, AES-128-GCM; TLS 1.2: RFC 5246 §6.2.3.3 and RFC 5288's AES-128-GCM),
//! never by the code under test — so a test can send what no TLS library would: key updates in
//! pieces, empty alerts, records of zeros, renegotiation attempts. Used by
//! `tests/tls_records.rs` and the fuzz target `tls_connection`.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;

pub const CHANGE_CIPHER_SPEC: u8 = 20;
pub const ALERT: u8 = 21;
pub const HANDSHAKE: u8 = 22;
pub const APPLICATION_DATA: u8 = 23;
pub const CLIENT_HELLO: u8 = 1;
pub const NEW_SESSION_TICKET: u8 = 4;
pub const KEY_UPDATE: u8 = 24;

/// How long reading what the server sends may take in all.
const READ_WITHIN: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Tls12,
    Tls13,
}

/// HKDF-Expand-Label(secret, label, "", len) with SHA-256 (RFC 8446 §7.1).
fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    struct Len(usize);
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full = format!("tls13 {label}");
    let info = [
        &(len as u16).to_be_bytes()[..],
        &[full.len() as u8],
        full.as_bytes(),
        &[0],
    ];
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret);
    let mut out = vec![0; len];
    prk.expand(&info, Len(len))
        .expect("expand")
        .fill(&mut out)
        .expect("fill");
    out
}

/// One direction of AES-128-GCM traffic.
pub struct Direction {
    version: Version,
    /// TLS 1.3's traffic secret, to follow key updates.
    secret: Vec<u8>,
    key: LessSafeKey,
    /// TLS 1.3: the IV; TLS 1.2: the 4-byte salt, then 8 bytes unused.
    iv: [u8; 12],
    pub seq: u64,
}

impl Direction {
    fn tls13(secret: Vec<u8>, seq: u64) -> Direction {
        let key = expand_label(&secret, "key", 16);
        let iv = expand_label(&secret, "iv", 12);
        Direction {
            version: Version::Tls13,
            key: LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).expect("key")),
            iv: iv.try_into().expect("iv"),
            secret,
            seq,
        }
    }

    fn tls12(key: &[u8], iv: &[u8], seq: u64) -> Direction {
        let mut salt = [0; 12];
        salt[..4].copy_from_slice(&iv[..4]);
        Direction {
            version: Version::Tls12,
            key: LessSafeKey::new(UnboundKey::new(&AES_128_GCM, key).expect("key")),
            iv: salt,
            secret: Vec::new(),
            seq,
        }
    }

    /// The next generation of TLS 1.3 keys (RFC 8446 §7.2).
    pub fn update(&mut self) {
        *self = Direction::tls13(expand_label(&self.secret, "traffic upd", 32), 0);
    }

    /// TLS 1.3: the IV XOR the sequence number; TLS 1.2: the salt, then `explicit`.
    fn nonce(&self, explicit: [u8; 8]) -> Nonce {
        let mut nonce = self.iv;
        match self.version {
            Version::Tls13 => {
                for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
                    *n ^= s;
                }
            }
            Version::Tls12 => nonce[4..].copy_from_slice(&explicit),
        }
        Nonce::assume_unique_for_key(nonce)
    }

    /// A TLS 1.3 record whose inner plaintext is exactly `inner` (content, type, padding).
    pub fn seal_inner(&mut self, inner: &[u8]) -> Vec<u8> {
        assert_eq!(self.version, Version::Tls13);
        let body = inner.len() + 16;
        let header = [APPLICATION_DATA, 3, 3, (body >> 8) as u8, body as u8];
        let mut sealed = inner.to_vec();
        let tag = self
            .key
            .seal_in_place_separate_tag(self.nonce([0; 8]), Aad::from(header), &mut sealed)
            .expect("seal");
        self.seq += 1;
        [&header[..], &sealed, tag.as_ref()].concat()
    }

    /// A record of `kind` carrying `content`.
    pub fn seal(&mut self, kind: u8, content: &[u8]) -> Vec<u8> {
        match self.version {
            Version::Tls13 => self.seal_inner(&[content, &[kind]].concat()),
            Version::Tls12 => {
                // The explicit nonce may be anything unique (RFC 5288 §3): the sequence number.
                let explicit = self.seq.to_be_bytes();
                let body = 8 + content.len() + 16;
                let header = [kind, 3, 3, (body >> 8) as u8, body as u8];
                let aad = aad12(self.seq, kind, content.len());
                let mut sealed = content.to_vec();
                let tag = self
                    .key
                    .seal_in_place_separate_tag(self.nonce(explicit), Aad::from(aad), &mut sealed)
                    .expect("seal");
                self.seq += 1;
                [&header[..], &explicit, &sealed, tag.as_ref()].concat()
            }
        }
    }

    /// Opens one record: its type and content; `None` when it does not decrypt.
    fn open(&mut self, header: [u8; 5], body: &mut [u8]) -> Option<(u8, Vec<u8>)> {
        let opened = match self.version {
            Version::Tls13 => {
                let inner = self
                    .key
                    .open_in_place(self.nonce([0; 8]), Aad::from(header), body)
                    .ok()?;
                let at = inner.iter().rposition(|&b| b != 0)?;
                (inner[at], inner[..at].to_vec())
            }
            Version::Tls12 => {
                let explicit: [u8; 8] = body.get(..8)?.try_into().ok()?;
                let len = body.len().checked_sub(8 + 16)?;
                let aad = aad12(self.seq, header[0], len);
                let content = self
                    .key
                    .open_in_place(self.nonce(explicit), Aad::from(aad), &mut body[8..])
                    .ok()?;
                (header[0], content.to_vec())
            }
        };
        self.seq += 1;
        Some(opened)
    }
}

/// TLS 1.2's additional data (RFC 5246 §6.2.3.3).
fn aad12(seq: u64, kind: u8, len: usize) -> [u8; 13] {
    let mut aad = [0; 13];
    aad[..8].copy_from_slice(&seq.to_be_bytes());
    aad[8..].copy_from_slice(&[kind, 3, 3, (len >> 8) as u8, len as u8]);
    aad
}

/// The application traffic secrets as rustls derives them.
#[derive(Debug, Default)]
struct Secrets(Mutex<Vec<(String, Vec<u8>)>>);

impl rustls::KeyLog for Secrets {
    fn log(&self, label: &str, _random: &[u8], secret: &[u8]) {
        self.0
            .lock()
            .unwrap()
            .push((label.to_owned(), secret.to_vec()));
    }
    fn will_log(&self, _label: &str) -> bool {
        true
    }
}

/// A connection after rustls' handshake, its records ours.
pub struct Raw {
    pub tcp: TcpStream,
    pub tx: Direction,
    pub rx: Direction,
    /// Bytes read and not yet a whole record.
    read: Vec<u8>,
}

impl Raw {
    /// Connects to `addr` (asking for `localhost`, trusting `roots`) and does the handshake in
    /// `version` with AES-128-GCM (ECDSA or RSA certificates).
    pub fn connect(
        addr: SocketAddr,
        roots: rustls::RootCertStore,
        version: Version,
    ) -> Result<Raw, String> {
        use rustls::crypto::ring::cipher_suite as suite;
        let (suites, versions) = match version {
            Version::Tls13 => (
                vec![suite::TLS13_AES_128_GCM_SHA256],
                &[&rustls::version::TLS13],
            ),
            Version::Tls12 => (
                vec![
                    suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                    suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                ],
                &[&rustls::version::TLS12],
            ),
        };
        let provider = rustls::crypto::CryptoProvider {
            cipher_suites: suites,
            ..rustls::crypto::ring::default_provider()
        };
        let secrets = Arc::new(Secrets::default());
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(versions)
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.key_log = secrets.clone();
        config.enable_secret_extraction = true;
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let mut conn =
            rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
        let mut tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        tcp.set_write_timeout(Some(READ_WITHIN))
            .map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(READ_WITHIN))
            .map_err(|e| e.to_string())?;
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp)
                .map_err(|e| format!("handshake: {e}"))?;
        }
        #[allow(deprecated)]
        let extracted = conn
            .dangerous_extract_secrets()
            .map_err(|e| e.to_string())?;
        let (tx, rx) = match version {
            Version::Tls13 => {
                let logged = secrets.0.lock().unwrap();
                let find = |label: &str| {
                    logged
                        .iter()
                        .find(|(l, _)| l == label)
                        .map(|(_, s)| s.clone())
                        .ok_or(format!("no {label} logged"))
                };
                (
                    Direction::tls13(find("CLIENT_TRAFFIC_SECRET_0")?, extracted.tx.0),
                    Direction::tls13(find("SERVER_TRAFFIC_SECRET_0")?, extracted.rx.0),
                )
            }
            Version::Tls12 => {
                let keys = |(seq, secrets): (u64, rustls::ConnectionTrafficSecrets)| match secrets {
                    rustls::ConnectionTrafficSecrets::Aes128Gcm { key, iv } => {
                        Ok(Direction::tls12(key.as_ref(), iv.as_ref(), seq))
                    }
                    _ => Err("not AES-128-GCM".to_owned()),
                };
                (keys(extracted.tx)?, keys(extracted.rx)?)
            }
        };
        Ok(Raw {
            tcp,
            tx,
            rx,
            read: Vec::new(),
        })
    }

    /// Writes `records`; an error once the server has closed.
    pub fn send(&mut self, records: &[Vec<u8>]) -> std::io::Result<()> {
        self.tcp.write_all(&records.concat())
    }

    pub fn record(&mut self, kind: u8, content: &[u8]) -> Vec<u8> {
        self.tx.seal(kind, content)
    }

    /// Our TLS 1.3 key update; `requested`: the server is asked for its own.
    pub fn key_update(&mut self, requested: bool) -> Vec<u8> {
        let record = self.record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, u8::from(requested)]);
        self.tx.update();
        record
    }

    /// The next record from the server, opened (its key updates followed): `Ok(None)` at the
    /// end of the stream; an error for a record that does not decrypt or a server silent for
    /// too long.
    pub fn next(&mut self) -> Result<Option<(u8, Vec<u8>)>, String> {
        let end = Instant::now() + READ_WITHIN;
        loop {
            if self.read.len() >= 5 {
                let len = 5 + usize::from(u16::from_be_bytes([self.read[3], self.read[4]]));
                if self.read.len() >= len {
                    let mut record: Vec<u8> = self.read.drain(..len).collect();
                    let header: [u8; 5] = record[..5].try_into().unwrap();
                    let opened = self.rx.open(header, &mut record[5..]).ok_or(format!(
                        "a record of the server's does not decrypt: {header:?}"
                    ))?;
                    if self.rx.version == Version::Tls13
                        && opened == (HANDSHAKE, vec![KEY_UPDATE, 0, 0, 1, 0])
                    {
                        self.rx.update();
                    }
                    return Ok(Some(opened));
                }
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("the server did not end within {READ_WITHIN:?}"));
            }
            self.tcp
                .set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            let mut buf = [0; 16 * 1024];
            match self.tcp.read(&mut buf) {
                Ok(0) => return Ok(None),
                Ok(n) => self.read.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(None),
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
                Err(e) if e.kind() == ErrorKind::TimedOut => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    /// Every record until the end of the stream, TLS 1.3 tickets left out.
    pub fn rest(&mut self) -> Result<Vec<(u8, Vec<u8>)>, String> {
        let mut all = Vec::new();
        while let Some((kind, content)) = self.next()? {
            if !(kind == HANDSHAKE && content.first() == Some(&NEW_SESSION_TICKET)) {
                all.push((kind, content));
            }
        }
        Ok(all)
    }

    /// The fatal alert the server ended with (after whatever else it sent).
    pub fn fatal_alert(&mut self) -> u8 {
        let rest = self.rest().unwrap();
        match rest.last() {
            Some((ALERT, alert)) if alert[0] == 2 => alert[1],
            other => panic!("no fatal alert at the end: {other:?}"),
        }
    }
}
