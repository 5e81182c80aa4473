//! A connection in the reactor: HTTP/1.1 until it upgrades to WebSocket, in the same slab entry.
//! The one place that knows both protocols.

use std::sync::Arc;

use reactor::{ConnId, Io, Service, Strand, Then, Wake};

use crate::live::{Command, LiveConn};
use crate::rooms::{Delivery, local_members};

use super::h2_strand::H2Strand;
use super::http_strand::HttpStrand;
use super::shared::ServerShared;

/// Makes the strand of each connection a worker accepts.
pub(crate) struct HttpService {
    pub(crate) shared: Arc<ServerShared>,
    /// This worker's index.
    pub(crate) worker: u32,
}

impl Service for HttpService {
    type Strand = ConnStrand;

    fn open(
        &mut self,
        _stream: &mio::net::TcpStream,
        peer: std::net::SocketAddr,
        _id: ConnId,
    ) -> ConnStrand {
        // Runs on the worker's thread: its strands and `defer` there reach this server.
        super::worker::install(&self.shared);
        ConnStrand::Http(HttpStrand::new(super::peer::Peer::new(peer)))
    }

    /// No connection left on this worker: the request and output buffer pools are emptied.
    fn idle(&mut self) {
        crate::http::message::pool::clear();
        super::output::clear_pool();
        crate::ws::worker_idle();
        crate::rooms::worker_idle();
        crate::live::forget_worker_frames();
        super::h2_strand::worker_idle();
    }

    /// One message per worker reaches its members of a room, or its share of a broadcast.
    fn fan_out(&mut self, msg: &Command, to: &mut Vec<ConnId>) {
        match msg {
            Command::Room(Delivery::Publish { room, .. }) => local_members(room, to),
            Command::FanOut { ids, .. } => {
                to.extend(ids.iter().filter(|id| id.worker() == self.worker))
            }
            _ => {}
        }
    }
}

/// A connection's strand.
pub(crate) enum ConnStrand {
    /// Serving HTTP requests.
    Http(HttpStrand),
    /// A connection the server pushes to — upgraded to WebSocket, or a Server-Sent Events
    /// stream — of whatever application. Its state is boxed so that HTTP connections — most
    /// connections — keep a small slab entry; a live connection costs its entry plus this one
    /// fixed-size allocation, and no buffer while idle.
    Live(Box<dyn LiveConn>),
    /// Serving HTTP/2: its streams and the codec's state, boxed (a connection becomes one
    /// after its preface).
    H2(Box<H2Strand>),
}

impl ConnStrand {
    /// Runs `step` on the HTTP strand; if it accepted an upgrade, becomes a WebSocket strand and
    /// starts it.
    fn http(
        &mut self,
        io: &mut Io<'_, Command>,
        step: impl FnOnce(&mut HttpStrand, &mut Io<'_, Command>) -> Then,
    ) -> Then {
        let ConnStrand::Http(http) = self else {
            return Then::Close;
        };
        let next = step(http, io);
        if let Some((early, peer)) = http.take_http2() {
            let h2 = super::worker::with(|shared| {
                let on = (io.id().worker() as usize, io.now());
                shared.map(|shared| Box::new(H2Strand::new(peer, shared, on, &early)))
            });
            let Some(h2) = h2 else {
                return Then::Close; // never: the worker installed its server at open
            };
            *self = ConnStrand::H2(h2);
            return match self {
                ConnStrand::H2(h2) => h2.resume(io, false),
                _ => Then::Close,
            };
        }
        let Some((upgrade, out)) = http.take_upgrade() else {
            return next;
        };
        let super::dispatch::Upgrade { conn, early } = *upgrade;
        *self = ConnStrand::Live(conn);
        match self {
            ConnStrand::Live(live) => live.start(io, out, &early),
            _ => Then::Close,
        }
    }
}

impl Strand for ConnStrand {
    type Msg = Command;

    fn resume(&mut self, io: &mut Io<'_, Command>, wake: Wake) -> Then {
        match self {
            ConnStrand::Http(_) => self.http(io, |h, io| h.resume(io, wake == Wake::Timeout)),
            ConnStrand::Live(live) => live.resume(io, wake == Wake::Timeout),
            ConnStrand::H2(h2) => h2.resume(io, wake == Wake::Timeout),
        }
    }

    fn drain(&mut self, io: &mut Io<'_, Command>) -> Then {
        match self {
            ConnStrand::Http(_) => self.http(io, |h, io| h.drain(io)),
            ConnStrand::Live(live) => live.drain(io),
            ConnStrand::H2(h2) => h2.drain(io),
        }
    }

    fn message(&mut self, io: &mut Io<'_, Command>, msg: Command) -> Then {
        match self {
            ConnStrand::Http(_) => match msg {
                Command::Http(msg) => self.http(io, |h, io| h.message(io, msg)),
                _ => self.http(io, |h, io| h.run(io)),
            },
            ConnStrand::Live(live) => live.message(io, msg),
            ConnStrand::H2(h2) => match msg {
                Command::Http(msg) => h2.message(io, msg),
                other => {
                    let stream = io.addressed();
                    h2.command(io, std::slice::from_ref(&stream), other)
                }
            },
        }
    }

    /// A shared frame a live connection handed the worker to send with others, partly taken.
    fn unsent(&mut self, io: &mut Io<'_, Command>, frame: Arc<[u8]>, from: usize) -> Then {
        match self {
            ConnStrand::Live(live) => live.unsent(io, frame, from),
            // (Only live connections gather their sends.)
            ConnStrand::Http(_) | ConnStrand::H2(_) => Then::Close,
        }
    }

    /// A room's message for several streams of an HTTP/2 connection: stepped in one resume.
    fn message_streams(&mut self, io: &mut Io<'_, Command>, streams: &[u32], msg: Command) -> Then {
        match self {
            ConnStrand::H2(h2) if !matches!(msg, Command::Http(_)) => h2.command(io, streams, msg),
            _ => reactor::message_each(self, io, streams, msg),
        }
    }

    /// A message to every connection of the worker (a heartbeat, a liveness sweep) is for
    /// live connections only (and HTTP/2 connections that carry some).
    fn wants(&self, msg: &Command) -> bool {
        match self {
            ConnStrand::Live(live) => live.wants(msg),
            ConnStrand::H2(h2) => h2.wants(msg),
            ConnStrand::Http(_) => false,
        }
    }

    fn closed(&mut self, id: ConnId) {
        match self {
            ConnStrand::Http(http) => http.closed(id),
            ConnStrand::Live(live) => live.closed(id),
            ConnStrand::H2(h2) => h2.closed(id),
        }
        // An exchange still going on (a session, a reply the client did not wait for) ends
        // with its connection.
        super::worker::with(|shared| {
            if let Some(log) = shared.and_then(|s| s.access_log.as_deref()) {
                super::access::done(log, (id, 0));
            }
        });
    }

    fn held_bytes(&self) -> usize {
        match self {
            ConnStrand::Http(h) => h.held_bytes(),
            ConnStrand::Live(live) => live.held_bytes(),
            ConnStrand::H2(h2) => h2.held_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    /// What an idle connection costs the worker's slab; fails if a field makes it grow.
    #[test]
    fn an_idle_connection_is_a_48_byte_slab_entry() {
        // The peer's address, the busy part (null while idle) and the deferred reply awaited.
        assert_eq!(size_of::<super::HttpStrand>(), 24);
        // The WebSocket variant is one (wide) pointer: 16 bytes, and the tag.
        assert_eq!(size_of::<super::ConnStrand>(), 24);
        // Around it the reactor keeps the socket (4 bytes; debug builds of mio add a selector
        // id), the generation (4), the timer link (12) and flags (1); the slab's vacant variant
        // fits in the niche of the strand's tag.
        let socket_extra = (size_of::<mio::net::TcpStream>() - 4).next_multiple_of(8);
        assert_eq!(
            reactor::entry_size::<super::ConnStrand>(),
            48 + socket_extra
        );
    }
}
