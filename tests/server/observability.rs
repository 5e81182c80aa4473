//! What a server tells about itself: handlers that stall their worker (counted, reported once
//! per method and path), replies by status class whatever way they were answered, the
//! Prometheus text, and the library's events through `tracing`.

use crate::wire;

use std::time::Duration;

use web::http::{Server, defer, text_response};
use wire::Client;

/// A one-worker server: `/slow…` holds its worker 300 ms, `/later` defers and answers 503 from
/// a thread, `/metrics` is the text format, everything else is answered at once (404 for
/// `/missing`).
fn start(threshold: Duration) -> web::http::ServerHandle {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .stall_threshold(threshold);
    let control = server.control();
    server
        .spawn(move |req| match web::http::path_of(req.path()) {
            p if p.starts_with("/slow") => {
                std::thread::sleep(Duration::from_millis(300));
                text_response(200, "slow")
            }
            "/later" => {
                let (reply, later) = defer();
                std::thread::spawn(move || reply.send(text_response(503, "busy")));
                later
            }
            "/metrics" => control.metrics_response(),
            "/missing" => text_response(404, "no"),
            _ => text_response(200, "fast"),
        })
        .unwrap()
}

#[test]
fn a_handler_that_holds_its_worker_is_counted_with_its_longest_stall_and_quick_ones_are_not() {
    let server = start(Duration::from_millis(250));
    let mut c = Client::connect(server.local_addr());
    for _ in 0..20 {
        assert_eq!(c.get("/fast").text(), "fast");
    }
    assert_eq!(server.stats().stalls, 0);
    assert_eq!(c.get("/slow").text(), "slow");
    assert_eq!(c.get("/slow").text(), "slow");
    let stats = server.stats();
    assert_eq!(stats.stalls, 2);
    assert!(
        stats.longest_stall >= Duration::from_millis(300)
            && stats.longest_stall < Duration::from_secs(30),
        "{:?}",
        stats.longest_stall
    );
    server.shutdown().unwrap();
}

/// A WebSocket application whose `message` holds the worker 300 ms for "slow".
struct SlowEcho;

impl web::ws::WsHandler for SlowEcho {
    type State = ();
    fn accept(&self, _req: &web::http::Request) -> Result<(), web::http::Response> {
        Ok(())
    }
    fn message(&self, ws: &mut web::ws::Ws<'_>, _state: &mut (), msg: web::ws::Message) {
        if msg == web::ws::Message::Text("slow".into()) {
            std::thread::sleep(Duration::from_millis(300));
        }
        ws.send(&msg);
    }
}

#[test]
fn a_websocket_callback_that_holds_its_worker_is_counted_as_a_handler_is() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .stall_threshold(Duration::from_millis(250))
        .websocket("/ws", SlowEcho)
        .spawn(|_req| text_response(404, ""))
        .unwrap();
    let mut ws = wire::ws::Client::connect_to(server.local_addr().port(), "/ws");
    for text in ["quick", "quick", "slow", "quick"] {
        ws.send(&web::ws::client_frame(text));
        assert_eq!(ws.frame().1, text.as_bytes());
    }
    let stats = server.stats();
    assert_eq!(stats.stalls, 1, "{stats:?}");
    assert!(stats.longest_stall >= Duration::from_millis(300));
    server.shutdown().unwrap();
}

#[test]
fn replies_are_counted_by_status_class_deferred_and_refused_ones_included() {
    let server = start(Duration::from_secs(60));
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/").status, 200);
    assert_eq!(c.get("/missing").status, 404);
    assert_eq!(c.get("/later").status, 503);
    let mut bad = Client::connect(server.local_addr());
    bad.send("GET / HTTP/1.1\r\n\r\n"); // no Host: 400, then the connection closes
    assert_eq!(bad.reply().status, 400);
    let stats = server.stats();
    assert_eq!(stats.responses, [0, 1, 0, 2, 1], "{stats:?}");
    assert_eq!(stats.requests, 3);
    server.shutdown().unwrap();
}

#[test]
fn the_metrics_text_has_help_type_and_samples_per_worker_and_class() {
    let server = start(Duration::from_secs(60));
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/missing").status, 404);
    let r = c.get("/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = r.text();
    for line in [
        "# TYPE web_responses_total counter",
        "web_responses_total{class=\"4xx\"} 1",
        "web_open_connections{worker=\"0\"} 1",
        "web_requests_total{worker=\"0\"} 1", // the 404 (this reply is rendered after the read)
        "# TYPE web_stalls_total counter",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
    server.shutdown().unwrap();
}

/// The library's events, as a `tracing` subscriber of this test binary hears them.
#[cfg(feature = "tracing")]
mod events {
    use super::*;
    use std::sync::{Arc, Mutex, OnceLock};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    /// Every event's level, target and fields, as text (bounded: a test binary's worth).
    struct Recorder(Mutex<Vec<String>>);

    impl Subscriber for Recorder {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            struct Text(String);
            impl Visit for Text {
                fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                    self.0 += &format!(" {}={:?}", field.name(), value);
                }
            }
            let meta = event.metadata();
            let mut text = Text(format!("{} {}", meta.level(), meta.target()));
            event.record(&mut text);
            let mut all = self.0.lock().unwrap();
            if all.len() < 10_000 {
                all.push(text.0);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    fn recorder() -> &'static Arc<Recorder> {
        static RECORDER: OnceLock<Arc<Recorder>> = OnceLock::new();
        RECORDER.get_or_init(|| {
            let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
            tracing::subscriber::set_global_default(Arc::clone(&recorder))
                .expect("the only subscriber of this binary");
            recorder
        })
    }

    fn heard(what: &str) -> Vec<String> {
        let all = recorder().0.lock().unwrap();
        all.iter().filter(|e| e.contains(what)).cloned().collect()
    }

    #[test]
    fn a_stall_is_reported_once_per_method_and_path_with_both() {
        recorder();
        let server = start(Duration::from_millis(250));
        let mut c = Client::connect(server.local_addr());
        for _ in 0..2 {
            assert_eq!(c.get("/slow/heard?n=1").text(), "slow");
        }
        // (Other tests' servers stall on other paths: each path is said once per server.)
        let said = heard("request=GET /slow/heard");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("WARN web") && said[0].contains("took_ms="),
            "{said:?}"
        );
        assert_eq!(server.stats().stalls, 2);
        server.shutdown().unwrap();
    }

    #[test]
    fn a_malformed_request_is_reported_with_its_status_and_peer() {
        recorder();
        let server = start(Duration::from_secs(60));
        let mut bad = Client::connect(server.local_addr());
        let me = bad.stream.local_addr().unwrap();
        bad.send("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
        assert_eq!(bad.reply().status, 400);
        let said = heard(&format!("peer={me}"));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("INFO web") && said[0].contains("status=400"),
            "{said:?}"
        );
        server.shutdown().unwrap();
    }
}
