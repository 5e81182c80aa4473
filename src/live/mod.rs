//! What every long-lived connection shares, whatever it speaks: the message each worker
//! receives ([`Command`]), the connection as the server's slab entry holds it ([`LiveConn`]),
//! the settings it is made with, its queue of output ([`Outbox`]) and the server-wide budget
//! all of them count against ([`OutputBudget`]), and the timing of every handler call on a
//! worker, HTTP or live ([`Stalls`]).

mod budget;
mod command;
mod conn;
mod outbox;
mod stall;
mod stall_clock;

pub use budget::MAX_QUEUED_OUTPUT;
pub(crate) use budget::{Charge, OutputBudget, forget_worker_frames};
pub(crate) use command::Command;
pub use conn::{CLOSE_TIMEOUT, WS_MAX_BACKLOG};
pub(crate) use conn::{
    DRAIN_LINGER, LiveConn, LiveSettings, Timeouts, drop_unread, linger_until, send_alone,
    write_out,
};
pub(crate) use outbox::Outbox;
pub use stall::STALL_THRESHOLD;
pub(crate) use stall::{Stalls, Watch};
