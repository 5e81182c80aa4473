//! What all connections of a server share: its handler and hooks, limits, routes, settings,
//! figures, budgets and remote — made once when the server starts (`start.rs`), read by every
//! worker and strand.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use crate::http::router::Pattern;
use crate::http::{Request, Response};
use crate::live::{Command, LiveSettings, Stalls};
use crate::sse::SseApp;
use crate::ws::{WsApp, WsSettings};

use super::access::DynAccessLog;
use super::figures::Figures;
use super::limits::Limits;
use super::replies::Replies;
use super::taken::DynTaken;

/// A handler as the server stores it.
pub(crate) type DynHandler = dyn Fn(Request) -> Response + Send + Sync;

/// What all connections of a server share.
pub(crate) struct ServerShared {
    pub(crate) handler: Box<DynHandler>,
    pub(crate) taken: Option<Box<DynTaken>>,
    pub(crate) limits: Limits,
    /// For `serve_n`/`accept_n`: requests still to serve.
    pub(crate) budget: Option<AtomicU64>,
    /// What each worker answered.
    pub(crate) figures: Arc<[Figures]>,
    /// How handler calls that hold their worker are counted and reported (shared with the
    /// live connections' callbacks).
    pub(crate) stalls: Arc<Stalls>,
    /// The server's remote, set once the reactor exists: whether it is shutting down.
    pub(crate) remote: OnceLock<reactor::Remote<Command>>,
    /// Where WebSocket upgrades are accepted, and by whom.
    pub(crate) websocket: Vec<LiveRoute<dyn WsApp>>,
    /// Where Server-Sent Events streams are served, and by whom.
    pub(crate) sse: Vec<LiveRoute<dyn SseApp>>,
    /// What every WebSocket connection of the server is made with.
    pub(crate) ws_settings: Arc<WsSettings>,
    /// What every event stream of the server is made with.
    pub(crate) sse_settings: Arc<LiveSettings>,
    /// The deferred replies connections wait for.
    pub(crate) replies: Arc<Replies>,
    /// How long a deferred reply may take before the server answers 503.
    pub(crate) reply_timeout: std::time::Duration,
    /// What HTTP/2 request bodies arriving hold, all connections together.
    pub(crate) bodies: Arc<crate::live::OutputBudget>,
    /// Proxies in front, for requests' `client_addr`.
    pub(crate) proxies: crate::http::message::Proxies,
    /// The access log's hook, if the server has one.
    pub(crate) access_log: Option<Box<DynAccessLog>>,
    /// What HTTP/2 connections advertise; `None`: HTTP/2 is off.
    pub(crate) h2: Option<crate::h2::conn::Config>,
    /// How long an HTTP/2 client has to acknowledge our SETTINGS.
    pub(crate) h2_settings_timeout: std::time::Duration,
}

/// A WebSocket or event-stream route: the path it serves and its application.
pub(crate) struct LiveRoute<A: ?Sized> {
    pub(crate) pattern: Pattern,
    pub(crate) app: Box<A>,
}

impl ServerShared {
    #[inline]
    pub(crate) fn shutting_down(&self) -> bool {
        self.remote.get().is_some_and(|r| r.is_shutting_down())
    }

    /// The figures of worker `worker`.
    #[inline]
    pub(crate) fn figures(&self, worker: usize) -> &Figures {
        &self.figures[worker % self.figures.len()]
    }
}
