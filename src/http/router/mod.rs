//! [`Router`]: routes with path parameters and a tail (`/topics/:name`, `/files/*path`), a
//! handler per method, `404`, `405` with `Allow`, `HEAD` answered by `GET`'s handler. The
//! patterns are in `pattern.rs`, the tree that matches them in `tree.rs`, the pattern matched
//! kept for the access log in `matched.rs`.
//!
//! A routed request allocates nothing: the match captures positions on the stack, and the
//! route's pattern and parameter names are copied into the request's own (pooled) buffer.

pub(crate) mod matched;
mod pattern;
mod tree;

use std::sync::Arc;

use super::message::{Request, Response, text_response, with_header};
use super::query::path_of;

pub use pattern::BadPattern;
pub(crate) use pattern::Seg;
use tree::{Captures, Node};

type Handler = Box<dyn Fn(Request) -> Response + Send + Sync>;

/// Routes requests to handlers by method and path pattern.
///
/// - A pattern is literal segments, `:name` parameters (one non-empty segment) and, last, a
///   `*name` tail (the rest of the path, possibly empty): `/topics/:name/posts/:id`,
///   `/files/*path`. A handler reads them with [`Request::path_param`]; the query string is
///   not part of the match.
/// - A literal segment wins over a parameter, a parameter over a tail, whatever the order the
///   routes were given in; `/a` and `/a/` are different paths.
/// - A path no route matches gets `404` (or the [`fallback`](Router::fallback)); a path
///   matched with a method it has no handler for gets `405` with `Allow` listing those it
///   has. `HEAD` is answered by the `GET` handler when it has none of its own (the server
///   sends the head alone).
/// - Matching costs one binary search per path segment, whatever the number of routes, and
///   allocates nothing.
///
/// It is a handler like any other: [`handler`](Router::handler) gives the function to serve or
/// to [`wrap`](crate::http::wrap) in middleware.
///
/// ```
/// use web::http::{text_response, Request, Router};
/// let app = Router::new()
///     .get("/", |_req| text_response(200, "home"))
///     .get("/topics/:name", |req| text_response(200, format!("topic {}", req.path_param("name"))))
///     .post("/topics/:name", |_req| text_response(201, "posted"))
///     .get("/files/*path", |req| text_response(200, req.path_param("path").to_owned()))
///     .handler();
/// let ask = |method: &str, path: &str| app(Request::new(method, path, vec![], ""));
/// assert_eq!(ask("GET", "/topics/rust").body, b"topic rust");
/// assert_eq!(ask("POST", "/topics/rust").status, 201);
/// assert_eq!(ask("GET", "/files/a/b.txt").body, b"a/b.txt");
/// assert_eq!(ask("GET", "/nowhere").status, 404);
/// let refused = ask("DELETE", "/topics/rust");
/// assert_eq!((refused.status, refused.header("allow")), (405, "GET, HEAD, POST"));
/// ```
pub struct Router {
    tree: Node,
    routes: Vec<Route>,
    fallback: Option<Handler>,
    /// The `405` answer, before its `Allow`.
    not_allowed: Response,
}

/// One route: its pattern, its parameters' names in order, and its handlers.
struct Route {
    pattern: Box<str>,
    names: Box<[Box<str>]>,
    methods: Vec<(Box<str>, Handler)>,
    any: Option<Handler>,
    /// The `Allow` header's value (for a 405).
    allow: String,
}

impl Default for Router {
    fn default() -> Router {
        Router::new()
    }
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let patterns: Vec<&str> = self.routes.iter().map(|r| &*r.pattern).collect();
        f.debug_struct("Router").field("routes", &patterns).finish()
    }
}

impl Router {
    /// No routes: every request gets `404`.
    ///
    /// ```
    /// let app = web::http::Router::new().handler();
    /// assert_eq!(app(web::http::Request::new("GET", "/", vec![], "")).status, 404);
    /// ```
    pub fn new() -> Router {
        Router {
            tree: Node::default(),
            routes: Vec::new(),
            fallback: None,
            not_allowed: text_response(405, "Method Not Allowed\n"),
        }
    }

    /// Routes `method` requests matching `pattern` to `handler`.
    ///
    /// # Panics
    ///
    /// On a pattern that is not one ([`BadPattern`]), or a method given twice for one route:
    /// mistakes of the program, found when it starts. [`try_route`](Router::try_route)
    /// returns them instead.
    ///
    /// ```
    /// use web::http::{text_response, Router};
    /// let app = Router::new().route("PURGE", "/cache/*key", |_req| text_response(204, "")).handler();
    /// # let _ = app;
    /// ```
    pub fn route(
        mut self,
        method: &str,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        if let Err(e) = self.try_route(Some(method), pattern, Box::new(handler)) {
            panic!("{e}");
        }
        self
    }

    /// [`route`](Router::route) for `GET` (which answers `HEAD` too).
    pub fn get(
        self,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        self.route("GET", pattern, handler)
    }

    /// [`route`](Router::route) for `POST`.
    pub fn post(
        self,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        self.route("POST", pattern, handler)
    }

    /// [`route`](Router::route) for `PUT`.
    pub fn put(
        self,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        self.route("PUT", pattern, handler)
    }

    /// [`route`](Router::route) for `PATCH`.
    pub fn patch(
        self,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        self.route("PATCH", pattern, handler)
    }

    /// [`route`](Router::route) for `DELETE`.
    pub fn delete(
        self,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        self.route("DELETE", pattern, handler)
    }

    /// Routes requests matching `pattern` of every method the route has no handler of its
    /// own for to `handler` (no `405` on that route).
    ///
    /// ```
    /// use web::http::{text_response, Request, Router};
    /// let app = Router::new().any("/echo", |req| text_response(200, req.method().to_owned())).handler();
    /// assert_eq!(app(Request::new("OPTIONS", "/echo", vec![], "")).body, b"OPTIONS");
    /// ```
    pub fn any(
        mut self,
        pattern: &str,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        if let Err(e) = self.try_route(None, pattern, Box::new(handler)) {
            panic!("{e}");
        }
        self
    }

    /// What answers a path no route matches (default: `404`, `text/plain`).
    ///
    /// ```
    /// use web::http::{json_response, Request, Router};
    /// let app = Router::new().fallback(|_req| json_response(404, r#"{"error":"not found"}"#)).handler();
    /// assert_eq!(app(Request::new("GET", "/x", vec![], "")).content_type, "application/json");
    /// ```
    pub fn fallback(
        mut self,
        handler: impl Fn(Request) -> Response + Send + Sync + 'static,
    ) -> Router {
        self.fallback = Some(Box::new(handler));
        self
    }

    /// The answer to a method a route has no handler for (default: `405`, `text/plain`). The
    /// status is always 405 and the `Allow` header listing the route's methods is always
    /// added; the content type, the body and any other header are yours — a JSON API answers
    /// JSON.
    ///
    /// ```
    /// use web::http::{json_response, text_response, Request, Router};
    /// let app = Router::new()
    ///     .get("/notes", |_req| text_response(200, "[]"))
    ///     .method_not_allowed(json_response(405, r#"{"error":"method not allowed"}"#))
    ///     .handler();
    /// let refused = app(Request::new("PUT", "/notes", vec![], ""));
    /// assert_eq!((refused.status, refused.content_type.as_ref()), (405, "application/json"));
    /// assert_eq!(refused.header("allow"), "GET, HEAD");
    /// ```
    pub fn method_not_allowed(mut self, response: Response) -> Router {
        let mut response = response;
        response.status = 405;
        response
            .headers
            .retain(|h| !h.name.eq_ignore_ascii_case("allow"));
        self.not_allowed = response;
        self
    }

    /// [`route`](Router::route) (`method` `None`: [`any`](Router::any)), with a mistake in the
    /// pattern or a method given twice returned, not a panic; the router is left as it was.
    ///
    /// ```
    /// use web::http::{text_response, Router};
    /// let mut router = Router::new();
    /// assert!(router.try_route(Some("GET"), "/a/:", Box::new(|_req| text_response(200, ""))).is_err());
    /// assert!(router.try_route(Some("GET"), "/a/:id", Box::new(|_req| text_response(200, ""))).is_ok());
    /// ```
    pub fn try_route(
        &mut self,
        method: Option<&str>,
        pattern: &str,
        handler: Box<dyn Fn(Request) -> Response + Send + Sync>,
    ) -> Result<(), BadPattern> {
        let segs = pattern::parse(pattern)?;
        let names = names_of(&segs);
        let index = match self.tree.insert(&segs, self.routes.len()) {
            Ok(()) => {
                self.routes.push(Route {
                    pattern: pattern.into(),
                    names,
                    methods: Vec::new(),
                    any: None,
                    allow: String::new(),
                });
                self.routes.len() - 1
            }
            Err(have) => {
                if self.routes[have].names != names {
                    return Err(BadPattern::new(
                        pattern,
                        "another route has this shape with other parameter names",
                    ));
                }
                have
            }
        };
        let route = &mut self.routes[index];
        match method {
            Some(method) if route.methods.iter().any(|(m, _)| &**m == method) => {
                return Err(BadPattern::new(pattern, "this method is routed twice"));
            }
            Some(method) => route.methods.push((method.into(), handler)),
            None if route.any.is_some() => {
                return Err(BadPattern::new(pattern, "`any` is routed twice"));
            }
            None => route.any = Some(handler),
        }
        route.allow = allow(&route.methods);
        Ok(())
    }

    /// Answers `req`: the handler of its route and method, `405`, or the fallback.
    ///
    /// ```
    /// use web::http::{text_response, Request, Router};
    /// let router = Router::new().get("/", |_req| text_response(200, "home"));
    /// assert_eq!(router.answer(Request::new("HEAD", "/", vec![], "")).status, 200);
    /// ```
    pub fn answer(&self, mut req: Request) -> Response {
        let found = self.at(path_of(req.path())).map(|m| (m.route, m.caps));
        let Some((route, caps)) = found else {
            return match &self.fallback {
                Some(fallback) => fallback(req),
                None => text_response(404, "Not Found\n"),
            };
        };
        req.set_route(&route.pattern, captured(&route.names, &caps));
        matched::matched(&route.pattern);
        match route.handler(req.method()) {
            Some(handler) => handler(req),
            None => with_header(self.not_allowed.clone(), "Allow", &route.allow),
        }
    }

    /// The route `path` (without its query) matches, whatever the method: its pattern and
    /// parameters — what [`answer`](Router::answer) would route by. Allocates nothing.
    ///
    /// ```
    /// use web::http::{text_response, Router};
    /// let router = Router::new().get("/topics/:name", |_req| text_response(200, ""));
    /// let found = router.at("/topics/rust").unwrap();
    /// assert_eq!((found.pattern(), found.param("name")), ("/topics/:name", "rust"));
    /// assert!(router.at("/topics").is_none());
    /// ```
    pub fn at<'r, 'p>(&'r self, path: &'p str) -> Option<Matched<'r, 'p>> {
        let mut caps = Captures::default();
        let route = pattern::path_segments(path)
            .and_then(|rest| self.tree.find(rest, 1, &mut caps))
            .and_then(|i| self.routes.get(i))?;
        Some(Matched { route, path, caps })
    }

    /// The router as the server's handler (or the innermost of [`wrap`](crate::http::wrap)).
    ///
    /// ```no_run
    /// use web::http::{text_response, wrap, Router, Server};
    /// let router = Router::new().get("/hello/:name", |req| {
    ///     text_response(200, format!("Hello, {}!", req.path_param("name")))
    /// });
    /// Server::bind("127.0.0.1:8080")?.run(wrap(vec![], router.handler()))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn handler(self) -> impl Fn(Request) -> Response + Send + Sync + 'static {
        let router = Arc::new(self);
        move |req| router.answer(req)
    }
}

/// What [`Router::at`] found: the route's pattern and the parameters' values in the path.
#[derive(Clone, Copy)]
pub struct Matched<'r, 'p> {
    route: &'r Route,
    path: &'p str,
    caps: Captures,
}

impl<'r, 'p> Matched<'r, 'p> {
    /// The route's pattern.
    pub fn pattern(&self) -> &'r str {
        &self.route.pattern
    }

    /// The value of parameter `name` (`""` if the route has none of that name).
    pub fn param(&self, name: &str) -> &'p str {
        self.params()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v)
    }

    /// Every parameter's name and value, in the pattern's order.
    pub fn params(&self) -> impl Iterator<Item = (&'r str, &'p str)> + '_ {
        let path = self.path;
        self.route
            .names
            .iter()
            .zip(self.caps.iter())
            .map(move |(name, (at, len))| (&**name, path.get(at..at + len).unwrap_or_default()))
    }
}

impl std::fmt::Debug for Matched<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let params: Vec<_> = self.params().collect();
        f.debug_struct("Matched")
            .field("pattern", &self.pattern())
            .field("params", &params)
            .finish()
    }
}

/// One pattern on its own: a WebSocket or event-stream route's.
pub(crate) struct Pattern {
    tree: Node,
    pattern: Box<str>,
    names: Box<[Box<str>]>,
}

impl Pattern {
    pub(crate) fn new(pattern: &str) -> Result<Pattern, BadPattern> {
        let segs = pattern::parse(pattern)?;
        let mut tree = Node::default();
        // One route in an empty tree: never refused.
        let _ = tree.insert(&segs, 0);
        Ok(Pattern {
            tree,
            pattern: pattern.into(),
            names: names_of(&segs),
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `req`'s path matches; if it does, `req` carries the route and its parameters.
    pub(crate) fn route(&self, req: &mut Request) -> bool {
        let mut caps = Captures::default();
        let matched = pattern::path_segments(path_of(req.path()))
            .and_then(|rest| self.tree.find(rest, 1, &mut caps))
            .is_some();
        if matched {
            req.set_route(&self.pattern, captured(&self.names, &caps));
        }
        matched
    }
}

/// Each parameter's name with where a match found its value (start and length in the path).
fn captured<'a>(
    names: &'a [Box<str>],
    caps: &'a Captures,
) -> impl Iterator<Item = (&'a str, usize, usize)> + 'a {
    names
        .iter()
        .zip(caps.iter())
        .map(|(name, (at, len))| (&**name, at, len))
}

/// The names of a pattern's parameters, in order.
fn names_of(segs: &[Seg]) -> Box<[Box<str>]> {
    segs.iter()
        .filter_map(|s| match s {
            Seg::Param(n) | Seg::Tail(n) => Some(n.clone()),
            Seg::Literal(_) => None,
        })
        .collect()
}

impl Route {
    /// The handler for `method`: its own, `GET`'s for `HEAD`, or the route's `any`.
    fn handler(&self, method: &str) -> Option<&Handler> {
        let own = |m: &str| self.methods.iter().find(|(have, _)| &**have == m);
        own(method)
            .or_else(|| own("GET").filter(|_| method == "HEAD"))
            .map(|(_, h)| h)
            .or(self.any.as_ref())
    }
}

/// The `Allow` value for a route of these methods: `HEAD` with `GET`, in a fixed order.
fn allow(methods: &[(Box<str>, Handler)]) -> String {
    let mut names: Vec<&str> = methods.iter().map(|(m, _)| &**m).collect();
    if names.contains(&"GET") && !names.contains(&"HEAD") {
        names.push("HEAD");
    }
    names.sort_unstable();
    names.join(", ")
}

impl BadPattern {
    fn new(pattern: &str, reason: &'static str) -> BadPattern {
        pattern::bad(pattern, reason)
    }
}
