//! Middleware: [`wrap`] a handler in layers, each of which sees the request on its way in and the
//! response on its way out.

use super::message::{Request, Response};

/// What a layer calls to pass the request on: the rest of the layers, then the handler.
///
/// A layer written as a function names it in its signature:
///
/// ```
/// use web::http::{layer, with_header, Layer, Next, Request, Response};
/// fn stamp(req: Request, next: Next) -> Response {
///     with_header(next(req), "X-Served-By", "web")
/// }
/// let stamped: Layer = layer(stamp);
/// # let _ = stamped;
/// ```
pub type Next<'a> = &'a dyn Fn(Request) -> Response;

/// One layer of middleware: the specification's `middleware`, `(Request, next) -> Response`.
///
/// A layer may answer without calling `next` (the handler beneath is then not called), may change
/// the request it passes to `next`, and may inspect or change the response `next` returns. It runs
/// on every worker thread at once, so what it captures must be `Send + Sync` (atomics, `Mutex`).
///
/// Build one from a closure or a function with [`layer`];
/// [`rate_limits`](crate::http::rate_limits) and [`rate_limit`](crate::http::rate_limit) return
/// one. A list of layers is a `Vec<Layer>`, given to [`wrap`].
///
/// ```
/// use web::http::{layer, rate_limits, text_response, wrap, Layer};
/// let layers: Vec<Layer> = vec![
///     rate_limits(10, 100, 1),
///     layer(|req, next| if req.path().starts_with("/admin") { text_response(403, "") } else { next(req) }),
/// ];
/// let app = wrap(layers, |_req| text_response(200, "hi"));
/// # let _ = app;
/// ```
pub type Layer = Box<dyn Fn(Request, Next<'_>) -> Response + Send + Sync + 'static>;

/// A [`Layer`] from a closure or function `(Request, Next) -> Response`.
///
/// Taking the closure through this function lets Rust infer the types of its two arguments.
///
/// ```
/// use web::http::{layer, text_response, wrap, Request};
/// // Passes the request down with its path lower-cased.
/// let lower = layer(|mut req, next| {
///     let path = req.path().to_ascii_lowercase();
///     req.set_path(&path);
///     next(req)
/// });
/// let app = wrap(vec![lower], |req| text_response(200, req.path().to_owned()));
/// assert_eq!(app(Request::new("GET", "/A/B", vec![], "")).body, b"/a/b");
/// ```
pub fn layer(f: impl Fn(Request, Next<'_>) -> Response + Send + Sync + 'static) -> Layer {
    Box::new(f)
}

/// The specification's `wrap(layers, handler)`: `handler` inside `layers`, as an ordinary handler
/// usable with every serving function ([`Server::run`](crate::http::Server::run),
/// [`serve`](crate::http::serve), [`handle_conn`](crate::http::handle_conn), ...) and with
/// `wrap` itself.
///
/// The first layer is outermost: it sees the request first and the response last. With no
/// layers, the result answers exactly as `handler` does.
///
/// An authentication layer that answers 401 itself, without calling the handler, unless the
/// request carries a valid `session` cookie:
///
/// ```
/// use web::http::{cookie, layer, text_response, wrap, Header, Request};
///
/// let auth = layer(|req, next| {
///     if cookie(&req, "session") == "s3cret" {
///         next(req)
///     } else {
///         text_response(401, "log in first\n")
///     }
/// });
/// let app = wrap(vec![auth], |_req| text_response(200, "your notes\n"));
///
/// let anonymous = Request::new("GET", "/notes", vec![], "");
/// assert_eq!(app(anonymous).status, 401);
/// let signed_in = Request::new("GET", "/notes", vec![Header::new("cookie", "session=s3cret")], "");
/// assert_eq!(app(signed_in).status, 200);
/// ```
///
/// Serving it, with a rate limiter outside the authentication (so that failed logins are limited
/// too):
///
/// ```no_run
/// use web::http::{layer, rate_limits, text_response, wrap, Server};
/// let auth = layer(|req, next| next(req)); // as above
/// let app = wrap(vec![rate_limits(5, 100, 1), auth], |_req| text_response(200, "hi\n"));
/// Server::bind("127.0.0.1:8080")?.run(app)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn wrap(
    layers: Vec<Layer>,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) -> impl Fn(Request) -> Response + Send + Sync + 'static {
    move |req| through(&layers, &handler, req)
}

/// `req` through `layers` (outermost first) down to `handler`.
fn through(layers: &[Layer], handler: &dyn Fn(Request) -> Response, req: Request) -> Response {
    match layers.split_first() {
        None => handler(req),
        Some((outer, inner)) => outer(req, &|req| through(inner, handler, req)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::http::header;
    use crate::http::message::{text_response, with_header};

    /// A layer that writes `name` to `log` on the way in and on the way out.
    fn tracing(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Layer {
        let log = Arc::clone(log);
        layer(move |req, next| {
            log.lock().unwrap().push(format!("{name} in"));
            let res = next(req);
            log.lock().unwrap().push(format!("{name} out"));
            res
        })
    }

    #[test]
    fn first_layer_sees_the_request_first_and_the_response_last() {
        let cases: [(&[&str], &[&str]); 3] = [
            (&[], &["handler"]),
            (&["a"], &["a in", "handler", "a out"]),
            (
                &["a", "b", "c"],
                &["a in", "b in", "c in", "handler", "c out", "b out", "a out"],
            ),
        ];
        for (names, want) in cases {
            let log = Arc::new(Mutex::new(Vec::new()));
            let layers = names.iter().map(|n| tracing(n, &log)).collect();
            let handler_log = Arc::clone(&log);
            let app = wrap(layers, move |_req| {
                handler_log.lock().unwrap().push("handler".into());
                text_response(200, "")
            });
            assert_eq!(app(Request::default()).status, 200);
            assert_eq!(*log.lock().unwrap(), want, "{names:?}");
        }
    }

    #[test]
    fn a_layer_may_answer_without_calling_what_is_beneath() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let inner_calls = Arc::new(AtomicUsize::new(0));
        let inner_seen = Arc::clone(&inner_calls);
        let app = wrap(
            vec![
                layer(|req, next| {
                    if req.path() == "/closed" {
                        text_response(503, "closed")
                    } else {
                        next(req)
                    }
                }),
                layer(move |req, next| {
                    inner_seen.fetch_add(1, Ordering::SeqCst);
                    next(req)
                }),
            ],
            move |_req| {
                seen.fetch_add(1, Ordering::SeqCst);
                text_response(200, "open")
            },
        );
        let cases = [("/closed", 503, 0), ("/open", 200, 1), ("/closed", 503, 1)];
        for (path, status, handler_calls) in cases {
            assert_eq!(app(Request::new("GET", path, vec![], "")).status, status);
            assert_eq!(calls.load(Ordering::SeqCst), handler_calls, "{path}");
            assert_eq!(inner_calls.load(Ordering::SeqCst), handler_calls, "{path}");
        }
    }

    #[test]
    fn layers_change_the_request_going_down_and_the_response_coming_back() {
        let app = wrap(
            vec![
                layer(|req, next| with_header(next(req), "X-Outer", "1")),
                layer(|mut req, next| {
                    req.append_header("x-user", "ada");
                    let mut res = next(req);
                    res.status = 201;
                    res
                }),
            ],
            |req| text_response(200, header(&req, "x-user").to_owned()),
        );
        let res = app(Request::new("POST", "/", vec![], ""));
        assert_eq!((res.status, res.body.as_slice()), (201, &b"ada"[..]));
        assert_eq!(header_of(&res, "x-outer"), "1");
    }

    #[test]
    fn a_wrapped_handler_can_be_wrapped_again() {
        let inner = wrap(
            vec![layer(|req, next| with_header(next(req), "X-Inner", "1"))],
            |_req| text_response(200, ""),
        );
        let outer = wrap(
            vec![layer(|req, next| with_header(next(req), "X-Outer", "1"))],
            inner,
        );
        let res = outer(Request::default());
        let names: Vec<&str> = res.headers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["X-Inner", "X-Outer"]);
    }

    fn header_of<'a>(res: &'a Response, name: &str) -> &'a str {
        crate::http::header_in(&res.headers, name)
    }
}
