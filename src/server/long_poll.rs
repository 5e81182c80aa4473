//! Long-polls on a room ([`Rooms::long_poll`]): a deferred reply with a wait of its own
//! ([`defer_for`]) whose waiter the room's next message answers. The poll waits parked — no
//! thread, no buffer — and its timeout is the connection's own timer.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use crate::http::{Refusal, Response};
use crate::rooms::{Follow, Rooms, Waiter};

use super::deferred::{Reply, defer_for};

/// One long-poll waiting: its reply, how to answer, and the room followed meanwhile (in a
/// fleet, messages posted on other instances reach this one, and answer it too).
struct Poll<F> {
    reply: Reply,
    answer: F,
    _follow: Follow,
}

impl<F> Waiter for Poll<F>
where
    F: FnOnce(&[(u64, Arc<str>)]) -> Response + Send,
{
    fn is_waiting(&self) -> bool {
        self.reply.is_open()
    }

    fn answer(self: Box<Self>, messages: &[(u64, Arc<str>)]) {
        let Poll { reply, answer, .. } = *self;
        // The application's code, run on whichever thread posted: a panic answers this poll
        // 500, as a handler's does, and leaves the poster and the other polls alone.
        let response = catch_unwind(AssertUnwindSafe(|| answer(messages)))
            .unwrap_or_else(|_| Refusal::Panicked.response());
        reply.send(response);
    }
}

/// Long-polls on a [`Rooms`] (a method of the rooms written here, beside the deferred
/// replies it is made of: the rooms are a layer below the server). `use web::http::LongPoll`
/// to call it.
pub trait LongPoll {
    /// Answers the request the calling handler is answering with a **long-poll** on `room`:
    /// `answer` gets the room's messages after message `after` (oldest first, with their
    /// ids) — at once when the room's history holds some, else the room's next message when
    /// it is posted — or, when none comes within `wait`, the server answers `204 No Content`
    /// (at once when it stops). Returns the placeholder the handler returns (see [`defer`]).
    ///
    /// The poll waits parked: no thread, no buffer, no list the application keeps, its
    /// timeout the connection's own timer ([`defer_for`]). Looking at the history and waiting
    /// are one critical section, so no message slips between. In a fleet the room is
    /// followed while the poll waits, so a message posted on any instance answers it, and the
    /// history is read from Redis first without the worker waiting ([`Rooms::follow_then`]).
    /// A client that leaves costs nothing more than its entry until the room's next message
    /// or the next look through the waiters (when their number has doubled).
    ///
    /// [`defer`]: crate::http::defer
    ///
    /// ```
    /// use std::time::Duration;
    /// use web::http::{param, query_of, text_response, LongPoll, Server};
    /// let server = Server::bind("127.0.0.1:0")?.history(web::ws::History::new(20));
    /// let rooms = server.rooms();
    /// let handle = server.spawn(move |req| {
    ///     let after = param(query_of(req.path()), "after").parse().unwrap_or(0);
    ///     rooms.long_poll("news", after, Duration::from_secs(25), |messages| {
    ///         let ids: Vec<String> = messages.iter().map(|(id, _)| id.to_string()).collect();
    ///         text_response(200, ids.join(","))
    ///     })
    /// })?;
    /// # handle.shutdown()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    fn long_poll(
        &self,
        room: &str,
        after: u64,
        wait: Duration,
        answer: impl FnOnce(&[(u64, Arc<str>)]) -> Response + Send + 'static,
    ) -> Response;
}

impl LongPoll for Rooms {
    fn long_poll(
        &self,
        room: &str,
        after: u64,
        wait: Duration,
        answer: impl FnOnce(&[(u64, Arc<str>)]) -> Response + Send + 'static,
    ) -> Response {
        let (reply, later) = defer_for(wait);
        let (rooms, name) = (self.clone(), room.to_owned());
        self.follow_then(room, move |follow| {
            let poll = Box::new(Poll {
                reply,
                answer,
                _follow: follow,
            });
            if let Some((newer, poll)) = rooms.after_or_wait(&name, after, poll) {
                poll.answer(&newer);
            }
        });
        later
    }
}
