//! tiny_http: the library reads each connection on its own thread (its internal pool grows
//! a thread per connection); W threads pull requests with `incoming_requests()` and answer,
//! as tiny_http's documentation shows for multi-threaded use.
use std::sync::Arc;
use std::thread;

use tiny_http::{Header, Response, Server};

fn main() {
    let a = web_bench_peers::args("tiny_hello");
    let server = Arc::new(Server::http(a.addr()).expect("bind"));
    eprintln!("tiny_hello listening on {} with {} handler thread(s)", a.addr(), a.workers);
    let ct: Header = "Content-Type: text/plain".parse().unwrap();
    let mut handles = Vec::new();
    for _ in 0..a.workers {
        let server = server.clone();
        let ct = ct.clone();
        handles.push(thread::spawn(move || {
            for rq in server.incoming_requests() {
                let rsp = Response::from_string(web_bench_peers::BODY).with_header(ct.clone());
                let _ = rq.respond(rsp);
            }
        }));
    }
    for h in handles {
        let _ = h.join();
    }
}
