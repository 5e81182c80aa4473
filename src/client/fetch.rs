//! Requests by URL that answer in types, over kept-alive connections: [`Client::request`]
//! builds a request (any method, headers, a body), [`RequestBuilder::send`] sends it on an idle
//! connection to the same host when the client keeps one (else a new one) and returns a
//! [`ClientResponse`] (status, headers, the body with its chunked coding undone). A connection
//! the server keeps open goes back to the client's idle set, bounded per host and in time.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::http::{Client, Failure, is_stale, keeps_alive, request_bytes};
use super::url::{Schemes, Url};
use super::wire::{self, ClientConn};
use crate::http::message::Header;
use crate::http::reply::{parse_reply_head, response_body};

/// Default idle connections a [`Client`] keeps per host ([`Client::max_idle_per_host`]).
pub const MAX_IDLE_PER_HOST: usize = 8;

/// Default time a [`Client`] keeps an idle connection ([`Client::idle_timeout`]): shorter than
/// the keep-alive timeout of common servers (this library's 75 s, nginx's 75 s, Node's 5 s is
/// the exception), so a connection is rarely reused just as the server closes it.
pub const CLIENT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a connection goes: whether under TLS, the host, the port.
type Origin = (bool, String, u16);

/// Idle connections by origin, each with the time it became idle.
type ByHost = HashMap<Origin, Vec<(ClientConn, Instant)>>;

/// The idle connections of a client and its clones, by host and port.
#[derive(Debug, Default)]
pub(crate) struct IdleSet {
    conns: Mutex<ByHost>,
}

impl IdleSet {
    fn lock(&self) -> MutexGuard<'_, ByHost> {
        // Plain insertions and removals: a panic cannot leave the map half-changed.
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The most recently used idle connection to `origin` that is not past `timeout`.
    fn take(&self, origin: &Origin, timeout: Duration) -> Option<ClientConn> {
        let mut conns = self.lock();
        let list = conns.get_mut(origin)?;
        // Past the idle timeout: dropped (closed) rather than risked.
        list.retain(|(_, since)| since.elapsed() < timeout);
        let conn = list.pop().map(|(c, _)| c);
        if list.is_empty() {
            conns.remove(origin);
        }
        conn
    }

    /// Keeps `conn` for the next request to `origin`, unless `max` are kept already.
    fn put(&self, origin: Origin, conn: ClientConn, max: usize) {
        let mut conns = self.lock();
        let list = conns.entry(origin).or_default();
        if list.len() < max {
            list.push((conn, Instant::now()));
        }
    }

    /// Idle connections kept now.
    pub(crate) fn count(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }
}

/// A request being built: [`Client::request`], then headers and a body, then
/// [`send`](RequestBuilder::send).
///
/// ```no_run
/// let client = web::http::Client::new();
/// let res = client
///     .request("POST", "http://127.0.0.1:8080/api/messages?room=lobby")
///     .header("Content-Type", "text/plain")
///     .body("hello")
///     .send()?;
/// assert_eq!(res.status(), 200);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "a request is sent by send()"]
pub struct RequestBuilder<'c> {
    client: &'c Client,
    method: String,
    url: io::Result<Url>,
    headers: Vec<Header>,
    body: Vec<u8>,
}

/// A response the client received: status, headers, and the body (de-chunked).
///
/// ```no_run
/// let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
/// println!("{} {:?} {}", res.status(), res.header("content-type"), res.text());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientResponse {
    status: u16,
    headers: Vec<Header>,
    body: Vec<u8>,
}

impl ClientResponse {
    /// The status code.
    ///
    /// ```no_run
    /// # let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
    /// if res.status() == 404 { /* ... */ }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The value of the first header called `name` (any case), if there is one.
    ///
    /// ```no_run
    /// # let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
    /// let kind = res.header("Content-Type").unwrap_or("");
    /// # let _ = kind;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }

    /// Every header line, in order (names lower-cased).
    ///
    /// ```no_run
    /// # let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
    /// for h in res.headers() {
    ///     println!("{}: {}", h.name, h.value);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn headers(&self) -> &[Header] {
        &self.headers
    }

    /// The body, its transfer coding undone (empty for a reply to `HEAD`, a 204 or a 304).
    ///
    /// ```no_run
    /// # let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
    /// println!("{} bytes", res.body().len());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as text (bytes that are not UTF-8 replaced).
    ///
    /// ```no_run
    /// # let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
    /// println!("{}", res.text());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body, owned.
    ///
    /// ```no_run
    /// # let res = web::http::Client::new().request("GET", "http://127.0.0.1:8080/").send()?;
    /// let bytes: Vec<u8> = res.into_body();
    /// # let _ = bytes;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// Takes a raw reply apart (its head already checked by the reading).
    fn from_raw(raw: &[u8], head_request: bool) -> io::Result<ClientResponse> {
        let head = parse_reply_head(raw)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the reply ended inside its head",
            )
        })?;
        let body = if head_request {
            Vec::new()
        } else {
            response_body(raw)?
        };
        Ok(ClientResponse {
            status: head.status,
            headers: head.headers,
            body,
        })
    }
}

/// Whether a request with `method` may be sent again when its reused connection turns out to
/// have been closed (RFC 9110 §9.2.2: idempotent methods).
fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
    )
}

impl<'c> RequestBuilder<'c> {
    pub(crate) fn new(client: &'c Client, method: &str, url: &str) -> RequestBuilder<'c> {
        RequestBuilder {
            client,
            method: method.to_owned(),
            url: Url::parse(url, Schemes::Http),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header line (checked when sent: a name that is not a token or a value with CR, LF
    /// or another control byte is an `InvalidInput` error; `Content-Length` and
    /// `Transfer-Encoding` are the client's own).
    ///
    /// ```no_run
    /// # let client = web::http::Client::new();
    /// let req = client.request("GET", "http://127.0.0.1:8080/").header("Accept", "application/json");
    /// # let _ = req;
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> RequestBuilder<'c> {
        self.headers.push(Header::new(name, value));
        self
    }

    /// Sets the body (sent with its `Content-Length`).
    ///
    /// ```no_run
    /// # let client = web::http::Client::new();
    /// let req = client.request("PUT", "http://127.0.0.1:8080/notes/1").body(b"text".to_vec());
    /// # let _ = req;
    /// ```
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> RequestBuilder<'c> {
        self.body = body.into();
        self
    }

    /// Sends the request — on an idle connection to the same host and port when the client
    /// keeps one, else on a new one — and reads the whole response. A reused connection that
    /// the server had closed meanwhile is replaced and the request sent again, but only for an
    /// idempotent method (GET, HEAD, PUT, DELETE, OPTIONS, TRACE): any other request is sent at
    /// most once, and such a failure is its error. When the server keeps the connection open
    /// after the response, the client keeps it for the next request.
    ///
    /// Errors as the [`Client`]'s, and `InvalidInput` for a URL that is neither `http://` nor
    /// `https://`; `https://` runs TLS first (feature `tls`, the server's certificate checked
    /// for the URL's host; `Client::tls` sets what is trusted), and is `Unsupported` in a build
    /// without it.
    ///
    /// ```no_run
    /// let client = web::http::Client::new();
    /// for n in 0..3 {
    ///     let res = client.request("GET", &format!("http://127.0.0.1:8080/item/{n}")).send()?;
    ///     println!("{}", res.status()); // one connection for all three
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn send(self) -> io::Result<ClientResponse> {
        let url = self.url?;
        wire::supported(url.secure)?;
        let client = self.client;
        let host = url.connect_host();
        let request = request_bytes(
            host,
            url.port,
            &self.method,
            &url.target,
            &self.headers,
            &self.body,
            true,
        )?;
        let head_request = self.method == "HEAD";
        let idle = &client.idle;
        let origin: Origin = (url.secure, host.to_owned(), url.port);
        let mut retried = false;
        loop {
            // A retry never takes another idle connection: it may be as stale as the first.
            let pooled = match retried {
                false => idle.take(&origin, client.idle_timeout),
                true => None,
            };
            let reused = pooled.is_some();
            let mut stream = match pooled {
                Some(s) => s,
                None => {
                    let tcp = client.connect(host, url.port)?;
                    wire::secure(tcp, url.secure, host, b"http/1.1", client.tls.as_ref())?
                }
            };
            let result = match client.send(&mut stream, &request) {
                Ok(()) => client.read_reply(&mut stream, Vec::new(), head_request),
                Err(e) => Err(Failure::Io(e)),
            };
            match result {
                Ok(raw) => {
                    if keeps_alive(&raw) {
                        idle.put(origin, stream, client.max_idle_per_host);
                    }
                    return ClientResponse::from_raw(&raw, head_request);
                }
                Err(failure)
                    if reused && !retried && idempotent(&self.method) && is_stale(&failure) =>
                {
                    retried = true;
                }
                Err(failure) => return Err(failure.into()),
            }
        }
    }
}

/// The client's share of idle connections.
pub(crate) type SharedIdle = Arc<IdleSet>;
