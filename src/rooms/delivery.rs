//! What the rooms hand to the server's workers — a room's message for its members there, a
//! member's own join coming back, the fleet's history of a room — and the encoding step that
//! turns a message into what each kind of member is sent. The rooms know neither the protocols
//! nor the worker's message type: the layers above give them both ([`Encoding`], [`Workers`]).

use std::sync::Arc;

use reactor::ConnId;

use super::Message;
use super::history::Handed;
use crate::http::event_stream::Event;

/// A room's message as each kind of member is sent it, encoded once for all of them.
#[derive(Clone, Debug)]
pub(crate) struct Forms {
    /// For members that take whole messages (a WebSocket's frame).
    pub(crate) message: Arc<[u8]>,
    /// For members that take events (an event stream's event); `None` for a message they do
    /// not get (a binary one).
    pub(crate) event: Option<Arc<[u8]>>,
}

/// How the rooms encode what they deliver, given them by the layer that knows the protocols.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Encoding {
    /// A text message as members that take whole messages get it.
    pub(crate) text: fn(&str) -> Arc<[u8]>,
    /// A binary message as members that take whole messages get it.
    pub(crate) binary: fn(&[u8]) -> Arc<[u8]>,
    /// An event as members that take events get it.
    pub(crate) event: fn(&Event) -> Arc<[u8]>,
    /// A text as an event of its own, with its id when it has one.
    pub(crate) text_event: fn(Option<u64>, &str) -> Arc<[u8]>,
}

impl Encoding {
    /// `msg` for every kind of member.
    pub(crate) fn forms(&self, msg: &Message) -> Forms {
        match msg {
            Message::Text(text) => Forms {
                message: (self.text)(text),
                event: Some((self.text_event)(None, text)),
            },
            Message::Binary(bytes) => Forms {
                message: (self.binary)(bytes),
                event: None,
            },
        }
    }

    /// `event` for every kind of member: its data alone, as a text message, for members that
    /// take whole messages.
    pub(crate) fn event_forms(&self, event: &Event) -> Forms {
        Forms {
            message: (self.text)(event.data()),
            event: Some((self.event)(event)),
        }
    }
}

/// What the rooms send to a worker, or to one of its connections.
#[derive(Clone, Debug)]
pub(crate) enum Delivery {
    /// To a worker: `forms` for its members of `room` (one per worker with members).
    Publish {
        /// The room.
        room: Arc<str>,
        /// The message, encoded.
        forms: Forms,
    },
    /// To a connection, from itself: enter it in the worker's list of the room's members
    /// (queued by a join, behind the publishes already sent). Only the last join of a room
    /// the connection queued counts, and only while it is still a member.
    Join(Arc<str>),
    /// To a connection: the fleet's history of a room it joined, and its place in the room
    /// (see `Rooms::join_recent`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // only a fleet reads rooms elsewhere
    History(Handed),
}

/// The server's workers, as the rooms reach them (given when the server starts).
pub(crate) trait Workers: Send + Sync {
    /// How many workers the server has.
    fn count(&self) -> usize;
    /// Sends to a worker; `false` when its queue refused it.
    fn to_worker(&self, worker: usize, delivery: Delivery) -> bool;
    /// Sends to one connection; `false` when it is known gone or its worker's queue is full.
    fn to_conn(&self, id: ConnId, delivery: Delivery) -> bool;
}

/// An encoding for tests that shows what was encoded: `M:` and a text message, `B:` and a binary one, `E:` and the
/// event's data, `T<id>:` and a text.
#[cfg(any(test, fuzzing))]
pub(crate) const PLAIN: Encoding = Encoding {
    text: |t| format!("M:{t}").into_bytes().into(),
    binary: |b| [b"B:".as_slice(), b].concat().into(),
    event: |event| format!("E:{}", event.data()).into_bytes().into(),
    text_event: |id, text| match id {
        Some(id) => format!("T{id}:{text}").into_bytes().into(),
        None => format!("T:{text}").into_bytes().into(),
    },
};
