//! Per-caller rate limiting: [`rate_limits`], [`rate_limit`], the [`RateLimit`] builder behind
//! them and the middleware it makes; the caller's name ([`client_of`]) is in `caller.rs`, the
//! sharded count in `table.rs`, the fleet's count in Redis in `crate::fleet::rate`.
//!
//! The count is kept per caller in a table split into 64 parts, each behind its own
//! `Mutex`: a request locks only the part its caller hashes to, for one lookup and one increment,
//! so workers serving different callers rarely meet, and the count stays exact across all workers.
//! The table is emptied at the first request of each new second and holds at most
//! [`MAX_CALLERS`] callers per second (see [`RateLimit::max_callers`] for what happens past it).
//!
//! With `--features redis`, `RateLimit::fleet` (`web::fleet::LimitAcrossFleet`) counts in Redis instead, across every
//! instance of a fleet, the local count standing in when Redis does not answer in time.

mod caller;
mod table;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::message::{Request, Response, text_response, with_header};
use super::middleware::{Layer, layer};
use table::{Limiter, Now};

pub(crate) use table::Pace;

pub use caller::client_of;

/// The caller's name with `hops` = 0: everyone shares one bucket.
pub const ANYONE: &str = "anyone";

/// The caller's name when `X-Forwarded-For` has fewer entries than `hops`: all such callers share
/// one bucket (never unlimited). RFC 7239 uses the same word for a hidden address.
pub const UNKNOWN_CALLER: &str = "unknown";

/// Default most callers counted in one second by one limiter (see [`RateLimit::max_callers`]).
/// An entry is a 64-bit hash and two counts; with the map's spare room the full default table
/// takes about 2.2 MB (64 maps of 2 048 slots of 17 bytes).
pub const MAX_CALLERS: usize = 100_000;

/// The 429 body.
const TOO_MANY: &str = "Too Many Requests: retry in a second.\n";

/// The specification's `rate_limits(writes, reads, hops)`: a [`Layer`] allowing each caller
/// ([`client_of`]`(req, hops)`) `writes` writes and `reads` reads per second.
///
/// - **Reads** are `GET`, `HEAD` and `OPTIONS`; every other method (`POST`, `PUT`, `PATCH`,
///   `DELETE`, unknown ones, and methods in another case: methods are case-sensitive) is a
///   **write**. Each has its own bucket.
/// - **The window is one whole wall-clock second**, the same for all callers, not a token bucket:
///   a caller may use its whole allowance at the end of one second and again at the start of the
///   next, so a burst straddling a boundary can reach **twice** the allowance.
/// - **Over the allowance** the answer is `429 Too Many Requests` with `Retry-After: 1` and a
///   short `text/plain` body, and the layers and handler beneath are not called. An allowance of
///   0 refuses every request of its kind.
/// - Counts are **exact across all workers**: in each second exactly the allowance passes,
///   however the caller's requests are spread over connections and workers.
/// - Memory stays bounded: see [`RateLimit::max_callers`].
///
/// The spec's example: with `rate_limits(1, 100, 0)` a GET gives 200, a POST 200, and a second
/// POST in the same second 429.
///
/// ```no_run
/// use web::http::{rate_limits, text_response, wrap, Server};
/// // Behind one proxy (nginx) that appends the client's address to X-Forwarded-For.
/// let app = wrap(vec![rate_limits(1, 100, 1)], |_req| text_response(200, "Hello, World!"));
/// Server::bind("127.0.0.1:8080")?.run(app)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn rate_limits(writes: u32, reads: u32, hops: usize) -> Layer {
    RateLimit::new(writes, reads, hops).layer()
}

/// The specification's `rate_limit(per_second)`: writes only, trusting no forwarding header
/// (hops 0), so **all callers share one bucket** of `per_second` writes per second; reads are
/// never limited (nor counted). Otherwise as [`rate_limits`].
///
/// ```
/// use web::http::{rate_limit, text_response, wrap, Request};
/// let app = wrap(vec![rate_limit(1)], |_req| text_response(200, "ok"));
/// let post = || Request::new("POST", "/", vec![], "");
/// # loop { let second = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
/// let get = app(Request::new("GET", "/", vec![], ""));
/// let (first, second_post) = (app(post()), app(post()));
/// # if std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() != second { continue; }
/// assert_eq!((get.status, first.status, second_post.status), (200, 200, 429));
/// # break; }
/// ```
pub fn rate_limit(per_second: u32) -> Layer {
    RateLimit::writes_only(per_second).layer()
}

/// A rate limiter's settings, for what [`rate_limits`] and [`rate_limit`] leave at their
/// defaults; [`layer`](RateLimit::layer) makes the middleware.
///
/// ```
/// use web::http::{text_response, wrap, RateLimit};
/// let limiter = RateLimit::new(10, 1000, 1).max_callers(10_000).layer();
/// let app = wrap(vec![limiter], |_req| text_response(200, "ok"));
/// # let _ = app;
/// ```
#[derive(Clone, Debug)]
pub struct RateLimit {
    writes: Option<u32>,
    reads: Option<u32>,
    who: Who,
    pace: Pace,
    max_callers: usize,
    refusal: Response,
    /// Where the counts are shared with other instances (`RateLimit::fleet`).
    across: Option<Arc<dyn StartsCounts>>,
    clock: Clock,
}

impl RateLimit {
    /// `writes` writes and `reads` reads per caller per second, the caller being
    /// [`client_of`]`(req, hops)`: the settings of [`rate_limits`].
    ///
    /// ```
    /// let same = web::http::RateLimit::new(1, 100, 1).layer(); // rate_limits(1, 100, 1)
    /// # let _ = same;
    /// ```
    pub fn new(writes: u32, reads: u32, hops: usize) -> RateLimit {
        RateLimit {
            writes: Some(writes),
            reads: Some(reads),
            who: Who::Forwarded(hops),
            pace: Pace::Second,
            max_callers: MAX_CALLERS,
            refusal: too_many(),
            across: None,
            clock: Clock::System,
        }
    }

    /// `per_second` writes per second for all callers together, reads not limited: the settings
    /// of [`rate_limit`].
    ///
    /// ```
    /// let same = web::http::RateLimit::writes_only(5).layer(); // rate_limit(5)
    /// # let _ = same;
    /// ```
    pub fn writes_only(per_second: u32) -> RateLimit {
        RateLimit {
            writes: Some(per_second),
            reads: None,
            who: Who::Forwarded(0),
            pace: Pace::Second,
            max_callers: MAX_CALLERS,
            refusal: too_many(),
            across: None,
            clock: Clock::System,
        }
    }

    /// `writes` writes and `reads` reads per second for each caller told apart by its address
    /// ([`Request::client_addr`]: the connection's peer, or the address the server's proxies
    /// forwarded — see [`Server::proxies`](crate::http::Server::proxies)), paced smoothly
    /// ([`smooth`](RateLimit::smooth)): what a server should use unless it keeps the
    /// specification's [`rate_limits`]. Requests without an address (made by hand, or a
    /// forwarded entry missing) share the [`UNKNOWN_CALLER`] bucket.
    ///
    /// ```
    /// use web::http::{text_response, wrap, RateLimit, Request};
    /// let app = wrap(vec![RateLimit::per_address(1, 100).layer()], |_req| text_response(201, "made"));
    /// let post = |from: &str| {
    ///     let mut req = Request::new("POST", "/", vec![], "");
    ///     req.set_peer(from.parse().unwrap());
    ///     app(req).status
    /// };
    /// assert_eq!(post("127.0.0.2:5000"), 201);
    /// assert_eq!(post("127.0.0.2:5001"), 429); // the same caller, another connection
    /// assert_eq!(post("127.0.0.3:5000"), 201); // another caller
    /// ```
    pub fn per_address(writes: u32, reads: u32) -> RateLimit {
        RateLimit {
            who: Who::Address,
            ..RateLimit::new(writes, reads, 0).smooth()
        }
    }

    /// Paces each caller instead of counting whole seconds: an allowance of `n` a second admits
    /// `n` at once from a caller idle for a second, then one every 1/`n` of a second (the
    /// generic cell rate algorithm, GCRA, as a token bucket of `n` refilled continuously). In
    /// any span of `t` seconds a caller gets at most `n` + `n`·`t`: never the whole-second
    /// window's `2n` within moments across a second boundary. The cost is the same, one 64-bit
    /// value per caller and kind. Counts stay exact across workers. A caller is forgotten once
    /// its allowance is whole again, so the table holds only callers active within the last
    /// second ([`max_callers`](RateLimit::max_callers) bounds it as before). A limiter counted
    /// across a fleet (`RateLimit::fleet`) counts whole seconds, what Redis counts.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    /// let ms = Arc::new(AtomicU64::new(1_000));
    /// let now = Arc::clone(&ms);
    /// let limiter = web::http::RateLimit::new(4, 0, 1)
    ///     .smooth()
    ///     .clock(move || Duration::from_millis(now.load(Ordering::Relaxed)))
    ///     .limiter();
    /// for _ in 0..4 {
    ///     assert!(limiter.admit_write("a")); // the whole allowance at once, from rest
    /// }
    /// assert!(!limiter.admit_write("a"));
    /// ms.store(1_250, Ordering::Relaxed); // a quarter of a second later: one more
    /// assert!(limiter.admit_write("a") && !limiter.admit_write("a"));
    /// ```
    pub fn smooth(mut self) -> RateLimit {
        self.pace = Pace::Smooth;
        self
    }

    /// The most callers counted separately in one second (default [`MAX_CALLERS`]); the table is
    /// split into 64 parts of `n / 64` callers each (rounded up).
    ///
    /// A caller first seen in a second when its part of the table is full is counted in one
    /// **overflow bucket** shared by all such callers for the rest of that second: together they
    /// get one allowance, so a flood of new names never lets anyone through unlimited, and
    /// callers already counted in that second keep their own bucket. The table is emptied when
    /// the next second starts.
    ///
    /// ```
    /// use web::http::RateLimit;
    /// // A small table: 6 400 callers per second (100 per shard), the rest share one bucket.
    /// let limiter = RateLimit::new(1, 100, 1).max_callers(6_400).layer();
    /// # let _ = limiter;
    /// ```
    pub fn max_callers(mut self, n: usize) -> RateLimit {
        self.max_callers = n;
        self
    }

    /// Counts and limits writes only; reads (GET, HEAD, OPTIONS) pass without being counted.
    ///
    /// ```
    /// use web::http::{text_response, wrap, RateLimit, Request};
    /// let app = wrap(vec![RateLimit::new(1, 1, 0).unlimited_reads().layer()], |_req| text_response(200, "ok"));
    /// for _ in 0..10 {
    ///     assert_eq!(app(Request::new("GET", "/", vec![], "")).status, 200);
    /// }
    /// ```
    pub fn unlimited_reads(mut self) -> RateLimit {
        self.reads = None;
        self
    }

    /// The reply to a request over the allowance (default: `429`, `text/plain`, a one-line
    /// reason). The status is always 429 and `Retry-After: 1` is always added (the window is one
    /// second); the content type, the body and any other header are yours — a JSON API answers
    /// JSON.
    ///
    /// ```
    /// use web::http::{json_response, wrap, RateLimit, Request, text_response};
    /// let limiter = RateLimit::new(1, 100, 0)
    ///     .refusal(json_response(429, r#"{"error":"too many requests","retry_after":1}"#))
    ///     .layer();
    /// let app = wrap(vec![limiter], |_req| text_response(201, "made"));
    /// assert_eq!(app(Request::new("POST", "/", vec![], "")).status, 201);
    /// let refused = app(Request::new("POST", "/", vec![], ""));
    /// assert_eq!((refused.status, refused.content_type.as_ref()), (429, "application/json"));
    /// assert_eq!(refused.header("retry-after"), "1");
    /// ```
    pub fn refusal(mut self, response: Response) -> RateLimit {
        let mut response = response;
        response.status = 429;
        response
            .headers
            .retain(|h| !h.name.eq_ignore_ascii_case("retry-after"));
        self.refusal = with_header(response, "Retry-After", "1");
        self
    }

    /// The time the limiter counts seconds by, as time since the Unix epoch (default: the
    /// system's clock). What a test or a simulation sets, to step time by hand instead of
    /// waiting for the wall clock; the clock must not go backwards.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    /// let second = Arc::new(AtomicU64::new(1));
    /// let now = Arc::clone(&second);
    /// let limiter = web::http::RateLimit::new(1, 0, 0)
    ///     .clock(move || Duration::from_secs(now.load(Ordering::Relaxed)))
    ///     .limiter();
    /// assert!(limiter.admit_write("a") && !limiter.admit_write("a"));
    /// second.store(2, Ordering::Relaxed); // the next second: a new allowance
    /// assert!(limiter.admit_write("a"));
    /// ```
    pub fn clock(mut self, clock: impl Fn() -> Duration + Send + Sync + 'static) -> RateLimit {
        self.clock = Clock::Given(Arc::new(clock));
        self
    }

    /// The middleware, for [`wrap`](crate::http::wrap): [`RateLimit::limiter`] and its
    /// [`layer`](RateLimiter::layer).
    ///
    /// ```
    /// use web::http::{text_response, wrap, RateLimit};
    /// let app = wrap(vec![RateLimit::new(2, 50, 1).layer()], |_req| text_response(200, "ok"));
    /// # let _ = app;
    /// ```
    pub fn layer(self) -> Layer {
        self.limiter().layer()
    }

    /// The limiter these settings make: one count, shared by its [`layer`](RateLimiter::layer)
    /// and by every other way of writing the program counts (a WebSocket message, say) through
    /// [`RateLimiter::admit_write`]. Cheap to clone.
    ///
    /// With a fleet (`RateLimit::fleet`), the limiter's thread starts here (and ends when the
    /// last clone is dropped); a thread that cannot be started leaves the count local (as when
    /// Redis is unreachable).
    ///
    /// ```
    /// use web::http::{text_response, wrap, RateLimit, Request};
    /// let limiter = RateLimit::new(1, 100, 0).limiter();
    /// let app = wrap(vec![limiter.layer()], |_req| text_response(201, "made"));
    /// assert_eq!(app(Request::new("POST", "/", vec![], "")).status, 201);
    /// // The same caller's next write, however it comes, is over the allowance:
    /// assert!(!limiter.admit_write("anyone"));
    /// ```
    pub fn limiter(self) -> RateLimiter {
        let limiter = Limiter::new(&self);
        let shared = self.across.as_ref().and_then(|across| across.start());
        RateLimiter(Arc::new(Counting {
            limiter,
            who: self.who,
            refusal: self.refusal,
            shared,
            clock: self.clock,
        }))
    }

    /// How callers' allowances come back (see `RateLimit::fleet`, which counts whole seconds).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn paced(mut self, pace: Pace) -> RateLimit {
        self.pace = pace;
        self
    }

    /// Shares the counts through `across` (see `RateLimit::fleet`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn counted_across(mut self, across: Arc<dyn StartsCounts>) -> RateLimit {
        self.across = Some(across);
        self
    }
}

/// A running rate limiter: its per-caller counts (and, with a fleet, its way to the shared
/// ones). Made by [`RateLimit::limiter`]; clones share the counts.
///
/// ```
/// let limiter = web::http::RateLimit::new(5, 0, 1).limiter();
/// let again = limiter.clone(); // the same counts
/// # let _ = again;
/// ```
#[derive(Clone)]
pub struct RateLimiter(Arc<Counting>);

struct Counting {
    limiter: Limiter,
    who: Who,
    refusal: Response,
    shared: Option<Box<dyn SharedCounts>>,
    clock: Clock,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("writes", &self.0.limiter.writes)
            .field("reads", &self.0.limiter.reads)
            .field("who", &self.0.who)
            .finish()
    }
}

impl RateLimiter {
    /// The middleware: a request over its caller's allowance gets the refusal, and the layers
    /// and handler beneath are not called.
    ///
    /// ```
    /// use web::http::{text_response, wrap, RateLimit};
    /// let limiter = RateLimit::new(2, 50, 1).limiter();
    /// let app = wrap(vec![limiter.layer()], |_req| text_response(200, "ok"));
    /// # let _ = app;
    /// ```
    pub fn layer(&self) -> Layer {
        let this = self.clone();
        layer(move |req, next| {
            let kind = Kind::of(req.method());
            if this.decide(&this.caller(&req), kind) {
                next(req)
            } else {
                this.0.refusal.clone()
            }
        })
    }

    /// Who `req` is from, as this limiter counts callers: [`client_of`] with its `hops`, or
    /// the [client's address](Request::client_addr) for a
    /// [`per_address`](RateLimit::per_address) limiter. Made without allocating.
    ///
    /// ```
    /// use web::http::{Header, RateLimit, Request};
    /// let limiter = RateLimit::new(5, 0, 1).limiter();
    /// let req = Request::new("GET", "/", vec![Header::new("x-forwarded-for", "10.0.0.7")], "");
    /// assert_eq!(limiter.caller(&req), "10.0.0.7");
    /// let mut req = Request::new("GET", "/", vec![], "");
    /// req.set_peer("[2001:db8::1]:443".parse().unwrap());
    /// assert_eq!(RateLimit::per_address(5, 5).limiter().caller(&req), "2001:db8::1");
    /// ```
    pub fn caller<'r>(&self, req: &'r Request) -> CallerName<'r> {
        match self.0.who {
            Who::Forwarded(hops) => CallerName::Named(client_of(req, hops)),
            Who::Address => match req.client_addr() {
                Some(addr) => CallerName::address(addr),
                None => CallerName::Named(UNKNOWN_CALLER),
            },
        }
    }

    /// Counts one write of `caller` (as [`caller`](Self::caller) names it) in the same bucket
    /// as its POSTs: whether it is within the allowance. For writes that do not come as HTTP
    /// requests — a WebSocket message, say — so that one rule holds however a caller writes.
    ///
    /// ```
    /// let limiter = web::http::RateLimit::new(2, 0, 1).limiter();
    /// assert!(limiter.admit_write("10.0.0.7") && limiter.admit_write("10.0.0.7"));
    /// assert!(!limiter.admit_write("10.0.0.7"));
    /// assert!(limiter.admit_write("10.0.0.8"));
    /// ```
    pub fn admit_write(&self, caller: &str) -> bool {
        self.decide(caller, Kind::Write)
    }

    /// The decision for one request of `kind` from `caller`: this instance's count, and with a
    /// fleet what the others counted as far as it is known. Never waits.
    fn decide(&self, caller: &str, kind: Kind) -> bool {
        let now = self.0.clock.now();
        let used = self.0.limiter.admit_counted(caller, kind, now);
        if let (Some(shared), Some(allowance)) = (&self.0.shared, self.0.limiter.allowance(kind)) {
            let admitted = shared.admit(caller, kind, allowance, now.second(), used);
            if used.is_some() && !admitted {
                // Within this instance's count, over the fleet's: not counted here either.
                self.0.limiter.refund(caller, kind, now);
            }
            return admitted;
        }
        used.is_some()
    }
}

/// Counts shared with the other instances of a server (the fleet's, in Redis): what a
/// [`RateLimit`] given them starts when its limiter is made.
pub(crate) trait StartsCounts: Send + Sync + std::fmt::Debug {
    /// The limiter's way to the shared counts; `None` when it cannot be had (counted by the
    /// implementer): the local count then decides alone.
    fn start(&self) -> Option<Box<dyn SharedCounts>>;
}

/// A running limiter's way to the counts shared with other instances.
pub(crate) trait SharedCounts: Send + Sync {
    /// Decides one request of `caller` of `kind` in wall-clock second `second`, which this
    /// instance's own count admitted as the `used`-th of the second (`None`: refused): whether
    /// it is within `allowance` counting what the other instances admitted. Never waits.
    fn admit(
        &self,
        caller: &str,
        kind: Kind,
        allowance: u32,
        second: u64,
        used: Option<u32>,
    ) -> bool;
}

/// The answer over the allowance.
fn too_many() -> Response {
    with_header(text_response(429, TOO_MANY), "Retry-After", "1")
}

/// The time a limiter counts by.
#[derive(Clone)]
enum Clock {
    /// The wall clock.
    System,
    /// [`RateLimit::clock`]'s.
    Given(Arc<dyn Fn() -> Duration + Send + Sync>),
}

impl Clock {
    /// Now, since the Unix epoch (0 before 1970).
    fn now(&self) -> Now {
        let since = match self {
            Clock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            Clock::Given(clock) => clock(),
        };
        Now {
            nanos: u64::try_from(since.as_nanos()).unwrap_or(u64::MAX),
        }
    }
}

/// Whom a limiter counts as one caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    /// [`client_of`] with this many hops (0: everyone is one caller).
    Forwarded(usize),
    /// [`Request::client_addr`].
    Address,
}

/// A caller's name as a [`RateLimiter`] counts it: borrowed from the request, or an address
/// written out on the stack (no allocation). Reads as a `&str`.
///
/// ```
/// let limiter = web::http::RateLimit::new(1, 1, 0).limiter();
/// let req = web::http::Request::new("GET", "/", vec![], "");
/// assert_eq!(&*limiter.caller(&req), "anyone");
/// ```
#[derive(Clone, Copy, Debug)]
pub enum CallerName<'r> {
    /// A name from the request (or a fixed one: [`ANYONE`], [`UNKNOWN_CALLER`]).
    Named(&'r str),
    /// An IP address as text: its bytes and length.
    Address([u8; 46], u8),
}

impl CallerName<'_> {
    fn address(addr: std::net::IpAddr) -> CallerName<'static> {
        use std::io::Write;
        let mut buf = [0u8; 46];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        // 45 bytes hold the longest IPv6 text; a failure would leave a shorter, still valid name.
        let _ = write!(cursor, "{addr}");
        let len = u8::try_from(cursor.position()).unwrap_or(0);
        CallerName::Address(buf, len)
    }
}

impl std::ops::Deref for CallerName<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            CallerName::Named(name) => name,
            CallerName::Address(buf, len) => buf
                .get(..usize::from(*len))
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or(UNKNOWN_CALLER),
        }
    }
}

impl PartialEq<&str> for CallerName<'_> {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl std::fmt::Display for CallerName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Clock::System => "System",
            Clock::Given(_) => "Given",
        })
    }
}

/// Which bucket a request counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
}

impl Kind {
    /// GET, HEAD and OPTIONS are reads (the methods RFC 9110 §9.2.1 calls safe, without TRACE,
    /// which nothing should serve); every other method is a write.
    fn of(method: &str) -> Kind {
        match method {
            "GET" | "HEAD" | "OPTIONS" => Kind::Read,
            _ => Kind::Write,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::message::Header;
    use crate::http::middleware::wrap;
    #[test]
    fn reads_are_get_head_and_options_and_every_other_method_is_a_write() {
        let cases = [
            ("GET", Kind::Read),
            ("HEAD", Kind::Read),
            ("OPTIONS", Kind::Read),
            ("POST", Kind::Write),
            ("PUT", Kind::Write),
            ("PATCH", Kind::Write),
            ("DELETE", Kind::Write),
            ("TRACE", Kind::Write),
            ("CONNECT", Kind::Write),
            ("PROPFIND", Kind::Write),
            ("get", Kind::Write),
        ];
        for (method, kind) in cases {
            assert_eq!(Kind::of(method), kind, "{method}");
        }
    }

    #[test]
    fn over_the_allowance_the_answer_is_429_with_retry_after_and_the_handler_is_not_called() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let app = wrap(vec![rate_limits(0, 0, 1)], move |_req| {
            seen.fetch_add(1, Ordering::SeqCst);
            text_response(200, "")
        });
        for method in ["GET", "POST"] {
            let res = app(Request::new(method, "/", vec![], ""));
            assert_eq!(res.status, 429);
            assert_eq!(res.content_type, "text/plain");
            assert_eq!(res.headers, vec![Header::new("Retry-After", "1")]);
            assert_eq!(res.body, TOO_MANY.as_bytes());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_custom_refusal_keeps_its_body_type_and_headers_with_status_429_and_one_retry_after() {
        use crate::http::message::json_response;
        let json = r#"{"error":"too many requests"}"#;
        // (refusal given, content type, body, headers sent)
        let cases: [(Response, &str, &[u8], Vec<Header>); 4] = [
            (
                json_response(429, json),
                "application/json",
                json.as_bytes(),
                vec![],
            ),
            // Any other status becomes 429: the status is what clients and proxies act on.
            (
                text_response(200, "slow down"),
                "text/plain",
                b"slow down",
                vec![],
            ),
            // The application's own Retry-After is replaced (the window is one second).
            (
                with_header(text_response(429, ""), "retry-after", "3600"),
                "text/plain",
                b"",
                vec![],
            ),
            // Other headers stay, before Retry-After.
            (
                with_header(json_response(503, "{}"), "Cache-Control", "no-store"),
                "application/json",
                b"{}",
                vec![Header::new("Cache-Control", "no-store")],
            ),
        ];
        for (refusal, content_type, body, mut headers) in cases {
            headers.push(Header::new("Retry-After", "1"));
            let app = wrap(
                vec![RateLimit::new(0, 0, 0).refusal(refusal).layer()],
                |_req| text_response(200, "served"),
            );
            for method in ["GET", "POST"] {
                let res = app(Request::new(method, "/", vec![], ""));
                assert_eq!(res.status, 429, "{body:?}");
                assert_eq!(res.content_type, content_type);
                assert_eq!(res.body, body);
                assert_eq!(res.headers, headers, "{body:?}");
            }
        }
    }
}
