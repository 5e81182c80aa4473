//! serde at the edge (`--features json`): a request's JSON body or query into a type, with the
//! refusal a client should get ([`Request::json`], [`Request::query`]), and a type into a
//! JSON response ([`Response::json`]).

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::message::{Request, Response, json_response};

impl Request {
    /// The body, read as JSON into `T`; or the response to send instead: `415 Unsupported
    /// Media Type` when the content type is not JSON (`application/json`, or
    /// `application/*+json`, with any parameters), `400 Bad Request` naming what is wrong
    /// (the field's path, line and column) when the body is not a `T`. Both are JSON (`{"error":…}`). A body
    /// over the server's [`max_body`](crate::http::Server::max_body) never reaches the
    /// handler: the server answers `413` itself.
    ///
    /// ```
    /// use web::http::{Header, Request, Response};
    /// #[derive(serde::Deserialize)]
    /// struct Post { room: String, text: String }
    /// let json = vec![Header::new("content-type", "application/json")];
    /// let req = Request::new("POST", "/", json.clone(), r#"{"room":"a","text":"hi"}"#);
    /// let post: Post = req.json().unwrap();
    /// assert_eq!((post.room.as_str(), post.text.as_str()), ("a", "hi"));
    /// let bad = Request::new("POST", "/", json, r#"{"room":"a"}"#);
    /// assert_eq!(bad.json::<Post>().err().map(|r| r.status), Some(400));
    /// let text = Request::new("POST", "/", vec![], r#"{"room":"a","text":"hi"}"#);
    /// assert_eq!(text.json::<Post>().err().map(|r| r.status), Some(415));
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Response> {
        if !is_json(self.header("content-type")) {
            return Err(refusal(
                415,
                "the body must be JSON (Content-Type: application/json)",
            ));
        }
        let mut body = serde_json::Deserializer::from_slice(self.body());
        serde_path_to_error::deserialize(&mut body).map_err(|e| refusal(400, &e.to_string()))
    }

    /// The query string, read into `T` (fields by name, values percent-decoded and parsed as
    /// the field's type); or `400 Bad Request` naming the field and what is wrong with it, as
    /// JSON (`{"error":"after: invalid digit found in string"}`).
    ///
    /// ```
    /// #[derive(serde::Deserialize)]
    /// struct Page { room: String, after: Option<u64> }
    /// let req = web::http::Request::new("GET", "/poll?room=caf%C3%A9&after=57", vec![], "");
    /// let page: Page = req.query().unwrap();
    /// assert_eq!((page.room.as_str(), page.after), ("café", Some(57)));
    /// let bad = web::http::Request::new("GET", "/poll?after=soon", vec![], "");
    /// let refused = bad.query::<Page>().err().unwrap();
    /// assert_eq!(refused.status, 400);
    /// assert_eq!(refused.body, r#"{"error":"after: invalid digit found in string"}"#);
    /// ```
    pub fn query<T: DeserializeOwned>(&self) -> Result<T, Response> {
        let query = super::query::query_of(self.path());
        let pairs = form_urlencoded::parse(query.as_bytes());
        let fields = serde_urlencoded::Deserializer::new(pairs);
        serde_path_to_error::deserialize(fields).map_err(|e| refusal(400, &e.to_string()))
    }
}

impl Response {
    /// `value` as a JSON response with `status` (`application/json`); a value serde cannot
    /// write as JSON (a map with keys that are not strings, a failing `Serialize`) is
    /// answered `500`.
    ///
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Posted { id: u64 }
    /// let res = web::http::Response::json(201, &Posted { id: 7 });
    /// assert_eq!((res.status, res.content_type.as_ref(), &res.body[..]), (201, "application/json", &br#"{"id":7}"#[..]));
    /// ```
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Response {
        match serde_json::to_vec(value) {
            Ok(body) => json_response(status, body),
            Err(e) => refusal(500, &e.to_string()),
        }
    }
}

/// Whether a content type is JSON's: `application/json` or `application/<something>+json`,
/// parameters aside, in any case.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (sub.eq_ignore_ascii_case("json")
            || sub.len() > 5 && sub[sub.len() - 5..].eq_ignore_ascii_case("+json"))
}

/// `{"error": reason}` with `status`.
fn refusal(status: u16, reason: &str) -> Response {
    let body = serde_json::json!({ "error": reason });
    json_response(status, body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_are_told_from_others() {
        let cases = [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("application/problem+json", true),
            ("application/vnd.api+JSON ; x=y", true),
            ("text/json", false),
            ("application/jsonx", false),
            ("application/+json", false),
            ("application/x-www-form-urlencoded", false),
            ("", false),
            ("json", false),
        ];
        for (content_type, json) in cases {
            assert_eq!(is_json(content_type), json, "{content_type:?}");
        }
    }

    #[test]
    fn a_refusal_is_json_naming_the_error_escaped() {
        let res = refusal(400, "bad \"quote\" at line 1");
        assert_eq!(res.content_type, "application/json");
        assert_eq!(&res.body[..], br#"{"error":"bad \"quote\" at line 1"}"#);
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)] // read by serde only
    struct Page {
        room: String,
        limit: Option<u32>,
        inner: Option<Inner>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Inner {
        n: u8,
    }

    #[test]
    fn a_refusal_names_the_field_that_is_wrong() {
        let query = |target: &str| Request::new("GET", target, vec![], "").query::<Page>();
        let body = |json: &'static str| {
            let headers = vec![crate::http::Header::new("content-type", "application/json")];
            Request::new("POST", "/", headers, json).json::<Page>()
        };
        let cases = [
            (
                query("/?room=a&limit=soon"),
                "limit: invalid digit found in string",
            ),
            (
                query("/?room=a&limit=-1"),
                "limit: invalid digit found in string",
            ),
            (query("/?limit=5"), "missing field `room`"),
            (
                body(r#"{"room":7}"#),
                "room: invalid type: integer `7`, expected a string",
            ),
            (
                body(r#"{"room":"a","inner":{"n":300}}"#),
                "inner.n: invalid value: integer `300`",
            ),
        ];
        for (got, says) in cases {
            let refused = got.expect_err(says);
            assert_eq!(refused.status, 400);
            let text = String::from_utf8_lossy(&refused.body).into_owned();
            assert!(text.contains(says), "{text} does not say {says:?}");
        }
    }
}
