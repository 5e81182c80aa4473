//! The message every worker receives: what other threads send to its connections — WebSocket
//! messages and closes, event-stream events, the rooms' deliveries, deferred HTTP replies — and
//! what the server sends every connection of a worker (heartbeats, liveness sweeps).

use std::sync::Arc;

use reactor::{ConnId, Remote};

use crate::http::later::HttpMsg;
use crate::rooms::{Delivery, Message, Workers};

/// What other threads send to a worker's connections (through `WsSender`, `broadcast`,
/// `Rooms`, deferred replies and SSE senders): the worker's message type, internal.
#[derive(Clone, Debug)]
pub(crate) enum Command {
    /// To a WebSocket: send a message.
    Send(Message),
    /// To a worker: send `frame` to those of `ids` it serves (what `broadcast` sends, one per
    /// worker).
    FanOut {
        /// The recipients (the worker picks its own).
        ids: Arc<[ConnId]>,
        /// The encoded frame.
        frame: Arc<[u8]>,
    },
    /// From the rooms: a room's message for the worker's members of it, a join coming back, a
    /// room's history.
    Room(Delivery),
    /// To a Server-Sent Events stream: send this encoded event (what `SseSender` sends).
    Event(Arc<[u8]>),
    /// To every Server-Sent Events stream of a worker (sent to all with
    /// [`Remote::send_all`]): a comment line, if it has nothing else to send, so that proxies
    /// see traffic on an idle stream.
    Heartbeat,
    /// To every WebSocket of a worker (sent to all with [`Remote::send_all`], twice per
    /// [`Server::ping_interval`](crate::http::Server::ping_interval)): a liveness sweep. A
    /// connection silent since the sweep before is pinged; one still silent an interval after
    /// its ping is closed as gone.
    Sweep,
    /// To a WebSocket carried on a stream of a connection (HTTP/2): its connection's liveness
    /// sweep, taken once for all its streams — how many sweeps in a row found the peer silent
    /// (see [`Io::silent_sweeps`](reactor::Io::silent_sweeps)).
    Swept(u8),
    /// Close with this code.
    Close(u16),
    /// To an HTTP connection: the deferred reply a [`Reply`](crate::http::Reply) sends.
    Http(HttpMsg),
}

/// The rooms reach the workers through the server's remote.
impl Workers for Remote<Command> {
    fn count(&self) -> usize {
        self.workers()
    }

    fn to_worker(&self, worker: usize, delivery: Delivery) -> bool {
        self.send_worker(worker, Command::Room(delivery))
    }

    fn to_conn(&self, id: ConnId, delivery: Delivery) -> bool {
        self.send(id, Command::Room(delivery))
    }
}
