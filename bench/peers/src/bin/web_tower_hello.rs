//! `Hello, World!` from the same axum `Router` as `axum_hello`, served by `web`
//! (`web::tower::handler`) with `--workers` workers: what a team's axum code costs on `web`'s
//! reactor beside `axum::serve`. The router answers from memory, so its future is ready on
//! the worker; the tokio runtime (one thread) is there for what would wait, and idles.

use axum::Router;
use axum::http::header;
use axum::routing::get;

fn main() {
    let args = web_bench_peers::args("web_tower_hello");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let app = Router::new().fallback(get(|| async {
        ([(header::CONTENT_TYPE, "text/plain")], web_bench_peers::BODY)
    }));
    let app = web::tower::handler(runtime.handle(), app.with_state(()));
    web::http::Server::bind(args.addr())
        .expect("bind")
        .workers(args.workers)
        .run(move |req| app.call(req))
        .expect("serve");
}
