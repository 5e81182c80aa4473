//! Rooms (topics) on their own: named groups of long-lived connections that a message is
//! published to, with presence, recent history and, through [`Instances`], other instances of a
//! fleet — like uWebSockets' `TopicTree`, and below every protocol.
//!
//! The rooms deliver to members without knowing what they speak: a message is encoded once per
//! publish by the [`Encoding`] the server gives them (a WebSocket frame, an event-stream
//! event), and what reaches a worker is a [`Delivery`] sent through the server's [`Workers`].
//! The public names are read from `web::ws` (and `web::sse`'s docs), where the specification
//! has them.

#[cfg(any(test, fuzzing))]
pub(crate) mod check;
mod delivery;
pub(crate) mod history;
#[cfg(feature = "redis")]
mod instances;
mod joined;
mod local;
mod message;
mod registry;
mod seat;
mod waiting;

#[cfg(any(test, fuzzing))]
pub(crate) use delivery::PLAIN;
pub(crate) use delivery::{Delivery, Encoding, Forms, Workers};
pub use history::{HISTORY_BYTES, HISTORY_ROOMS, History, KEEP_FOR};
#[cfg(feature = "redis")]
pub(crate) use instances::{Instances, OnPosted, Text};
pub(crate) use joined::Joined;
pub(crate) use local::local_members;
pub use message::Message;
pub use registry::{Follow, MAX_ROOMS, Rooms};
pub(crate) use seat::{Joining, Seat, history_back, join_back, leave_all};
pub(crate) use waiting::Waiter;

/// The worker has no connection left: its tables of rooms and of shared room lists give their
/// memory back.
pub(crate) fn worker_idle() {
    local::forget_worker_rooms();
    joined::forget_worker_lists();
}
