//! What is counted and logged of one exchange as it starts: its status in the batch's tally
//! and, with an access log, its record (written now, or kept until the exchange ends).

use std::time::Instant;

use crate::http::Request;

use super::Origin;
use super::app::App;
use crate::server::access::{self, AccessKind, DynAccessLog, Label};
use crate::server::figures::Tally;
use crate::server::replies::ReplyTo;

/// What is counted and logged of one request's answer.
pub(crate) struct Record<'t> {
    pub(crate) tally: &'t mut Tally,
    log: Option<&'t DynAccessLog>,
    /// The request's method and target, copied before the handler takes it (for the log and
    /// a stall's report).
    pub(crate) label: Label,
    pub(crate) began: Instant,
    peer: Option<std::net::SocketAddr>,
    reply_to: ReplyTo,
    /// The HTTP/2 stream (0 for a connection's one exchange).
    stream: u32,
}

impl<'t> Record<'t> {
    #[inline]
    pub(crate) fn of(
        app: &App<'t>,
        request: &Request,
        origin: &Origin,
        tally: &'t mut Tally,
    ) -> Record<'t> {
        Record::labelled(app, (request.method(), request.path()), origin, tally)
    }

    /// For a request refused before it could be read.
    #[inline]
    pub(crate) fn unread(app: &App<'t>, origin: &Origin, tally: &'t mut Tally) -> Record<'t> {
        Record::labelled(app, ("", ""), origin, tally)
    }

    #[inline]
    /// (The label is made in its place: it is a few hundred bytes.)
    fn labelled(
        app: &App<'t>,
        (method, target): (&str, &str),
        origin: &Origin,
        tally: &'t mut Tally,
    ) -> Record<'t> {
        Record {
            tally,
            log: app.server().and_then(|s| s.access_log.as_deref()),
            label: Label::new(method, target),
            began: origin.now,
            peer: origin.peer,
            reply_to: origin.reply_to,
            stream: origin.stream,
        }
    }

    /// The reply is complete in the output: `status`, `bytes` of it.
    pub(crate) fn now(&mut self, status: u16, bytes: u64) {
        self.tally.replied(status);
        if let Some(log) = self.log {
            access::now(
                log,
                Some(&self.label),
                (status, bytes),
                self.began,
                self.peer,
            );
        }
    }

    /// The exchange goes on past the handler (`status` and `bytes` sent so far, 0 for none).
    pub(crate) fn later(&mut self, kind: AccessKind, status: u16, bytes: u64) {
        if status > 0 {
            self.tally.replied(status);
        }
        if let (Some(_), ReplyTo::Conn(id) | ReplyTo::Stream(id)) = (self.log, self.reply_to) {
            access::later(
                (id, self.stream),
                &self.label,
                self.began,
                self.peer,
                (kind, status, bytes),
            );
        }
    }
}
