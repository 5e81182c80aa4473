//! The subscriber thread's connections: the one to one Redis server (`SUBSCRIBE`), or on a
//! cluster one to each master that owns a subscribed room's channel (`SSUBSCRIBE`, sharded
//! pub/sub: a message reaches the instances through its channel's shard alone, so adding
//! masters adds pub/sub capacity) — one connection per shard, not per room.
//!
//! A room whose slot moved (Redis ends its subscription with a `sunsubscribe` of its own, or
//! refuses a new one with `MOVED`) is subscribed again where the map, read again, says.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::bell::{Ear, Heard};
use super::cluster::{self, Masters, Node, Redirect};
use super::resp::RedisConn;
use super::servers::Session;

/// What [`Listener::next`] found.
pub(crate) enum Awaited {
    Reply(Value),
    /// The bell rang first.
    Rung,
    /// Nothing came within the wait.
    Quiet,
}

/// What a pushed reply says, whichever pub/sub sent it.
pub(crate) enum Pushed<'a> {
    Message {
        channel: &'a [u8],
        payload: &'a [u8],
    },
    Subscribed {
        channel: &'a [u8],
    },
    Unsubscribed {
        channel: &'a [u8],
    },
    /// A cluster's master refused a subscription: its map is out of date.
    Moved,
    Unknown,
}

impl Pushed<'_> {
    /// `message`/`smessage`, `subscribe`/`ssubscribe`, `unsubscribe`/`sunsubscribe`.
    pub(crate) fn of(reply: &Value) -> Pushed<'_> {
        if Redirect::of(reply).is_some() {
            return Pushed::Moved;
        }
        let Value::Array(parts) = reply else {
            return Pushed::Unknown;
        };
        let kind = |k: &[u8], name: &[u8]| k == name || k.strip_prefix(b"s") == Some(name);
        match parts.as_slice() {
            [
                Value::BulkString(k),
                Value::BulkString(channel),
                Value::BulkString(payload),
            ] if kind(k, b"message") => Pushed::Message { channel, payload },
            [
                Value::BulkString(k),
                Value::BulkString(channel),
                Value::Int(_),
            ] => {
                if kind(k, b"subscribe") {
                    Pushed::Subscribed { channel }
                } else if kind(k, b"unsubscribe") {
                    Pushed::Unsubscribed { channel }
                } else {
                    Pushed::Unknown
                }
            }
            _ => Pushed::Unknown,
        }
    }
}

/// The subscriptions' connections.
pub(crate) enum Listener {
    One(RedisConn),
    Shards(Shards),
}

/// A cluster's shards a subscriber listens to.
pub(crate) struct Shards {
    masters: Masters,
    conns: Vec<(Node, RedisConn)>,
    /// Where each subscribed room's channel is subscribed, and the channel's slot.
    of_room: HashMap<Arc<str>, (Node, u16)>,
}

impl Listener {
    pub(crate) fn of(session: Session) -> Listener {
        match session {
            Session::One(conn) => Listener::One(conn),
            Session::Cluster(masters) => Listener::Shards(Shards {
                masters,
                conns: Vec::new(),
                of_room: HashMap::new(),
            }),
        }
    }

    /// Subscribes to `room`'s `channel`: sent, its confirmation coming among the messages.
    pub(crate) fn subscribe(&mut self, room: &Arc<str>, channel: &[u8]) -> io::Result<()> {
        match self {
            Listener::One(conn) => send(conn, "SUBSCRIBE", channel),
            Listener::Shards(shards) => {
                let slot = cluster::slot(channel);
                let node = shards.masters.owner(slot)?;
                let conn = shards.conn(&node)?;
                send(conn, "SSUBSCRIBE", channel)?;
                shards.of_room.insert(Arc::clone(room), (node, slot));
                Ok(())
            }
        }
    }

    /// Unsubscribes from `room`'s `channel`.
    pub(crate) fn unsubscribe(&mut self, room: &str, channel: &[u8]) -> io::Result<()> {
        match self {
            Listener::One(conn) => send(conn, "UNSUBSCRIBE", channel),
            Listener::Shards(shards) => {
                let Some((node, _)) = shards.of_room.remove(room) else {
                    return Ok(());
                };
                match shards.conns.iter_mut().find(|(n, _)| *n == node) {
                    Some((_, conn)) => send(conn, "SUNSUBSCRIBE", channel),
                    None => Ok(()),
                }
            }
        }
    }

    /// A subscription ended that was not asked to (its slot moved), or one was refused with
    /// `MOVED`: the map is read again; the rooms whose channel now lives elsewhere (or `room`,
    /// whose subscription ended) are to be subscribed again.
    pub(crate) fn moved(&mut self, room: Option<&str>) -> io::Result<Vec<Arc<str>>> {
        let Listener::Shards(shards) = self else {
            return Ok(room.map(Arc::from).into_iter().collect());
        };
        shards.masters.refresh()?;
        let mut again: Vec<Arc<str>> = Vec::new();
        for (name, (node, slot)) in &shards.of_room {
            let owner = shards.masters.owner(*slot).ok();
            if room == Some(&**name) || owner.as_ref() != Some(node) {
                again.push(Arc::clone(name));
            }
        }
        for name in &again {
            shards.of_room.remove(name);
        }
        let masters = shards.masters.masters();
        shards.conns.retain(|(node, _)| masters.contains(node));
        Ok(again)
    }

    /// The next pushed reply of any connection if one starts within `wait` (it must then be
    /// whole within the connection's timeout), or the bell `ear` hears rang first.
    pub(crate) fn next(&mut self, wait: Duration, ear: &Ear) -> io::Result<Awaited> {
        let mut conns: Vec<&mut RedisConn> = match self {
            Listener::One(conn) => vec![conn],
            Listener::Shards(shards) => shards.conns.iter_mut().map(|(_, c)| c).collect(),
        };
        if let Some(buffered) = conns.iter_mut().find(|c| c.has_buffered()) {
            return buffered.reply().map(Awaited::Reply);
        }
        let fds: Vec<_> = conns.iter().map(|c| c.fd()).collect();
        match ear.wait(&fds, wait)? {
            Heard::Readable(at) => match conns.get_mut(at) {
                Some(conn) => conn.reply_once_readable().map(Awaited::Reply),
                None => Ok(Awaited::Quiet),
            },
            Heard::Rung => Ok(Awaited::Rung),
            Heard::Quiet => Ok(Awaited::Quiet),
        }
    }
}

impl Shards {
    /// The subscribing connection to `node`, made if there is none.
    fn conn(&mut self, node: &Node) -> io::Result<&mut RedisConn> {
        let at = match self.conns.iter().position(|(n, _)| n == node) {
            Some(at) => at,
            None => {
                let conn = RedisConn::open(&self.masters.info(node), self.masters.timeout())?;
                self.conns.push((node.clone(), conn));
                self.conns.len() - 1
            }
        };
        Ok(&mut self.conns[at].1)
    }
}

fn send(conn: &mut RedisConn, command: &str, channel: &[u8]) -> io::Result<()> {
    conn.send(&redis::cmd(command).arg(channel).get_packed_command())
}
