//! A chat with live server figures: the library's demo, and the README's first command.
//!
//! ```sh
//! cargo run --release --example chat            # http://127.0.0.1:8080/
//! cargo run --release --example chat -- --port 9000 --workers 2
//! # several instances sharing rooms and rate limits through Redis:
//! cargo run --release --features redis --example chat -- --port 9001 --redis redis://127.0.0.1:6379/
//! # HTTPS and WSS only:
//! cargo run --release --features tls --example chat -- --tls-cert cert.pem --tls-key key.pem
//! cargo run --release --features tls --example chat -- --tls-cert cert.pem --tls-key key.pem --tls-port 8443
//! ```
//!
//! - `GET /`: the chat page (pick a room and a name) with a live chart of the server's own
//!   figures;
//! - WebSocket `/ws?room=R&name=N`: a member of room R; each text message it sends reaches every
//!   member of R (itself included) as one JSON text frame `{"id","room","name","text","time"}`;
//!   a new member first gets the room's last 20 messages (the history of at most 1 000 rooms and
//!   8 MiB: past either, the room written to least recently is forgotten, rooms with members
//!   last; `web::ws::History`) — with `&after=ID`, a member that reconnects gets only those after
//!   message ID, each once; the upgrade is refused (403) to pages of another host than the chat's unless
//!   `--allow-origin ORIGINS` lists them (comma-separated; `*` for any);
//! - `POST /api/messages?room=R` (optional `&name=N`) with a text body: `201`, delivered to room
//!   R as if a member had sent it;
//! - writes — posts and WebSocket messages alike — are limited to 5 a second per caller, paced
//!   (5 at once, then one every 200 ms; with `--redis`, 5 per wall-clock second across the
//!   fleet): a post over it gets a JSON `429`, a message is
//!   answered with `{"error":…,"retry_after":1}` on its socket and not delivered. A caller is
//!   its address: the connection's own peer; with `--proxies N` (N proxies in front, on this
//!   host), the `X-Forwarded-For` entry N-th from the right for a request whose peer is such a
//!   proxy (`--trusted-proxies NETWORKS` names the networks they connect from, when they are
//!   elsewhere), or the peer when the request carries fewer entries; by default (`--proxies
//!   0`) no one is trusted, so that no client picks its own name;
//! - room and member names are 1 to 64 bytes of UTF-8, not only white space, without control
//!   characters, by either way in (else `400`);
//! - `GET /sse?room=R`: a Server-Sent Events stream (`200 text/event-stream`): the room's
//!   recent messages (the same last 20 a WebSocket member gets), then every message said in R,
//!   each once, as one event whose `data` is the message's JSON and whose `id` is its id; a
//!   reconnect with `Last-Event-ID` gets only the messages after that id the room still holds
//!   (an id that is not one of the chat's replays nothing); a request for a room's whole
//!   history (no `Last-Event-ID`, a poll without `after`), when it holds any, counts as one of
//!   the caller's writes;
//! - `GET /poll?room=R&after=ID`: a long-poll: the room's messages after ID at once
//!   (`{"messages":[…]}`), or the next message said in R within 25 s, or `204` when none came;
//! - `GET /api/rooms?room=R`: `{"room":R,"members":N}`, N the room's members (WebSocket and
//!   event streams) on every instance of the fleet;
//! - `GET /api/history?room=R`: `{"messages":[…]}`, the room's recent messages (the same last
//!   20), answered by an async function on the chat's tokio runtime (in a fleet it waits for
//!   the room's history from Redis without a worker waiting); counts as one of the caller's
//!   writes when the room holds any;
//! - `GET /metrics`: the server's figures in Prometheus' text format (open connections per
//!   worker, replies by status class, WebSocket members and event streams, queued output,
//!   stalls, fleet and TLS errors);
//! - `--log LEVEL` (`error`, `warn`, `info`, `debug`): the library's events and one access-log
//!   line per exchange (`chat::access`: method, target, status, bytes, duration, peer) go to
//!   standard error through `tracing-subscriber`; without it the chat logs nothing but its
//!   start and stop;
//! - `GET /api/stats`: the server's figures as JSON (counts only: no room names), among them
//!   `bytes_per_added_connection`: the growth of the process's memory since the figures were
//!   first asked for, divided by the connections opened since (`null` below 100 of them);
//! - SIGINT or SIGTERM: graceful stop (members get close 1001, streams end, polls get 204),
//!   exit 0.
//!
//! With `--redis URL` (built with `--features redis`; `redis+cluster://HOST:PORT,HOST:PORT/`
//! for a Redis Cluster) this process is one instance of a fleet: messages reach the room's
//! members on every instance, and the 5 writes a second are counted across all instances, a
//! room's history is the fleet's (kept in Redis: a member joining on any instance, a restarted
//! one too, gets the same last 20 messages, with the same ids), and `/api/rooms` counts every instance's members (each instance reports its own every
//! second; a dead one's stop counting within 3 s). See `web::fleet` for what happens while
//! Redis is unreachable: each instance serves its own history and counts, and says so in
//! `/api/stats` (`fleet_local_reads`).

use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(feature = "tokio")]
use web::http::answer_async;
use web::http::{
    Access, Control, LongPoll, RateLimit, RateLimiter, Request, Response, Router, defer,
    html_response, json_response, query_of, wrap,
};
use web::sse::{Sse, SseHandler};
use web::ws::{History, Message, Rooms, Ws, WsHandler};

#[path = "../cli/mod.rs"]
mod cli;
mod rules;

/// How long a long-poll waits for a message.
const POLL_WAIT: std::time::Duration = std::time::Duration::from_secs(25);
use rules::{MAX_TEXT, Origins, check_name, text_param};

/// The page, with its script and chart; no external resources.
const PAGE: &str = include_str!("page.html");
/// Messages a room remembers for the members who join later.
const HISTORY: usize = 20;
/// What a write over the caller's allowance gets (as a 429's body, or on its socket).
const TOO_MANY: &str = r#"{"error":"more than 5 messages a second","retry_after":1}"#;
/// Rooms whose history is kept, and the bytes all histories may hold.
const HISTORY_ROOMS: usize = 1_000;
const HISTORY_BYTES: usize = 8 << 20;

/// What the chat shares across workers. Rooms and their history are the library's.
struct Chat {
    rooms: Rooms,
    /// Writes per caller, however they come.
    limiter: RateLimiter,
    /// Which pages may open a WebSocket.
    origins: Origins,
}

/// A member's state, made when its upgrade is accepted.
struct Member {
    room: String,
    name: String,
    /// The last message the member saw, when it resumes (`&after=ID`); 0: the room's history.
    after: u64,
    /// Who the rate limit counts its messages against.
    caller: String,
}

impl Chat {
    /// Posts a message to its room (its history, its members, its long-polls); `then` is
    /// told its id once it has its place in the room's order (at once on a chat alone; when
    /// Redis published it in a fleet), or `None` when it could not be posted.
    fn post(
        &self,
        room: &str,
        name: &str,
        text: &str,
        then: impl FnOnce(Option<u64>) + Send + 'static,
    ) {
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let (room_json, name, text) = (json_string(room), json_string(name), json_string(text));
        let line = move |id| {
            format!(r#"{{"id":{id},"room":{room_json},"name":{name},"text":{text},"time":{time}}}"#)
        };
        self.rooms.post_then(room, line, then);
    }

    /// A request for a room's whole history: counted as one of the caller's writes (5 a
    /// second), else refused with 429.
    fn full_replay(&self, req: &Request) -> Result<(), Response> {
        if self.limiter.admit_write(&self.limiter.caller(req)) {
            Ok(())
        } else {
            Err(json_error(429, "more than 5 whole histories a second"))
        }
    }

    /// `GET /poll`: the room's messages after `after` now, or the next message, or `204`
    /// after 25 s — the library's long-poll (in a fleet, the room's history is read from
    /// Redis first without the worker waiting).
    fn poll(&self, room: &str, after: u64) -> Response {
        self.rooms.long_poll(room, after, POLL_WAIT, |messages| {
            messages_json(messages.iter().map(|(_, line)| &**line))
        })
    }
}

/// `{"messages":[…]}` of JSON lines.
fn messages_json<'a>(lines: impl IntoIterator<Item = &'a str>) -> Response {
    let lines: Vec<&str> = lines.into_iter().collect();
    json_response(200, format!(r#"{{"messages":[{}]}}"#, lines.join(",")))
}

/// A reader of a room's events: `/sse?room=R`, resuming after `Last-Event-ID`.
impl SseHandler for Chat {
    type State = Reader;

    fn accept(&self, req: &Request) -> Result<Reader, Response> {
        let room = room_of(req)?;
        let after = match req.header("last-event-id").trim() {
            "" => 0,
            // An id that names no message (not a number this chat could give) replays nothing.
            id => id.parse().unwrap_or(u64::MAX),
        };
        if after == 0 && self.rooms.last_id(&room).is_some() {
            // The room's whole history costs a write of the caller's allowance (a client
            // reconnecting without an id in a loop is held to 5 a second); an empty one costs
            // nothing.
            self.full_replay(req)?;
        }
        Ok(Reader { room, after })
    }

    /// The room's messages after the last one the reader saw, then everything posted from
    /// now on (each message once).
    fn open(&self, sse: &mut Sse<'_>, me: &mut Reader) {
        sse.join_after(&me.room, me.after);
    }
}

/// The stream's room and where it resumes, kept from `accept` to `open`.
struct Reader {
    room: String,
    after: u64,
}

/// The room a request names (`?room=`), by the rules.
fn room_of(req: &Request) -> Result<String, Response> {
    let room = text_param(query_of(req.path()), "room")
        .map_err(|e| json_error(400, &e))?
        .unwrap_or_default();
    check_name("room", &room).map_err(|e| json_error(400, &e))?;
    Ok(room)
}

impl WsHandler for Chat {
    type State = Member;

    /// Before the upgrade: a page of an allowed origin, and a room and a name by the rules.
    fn accept(&self, req: &Request) -> Result<Member, Response> {
        if !self
            .origins
            .allows(req.header("origin"), req.header("host"))
        {
            return Err(json_error(403, "this page's origin may not open the chat"));
        }
        let query = query_of(req.path());
        let named = |what: &str| -> Result<String, Response> {
            let value = text_param(query, what)
                .map_err(|e| json_error(400, &e))?
                .unwrap_or_default();
            check_name(what, &value).map_err(|e| json_error(400, &e))?;
            Ok(value)
        };
        let (room, name) = (named("room")?, named("name")?);
        let after = match text_param(query, "after").map_err(|e| json_error(400, &e))? {
            None => 0,
            Some(after) => after
                .parse()
                .map_err(|_| json_error(400, "after must be a message id"))?,
        };
        let caller = self.limiter.caller(req).to_string();
        Ok(Member {
            room,
            name,
            after,
            caller,
        })
    }

    /// The room's last messages first (those after `after` for a member that resumes), then
    /// everything posted from now on (each once).
    fn open(&self, ws: &mut Ws<'_>, me: &mut Member) {
        ws.join_after(&me.room, me.after);
    }

    fn message(&self, ws: &mut Ws<'_>, me: &mut Member, msg: Message) {
        match msg {
            Message::Text(text) if text.len() <= MAX_TEXT => {
                if self.limiter.admit_write(&me.caller) {
                    self.post(&me.room, &me.name, &text, |_| {});
                } else {
                    ws.send_text(TOO_MANY);
                }
            }
            Message::Text(_) => ws.close(1009),
            Message::Binary(_) => ws.close(1003),
        }
    }
}

fn main() -> std::process::ExitCode {
    cli::run("chat", serve)
}

fn serve() -> std::io::Result<()> {
    let options = cli::Options::parse(
        &[
            "--port",
            "--workers",
            "--max-connections",
            "--redis",
            "--allow-origin",
            "--proxies",
            "--trusted-proxies",
            "--tls-cert",
            "--tls-key",
            "--tls-port",
            "--log",
        ],
        &[],
        "A chat with live server figures: open http://127.0.0.1:PORT/ (default 8080).\n\
         --redis redis://HOST:PORT shares rooms and rate limits with the other instances\n\
         using that Redis server (needs a build with --features redis); on a Redis Cluster,\n\
         --redis redis+cluster://HOST:PORT,HOST:PORT/ names some of its nodes.\n\
         --allow-origin ORIGINS lets pages of those origins (comma-separated, or *) open the\n\
         chat's WebSocket; by default only pages of the chat's own host may.\n\
         --proxies N: the proxies in front, each appending to X-Forwarded-For (default 0:\n\
         none, the caller is always the connection's address); for a request from one of\n\
         them the rate limit's caller is the entry N-th from the right (the connection's\n\
         address when a request has fewer). They are trusted on this host only, or\n\
         --trusted-proxies NETWORKS (comma-separated, e.g. 10.0.0.0/8,127.0.0.1) where\n\
         they connect from; anyone else's X-Forwarded-For is ignored.\n\
         --tls-cert FILE --tls-key FILE (PEM) serve HTTPS (and WSS) only (needs a build\n\
         with --features tls); with --tls-port P, HTTPS on P and plain HTTP on --port, one\n\
         server: the same rooms, ids, limits and /metrics on both.\n\
         --log LEVEL (error, warn, info, debug): the library's events and an access log\n\
         on standard error.",
    )?;
    let log = options
        .get::<String>("--log")?
        .map(|l| level(&l))
        .transpose()?;
    if let Some(level) = log {
        tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let origins = options
        .get::<String>("--allow-origin")?
        .map_or(Origins::SameHost, |o| Origins::parse(&o));
    let fleet = fleet(options.get("--redis")?)?;
    let proxies = options.get::<usize>("--proxies")?.unwrap_or(0);
    let mut server = options.server(8080)?.proxies(proxies);
    if let Some(networks) = options.get::<String>("--trusted-proxies")? {
        server = server.trust_proxies(networks.split(','), proxies)?;
    }
    if log.is_some() {
        server = server.access_log(access_line);
    }
    let server = server.history(
        History::new(HISTORY)
            .rooms(HISTORY_ROOMS)
            .bytes(HISTORY_BYTES),
    );
    let rooms = server.rooms();
    let control = server.control();
    control.shutdown_on_signals()?;
    // Writes (posts and WebSocket messages) are limited per caller; pages and figures are not.
    #[allow(unused_mut)] // a fleet needs the `redis` feature
    let mut limit = RateLimit::per_address(5, 0)
        .unlimited_reads()
        .refusal(json_response(429, TOO_MANY));
    #[allow(unused_mut)] // a fleet needs the `redis` feature
    let mut server = server;
    #[cfg(feature = "redis")]
    if let Some(fleet) = &fleet {
        server = server.fleet(fleet);
        limit = web::fleet::LimitAcrossFleet::fleet(limit, fleet);
        eprintln!("chat: one instance of a fleet, through {fleet:?}");
    }
    let _ = &fleet;
    let limiter = limit.limiter();
    let chat = Arc::new(Chat {
        rooms: rooms.clone(),
        limiter: limiter.clone(),
        origins,
    });
    // Every browser offers permessage-deflate: the chat accepts it whenever it is built in
    // (the default).
    let server = cli::deflate(server, cfg!(feature = "deflate"))?;
    let server = server
        .websocket("/ws", Arc::clone(&chat))
        .sse("/sse", Arc::clone(&chat));
    let baseline = Arc::new(OnceLock::new());
    // The runtime of the chat's async code (one thread: it only waits); the library starts
    // none of its own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("chat-async")
        .enable_all()
        .build()?;
    let app = routes(&chat, control, baseline, runtime.handle()).handler();
    let addrs = server.local_addrs()?;
    eprintln!("chat: {}://{}/", options.scheme("http"), addrs[0]);
    if let Some(tls) = addrs.get(1) {
        eprintln!("chat: https://{tls}/");
    }
    server.run(wrap(vec![limiter.layer()], app))?;
    // Nothing is in flight once the server has stopped: the runtime's thread ends at once.
    runtime.shutdown_background();
    eprintln!("chat: stopped");
    Ok(())
}

/// `--redis URL`: this instance's way into the fleet.
#[cfg(feature = "redis")]
fn fleet(url: Option<String>) -> std::io::Result<Option<web::fleet::Fleet>> {
    url.map(|url| web::fleet::Fleet::new(&url).map_err(|e| cli::usage(e.to_string())))
        .transpose()
}

/// `--redis URL` without the `redis` feature: a usage error that says how to build it.
#[cfg(not(feature = "redis"))]
fn fleet(url: Option<String>) -> std::io::Result<Option<std::convert::Infallible>> {
    match url {
        Some(_) => Err(cli::usage(
            "--redis needs the chat built with the redis feature: \
             cargo run --release --features redis --example chat -- --redis redis://HOST:PORT",
        )),
        None => Ok(None),
    }
}

/// `--log LEVEL`'s level.
fn level(name: &str) -> std::io::Result<tracing::Level> {
    name.parse().map_err(|_| {
        cli::usage(format!(
            "--log {name}: a level is error, warn, info or debug"
        ))
    })
}

/// One access-log line per exchange, through `tracing` (target `chat::access`).
fn access_line(a: &Access<'_>) {
    tracing::info!(
        target: "chat::access",
        method = a.method,
        target = a.target,
        status = a.status,
        bytes = a.bytes,
        micros = u64::try_from(a.duration.as_micros()).unwrap_or(u64::MAX),
        client = %a.client_addr.map(|ip| ip.to_string()).unwrap_or_default(),
        peer = %a.peer.map(|p| p.to_string()).unwrap_or_default(),
        protocol = a.protocol.as_str(),
        tls = a.tls,
        route = a.route,
        kind = ?a.kind,
    );
}

/// The chat's HTTP API (WebSocket and event streams have routes of their own).
fn routes(
    chat: &Arc<Chat>,
    control: Control,
    baseline: Arc<Baseline>,
    tasks: &tokio::runtime::Handle,
) -> Router {
    let with_chat = |answer: fn(&Chat, Request) -> Response| {
        let chat = Arc::clone(chat);
        move |req: Request| answer(&chat, req)
    };
    let stats = {
        let chat = Arc::clone(chat);
        let control = control.clone();
        move |_req: Request| json_response(200, stats_json(&chat, &control, &baseline))
    };
    let history = {
        let (chat, tasks) = (Arc::clone(chat), tasks.clone());
        move |req: Request| history(&chat, &tasks, req)
    };
    Router::new()
        .get("/", |_req| html_response(200, PAGE))
        .post("/api/messages", with_chat(post_message))
        .get("/api/stats", stats)
        .get("/api/rooms", with_chat(presence))
        .get("/api/history", history)
        .get("/metrics", move |_req| control.metrics_response())
        .get("/poll", with_chat(long_poll))
        .method_not_allowed(json_response(405, r#"{"error":"method not allowed"}"#))
        .fallback(|_req| json_response(404, r#"{"error":"not found"}"#))
}

/// `POST /api/messages?room=R[&name=N]`: says the body in R; `201 {"ok":true,"id":ID}`.
fn post_message(chat: &Chat, req: Request) -> Response {
    let query = query_of(req.path());
    let named = |what: &str, absent: &str| -> Result<String, String> {
        let value = text_param(query, what)?.unwrap_or_else(|| absent.to_owned());
        check_name(what, &value)?;
        Ok(value)
    };
    let (room, name) = match (named("room", ""), named("name", "api")) {
        (Ok(room), Ok(name)) => (room, name),
        (Err(e), _) | (_, Err(e)) => return json_error(400, &e),
    };
    let Ok(text) = std::str::from_utf8(req.body()) else {
        return json_error(400, "the body must be UTF-8 text");
    };
    if text.is_empty() || text.len() > MAX_TEXT {
        return json_error(400, "a text of 1 to 4096 bytes is needed");
    }
    // The id is known once the message has its place (in a fleet, when Redis has published
    // it): the reply waits for it, the worker does not.
    let (reply, later) = defer();
    chat.post(&room, &name, text, move |id| {
        reply.send(match id {
            Some(id) => json_response(201, format!(r#"{{"ok":true,"id":{id}}}"#)),
            None => json_error(503, "the message could not be posted; try again"),
        });
    });
    later
}

/// `GET /api/rooms?room=R`: `{"room":R,"members":N}`, N on every instance.
fn presence(chat: &Chat, req: Request) -> Response {
    match room_of(&req) {
        Ok(room) => json_response(
            200,
            format!(
                r#"{{"room":{},"members":{}}}"#,
                json_string(&room),
                chat.rooms.members_everywhere(&room)
            ),
        ),
        Err(refusal) => refusal,
    }
}

/// `GET /api/history?room=R`: the room's recent messages, from async code.
fn history(chat: &Chat, tasks: &tokio::runtime::Handle, req: Request) -> Response {
    let room = match room_of(&req) {
        Ok(room) => room,
        Err(refusal) => return refusal,
    };
    if chat.rooms.last_id(&room).is_some()
        && let Err(refusal) = chat.full_replay(&req)
    {
        return refusal;
    }
    let rooms = chat.rooms.clone();
    answer_async(tasks, async move {
        let recent = recent(rooms, room).await;
        messages_json(recent.iter().map(|(_, line)| &**line))
    })
}

/// What `web::http::answer_async` does, for a chat built without the `tokio` feature (on by
/// default): the reply deferred, the future spawned on the runtime to send it.
#[cfg(not(feature = "tokio"))]
fn answer_async(
    tasks: &tokio::runtime::Handle,
    answer: impl std::future::Future<Output = Response> + Send + 'static,
) -> Response {
    let (reply, later) = defer();
    drop(tasks.spawn(async move { reply.send(answer.await) }));
    later
}

/// The room's recent messages, once this instance's copy of the room is complete (in a
/// fleet, after the room's history was read from Redis): the library's callback, awaited.
async fn recent(rooms: Rooms, room: String) -> Vec<(u64, Arc<str>)> {
    let (complete, is_complete) = tokio::sync::oneshot::channel();
    rooms.follow_then(&room, move |follow| drop(complete.send(follow)));
    // Held while reading: the room is followed, so nothing is read from Redis on this thread.
    let _follow = is_complete.await;
    rooms.since(&room, 0, || {})
}

/// `GET /poll?room=R&after=ID`: a long-poll on R.
fn long_poll(chat: &Chat, req: Request) -> Response {
    let room = match room_of(&req) {
        Ok(room) => room,
        Err(refusal) => return refusal,
    };
    let after = match text_param(query_of(req.path()), "after") {
        Ok(None) => 0,
        Ok(Some(after)) => match after.parse() {
            Ok(after) => after,
            Err(_) => return json_error(400, "after must be a message id"),
        },
        Err(e) => return json_error(400, &e),
    };
    if after == 0
        && chat.rooms.last_id(&room).is_some()
        && let Err(refusal) = chat.full_replay(&req)
    {
        return refusal;
    }
    chat.poll(&room, after)
}

/// The process's memory and open connections when the figures were first asked for: what
/// "bytes per added connection" counts from (the workers' stacks and first buffers are in it,
/// so they are not counted as any connection's).
type Baseline = OnceLock<(u64, u64)>;

/// Fewer connections added than this and the growth per connection is the allocator's noise
/// (a page is 4 096 bytes): the figure is `null`.
const MIN_ADDED: u64 = 100;

/// The server's figures: what the library reports, and this process's memory.
fn stats_json(chat: &Chat, control: &Control, baseline: &Baseline) -> String {
    let s = control.stats();
    let rss = rss_bytes();
    let open = s.open_connections as u64;
    let &(rss0, open0) = baseline.get_or_init(|| (rss, open));
    let added = open.saturating_sub(open0);
    let per_connection = if added >= MIN_ADDED {
        (rss.saturating_sub(rss0) / added).to_string()
    } else {
        "null".to_owned()
    };
    let rooms = chat.rooms.list().len();
    format!(
        r#"{{"open_connections":{},"websockets":{},"requests":{},"held_bytes":{},"rss_bytes":{rss},"bytes_per_added_connection":{per_connection},"connections_added":{added},"connections":{},"event_streams":{},"out_of_descriptors":{},"fleet_errors":{},"fleet_dropped":{},"fleet_local_decisions":{},"fleet_local_reads":{},"rooms":{rooms}}}"#,
        s.open_connections,
        s.websockets,
        s.requests,
        s.held_bytes,
        s.connections,
        s.event_streams,
        s.out_of_descriptors,
        s.fleet_errors,
        s.fleet_dropped,
        s.fleet_local_decisions,
        s.fleet_local_reads,
    )
}

/// This process's resident memory, from `/proc/self/status` (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// A JSON error reply: `{"error": what}` with `status`.
fn json_error(status: u16, what: &str) -> Response {
    json_response(status, format!(r#"{{"error":{}}}"#, json_string(what)))
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
