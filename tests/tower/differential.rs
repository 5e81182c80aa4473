//! The same router served by `axum::serve` and by `web`, asked the same corpus in the same
//! order: every answer's status, the header lines that carry meaning and the body must agree.

use super::{ask, on_axum, on_web, router, runtime};

/// Header lines compared (the rest — `date`, framing — are each server's own).
const MEANINGFUL: &[&str] = &[
    "content-type",
    "content-encoding",
    "vary",
    "allow",
    "access-control-allow-origin",
    "access-control-allow-methods",
];

/// One request: method, target, header lines, body.
type Asked = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// What is asked, in order (the POSTs change the state later requests read).
const CORPUS: &[Asked] = &[
    ("GET", "/orders", &[], ""),
    (
        "POST",
        "/orders",
        &[("content-type", "application/json")],
        r#"{"id":1,"item":"green tea"}"#,
    ),
    (
        "POST",
        "/orders",
        &[("content-type", "application/json")],
        r#"{"id":2,"item":"black tea"}"#,
    ),
    (
        "POST",
        "/orders",
        &[("content-type", "application/json")],
        r#"{"id":3,"item":"coffee"}"#,
    ),
    // Bad JSON, a wrong type, no content type.
    (
        "POST",
        "/orders",
        &[("content-type", "application/json")],
        r#"{"id":4,"#,
    ),
    (
        "POST",
        "/orders",
        &[("content-type", "application/json")],
        r#"{"id":"four","item":"x"}"#,
    ),
    ("POST", "/orders", &[], r#"{"id":5,"item":"x"}"#),
    ("GET", "/orders", &[], ""),
    ("GET", "/orders/2", &[], ""),
    ("GET", "/orders/9", &[], ""),
    ("GET", "/orders/two", &[], ""),
    ("GET", "/search?q=tea&limit=1", &[], ""),
    ("GET", "/search?q=tea", &[], ""),
    ("GET", "/search?limit=1", &[], ""),
    ("GET", "/search?q=tea&limit=x", &[], ""),
    // Wrong methods.
    ("DELETE", "/orders", &[], ""),
    ("PUT", "/orders/1", &[], ""),
    // CORS: a preflight, and a simple request from another origin.
    (
        "OPTIONS",
        "/orders",
        &[
            ("origin", "https://shop.example"),
            ("access-control-request-method", "POST"),
        ],
        "",
    ),
    ("GET", "/orders", &[("origin", "https://shop.example")], ""),
    // Compression asked for, and not.
    ("GET", "/big", &[("accept-encoding", "gzip")], ""),
    ("GET", "/big", &[], ""),
    // Waiting on tokio: in time, past the timeout, a body in pieces.
    ("GET", "/wait", &[], ""),
    ("GET", "/slow", &[], ""),
    ("GET", "/stream", &[], ""),
    ("HEAD", "/orders", &[], ""),
    ("GET", "/nowhere", &[], ""),
];

#[test]
fn axum_and_web_give_the_same_answers_to_the_same_requests() {
    let runtime = runtime();
    let axum = on_axum(&runtime, router());
    let (web, web_url) = on_web(&runtime, router());
    let mut differences = Vec::new();
    for (method, target, headers, body) in CORPUS {
        let expected = ask(method, &format!("http://{axum}{target}"), headers, body);
        let got = ask(method, &format!("{web_url}{target}"), headers, body);
        let asked = format!("{method} {target} {headers:?}");
        if expected.status() != got.status() {
            differences.push(format!(
                "{asked}: status {} (axum) / {} (web)",
                expected.status(),
                got.status()
            ));
        }
        for name in MEANINGFUL {
            if expected.header(name) != got.header(name) {
                differences.push(format!(
                    "{asked}: {name} {:?} (axum) / {:?} (web)",
                    expected.header(name),
                    got.header(name)
                ));
            }
        }
        if expected.body() != got.body() {
            differences.push(format!(
                "{asked}: body {:?} (axum) / {:?} (web)",
                String::from_utf8_lossy(expected.body()),
                String::from_utf8_lossy(got.body())
            ));
        }
    }
    web.shutdown().expect("web stops");
    assert!(
        differences.is_empty(),
        "answers differ:\n{}",
        differences.join("\n")
    );
}
