//! What a [`Router`](crate::http::Router) found in a request: the route's pattern and the path
//! parameters it captured ([`Request::path_param`], [`Request::route`]). Names and the pattern
//! are copied into the request's own buffer and values are positions in its target, so a
//! routed request allocates nothing once its pooled buffer has grown to fit.

use super::Request;
use super::request::Span;

impl Request {
    /// The value of path parameter `name` of the route the request was matched to
    /// (`:name`, or `*name` for the rest of the path), as it appears in the path — still
    /// percent-encoded, as routing matched it; `""` when the route has no such parameter or
    /// the request was not routed.
    ///
    /// ```
    /// use web::http::{text_response, Request, Router};
    /// let app = Router::new()
    ///     .get("/topics/:name/posts/:id", |req| {
    ///         text_response(200, format!("{} #{}", req.path_param("name"), req.path_param("id")))
    ///     })
    ///     .handler();
    /// let res = app(Request::new("GET", "/topics/rust/posts/7?x=1", vec![], ""));
    /// assert_eq!(res.body, b"rust #7");
    /// ```
    pub fn path_param(&self, name: &str) -> &str {
        let Some(parts) = self.parts.as_deref() else {
            return "";
        };
        parts
            .params
            .iter()
            .find(|(n, _)| self.text(*n) == name)
            .map_or("", |&(_, value)| self.text(value))
    }

    /// The pattern of the route the request was matched to (`"/topics/:name"`), `""` if it
    /// was not routed: what an access log or a metric groups requests by.
    ///
    /// ```
    /// use web::http::{text_response, Request, Router};
    /// let app = Router::new().get("/topics/:name", |req| text_response(200, req.route().to_owned())).handler();
    /// assert_eq!(app(Request::new("GET", "/topics/rust", vec![], "")).body, b"/topics/:name");
    /// ```
    pub fn route(&self) -> &str {
        self.text(self.span(|p| p.route))
    }

    /// Records the route matched: its pattern, and each parameter's name with where its value
    /// lies in the target (`at` from the target's start).
    pub(crate) fn set_route<'n>(
        &mut self,
        pattern: &str,
        params: impl IntoIterator<Item = (&'n str, usize, usize)>,
    ) {
        let target = self.span(|p| p.target);
        let route = self.push(pattern.as_bytes());
        self.parts_mut().route = route;
        self.parts_mut().params.clear();
        for (name, at, len) in params {
            let name = self.push(name.as_bytes());
            let value = Span::new(target.at.saturating_add(at), len);
            self.parts_mut().params.push((name, value));
        }
    }
}
