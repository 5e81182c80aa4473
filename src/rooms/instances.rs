//! [`Instances`]: what rooms ask of the other instances of a fleet. The rooms know this trait
//! and never the fleet; `crate::fleet` implements it (over Redis), so the dependency runs one
//! way: the fleet uses the rooms, the rooms use whoever joined them to other instances.

use std::sync::Arc;
use std::time::Duration;

use super::Message;
use super::history::Entry;

/// A post's text, made once its id is known (on the fleet's thread).
pub(crate) type Text = Box<dyn FnOnce(u64) -> String + Send>;

/// Told a post's id once the fleet gave it its place, or `None` when it could not be posted.
pub(crate) type OnPosted = Box<dyn FnOnce(Option<u64>) + Send>;

/// The other instances of a fleet, as the rooms of one see them. Only [`Instances::history`]
/// waits on the network (within the fleet's timeout).
pub(crate) trait Instances: Send + Sync {
    /// Hands `msg` on to the other instances' members of `room`.
    fn publish(&self, room: &str, msg: &Message);

    /// Posts to `room` in the fleet's one order of it: the fleet gives the message its id,
    /// makes its `text`, keeps it in the room's history (its last `keep` messages, kept `ttl`)
    /// and hands it to every instance following the room, this one included (which delivers
    /// it then, see `Rooms::receive_posted`); `then` is told the id, or `None`.
    fn post(&self, room: &str, text: Text, then: OnPosted, keep: usize, ttl: Duration);

    /// `room`'s last `n` messages as the fleet keeps them, oldest first; `None` when they
    /// cannot be read now. Waits on the network (within the fleet's timeout): for the fleet's
    /// own threads and what cannot wait otherwise (see `Rooms::since`), never a join.
    fn history(&self, room: &str, n: usize) -> Option<Vec<Entry>>;

    /// Has `room`'s last `n` messages read, and hands them to `then` on another thread
    /// (`None` when they cannot be read now; then perhaps at once, on this thread).
    fn history_then(
        &self,
        room: &Arc<str>,
        n: usize,
        then: Box<dyn FnOnce(Option<Vec<Entry>>) + Send>,
    );

    /// The members of `room` on the other instances as last known, without waiting; `None`
    /// when nothing is known yet.
    fn others(&self, room: &str) -> Option<usize>;

    /// `room`'s first local member joined or its last left (the instance follows the room's
    /// messages from the others only while it has members or followers).
    fn changed(&self, room: &Arc<str>);
}
