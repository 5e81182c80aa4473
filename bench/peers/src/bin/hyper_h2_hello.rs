//! `Hello, World!` from hyper 1's HTTP/2 server (the `h2` crate) on one current-thread tokio
//! runtime, h2c by prior knowledge on 127.0.0.1:`--port` (TCP_NODELAY), or h2 by ALPN over
//! TLS (tokio-rustls, ring) with `--tls-cert FILE --tls-key FILE`: the HTTP/2 peer of
//! `web-bench compare --only h2`. Takes `--port P --workers W` (one thread whatever W).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A TLS acceptor for `cert` and `key` (PEM files) offering h2 by ALPN.
fn acceptor(cert: &str, key: &str) -> TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .expect("cert")
        .collect::<Result<_, _>>()
        .expect("cert");
    let key = PrivateKeyDer::from_pem_file(key).expect("key");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("certificate");
    config.alpn_protocols = vec![b"h2".to_vec()];
    TlsAcceptor::from(std::sync::Arc::new(config))
}

async fn hello(_req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::builder()
        .header("Content-Type", "text/plain")
        .body(Full::new(Bytes::from_static(web_bench_peers::BODY.as_bytes())))
        .unwrap_or_default())
}

fn main() {
    let args = web_bench_peers::args("hyper_h2_hello");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tls = args.tls.as_ref().map(|(cert, key)| acceptor(cert, key));
    runtime.block_on(async move {
        let listener = TcpListener::bind((args.host.as_str(), args.port))
            .await
            .expect("bind");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let tls = tls.clone();
            tokio::spawn(async move {
                let builder = http2::Builder::new(TokioExecutor::new());
                match tls {
                    Some(tls) => {
                        if let Ok(stream) = tls.accept(stream).await {
                            let io = TokioIo::new(stream);
                            let _ = builder.serve_connection(io, service_fn(hello)).await;
                        }
                    }
                    None => {
                        let io = TokioIo::new(stream);
                        let _ = builder.serve_connection(io, service_fn(hello)).await;
                    }
                }
            });
        }
    });
}
