//! permessage-deflate (RFC 7692): messages compressed with DEFLATE, negotiated per connection.
//!
//! By default a connection keeps **no compression state**: both directions compress each
//! message on its own ("no context takeover"), so one compressor and one decompressor per
//! worker thread serve every connection of the worker, and an idle compressing WebSocket costs
//! what any idle WebSocket costs. A message published to a room is compressed once per worker
//! and the same frame goes to every member that agreed to the extension.
//!
//! [`Deflate::context_takeover`] keeps, per connection, the last bytes the server sent (a
//! window of 2^bits bytes) so that later messages refer back to earlier ones — a better ratio
//! for repetitive traffic, paid with that window per connection and a compression per member.
//!
//! | where | what |
//! |---|---|
//! | `offer.rs` | the offers, the server's choice and response, the client's check |
//! | `codec.rs` | the worker's compressors and decompressor; compress and inflate a message |
//! | `frames.rs` | writing a message frame for a connection; a published frame compressed once |

#[cfg(feature = "deflate")]
mod codec;
#[cfg(not(feature = "deflate"))]
mod codec {
    //! Without the `deflate` feature nothing agrees to the extension: no message is compressed,
    //! and no compressed one can arrive (RSV1 is refused), so there is no decompressor.

    /// No decompressor exists without the feature.
    #[derive(Debug)]
    pub(crate) enum Inflater {}

    pub(crate) fn compress(_: &[u8], _: u8, _: u8, _: &[u8], _: &mut Vec<u8>) -> bool {
        false
    }

    pub(crate) fn inflate(
        inflater: &mut Inflater,
        _: &[u8],
        _: usize,
    ) -> Result<Vec<u8>, crate::ws::WsError> {
        match *inflater {}
    }

    pub(crate) fn worker_inflater() -> Option<Inflater> {
        None
    }

    /// No compressor exists without the feature.
    #[derive(Debug)]
    pub(crate) enum OwnCompressor {}

    impl OwnCompressor {
        pub(crate) fn compress(&mut self, _: &[u8], _: &mut Vec<u8>) -> bool {
            match *self {}
        }
    }

    pub(crate) fn client_codecs(_: &super::ClientAgreed) -> Option<(OwnCompressor, Inflater)> {
        None
    }
}
mod frames;
mod offer;

#[cfg(feature = "deflate")]
pub(crate) use codec::forget_worker_codecs;
pub(crate) use codec::{Inflater, OwnCompressor, client_codecs, inflate, worker_inflater};
pub(crate) use frames::{
    History, RSV1, forget_worker_frames, queue_message, queue_owned, queue_shared,
};
pub(crate) use offer::{CLIENT_OFFER, ClientAgreed, accept_response, agree};

/// The compression level used unless set ([`Deflate::level`]): zlib's default, the usual
/// balance of ratio and speed.
pub const LEVEL: u8 = 6;

/// Messages shorter than this are sent uncompressed unless set ([`Deflate::min_size`]): below
/// it DEFLATE rarely saves a byte.
pub const MIN_SIZE: u32 = 64;

/// A server's permessage-deflate settings ([`Server::deflate`](crate::http::Server::deflate)).
///
/// The default keeps no state per connection: one compressor and one decompressor per worker.
///
/// ```
/// # #[cfg(feature = "deflate")] {
/// use web::ws::Deflate;
/// let shared = Deflate::default(); // no memory per connection
/// let kept = Deflate::default().context_takeover(12).level(4).min_size(128);
/// # let _ = (shared, kept);
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deflate {
    pub(crate) level: u8,
    pub(crate) min_size: u32,
    /// The window kept per connection for our messages, in bits; `None`: no context takeover.
    pub(crate) takeover: Option<u8>,
}

impl Default for Deflate {
    fn default() -> Deflate {
        Deflate {
            level: LEVEL,
            min_size: MIN_SIZE,
            takeover: None,
        }
    }
}

#[cfg_attr(not(feature = "deflate"), allow(dead_code))]
impl Deflate {
    /// The compression level, 1 (fastest) to 9 (smallest); out-of-range values are clamped.
    ///
    /// ```
    /// # #[cfg(feature = "deflate")] {
    /// let fast = web::ws::Deflate::default().level(1);
    /// # let _ = fast;
    /// # }
    /// ```
    pub fn level(mut self, level: u8) -> Deflate {
        self.level = level.clamp(1, 9);
        self
    }

    /// Messages shorter than `bytes` are sent uncompressed ([`MIN_SIZE`] by default).
    /// A message whose compressed form is not shorter is always sent as it is.
    ///
    /// ```
    /// # #[cfg(feature = "deflate")] {
    /// let all = web::ws::Deflate::default().min_size(0);
    /// # let _ = all;
    /// # }
    /// ```
    pub fn min_size(mut self, bytes: u32) -> Deflate {
        self.min_size = bytes;
        self
    }

    /// Keeps, per connection, the last 2^`window_bits` bytes of the messages the server sent
    /// compressed (9 to 15; clamped), so that later messages refer back to them. Costs that
    /// window per connection while it is open, and a room's publish is compressed per member
    /// rather than once per worker. A client that asks for `server_no_context_takeover` gets the
    /// default mode. Messages from clients are always without context takeover.
    ///
    /// ```
    /// # #[cfg(feature = "deflate")] {
    /// let kept = web::ws::Deflate::default().context_takeover(10); // 1 KiB per connection
    /// # let _ = kept;
    /// # }
    /// ```
    pub fn context_takeover(mut self, window_bits: u8) -> Deflate {
        self.takeover = Some(window_bits.clamp(9, 15));
        self
    }
}

/// What one connection's peer agreed to for the messages we send it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Agreed {
    /// Our compressor's window, in bits (8 to 15; 8 is compressed with 9, whose matches never
    /// reach further than 250 bytes).
    pub(crate) window: u8,
    /// Whether our messages keep their context (the peer keeps its window between them).
    pub(crate) takeover: bool,
    pub(crate) level: u8,
    pub(crate) min_size: u32,
}

impl Agreed {
    /// Which of a route's endpoints a connection with this agreement belongs to (0 is for
    /// connections without the extension): one per window size, with and without takeover.
    pub(crate) fn slot(agreed: Option<&Agreed>) -> usize {
        match agreed {
            None => 0,
            Some(a) => 1 + usize::from(a.window.clamp(8, 15) - 8) + 8 * usize::from(a.takeover),
        }
    }
}

/// Endpoints a route may need: one per [`Agreed::slot`].
pub(crate) const SLOTS: usize = 17;
