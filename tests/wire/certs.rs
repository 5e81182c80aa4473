//! A test CA made by the test itself, and leaf certificates it signs (ECDSA P-256), as PEM
//! text and as files in a temporary directory (for what takes paths).

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

pub struct TestCa {
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A leaf certificate and its key.
pub struct Leaf {
    pub cert: String,
    pub key: String,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "web test CA");
        let cert = params.self_signed(&key).expect("CA");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A rustls client configuration that trusts this CA alone, speaking `versions`.
    pub fn client_config(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> std::sync::Arc<rustls::ClientConfig> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(
                rustls::pki_types::CertificateDer::from_pem_slice(self.pem.as_bytes())
                    .expect("pem"),
            )
            .expect("root");
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        std::sync::Arc::new(config)
    }

    /// A rustls stream to `addr` asking for `localhost`, trusting this CA (TLS 1.3 and 1.2).
    pub fn stream(
        &self,
        addr: std::net::SocketAddr,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let conn =
            rustls::ClientConnection::new(self.client_config(versions), name).expect("client");
        let tcp = std::net::TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        rustls::StreamOwned::new(conn, tcp)
    }

    /// A leaf for `names` (DNS names or IP addresses).
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("leaf"));
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// Writes `files` (name, contents) into a fresh temporary directory; returns its path.
pub fn write_files(files: &[(&str, &str)]) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("web-tls-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, contents) in files {
        std::fs::write(dir.join(name), contents).expect("write");
    }
    dir
}
