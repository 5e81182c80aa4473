//! actix-web 4 with W workers (each worker is a single-threaded actix runtime).
//! Keep-alive timeout raised to 300 s (default 5 s) so idle-connection tests hold.
use std::time::Duration;

use actix_web::http::KeepAlive;
use actix_web::{web, App, HttpResponse, HttpServer};

async fn hello() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body(web_bench_peers::BODY)
}

fn main() -> std::io::Result<()> {
    let a = web_bench_peers::args("actix_hello");
    eprintln!("actix_hello listening on {} with {} worker(s)", a.addr(), a.workers);
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(|| App::new().default_service(web::to(hello)))
            .workers(a.workers)
            .keep_alive(KeepAlive::Timeout(Duration::from_secs(300)))
            .max_connections(1_000_000)
            .backlog(4096)
            .bind(a.addr())?
            .run()
            .await
    })
}
