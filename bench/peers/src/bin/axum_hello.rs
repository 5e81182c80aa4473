//! `Hello, World!` from axum (on hyper) on a tokio runtime of `--workers` threads (one, for
//! `web-bench compare`): the async framework a Rust team would pick, beside which `web`'s
//! async path (`hello --async`) is measured.

use axum::Router;
use axum::http::header;
use axum::routing::get;
use axum::serve::ListenerExt;

fn main() {
    let args = web_bench_peers::args("axum_hello");
    let runtime = if args.workers == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(args.workers);
        b
    }
    .enable_all()
    .build()
    .expect("runtime");
    runtime.block_on(async move {
        let app = Router::new().fallback(get(|| async {
            ([(header::CONTENT_TYPE, "text/plain")], web_bench_peers::BODY)
        }));
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .expect("bind")
            // As every peer: replies are not held back by Nagle's algorithm.
            .tap_io(|tcp| drop(tcp.set_nodelay(true)));
        axum::serve(listener, app).await.expect("serve");
    });
}
