//! `Hello, World!` from hyper 1's HTTP/2 server (the `h2` crate) on one current-thread tokio
//! runtime, h2c by prior knowledge on 127.0.0.1:`--port` (TCP_NODELAY): the HTTP/2 peer of
//! `web-bench compare --only h2`. Takes `--port P --workers W` (one thread whatever W).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

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
    runtime.block_on(async move {
        let listener = TcpListener::bind((args.host.as_str(), args.port))
            .await
            .expect("bind");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let _ = http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service_fn(hello))
                    .await;
            });
        }
    });
}
