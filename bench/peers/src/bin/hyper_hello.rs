//! `Hello, World!` from hyper 1 on one current-thread tokio runtime (keep-alive, hyper's own
//! `pipeline_flush` for pipelined clients, TCP_NODELAY), plain or over
//! tokio-rustls (`--cert FILE --key FILE`, PEM; TLS 1.3 and 1.2, ALPN http/1.1), on
//! 127.0.0.1:`--port`; `--plain-port P` also serves plain HTTP on the same thread. The peer of
//! `web`'s TLS speed figures.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

async fn hello(_req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::builder()
        .header("Content-Type", "text/plain")
        .body(Full::new(Bytes::from_static(b"Hello, World!")))
        .unwrap_or_default())
}

fn main() {
    let port: u16 = arg("--port").and_then(|p| p.parse().ok()).unwrap_or(8443);
    let tls = match (arg("--cert"), arg("--key")) {
        (Some(cert), Some(key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
                .expect("cert file")
                .collect::<Result<_, _>>()
                .expect("certificates");
            let key = PrivateKeyDer::from_pem_file(&key).expect("key");
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .expect("certificate and key");
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
        }
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let plain_port: Option<u16> = arg("--plain-port").and_then(|p| p.parse().ok());
    runtime.block_on(async move {
        if let Some(plain) = plain_port {
            tokio::spawn(serve(plain, None));
        }
        serve(port, tls).await;
    });
}

async fn serve(port: u16, tls: Option<tokio_rustls::TlsAcceptor>) {
    {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = service_fn(hello);
                match tls {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let _ = http1::Builder::new()
                                .pipeline_flush(true)
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                    None => {
                        let _ = http1::Builder::new()
                            .pipeline_flush(true)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
            });
        }
    }
}
