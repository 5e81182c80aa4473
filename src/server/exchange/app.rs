//! What an exchange is served with: a server's handler, routes, hooks, budget and figures, or
//! (`handle_conn`) a handler alone — and the routes a request may be for.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::http::fields::has_token;
use crate::http::{Request, Response};
use crate::live::Command;
use crate::sse::SseApp;
use crate::ws::WsApp;

use crate::server::shared::{LiveRoute, ServerShared};
use crate::server::taken::DynTaken;

/// What dispatching serves with.
#[derive(Clone, Copy)]
pub(crate) enum App<'a> {
    /// A server's connection: its handler, routes, hooks, budget, figures and remote.
    Server(&'a ServerShared),
    /// `handle_conn`: a handler alone — no hooks, no budget, no figures, no live routes.
    HandlerOnly(&'a dyn Fn(Request) -> Response),
}

impl<'a> App<'a> {
    #[inline]
    pub(crate) fn handler(self) -> &'a dyn Fn(Request) -> Response {
        match self {
            App::Server(shared) => &*shared.handler,
            App::HandlerOnly(handler) => handler,
        }
    }

    #[inline]
    pub(crate) fn server(self) -> Option<&'a ServerShared> {
        match self {
            App::Server(shared) => Some(shared),
            App::HandlerOnly(_) => None,
        }
    }

    #[inline]
    pub(crate) fn taken(self) -> Option<&'a DynTaken> {
        self.server().and_then(|s| s.taken.as_deref())
    }

    #[inline]
    pub(crate) fn budget(self) -> Option<&'a AtomicU64> {
        self.server().and_then(|s| s.budget.as_ref())
    }

    /// The server's remote, once it runs.
    #[inline]
    pub(crate) fn remote(self) -> Option<&'a reactor::Remote<Command>> {
        self.server().and_then(|s| s.remote.get())
    }

    /// How long `handle_conn` waits for a deferred reply.
    #[inline]
    pub(crate) fn reply_timeout(self) -> std::time::Duration {
        self.server()
            .map_or(crate::server::limits::REPLY_TIMEOUT, |s| s.reply_timeout)
    }

    /// Takes one request from the budget: false when it is spent.
    #[inline]
    pub(crate) fn spend(&self) -> bool {
        self.budget().is_none_or(|b| {
            b.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        })
    }

    #[inline]
    pub(crate) fn budget_spent(&self) -> bool {
        self.budget()
            .is_some_and(|b| b.load(Ordering::Acquire) == 0)
    }

    #[inline]
    pub(crate) fn shutting_down(&self) -> bool {
        self.remote().is_some_and(|r| r.is_shutting_down())
    }

    /// The WebSocket route `req` is for: its path, and it asks for WebSocket (a key, or
    /// `Upgrade: websocket`). A request to the route that asks badly is the route's to refuse
    /// (400, RFC 6455 §4.2.1), not the HTTP handler's.
    #[inline]
    pub(crate) fn websocket_route(&self, req: &mut Request) -> Option<&'a LiveRoute<dyn WsApp>> {
        let route = self.websocket_path(req)?;
        let asks = !req.header_bytes("sec-websocket-key").is_empty()
            || req
                .headers()
                .any(|h| h.name() == "upgrade" && has_token(h.value(), "websocket"));
        asks.then_some(route)
    }

    /// The WebSocket route at `req`'s path (for an extended CONNECT, which asks for WebSocket
    /// by its `:protocol`).
    #[inline]
    pub(crate) fn websocket_path(&self, req: &mut Request) -> Option<&'a LiveRoute<dyn WsApp>> {
        let routes = &self.server()?.websocket;
        routes.iter().find(|r| r.pattern.route(req))
    }

    /// The Server-Sent Events route `req` is for: its path, with `GET` (or `HEAD`).
    #[inline]
    pub(crate) fn sse_route(&self, req: &mut Request) -> Option<&'a LiveRoute<dyn SseApp>> {
        let routes = &self.server()?.sse;
        if routes.is_empty() || !(req.method_is("GET") || req.method_is("HEAD")) {
            return None;
        }
        routes.iter().find(|r| r.pattern.route(req))
    }
}
