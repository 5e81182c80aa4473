//! The connection a blocking client talks over: plain TCP, or TLS over it (feature `tls`),
//! with what the HTTP client's reader needs of either — a look at what has arrived without
//! taking it (`peek`), and the read timeout.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// What a client's reply reader reads from.
pub(crate) trait Wire: Read + Write {
    /// Waits for bytes and copies what has arrived into `buf` without consuming it; 0 at the
    /// end of stream.
    fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// How long a read may wait.
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

impl Wire for TcpStream {
    fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::peek(self, buf)
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }
}

/// A client's connection to a server.
pub(crate) enum ClientConn {
    Plain(TcpStream),
    /// TLS, with the plaintext a `peek` read and nobody took yet.
    #[cfg(feature = "tls")]
    Tls {
        stream: crate::tls::TlsStream,
        ahead: Vec<u8>,
    },
}

impl std::fmt::Debug for ClientConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            ClientConn::Plain(_) => "ClientConn::Plain",
            #[cfg(feature = "tls")]
            ClientConn::Tls { .. } => "ClientConn::Tls",
        };
        f.debug_tuple(kind)
            .field(&self.tcp().peer_addr().ok())
            .finish()
    }
}

impl ClientConn {
    /// The TCP connection beneath.
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            ClientConn::Plain(s) => s,
            #[cfg(feature = "tls")]
            ClientConn::Tls { stream, .. } => stream.tcp(),
        }
    }

    /// Another handle on the same connection (a reader and a writer on two threads).
    pub(crate) fn try_clone(&self) -> io::Result<ClientConn> {
        Ok(match self {
            ClientConn::Plain(s) => ClientConn::Plain(s.try_clone()?),
            #[cfg(feature = "tls")]
            ClientConn::Tls { stream, .. } => ClientConn::Tls {
                stream: stream.try_clone()?,
                ahead: Vec::new(),
            },
        })
    }

    /// Ends the connection both ways (TLS says `close_notify` first).
    pub(crate) fn shutdown(&mut self) {
        #[cfg(feature = "tls")]
        if let ClientConn::Tls { stream, .. } = self {
            let _ = stream.close_notify();
        }
        let _ = self.tcp().shutdown(Shutdown::Both);
    }
}

impl Read for ClientConn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientConn::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            ClientConn::Tls { stream, ahead } => {
                if ahead.is_empty() {
                    return stream.read(buf);
                }
                let n = buf.len().min(ahead.len());
                buf[..n].copy_from_slice(&ahead[..n]);
                ahead.drain(..n);
                Ok(n)
            }
        }
    }
}

impl Write for ClientConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientConn::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            ClientConn::Tls { stream, .. } => stream.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientConn::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            ClientConn::Tls { stream, .. } => stream.flush(),
        }
    }
}

impl Wire for ClientConn {
    fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientConn::Plain(s) => s.peek(buf),
            #[cfg(feature = "tls")]
            ClientConn::Tls { stream, ahead } => {
                if ahead.is_empty() {
                    // Read straight into what is kept for the next read.
                    ahead.resize(buf.len(), 0);
                    match stream.read(ahead) {
                        Ok(n) => ahead.truncate(n),
                        Err(e) => {
                            ahead.clear();
                            return Err(e);
                        }
                    }
                }
                let n = buf.len().min(ahead.len());
                buf[..n].copy_from_slice(&ahead[..n]);
                Ok(n)
            }
        }
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.tcp().set_read_timeout(timeout)
    }
}

/// Whether this build can speak the scheme asked for: `https://` and `wss://` need the `tls`
/// feature (an `Unsupported` error before anything is sent, without it).
pub(crate) fn supported(secure: bool) -> io::Result<()> {
    if secure && cfg!(not(feature = "tls")) {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "https:// and wss:// need TLS, which this build lacks (feature `tls`)",
        ));
    }
    Ok(())
}

/// Opens `tcp` for `url`'s scheme: as is for `http://`/`ws://`, under TLS (checking the
/// server's certificate for the URL's host, offering `alpn`) for `https://`/`wss://`.
pub(crate) fn secure(
    tcp: TcpStream,
    secure: bool,
    host: &str,
    alpn: &[u8],
    tls: Option<&TlsChoice>,
) -> io::Result<ClientConn> {
    if !secure {
        return Ok(ClientConn::Plain(tcp));
    }
    #[cfg(feature = "tls")]
    {
        let system;
        let tls = match tls {
            Some(tls) => tls,
            None => {
                system = crate::tls::ClientTls::system()?;
                &system
            }
        };
        let stream = tls.connect(tcp, host, alpn)?;
        Ok(ClientConn::Tls {
            stream,
            ahead: Vec::new(),
        })
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (host, alpn, tls);
        // `secure` here: an `Unsupported` error.
        supported(secure).map(|()| ClientConn::Plain(tcp))
    }
}

/// The TLS settings a client may hold: [`ClientTls`](crate::tls::ClientTls) with the `tls`
/// feature, nothing without.
#[cfg(feature = "tls")]
pub(crate) type TlsChoice = crate::tls::ClientTls;
#[cfg(not(feature = "tls"))]
pub(crate) type TlsChoice = std::convert::Infallible;
