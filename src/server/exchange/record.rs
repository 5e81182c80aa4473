//! What is counted and logged of one exchange as it starts: its status in the batch's tally
//! and, with an access log, its record (written now, or kept until the exchange ends): where
//! it came from (the peer, the client through trusted proxies, the protocol, TLS) and the
//! route a router matched.

use std::time::Instant;

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
    /// The access log, and where the exchange came from (made only when there is a log).
    log: Option<(&'t DynAccessLog, Came)>,
    /// The request's method and target, for the log and a stall's report.
    pub(crate) label: Label<'t>,
    pub(crate) began: Instant,
    /// A handler ran with the route kept for the log (see [`Record::handler_runs`]).
    routed: bool,
    reply_to: ReplyTo,
    /// The HTTP/2 stream (0 for a connection's one exchange).
    stream: u32,
}

impl<'t> Record<'t> {
    #[inline]
    pub(crate) fn of(
        app: &App<'t>,
        (request, label): (&Request, Label<'t>),
        rules: ReplyRules,
        origin: &Origin,
        tally: &'t mut Tally,
    ) -> Record<'t> {
        let mut record = Record::labelled(app, label, origin, tally);
        if let Some((_, came)) = &mut record.log {
            came.protocol = match (origin.stream, rules.http10) {
                (0, true) => Protocol::Http10,
                (0, false) => Protocol::Http11,
                _ => Protocol::Http2,
            };
            // (Read only for the log: what proxies forwarded is parsed then alone.)
            came.client_addr = request.client_addr();
        }
        record
    }

    /// For a request refused before it could be read.
    #[inline]
    pub(crate) fn unread(app: &App<'t>, origin: &Origin, tally: &'t mut Tally) -> Record<'t> {
        Record::labelled(app, Label::default(), origin, tally)
    }

    #[inline]
    fn labelled(
        app: &App<'t>,
        label: Label<'t>,
        origin: &Origin,
        tally: &'t mut Tally,
    ) -> Record<'t> {
        let protocol = match origin.stream {
            0 => Protocol::Http11,
            _ => Protocol::Http2,
        };
        let log = app.server().and_then(|s| s.access_log.as_deref());
        Record {
            tally,
            log: log.map(|log| (log, Came::peer(origin.peer, protocol, origin.tls))),
            label,
            began: origin.now,
            routed: false,
            reply_to: origin.reply_to,
            stream: origin.stream,
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

    /// The reply is complete in the output: `status`, `bytes` of it.
    pub(crate) fn now(&mut self, status: u16, bytes: u64) {
        self.tally.replied(status);
        if let Some((log, came)) = self.log {
            self.route(|route| {
                let at = (self.began, &came, route);
                access::now(log, self.label, (status, bytes), at);
            });
        }
    }

    /// The exchange goes on past the handler (`status` and `bytes` sent so far, 0 for none).
    pub(crate) fn later(&mut self, kind: AccessKind, status: u16, bytes: u64) {
        if status > 0 {
            self.tally.replied(status);
        }
        if let (Some((_, came)), ReplyTo::Conn(id) | ReplyTo::Stream(id)) =
            (&self.log, self.reply_to)
        {
            self.route(|route| {
                let at = (self.began, came, route);
                access::later((id, self.stream), self.label, at, (kind, status, bytes));
            });
        }
    }
}
