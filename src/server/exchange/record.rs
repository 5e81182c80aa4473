//! What is counted and logged of one exchange as it starts: its status in the batch's tally
//! and, with an access log, its record (written now, or kept until the exchange ends): where
//! it came from (the peer, the client through trusted proxies, the protocol, TLS) and the
//! route a router matched.

use std::net::IpAddr;

use crate::http::router::matched;
use crate::http::{ReplyRules, Request};

use super::Origin;
use super::app::App;
use crate::server::access::{self, AccessKind, Came, DynAccessLog, Label, Protocol};
use crate::server::figures::Tally;
use crate::server::replies::ReplyTo;

/// What is counted and logged of one request's answer.
pub(crate) struct Record<'t> {
    pub(crate) tally: &'t mut Tally,
    /// The access log, and the client's address through trusted proxies (read only when
    /// there is a log: what proxies forwarded is parsed then alone).
    log: Option<(&'t DynAccessLog, Option<IpAddr>)>,
    /// The request's method and target, for the log and a stall's report.
    pub(crate) label: Label<'t>,
    origin: &'t Origin,
    /// HTTP/1.0 (an HTTP/1.1 connection's exchange otherwise, or an HTTP/2 stream's).
    http10: bool,
    /// A handler ran with the route kept for the log (see [`Record::handler_runs`]).
    routed: bool,
}

impl<'t> Record<'t> {
    #[inline]
    pub(crate) fn of(
        app: &App<'t>,
        (request, label): (&Request, Label<'t>),
        rules: ReplyRules,
        origin: &'t Origin,
        tally: &'t mut Tally,
    ) -> Record<'t> {
        let mut record = Record::labelled(app, label, origin, tally);
        record.http10 = rules.http10;
        if let Some((_, client_addr)) = &mut record.log {
            *client_addr = request.client_addr();
        }
        record
    }

    /// For a request refused before it could be read.
    #[inline]
    pub(crate) fn unread(app: &App<'t>, origin: &'t Origin, tally: &'t mut Tally) -> Record<'t> {
        Record::labelled(app, Label::default(), origin, tally)
    }

    #[inline]
    fn labelled(
        app: &App<'t>,
        label: Label<'t>,
        origin: &'t Origin,
        tally: &'t mut Tally,
    ) -> Record<'t> {
        let log = app.server().and_then(|s| s.access_log.as_deref());
        Record {
            tally,
            log: log.map(|log| (log, origin.peer.map(|p| p.ip()))),
            label,
            origin,
            http10: false,
            routed: false,
        }
    }

    /// Runs the handler (`call`), with the route a router matches kept for the log when there
    /// is one.
    #[inline]
    pub(crate) fn handler_runs<T>(&mut self, call: impl FnOnce() -> T) -> T {
        if self.log.is_none() {
            return call();
        }
        matched::ask();
        let out = call();
        matched::stop();
        self.routed = true;
        out
    }

    /// `f` of the route matched (`""`: none, or no handler ran).
    fn route<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        match self.routed {
            true => matched::with(f),
            false => f(""),
        }
    }

    /// Where the exchange came from, for the log.
    fn came(&self, client_addr: Option<IpAddr>) -> Came {
        let origin = self.origin;
        Came {
            peer: origin.peer,
            client_addr,
            protocol: match (origin.stream, self.http10) {
                (0, true) => Protocol::Http10,
                (0, false) => Protocol::Http11,
                _ => Protocol::Http2,
            },
            tls: origin.tls,
        }
    }

    /// The reply is complete in the output: `status`, `bytes` of it.
    #[inline]
    pub(crate) fn now(&mut self, status: u16, bytes: u64) {
        self.tally.replied(status);
        if let Some((log, client_addr)) = self.log {
            self.log_now(log, client_addr, (status, bytes));
        }
    }

    /// Writes the exchange's line (out of line: the path without a log stays short).
    #[inline(never)]
    fn log_now(&self, log: &DynAccessLog, client_addr: Option<IpAddr>, sent: (u16, u64)) {
        let came = self.came(client_addr);
        self.route(|route| {
            access::now(log, self.label, sent, (self.origin.now, &came, route));
        });
    }

    /// The exchange goes on past the handler (`status` and `bytes` sent so far, 0 for none).
    pub(crate) fn later(&mut self, kind: AccessKind, status: u16, bytes: u64) {
        if status > 0 {
            self.tally.replied(status);
        }
        if let (Some((_, client_addr)), ReplyTo::Conn(id) | ReplyTo::Stream(id)) =
            (self.log, self.origin.reply_to)
        {
            let came = self.came(client_addr);
            self.route(|route| {
                let at = (self.origin.now, &came, route);
                access::later(
                    (id, self.origin.stream),
                    self.label,
                    at,
                    (kind, status, bytes),
                );
            });
        }
    }
}
