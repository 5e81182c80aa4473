//! serde at the edge over a real server (`--features json`): a JSON body and a query into
//! types, each refusal with its status (400, 415, and the server's own 413), a type answered.

use serde::{Deserialize, Serialize};

use crate::wire::Client;

use web::http::{Request, Response, Router, Server};

#[derive(Deserialize)]
struct NewNote {
    text: String,
    tags: Vec<String>,
}

#[derive(Deserialize)]
struct Page {
    after: u64,
    limit: Option<u32>,
}

#[derive(Serialize)]
struct Made<'a> {
    id: u64,
    text: &'a str,
    tags: usize,
}

fn notes() -> Router {
    Router::new()
        .post("/notes", |req: Request| match req.json::<NewNote>() {
            Ok(note) => Response::json(
                201,
                &Made {
                    id: 7,
                    text: &note.text,
                    tags: note.tags.len(),
                },
            ),
            Err(refusal) => refusal,
        })
        .get("/notes", |req: Request| match req.query::<Page>() {
            Ok(page) => Response::json(200, &(page.after, page.limit)),
            Err(refusal) => refusal,
        })
}

fn post(c: &mut Client, content_type: &str, body: &str) -> (u16, String) {
    c.send(format!(
        "POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    let r = c.reply();
    (r.status, r.text())
}

#[test]
fn json_bodies_and_queries_become_types_and_every_refusal_has_its_status() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_body(64)
        .spawn(notes().handler())
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    let json = "application/json; charset=utf-8";
    assert_eq!(
        post(&mut c, json, r#"{"text":"hi","tags":["a","b"]}"#),
        (201, r#"{"id":7,"text":"hi","tags":2}"#.to_owned())
    );
    let (status, body) = post(&mut c, json, r#"{"text":"hi"}"#);
    assert_eq!(status, 400);
    assert!(body.contains("missing field `tags`"), "{body}");
    let (status, body) = post(&mut c, json, r#"{"text": 5, "tags": []}"#);
    assert_eq!(status, 400, "{body}");
    let (status, _) = post(&mut c, "text/plain", r#"{"text":"hi","tags":[]}"#);
    assert_eq!(status, 415);
    assert_eq!(c.get("/notes?after=57&limit=10").text(), "[57,10]");
    assert_eq!(c.get("/notes?after=57").text(), "[57,null]");
    let r = c.get("/notes?after=soon");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("error"), "{}", r.text());
    // A body over max_body never reaches the handler.
    let big = format!(r#"{{"text":"{}","tags":[]}}"#, "x".repeat(100));
    assert_eq!(post(&mut c, json, &big).0, 413);
    server.shutdown().unwrap();
}
