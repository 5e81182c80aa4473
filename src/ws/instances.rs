//! [`Instances`]: what rooms ask of the other instances of a fleet. The rooms know this trait
//! and never the fleet; `crate::fleet` implements it (over Redis), so the dependency runs one
//! way: the fleet uses the rooms, the rooms use whoever joined them to other instances.

use std::sync::Arc;
use std::time::Duration;

use super::Message;
use super::history::Entry;

/// The other instances of a fleet, as the rooms of one see them. No call waits on the network
/// beyond the fleet's timeout; sending calls never wait.
pub(crate) trait Instances: Send + Sync {
    /// Hands `msg` on to the other instances' members of `room`.
    fn publish(&self, room: &str, msg: &Message);

    /// Hands posted message `id` on to the other instances' members of `room`, and to the
    /// fleet's history of the room (its last `keep` messages, kept `ttl`).
    fn post(&self, room: &str, id: u64, text: &str, keep: usize, ttl: Duration);

    /// The next message id (the same message has it on every instance).
    fn take_id(&self) -> u64;

    /// `room`'s last `n` messages as the fleet keeps them, oldest first; `None` when they
    /// cannot be read now.
    fn history(&self, room: &str, n: usize) -> Option<Vec<Entry>>;

    /// The members of `room` on the other instances; `None` when that cannot be told now.
    fn others(&self, room: &str) -> Option<usize>;

    /// `room`'s first local member joined or its last left (the instance follows the room's
    /// messages from the others only while it has members or followers).
    fn changed(&self, room: &Arc<str>);
}
