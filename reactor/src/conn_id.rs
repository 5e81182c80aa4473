//! Connection identities and the `mio` tokens that carry them.
//!
//! A token is `generation << 32 | slab key`. Every accepted connection takes the worker's next
//! generation, so an event still queued for a connection that closed (whose slab key was then
//! reused by a new connection in the same batch) carries the old generation and is dropped
//! instead of waking the new owner (mio issue #172). The same check drops `Remote::send`
//! messages addressed to a connection that no longer exists.

use mio::Token;

#[cfg(not(target_pointer_width = "64"))]
compile_error!("web-reactor packs a slab key and a generation into a 64-bit mio Token");

/// Token of a worker's cross-thread waker.
pub(crate) const WAKER: Token = Token(usize::MAX);
/// Listening sockets a worker may poll: one per address the server listens on.
pub const MAX_LISTENERS: usize = 64;

/// Token of a worker's listening socket `i` (below [`MAX_LISTENERS`]): the tokens under the
/// waker's, far above any connection's (a connection's slab key is its token's low half).
pub(crate) fn listener_token(i: usize) -> Token {
    Token(usize::MAX - 1 - i)
}

/// Which listening socket `token` is, if it is one.
pub(crate) fn listener_of(token: Token) -> Option<usize> {
    let i = (usize::MAX - 1).checked_sub(token.0)?;
    (i < MAX_LISTENERS).then_some(i)
}

/// Identifies one connection of one server — or one stream a protocol carries on it: its
/// worker, its slab key, the generation that tells it apart from earlier and later connections
/// parked under the same key, and the stream (0: the connection itself). `Copy`, 16 bytes.
///
/// Obtained from [`Io::id`](crate::Io::id) or [`Service::open`](crate::Service::open), and used
/// to address the connection from any thread with [`Remote::send`](crate::Remote::send). A
/// message sent to one of its streams reaches the connection's strand, which reads the stream
/// with [`Io::addressed`](crate::Io::addressed).
///
/// ```
/// fn log_line(id: reactor::ConnId) -> String {
///     format!("worker {} key {} generation {}", id.worker(), id.key(), id.generation())
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    worker: u32,
    key: u32,
    generation: u32,
    stream: u32,
}

impl ConnId {
    pub(crate) const fn new(worker: u32, key: u32, generation: u32) -> ConnId {
        ConnId {
            worker,
            key,
            generation,
            stream: 0,
        }
    }

    /// Makes an id from its parts, for the tests of crates built on the reactor (ids come from
    /// the reactor; a made-up one names no connection, and messages sent to it are dropped).
    /// Not part of the API.
    #[doc(hidden)]
    pub const fn from_parts(worker: u32, key: u32, generation: u32) -> ConnId {
        ConnId::new(worker, key, generation)
    }

    /// Index of the worker thread that owns the connection (0-based).
    ///
    /// ```
    /// assert_eq!(reactor::ConnId::from_parts(1, 2, 3).worker(), 1);
    /// ```
    pub fn worker(self) -> u32 {
        self.worker
    }

    /// The connection's key in its worker's slab. Reused after the connection closes.
    ///
    /// ```
    /// assert_eq!(reactor::ConnId::from_parts(1, 2, 3).key(), 2);
    /// ```
    pub fn key(self) -> u32 {
        self.key
    }

    /// The generation taken when the connection was accepted; never shared by two connections
    /// of the same worker alive at the same time (it wraps after 2³² accepts).
    ///
    /// ```
    /// assert_eq!(reactor::ConnId::from_parts(1, 2, 3).generation(), 3);
    /// ```
    pub fn generation(self) -> u32 {
        self.generation
    }

    /// The stream of the connection this id names: 0 for the connection itself.
    ///
    /// ```
    /// let id = reactor::ConnId::from_parts(1, 2, 3);
    /// assert_eq!(id.stream(), 0);
    /// assert_eq!(id.with_stream(5).stream(), 5);
    /// ```
    pub fn stream(self) -> u32 {
        self.stream
    }

    /// The id of stream `stream` of this id's connection (0: the connection itself).
    ///
    /// ```
    /// let id = reactor::ConnId::from_parts(1, 2, 3);
    /// assert_ne!(id.with_stream(7), id);
    /// assert_eq!(id.with_stream(7).connection(), id);
    /// ```
    pub fn with_stream(self, stream: u32) -> ConnId {
        ConnId { stream, ..self }
    }

    /// The connection this id names, or whose stream it names.
    ///
    /// ```
    /// let id = reactor::ConnId::from_parts(1, 2, 3);
    /// assert_eq!(id.with_stream(9).connection().stream(), 0);
    /// ```
    pub fn connection(self) -> ConnId {
        self.with_stream(0)
    }

    /// The `mio` token the worker registers the connection's socket with.
    pub(crate) fn token(self) -> Token {
        Token(((self.generation as usize) << 32) | self.key as usize)
    }
}

/// Splits a connection token into (slab key, generation).
pub(crate) fn split_token(token: Token) -> (u32, u32) {
    ((token.0 & 0xFFFF_FFFF) as u32, (token.0 >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips_and_never_meets_the_reserved_tokens() {
        for (key, generation) in [(0, 0), (1, u32::MAX), (u32::MAX - 17, 7), (42, 1 << 31)] {
            let id = ConnId::new(3, key, generation);
            assert_eq!(split_token(id.token()), (key, generation));
            assert_eq!(listener_of(id.token()), None);
            assert_ne!(id.token(), WAKER);
        }
    }
}
