//! [`ServerTls`]: what a server presents — its certificates by name — and how the rustls
//! configuration every new connection starts from is made and replaced while running.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::server::{ClientHello, ProducesTickets, ResolvesServerCert, StoresServerSessions};
use rustls::sign::CertifiedKey;

use super::pem;

/// Full sessions remembered for TLS 1.2 resumption by session id (TLS 1.3 and 1.2 tickets need
/// no memory here: the client keeps them, sealed with the server's rotating ticket key).
const SESSION_CACHE: usize = 4096;

/// A server's TLS: its certificate chain and key (PEM), more for other names (SNI), or a ready
/// `rustls::ServerConfig`. Give it to [`Server::tls`](crate::http::Server::tls); replace it
/// while running with [`Control::reload_tls`](crate::http::Control::reload_tls).
///
/// Connections speak TLS 1.3 and 1.2 (rustls with the `ring` provider), offer ALPN `http/1.1`
/// and resume sessions (tickets, and session ids for TLS 1.2). A client that names a host
/// given with [`name`](ServerTls::name) gets that certificate, every other client the first.
///
/// ```no_run
/// use web::tls::ServerTls;
/// let tls = ServerTls::from_pem_files("cert.pem", "key.pem")?
///     .name("chat.example.com", "chat-cert.pem", "chat-key.pem")?;
/// let server = web::http::Server::bind("0.0.0.0:443")?.tls(tls);
/// # let _ = server;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct ServerTls {
    source: Source,
}

#[derive(Clone)]
enum Source {
    Certificates(Arc<Certificates>),
    Config(Arc<ServerConfig>),
}

/// The certificate for clients that name no host or one not listed, and one per listed name.
#[derive(Debug)]
struct Certificates {
    default: Arc<CertifiedKey>,
    by_name: HashMap<String, Arc<CertifiedKey>>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Certificates(c) => f
                .debug_struct("ServerTls")
                .field("names", &c.by_name.keys().collect::<Vec<_>>())
                .finish(),
            Source::Config(_) => f.write_str("ServerTls(rustls::ServerConfig)"),
        }
    }
}

impl ServerTls {
    /// The certificate chain (leaf first) and its private key (PKCS#8, PKCS#1 or SEC1), read
    /// from PEM files now: an unreadable file, a file with no certificate or key, or a key that
    /// is not the certificate's is an `InvalidInput` (or the file's own) error naming the files.
    ///
    /// ```no_run
    /// let tls = web::tls::ServerTls::from_pem_files("cert.pem", "key.pem")?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> io::Result<ServerTls> {
        Ok(ServerTls::single(pem::certified_key_files(
            cert.as_ref(),
            key.as_ref(),
        )?))
    }

    /// As [`from_pem_files`](ServerTls::from_pem_files), from the PEM text itself.
    ///
    /// ```no_run
    /// let (cert, key) = (std::fs::read("cert.pem")?, std::fs::read("key.pem")?);
    /// let tls = web::tls::ServerTls::from_pem(&cert, &key)?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_pem(cert: &[u8], key: &[u8]) -> io::Result<ServerTls> {
        Ok(ServerTls::single(pem::certified_key(
            cert,
            key,
            "the PEM given",
        )?))
    }

    /// A ready rustls configuration, used as given (its ALPN, versions, resolver, tickets).
    /// Connections still run on the server's workers with no buffer while idle. With
    /// `enable_secret_extraction` set, the library seals and opens records itself once the
    /// handshake is done (an idle connection then costs about 1.1 KB); without it rustls keeps
    /// protecting them (about 3.5 KB).
    ///
    /// ```no_run
    /// # fn config() -> std::sync::Arc<rustls::ServerConfig> { unimplemented!() }
    /// let tls = web::tls::ServerTls::from_rustls(config());
    /// # let _ = tls;
    /// ```
    pub fn from_rustls(config: Arc<ServerConfig>) -> ServerTls {
        ServerTls {
            source: Source::Config(config),
        }
    }

    /// Presents another certificate to clients that ask for `host` by SNI (exact name, any
    /// case). Not for a configuration from [`from_rustls`](ServerTls::from_rustls), which
    /// resolves its own (an `InvalidInput` error).
    ///
    /// ```no_run
    /// let tls = web::tls::ServerTls::from_pem_files("a.pem", "a-key.pem")?
    ///     .name("b.example.com", "b.pem", "b-key.pem")?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn name(
        self,
        host: &str,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> io::Result<ServerTls> {
        let certified = pem::certified_key_files(cert.as_ref(), key.as_ref())?;
        self.name_key(host, certified)
    }

    /// As [`name`](ServerTls::name), from the PEM text itself.
    ///
    /// ```no_run
    /// # let (a, a_key, b, b_key) = (vec![], vec![], vec![], vec![]);
    /// let tls = web::tls::ServerTls::from_pem(&a, &a_key)?.name_pem("b.example.com", &b, &b_key)?;
    /// # let _ = tls;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn name_pem(self, host: &str, cert: &[u8], key: &[u8]) -> io::Result<ServerTls> {
        let certified = pem::certified_key(cert, key, host)?;
        self.name_key(host, certified)
    }

    fn name_key(self, host: &str, certified: Arc<CertifiedKey>) -> io::Result<ServerTls> {
        let Source::Certificates(certs) = self.source else {
            return Err(pem::invalid(
                "names are given to the rustls configuration itself".to_owned(),
            ));
        };
        let mut by_name = certs.by_name.clone();
        by_name.insert(host.to_ascii_lowercase(), certified);
        Ok(ServerTls {
            source: Source::Certificates(Arc::new(Certificates {
                default: Arc::clone(&certs.default),
                by_name,
            })),
        })
    }

    fn single(default: Arc<CertifiedKey>) -> ServerTls {
        ServerTls {
            source: Source::Certificates(Arc::new(Certificates {
                default,
                by_name: HashMap::new(),
            })),
        }
    }
}

/// What every worker of a TLS server reads as it accepts: the configuration now in force, and
/// what survives a reload (ticket keys and the session cache, so sessions resume across it).
pub(crate) struct Configs {
    now: RwLock<Arc<ServerConfig>>,
    tickets: Arc<dyn ProducesTickets>,
    sessions: Arc<dyn StoresServerSessions>,
    /// Whether `h2` is offered by ALPN (before `http/1.1`).
    http2: bool,
}

impl Configs {
    pub(crate) fn new(tls: &ServerTls, http2: bool) -> io::Result<Configs> {
        let tickets = rustls::crypto::ring::Ticketer::new()
            .map_err(|e| io::Error::other(format!("TLS ticket keys: {e}")))?;
        let sessions: Arc<dyn StoresServerSessions> =
            rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
        let first = config(tls, &tickets, &sessions, http2)?;
        Ok(Configs {
            now: RwLock::new(first),
            tickets,
            sessions,
            http2,
        })
    }

    /// The configuration a connection accepted now starts from.
    pub(crate) fn current(&self) -> Arc<ServerConfig> {
        match self.now.read() {
            Ok(now) => Arc::clone(&now),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// From now on, connections start from `tls`; open ones keep what they have.
    pub(crate) fn replace(&self, tls: &ServerTls) -> io::Result<()> {
        let config = config(tls, &self.tickets, &self.sessions, self.http2)?;
        match self.now.write() {
            Ok(mut now) => *now = config,
            Err(poisoned) => *poisoned.into_inner() = config,
        }
        Ok(())
    }
}

/// The rustls configuration `tls` stands for, resuming sessions with `tickets` and `sessions`.
fn config(
    tls: &ServerTls,
    tickets: &Arc<dyn ProducesTickets>,
    sessions: &Arc<dyn StoresServerSessions>,
    http2: bool,
) -> io::Result<Arc<ServerConfig>> {
    let certs = match &tls.source {
        Source::Config(config) => return Ok(Arc::clone(config)),
        Source::Certificates(certs) => Arc::clone(certs),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| io::Error::other(format!("TLS versions: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(ByName(certs)));
    // HTTP/2 first when the server speaks it (RFC 9113 §3.2), HTTP/1.1 for the rest.
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    config.ticketer = Arc::clone(tickets);
    config.session_storage = Arc::clone(sessions);
    // No 0-RTT: a replayed request is not ours to accept.
    config.max_early_data_size = 0;
    // Once the handshake is done, the connection's records are sealed and opened by this
    // library with the traffic keys (rustls keeps what key updates need): an idle connection
    // then holds its keys, not rustls' expanded ones and record machinery.
    config.enable_secret_extraction = true;
    Ok(Arc::new(config))
}

/// Picks the certificate for the name a client asked for.
#[derive(Debug)]
struct ByName(Arc<Certificates>);

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let certs = &self.0;
        let named = hello
            .server_name()
            .and_then(|name| certs.by_name.get(&name.to_ascii_lowercase()));
        Some(Arc::clone(named.unwrap_or(&certs.default)))
    }
}
