//! may_minihttp on the `may` coroutine runtime; W = may worker threads.
use std::io;

use may_minihttp::{HttpServer, HttpService, Request, Response};

#[derive(Clone)]
struct Hello;

impl HttpService for Hello {
    fn call(&mut self, _req: Request, rsp: &mut Response) -> io::Result<()> {
        rsp.header("Content-Type: text/plain").body(web_bench_peers::BODY);
        Ok(())
    }
}

fn main() {
    let a = web_bench_peers::args("may_hello");
    // Same settings as may_minihttp's own techempower example, worker count from --workers.
    may::config().set_workers(a.workers).set_pool_capacity(500).set_stack_size(0x1000);
    eprintln!("may_hello listening on {} with {} worker(s)", a.addr(), a.workers);
    let server = HttpServer(Hello).start(a.addr()).expect("bind");
    server.join().unwrap();
}
