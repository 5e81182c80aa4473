//! What a TLS client may send once the handshake is done, sealed by this test itself (a rustls
//! handshake, then records made here with `ring` from RFC 8446 — never by the code under test):
//! key updates answered once and bounded, empty records, warnings and renegotiations bounded,
//! each malformed record answered with the alert RFC 8446 §5 names, and a connection that owes
//! the peer answers holding no more memory for it.

#![cfg(feature = "tls")]

mod wire;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use web::http::{Server, ServerHandle, text_response};
use web::tls::ServerTls;
use wire::certs::TestCa;

const APPLICATION_DATA: u8 = 23;
const HANDSHAKE: u8 = 22;
const ALERT: u8 = 21;
const CHANGE_CIPHER_SPEC: u8 = 20;
const KEY_UPDATE: u8 = 24;

const UNEXPECTED_MESSAGE: u8 = 10;
const RECORD_OVERFLOW: u8 = 22;
const ILLEGAL_PARAMETER: u8 = 47;
const DECODE_ERROR: u8 = 50;

/// One direction of TLS 1.3 AES-128-GCM traffic: its secret (to follow key updates), key, IV
/// and sequence number (RFC 8446 §7.1–7.3, §5.3).
struct Direction {
    secret: Vec<u8>,
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
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

impl Direction {
    fn new(secret: Vec<u8>, seq: u64) -> Direction {
        let key = expand_label(&secret, "key", 16);
        let iv = expand_label(&secret, "iv", 12);
        Direction {
            key: LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).expect("key")),
            iv: iv.try_into().expect("iv"),
            secret,
            seq,
        }
    }

    /// The next generation of keys (RFC 8446 §7.2).
    fn update(&mut self) {
        *self = Direction::new(expand_label(&self.secret, "traffic upd", 32), 0);
    }

    fn nonce(&self) -> Nonce {
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *n ^= s;
        }
        Nonce::assume_unique_for_key(nonce)
    }

    /// A record whose inner plaintext is exactly `inner` (content, type, padding).
    fn seal_inner(&mut self, inner: &[u8]) -> Vec<u8> {
        let body = inner.len() + 16;
        let header = [APPLICATION_DATA, 3, 3, (body >> 8) as u8, body as u8];
        let mut sealed = inner.to_vec();
        let tag = self
            .key
            .seal_in_place_separate_tag(self.nonce(), Aad::from(header), &mut sealed)
            .expect("seal");
        self.seq += 1;
        [&header[..], &sealed, tag.as_ref()].concat()
    }

    fn seal(&mut self, kind: u8, content: &[u8]) -> Vec<u8> {
        self.seal_inner(&[content, &[kind]].concat())
    }

    /// Opens one record: its inner type and content.
    fn open(&mut self, header: [u8; 5], body: &mut [u8]) -> Option<(u8, Vec<u8>)> {
        let inner = self
            .key
            .open_in_place(self.nonce(), Aad::from(header), body)
            .ok()?;
        self.seq += 1;
        let at = inner.iter().rposition(|&b| b != 0)?;
        Some((inner[at], inner[..at].to_vec()))
    }
}

/// Records the client's and server's application traffic secrets as rustls derives them.
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

/// A TLS 1.3 connection after rustls' handshake, its records ours.
struct Raw {
    tcp: TcpStream,
    tx: Direction,
    rx: Direction,
    /// Bytes read and not yet a whole record.
    read: Vec<u8>,
}

impl Raw {
    fn connect(ca: &TestCa, server: &ServerHandle) -> Raw {
        let provider = rustls::crypto::CryptoProvider {
            cipher_suites: vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256],
            ..rustls::crypto::ring::default_provider()
        };
        let secrets = Arc::new(Secrets::default());
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(config_roots(ca))
            .with_no_client_auth();
        let mut config = config;
        config.key_log = secrets.clone();
        config.enable_secret_extraction = true;
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut tcp = TcpStream::connect(server.local_addr()).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp).unwrap();
        }
        #[allow(deprecated)]
        let extracted = conn.dangerous_extract_secrets().unwrap();
        let logged = secrets.0.lock().unwrap();
        let find = |label: &str| {
            logged
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, s)| s.clone())
                .expect(label)
        };
        Raw {
            tx: Direction::new(find("CLIENT_TRAFFIC_SECRET_0"), extracted.tx.0),
            rx: Direction::new(find("SERVER_TRAFFIC_SECRET_0"), extracted.rx.0),
            tcp,
            read: Vec::new(),
        }
    }

    fn send(&mut self, records: &[Vec<u8>]) {
        self.tcp.write_all(&records.concat()).unwrap();
    }

    fn record(&mut self, kind: u8, content: &[u8]) -> Vec<u8> {
        self.tx.seal(kind, content)
    }

    /// Our key update; `requested`: the server is asked for its own.
    fn key_update(&mut self, requested: bool) -> Vec<u8> {
        let record = self.record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, u8::from(requested)]);
        self.tx.update();
        record
    }

    /// The next record from the server, opened (its key updates followed): `None` at the end
    /// of the stream.
    fn next(&mut self) -> Option<(u8, Vec<u8>)> {
        loop {
            if self.read.len() >= 5 {
                let len = 5 + usize::from(u16::from_be_bytes([self.read[3], self.read[4]]));
                if self.read.len() >= len {
                    let mut record: Vec<u8> = self.read.drain(..len).collect();
                    let header: [u8; 5] = record[..5].try_into().unwrap();
                    let opened = self.rx.open(header, &mut record[5..]).expect("decrypts");
                    if opened == (HANDSHAKE, vec![KEY_UPDATE, 0, 0, 1, 0]) {
                        self.rx.update();
                    }
                    return Some(opened);
                }
            }
            let mut buf = [0; 16 * 1024];
            match self.tcp.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.read.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Every record until the end of the stream (tickets left out).
    fn rest(&mut self) -> Vec<(u8, Vec<u8>)> {
        std::iter::from_fn(|| self.next())
            .filter(|(kind, content)| !(*kind == HANDSHAKE && content.first() == Some(&4)))
            .collect()
    }

    /// The fatal alert the server ended with (after whatever else it sent).
    fn fatal_alert(&mut self) -> u8 {
        let rest = self.rest();
        match rest.last() {
            Some((ALERT, alert)) if alert[0] == 2 => alert[1],
            other => panic!("no fatal alert at the end: {other:?}"),
        }
    }
}

fn config_roots(ca: &TestCa) -> rustls::RootCertStore {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
        .unwrap();
    roots
}

fn start(ca: &TestCa) -> ServerHandle {
    start_with(ca, |s| s)
}

fn start_with(ca: &TestCa, tweak: impl FnOnce(Server) -> Server) -> ServerHandle {
    let leaf = ca.leaf(&["localhost"]);
    let tls = ServerTls::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes()).unwrap();
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).tls(tls);
    tweak(server)
        .spawn(|req| text_response(200, req.path().to_owned()))
        .unwrap()
}

const GET: &[u8] = b"GET /hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// The reply's bytes among the records, and how many key updates came with them.
fn reply_and_key_updates(records: &[(u8, Vec<u8>)]) -> (String, usize) {
    let mut reply = Vec::new();
    let mut updates = 0;
    for (kind, content) in records {
        match *kind {
            APPLICATION_DATA => reply.extend_from_slice(content),
            HANDSHAKE if content[0] == KEY_UPDATE => updates += 1,
            _ => {}
        }
    }
    (String::from_utf8_lossy(&reply).into_owned(), updates)
}

#[test]
fn many_key_update_requests_while_silent_get_one_answer_before_the_reply() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = Raw::connect(&ca, &server);
    let mut records: Vec<Vec<u8>> = (0..30).map(|_| raw.key_update(true)).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records);
    let rest = raw.rest();
    let (reply, updates) = reply_and_key_updates(&rest);
    assert_eq!(updates, 1, "{rest:?}");
    assert!(
        rest.iter().position(|(k, _)| *k == HANDSHAKE)
            < rest.iter().position(|(k, _)| *k == APPLICATION_DATA)
    );
    assert!(
        reply.starts_with("HTTP/1.1 200 OK") && reply.ends_with("/hi"),
        "{reply}"
    );
}

#[test]
fn key_updates_are_allowed_again_after_application_data_and_never_pile_up() {
    // 1 000 requests in groups of 31, each group followed by a byte of the request: one
    // answer, and the connection holds nothing for the requests meanwhile.
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = Raw::connect(&ca, &server);
    let (head, tail) = GET.split_at(8);
    let mut records = Vec::new();
    for byte in head {
        for _ in 0..31 {
            records.push(raw.key_update(true));
        }
        records.push(raw.record(APPLICATION_DATA, &[*byte]));
    }
    records.push(raw.record(APPLICATION_DATA, tail));
    raw.send(&records);
    let (reply, updates) = reply_and_key_updates(&raw.rest());
    assert_eq!(updates, 1);
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(server.stats().held_bytes < 64 * 1024);
}

#[test]
fn the_33rd_key_update_without_application_data_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = Raw::connect(&ca, &server);
    let records: Vec<Vec<u8>> = (0..33).map(|_| raw.key_update(false)).collect();
    raw.send(&records);
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
    let stats = server.stats();
    assert!(stats.tls_failures >= 1, "{stats:?}");
}

#[test]
fn thirty_two_empty_records_in_a_row_are_allowed_and_the_33rd_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = Raw::connect(&ca, &server);
    let mut records: Vec<Vec<u8>> = (0..32).map(|_| raw.record(APPLICATION_DATA, b"")).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records);
    let (reply, _) = reply_and_key_updates(&raw.rest());
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

    let mut raw = Raw::connect(&ca, &server);
    let records: Vec<Vec<u8>> = (0..33).map(|_| raw.record(APPLICATION_DATA, b"")).collect();
    raw.send(&records);
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

#[test]
fn four_user_canceled_warnings_are_allowed_and_the_fifth_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = Raw::connect(&ca, &server);
    let mut records: Vec<Vec<u8>> = (0..4).map(|_| raw.record(ALERT, &[1, 90])).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records);
    let (reply, _) = reply_and_key_updates(&raw.rest());
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

    let mut raw = Raw::connect(&ca, &server);
    let records: Vec<Vec<u8>> = (0..5).map(|_| raw.record(ALERT, &[1, 90])).collect();
    raw.send(&records);
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

/// RFC 8446 §5, §5.1, §5.2, §5.4, §4.6.3, §6: each record and the alert it ends with.
#[test]
fn each_malformed_record_gets_the_alert_rfc_8446_names() {
    let ca = TestCa::new();
    let server = start(&ca);
    type Make = fn(&mut Raw) -> Vec<u8>;
    let cases: [(&str, Make, u8); 10] = [
        (
            "a plaintext ChangeCipherSpec",
            |_| vec![CHANGE_CIPHER_SPEC, 3, 3, 0, 1, 1],
            UNEXPECTED_MESSAGE,
        ),
        (
            "a ciphertext of 2^14 + 256 + 1 bytes",
            |_| {
                let mut r = vec![APPLICATION_DATA, 3, 3, 0x41, 0x01];
                r.resize(5 + 0x4101, 7);
                r
            },
            RECORD_OVERFLOW,
        ),
        (
            "an inner plaintext of zeros alone",
            |raw| raw.tx.seal_inner(&[0; 40]),
            UNEXPECTED_MESSAGE,
        ),
        (
            "an inner plaintext of 16 425 bytes, mostly padding",
            |raw| {
                let mut inner = b"GET".to_vec();
                inner.push(APPLICATION_DATA);
                inner.resize(16_425, 0);
                raw.tx.seal_inner(&inner)
            },
            RECORD_OVERFLOW,
        ),
        (
            "an empty alert",
            |raw| raw.record(ALERT, b""),
            UNEXPECTED_MESSAGE,
        ),
        (
            "a three-byte alert",
            |raw| raw.record(ALERT, &[1, 0, 0]),
            DECODE_ERROR,
        ),
        (
            "a TLS 1.3 warning other than user_canceled",
            |raw| raw.record(ALERT, &[1, 42]),
            DECODE_ERROR,
        ),
        (
            "a key update asking for neither answer",
            |raw| raw.record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 2]),
            ILLEGAL_PARAMETER,
        ),
        (
            "two key updates in one record",
            |raw| raw.record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0, KEY_UPDATE, 0, 0, 1, 0]),
            UNEXPECTED_MESSAGE,
        ),
        (
            "an empty handshake record",
            |raw| raw.record(HANDSHAKE, b""),
            UNEXPECTED_MESSAGE,
        ),
    ];
    for (what, make, alert) in cases {
        let mut raw = Raw::connect(&ca, &server);
        let record = make(&mut raw);
        raw.send(&[record]);
        assert_eq!(raw.fatal_alert(), alert, "{what}");
    }
    // Application data between a key update's pieces.
    let mut raw = Raw::connect(&ca, &server);
    let records = vec![
        raw.record(HANDSHAKE, &[KEY_UPDATE, 0]),
        raw.record(APPLICATION_DATA, b"G"),
    ];
    raw.send(&records);
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

#[test]
fn a_key_update_in_pieces_is_joined_and_followed() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = Raw::connect(&ca, &server);
    let records = vec![
        raw.record(HANDSHAKE, &[KEY_UPDATE]),
        raw.record(HANDSHAKE, &[0, 0]),
        raw.record(HANDSHAKE, &[1, 1]),
    ];
    raw.tx.update();
    let get = raw.record(APPLICATION_DATA, GET);
    raw.send(&records);
    raw.send(&[get]);
    let (reply, updates) = reply_and_key_updates(&raw.rest());
    assert_eq!(updates, 1);
    assert!(reply.ends_with("/hi"), "{reply}");
}

#[test]
fn a_lowered_record_limit_makes_the_server_update_its_key_before_passing_it() {
    let ca = TestCa::new();
    let server = start_with(&ca, |s| s.tls_records_per_key(5));
    let mut raw = Raw::connect(&ca, &server);
    // The server's tickets were sealed under its key too: count from where it stands.
    let first = raw.rx.seq;
    let get = b"GET /n HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut replies = 0;
    let mut updates = 0;
    let mut under_one_key = first;
    let mut most = 0;
    for _ in 0..12 {
        let record = raw.record(APPLICATION_DATA, get);
        raw.send(&[record]);
        loop {
            let (kind, content) = raw.next().expect("a record");
            under_one_key += 1;
            most = most.max(under_one_key);
            if kind == HANDSHAKE && content[0] == KEY_UPDATE {
                updates += 1;
                under_one_key = 0;
                continue;
            }
            if kind == APPLICATION_DATA && content.ends_with(b"/n") {
                replies += 1;
                break;
            }
        }
    }
    assert_eq!(replies, 12);
    assert!(updates >= 2, "{updates} updates");
    assert!(most <= 5, "{most} records under one key");
}
