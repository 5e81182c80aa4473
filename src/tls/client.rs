//! TLS for the blocking clients: [`ClientTls`] (whose certificates to trust) and the stream
//! the HTTP and WebSocket clients read and write, which a reader thread and a writer thread can
//! share (the WebSocket client's halves).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::pem;

/// Where the system keeps its trusted roots, as OpenSSL looks for them (after `SSL_CERT_FILE`).
const SYSTEM_ROOTS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// Which servers a client trusts over `https://` and `wss://`: the system's roots (the
/// default), the roots in a PEM file, or a ready `rustls::ClientConfig`. The server's name is
/// always checked against its certificate, but by [`ClientTls::insecure`] (tests only).
///
/// ```no_run
/// use web::tls::ClientTls;
/// let client = web::http::Client::new().tls(ClientTls::roots_pem_file("test-ca.pem")?);
/// let res = client.request("GET", "https://localhost:8443/").send()?;
/// # let _ = res;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// Trusts the system's roots: the PEM file `SSL_CERT_FILE` names, or the first of the
    /// usual bundles (`/etc/ssl/certs/ca-certificates.crt`, ...). Read once per process.
    ///
    /// ```no_run
    /// let tls = web::tls::ClientTls::system()?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn system() -> io::Result<ClientTls> {
        static SYSTEM: OnceLock<Result<ClientTls, String>> = OnceLock::new();
        SYSTEM
            .get_or_init(|| {
                let named = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from);
                let found = named
                    .into_iter()
                    .chain(SYSTEM_ROOTS.iter().map(std::path::PathBuf::from))
                    .find(|p| p.is_file())
                    .ok_or_else(|| "no system roots found (set SSL_CERT_FILE)".to_owned())?;
                ClientTls::roots_pem_file(&found).map_err(|e| e.to_string())
            })
            .clone()
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))
    }

    /// Trusts the certificates in a PEM file (a test CA, a private root).
    ///
    /// ```no_run
    /// let tls = web::tls::ClientTls::roots_pem_file("ca.pem")?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn roots_pem_file(path: impl AsRef<Path>) -> io::Result<ClientTls> {
        let path = path.as_ref();
        let pem = std::fs::read(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        ClientTls::roots_pem(&pem)
    }

    /// Trusts the certificates in PEM text.
    ///
    /// ```no_run
    /// let tls = web::tls::ClientTls::roots_pem(&std::fs::read("ca.pem")?)?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn roots_pem(pem: &[u8]) -> io::Result<ClientTls> {
        let mut roots = RootCertStore::empty();
        let (added, _ignored) =
            roots.add_parsable_certificates(pem::certificates(pem, "the roots")?);
        if added == 0 {
            return Err(pem::invalid(
                "no usable root certificate in the PEM".to_owned(),
            ));
        }
        let config = builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ClientTls::from_rustls(Arc::new(config)))
    }

    /// A ready rustls configuration, used as given (the client sets its own ALPN per use).
    ///
    /// ```no_run
    /// # fn config() -> std::sync::Arc<rustls::ClientConfig> { unimplemented!() }
    /// let tls = web::tls::ClientTls::from_rustls(config());
    /// # let _ = tls;
    /// ```
    pub fn from_rustls(config: Arc<ClientConfig>) -> ClientTls {
        ClientTls { config }
    }

    /// Trusts any certificate for any name. **For tests only**: anyone on the path can read
    /// and change the traffic.
    ///
    /// ```
    /// let tls = web::tls::ClientTls::insecure();
    /// # let _ = tls;
    /// ```
    pub fn insecure() -> ClientTls {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth();
        ClientTls::from_rustls(Arc::new(config))
    }

    /// Runs the handshake on `tcp` for `host`, offering `alpn`.
    pub(crate) fn connect(&self, tcp: TcpStream, host: &str, alpn: &[u8]) -> io::Result<TlsStream> {
        let name = ServerName::try_from(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        )
        .map_err(|_| pem::invalid(format!("{host:?} is not a name TLS can check")))?;
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![alpn.to_vec()];
        let conn = ClientConnection::new(Arc::new(config), name).map_err(io::Error::other)?;
        let mut stream = TlsStream {
            tcp,
            conn: Arc::new(Mutex::new(conn)),
        };
        stream.handshake()?;
        Ok(stream)
    }
}

fn builder() -> rustls::ConfigBuilder<ClientConfig, rustls::WantsVerifier> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The ring provider supports both versions, so this cannot fail.
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|_| unreachable!("ring supports TLS 1.2 and 1.3"))
}

/// A client's TLS connection; clones share the session (a reader thread and a writer thread).
/// Reads wait for the socket without holding the session, so a writer is never blocked by a
/// reader waiting for the server.
pub(crate) struct TlsStream {
    tcp: TcpStream,
    conn: Arc<Mutex<ClientConnection>>,
}

impl TlsStream {
    fn lock(&self) -> MutexGuard<'_, ClientConnection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handshake(&mut self) -> io::Result<()> {
        let mut conn = self.lock();
        while conn.is_handshaking() {
            conn.complete_io(&mut self.tcp.try_clone()?)?;
        }
        Ok(())
    }

    /// Another handle on the same connection.
    pub(crate) fn try_clone(&self) -> io::Result<TlsStream> {
        Ok(TlsStream {
            tcp: self.tcp.try_clone()?,
            conn: Arc::clone(&self.conn),
        })
    }

    /// The TCP connection beneath (timeouts, shutdown, addresses).
    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// Says `close_notify` (then the caller shuts the socket).
    pub(crate) fn close_notify(&mut self) -> io::Result<()> {
        let mut conn = self.lock();
        conn.send_close_notify();
        while conn.wants_write() {
            conn.write_tls(&mut &self.tcp)?;
        }
        Ok(())
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut raw = [0u8; 4096];
        loop {
            {
                let mut conn = self.lock();
                match conn.reader().read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    done => return done,
                }
            }
            // Nothing decrypted yet: wait for the server without holding the session.
            let n = (&self.tcp).read(&mut raw)?;
            let mut conn = self.lock();
            let mut arrived = &raw[..n];
            loop {
                conn.read_tls(&mut arrived)?;
                conn.process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                if arrived.is_empty() {
                    break;
                }
            }
            while conn.wants_write() {
                conn.write_tls(&mut &self.tcp)?;
            }
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut conn = self.lock();
        let n = conn.writer().write(buf)?;
        while conn.wants_write() {
            conn.write_tls(&mut &self.tcp)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The verifier of [`ClientTls::insecure`]: every certificate passes; signatures are still
/// checked (the handshake stays well-formed), so a broken server still fails.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
