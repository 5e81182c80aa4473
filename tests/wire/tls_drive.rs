//! Drives a whole TLS connection of a real server — records, the TLS session, request reading,
//! dispatch, the HTTP strand — over 127.0.0.1: either raw bytes where records belong (no
//! handshake), or a real handshake followed by plaintext pieces each sealed as a record of its
//! own, the ciphertext cut into writes at chosen points. Checks that the connection ends in
//! time, no strand panicked, and (through TLS) that every byte the server wrote decrypts to a
//! run of whole replies. Shared by `tests/tls_properties.rs` and the fuzz target
//! `fuzz/fuzz_targets/tls_connection.rs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use web::http::ServerHandle;

use super::drive::{END_WITHIN, check_answers, pieces, read_to_end, send};
use super::tls_raw::{ALERT, APPLICATION_DATA, HANDSHAKE, Raw, Version};

/// A one-worker TLS server with small limits; a client configuration that trusts it.
pub struct TlsTarget {
    pub server: ServerHandle,
    client: Arc<rustls::ClientConfig>,
    roots: rustls::RootCertStore,
}

impl TlsTarget {
    pub fn start() -> TlsTarget {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
        let (cert, key) = (made.cert.pem(), made.signing_key.serialize_pem());
        let tls = web::tls::ServerTls::from_pem(cert.as_bytes(), key.as_bytes()).expect("tls");
        let server = super::drive::small_server()
            .handshake_timeout(Duration::from_secs(2))
            .tls(tls)
            .spawn(super::drive::describe)
            .expect("spawn");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(made.cert.der().clone()).expect("root");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        TlsTarget {
            server,
            client: Arc::new(client),
            roots,
        }
    }

    /// A connection whose handshake is done.
    fn handshaken(&self) -> Result<(TcpStream, rustls::ClientConnection), String> {
        let mut c = self.connect()?;
        c.set_read_timeout(Some(END_WITHIN))
            .map_err(|e| e.to_string())?;
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let mut tls = rustls::ClientConnection::new(Arc::clone(&self.client), name)
            .map_err(|e| e.to_string())?;
        while tls.is_handshaking() {
            tls.complete_io(&mut c)
                .map_err(|e| format!("handshake: {e}"))?;
        }
        Ok((c, tls))
    }

    fn connect(&self) -> Result<TcpStream, String> {
        let c = TcpStream::connect(self.server.local_addr()).map_err(|e| e.to_string())?;
        c.set_nodelay(true).map_err(|e| e.to_string())?;
        c.set_write_timeout(Some(END_WITHIN))
            .map_err(|e| e.to_string())?;
        Ok(c)
    }

    fn panicked(&self, before: u64) -> Result<(), String> {
        let now = self.server.stats().panics;
        match now == before {
            true => Ok(()),
            false => Err(format!("{} strand call(s) panicked", now - before)),
        }
    }

    /// Sends `pieces` where TLS records belong, with no handshake, then ends the stream: the
    /// server must close within [`END_WITHIN`] (or the handshake timeout) without a panic,
    /// having written nothing but TLS records (an alert) or its plain 400 to plain HTTP.
    pub fn drive_raw(&self, pieces: &[&[u8]]) -> Result<(), String> {
        let panics = self.server.stats().panics;
        let mut c = self.connect()?;
        send(&mut c, pieces);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let out = read_to_end(&mut c)?;
        let plain_400 = out.starts_with(b"HTTP/1.1 400 Bad Request\r\n");
        if !(out.is_empty() || plain_400 || (20..=23).contains(&out[0])) {
            return Err(format!("the server wrote {:?}", &out[..out.len().min(64)]));
        }
        self.panicked(panics)
    }

    /// A real handshake, then `pieces` raw where the client's records belong (the records the
    /// library opens itself once the handshake is done), then the end of stream: the server
    /// must close within [`END_WITHIN`] without a panic.
    pub fn drive_after_handshake(&self, pieces: &[&[u8]]) -> Result<(), String> {
        let panics = self.server.stats().panics;
        let (mut c, _tls) = self.handshaken()?;
        send(&mut c, pieces);
        let _ = c.shutdown(std::net::Shutdown::Write);
        read_to_end(&mut c)?;
        self.panicked(panics)
    }

    /// A handshake, then each of `records` sealed as a record of its own and the ciphertext
    /// cut at `cuts` (offsets into it, sorted), then `close_notify` and the end of stream.
    /// Answers how many replies came back, all whole (HTTP/2 frames if the plaintext starts
    /// with the preface: the server speaks HTTP/2 on it, ALPN or not).
    pub fn drive_records(&self, records: &[&[u8]], cuts: &[usize]) -> Result<usize, String> {
        let panics = self.server.stats().panics;
        let (mut c, mut tls) = self.handshaken()?;
        let mut wire = Vec::new();
        for record in records {
            tls.writer().write_all(record).map_err(|e| e.to_string())?;
            while tls.wants_write() {
                tls.write_tls(&mut wire).map_err(|e| e.to_string())?;
            }
        }
        tls.send_close_notify();
        while tls.wants_write() {
            tls.write_tls(&mut wire).map_err(|e| e.to_string())?;
        }
        send(&mut c, &pieces(&wire, cuts));
        let _ = c.shutdown(std::net::Shutdown::Write);
        let sealed = read_to_end(&mut c)?;
        let mut plain = Vec::new();
        let mut rest = &sealed[..];
        while !rest.is_empty() {
            tls.read_tls(&mut rest).map_err(|e| e.to_string())?;
            tls.process_new_packets()
                .map_err(|e| format!("the server's records: {e}"))?;
            let _ = tls.reader().read_to_end(&mut plain);
        }
        let replies = check_answers(&records.concat(), &plain)?;
        self.panicked(panics)?;
        Ok(replies)
    }

    /// A TLS 1.3 handshake, then each of `pieces` made into a record sealed by the harness
    /// (`tls_raw.rs`), its first byte picking which (see [`sealed_record`]): application data,
    /// key updates, alerts, handshake records, empty and padded records, arbitrary inner
    /// plaintexts. Then `close_notify` and the end of stream: the server must end in time
    /// without a panic, and every record it sent must open (its key updates followed).
    pub fn drive_sealed(&self, pieces: &[&[u8]]) -> Result<(), String> {
        let panics = self.server.stats().panics;
        let mut raw = Raw::connect(self.server.local_addr(), self.roots.clone(), Version::Tls13)?;
        for piece in pieces {
            let record = sealed_record(&mut raw, piece);
            // The server may have closed already (a fatal alert): what it sent is read below.
            if raw.send(&[record]).is_err() {
                break;
            }
        }
        let goodbye = raw.record(ALERT, &[1, 0]);
        let _ = raw.send(&[goodbye]);
        let _ = raw.tcp.shutdown(std::net::Shutdown::Write);
        raw.rest()?;
        self.panicked(panics)
    }
}

/// The record a piece of a fuzz input stands for: its first byte picks the kind, the rest is
/// its content.
pub fn sealed_record(raw: &mut Raw, piece: &[u8]) -> Vec<u8> {
    let (pick, rest) = piece.split_first().unwrap_or((&0, &[]));
    match pick % 8 {
        0 | 1 => raw.record(APPLICATION_DATA, rest),
        2 => raw.key_update(rest.first().is_some_and(|b| b & 1 == 1)),
        3 => raw.record(ALERT, rest),
        // Handshake bytes as they come (a key update among them leaves our key as it was).
        4 => raw.record(HANDSHAKE, rest),
        5 => raw.record(APPLICATION_DATA, b""),
        // Content, its type, and up to 16 320 bytes of padding.
        6 => {
            let padding = rest.first().map_or(0, |&b| usize::from(b) * 64);
            let mut inner = rest.to_vec();
            inner.push(APPLICATION_DATA);
            inner.resize(inner.len() + padding, 0);
            raw.tx.seal_inner(&inner)
        }
        // An inner plaintext as it comes: any type, any padding, zeros alone.
        _ => raw.tx.seal_inner(rest),
    }
}
