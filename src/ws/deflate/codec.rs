//! Compressing and inflating one message (RFC 7692 §7.2): raw DEFLATE ending in a sync flush
//! whose last four bytes (`00 00 ff ff`) are left off the wire and added back to inflate.
//!
//! The worker's compressors (one per window size in use) and its decompressor live in a
//! thread-local: every connection of the worker uses them in turn, each message from a clean
//! state (no context takeover) or from a window the connection keeps ([`super::History`]).
//! A client keeps its own ([`Inflater::own`], [`OwnCompressor`]).

use std::cell::RefCell;

use zlib_rs::{Deflate as Compressor, DeflateFlush, Inflate, InflateFlush, Status};

use crate::ws::close::WsError;

/// The end of a sync flush, left off every compressed message.
const TAIL: [u8; 4] = [0, 0, 0xff, 0xff];

/// A compressor for `window` bits (8 is made as 9: zlib's smallest raw window, whose matches
/// reach 250 bytes at most, within a window of 256) at `level`.
pub(crate) fn compressor(window: u8, level: u8) -> Compressor {
    Compressor::new(i32::from(level), false, window.clamp(9, 15))
}

/// The worker's codecs.
#[derive(Default)]
struct Worker {
    /// Compressors by window size (9 to 15), made when first needed, with their level.
    compressors: [Option<(Box<Compressor>, u8)>; 7],
    inflater: Option<Box<Inflate>>,
}

thread_local! {
    static WORKER: RefCell<Worker> = RefCell::new(Worker::default());
}

/// The worker has no connection left: its compressors and inflater (hundreds of KiB each at
/// the larger windows) go back; the next connection that needs one makes it again.
pub(crate) fn forget_worker_codecs() {
    let _ = WORKER.try_with(|w| *w.borrow_mut() = Worker::default());
}

/// Appends `payload` compressed with the worker's compressor for `window` at `level`, starting
/// from `dictionary` (the bytes the peer's decompressor holds, for context takeover; empty for
/// none), without the four-byte tail. `false`, with `out` as it was: the compressed form would
/// not be shorter.
pub(crate) fn compress(
    payload: &[u8],
    window: u8,
    level: u8,
    dictionary: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        let slot = &mut w.compressors[usize::from(window.clamp(9, 15) - 9)];
        let (c, made_at) = slot.get_or_insert_with(|| (Box::new(compressor(window, level)), level));
        c.reset();
        if *made_at != level {
            // Right after a reset nothing is pending: this cannot fail.
            let _ = c.set_level(i32::from(level));
            *made_at = level;
        }
        compress_into(c, payload, dictionary, out, false)
    })
}

/// Appends `payload` compressed by `c` from its present state (`dictionary` first, when not
/// empty), without the tail; `false`, with `out` as it was, when the compressed form would not
/// be shorter — unless `always`: a compressor that keeps its context has taken the message in,
/// so the peer must too.
fn compress_into(
    c: &mut Compressor,
    payload: &[u8],
    dictionary: &[u8],
    out: &mut Vec<u8>,
    always: bool,
) -> bool {
    let start = out.len();
    if !dictionary.is_empty() && c.set_dictionary(dictionary).is_err() {
        return false;
    }
    let mut input = payload;
    loop {
        let at = out.len();
        let room = input.len() / 2 + 64;
        out.resize(at + room, 0);
        let (in0, out0) = (c.total_in(), c.total_out());
        let status = c.compress(input, &mut out[at..], DeflateFlush::SyncFlush);
        let used = usize::try_from(c.total_in() - in0).unwrap_or(usize::MAX);
        let wrote = usize::try_from(c.total_out() - out0).unwrap_or(usize::MAX);
        out.truncate(at + wrote.min(room));
        input = input.get(used..).unwrap_or_default();
        if status.is_err() {
            out.truncate(start);
            return false;
        }
        // A sync flush is complete once the compressor leaves output space unused.
        if input.is_empty() && wrote < room {
            break;
        }
    }
    let compressed = out.len() - start;
    let longer = compressed - TAIL.len().min(compressed) >= payload.len();
    if compressed < TAIL.len() || !out.ends_with(&TAIL) || (longer && !always) {
        out.truncate(start);
        return false;
    }
    out.truncate(out.len() - TAIL.len());
    true
}

/// A decompressor for a client (kept between messages when the server's messages keep their
/// context) or the worker's shared one.
pub(crate) enum Inflater {
    /// The worker's, reset before every message.
    Shared,
    /// The connection's own; `keep`: not reset between messages (context takeover).
    Own { inflate: Box<Inflate>, keep: bool },
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Inflater::Shared => f.write_str("Shared"),
            Inflater::Own { keep, .. } => f.debug_struct("Own").field("keep", keep).finish(),
        }
    }
}

/// A client's own compressor, for the messages it sends.
pub(crate) struct OwnCompressor {
    c: Box<Compressor>,
    takeover: bool,
    min_size: usize,
}

impl std::fmt::Debug for OwnCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnCompressor")
            .field("takeover", &self.takeover)
            .finish()
    }
}

impl OwnCompressor {
    /// Appends `payload` compressed (`true`) or leaves `out` alone (`false`: send it as it is).
    pub(crate) fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> bool {
        if payload.len() < self.min_size {
            return false; // never seen by the compressor, nor by the peer's decompressor
        }
        if !self.takeover {
            self.c.reset();
        }
        compress_into(&mut self.c, payload, &[], out, self.takeover)
    }
}

/// A client's compressor and decompressor for what it agreed with the server.
pub(crate) fn client_codecs(agreed: &super::ClientAgreed) -> Option<(OwnCompressor, Inflater)> {
    let ours = &agreed.ours;
    let compressor = OwnCompressor {
        c: Box::new(compressor(ours.window, ours.level)),
        takeover: ours.takeover,
        min_size: ours.min_size as usize,
    };
    Some((compressor, Inflater::own(agreed.theirs_take_over)))
}

/// The worker's decompressor, for a server's connection.
pub(crate) fn worker_inflater() -> Option<Inflater> {
    Some(Inflater::Shared)
}

impl Inflater {
    /// A connection's own decompressor (a 15-bit window reads any peer's).
    pub(crate) fn own(keep: bool) -> Inflater {
        Inflater::Own {
            inflate: Box::new(Inflate::new(false, 15)),
            keep,
        }
    }
}

/// Inflates one message's `data` (its frames' payloads, without the tail): the message, or the
/// close code it earns — 1009 as soon as it passes `max` bytes (having held no more than that),
/// 1007 when it is not valid DEFLATE.
pub(crate) fn inflate(
    inflater: &mut Inflater,
    data: &[u8],
    max: usize,
) -> Result<Vec<u8>, WsError> {
    match inflater {
        Inflater::Shared => WORKER.with(|w| {
            let mut w = w.borrow_mut();
            let d = w
                .inflater
                .get_or_insert_with(|| Box::new(Inflate::new(false, 15)));
            d.reset(false);
            inflate_with(d, data, max)
        }),
        Inflater::Own { inflate, keep } => {
            if !*keep {
                inflate.reset(false);
            }
            inflate_with(inflate, data, max)
        }
    }
}

fn inflate_with(d: &mut Inflate, data: &[u8], max: usize) -> Result<Vec<u8>, WsError> {
    let limit = max.saturating_add(1);
    let mut out: Vec<u8> = Vec::new();
    let mut ended = false;
    for mut input in [data, &TAIL[..]] {
        loop {
            if ended {
                // After a final block only the tail may follow.
                return if input.is_empty() || input == TAIL {
                    Ok(out)
                } else {
                    Err(WsError::InvalidData)
                };
            }
            if out.len() == out.capacity() {
                if out.len() >= limit {
                    return Err(WsError::TooBig);
                }
                let grow = (data.len().saturating_mul(4))
                    .max(out.capacity())
                    .clamp(256, 1 << 20);
                out.reserve_exact(grow.min(limit - out.len()));
            }
            let at = out.len();
            out.resize(out.capacity(), 0);
            let (in0, out0) = (d.total_in(), d.total_out());
            let status = d.decompress(input, &mut out[at..], InflateFlush::SyncFlush);
            let used = usize::try_from(d.total_in() - in0).unwrap_or(usize::MAX);
            let wrote = usize::try_from(d.total_out() - out0).unwrap_or(usize::MAX);
            out.truncate(at + wrote);
            input = input.get(used..).unwrap_or_default();
            match status {
                Err(_) => return Err(WsError::InvalidData),
                Ok(Status::StreamEnd) => ended = true,
                Ok(_) => {}
            }
            if out.len() >= limit {
                return Err(WsError::TooBig);
            }
            let full = out.len() == out.capacity();
            if input.is_empty() && !full {
                break;
            }
            if used == 0 && wrote == 0 && !full {
                // Input left and room to write, yet no progress: not DEFLATE.
                return Err(WsError::InvalidData);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn squeeze(payload: &[u8], window: u8) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        compress(payload, window, 6, &[], &mut out).then_some(out)
    }

    #[test]
    fn messages_round_trip_through_the_worker_codecs() {
        let json =
            br#"{"type":"message","room":"lobby","user":"ana","text":"hello hello hello hello"}"#;
        let long: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for payload in [&json[..], &long[..], &[b'a'; 300][..]] {
            for window in 8..=15 {
                let compressed = squeeze(payload, window).expect("compressible");
                assert!(compressed.len() < payload.len());
                let back = inflate(&mut Inflater::Shared, &compressed, payload.len()).unwrap();
                assert_eq!(back, payload, "window {window}");
            }
        }
    }

    #[test]
    fn what_does_not_shrink_is_not_compressed() {
        let mut out = vec![1, 2, 3];
        assert!(!compress(b"x", 15, 6, &[], &mut out));
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        assert!(!compress(&random, 15, 6, &[], &mut out));
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    fn a_dictionary_is_what_the_peer_holds() {
        let first = b"the quick brown fox jumps over the lazy dog, again and again";
        let mut out = Vec::new();
        assert!(compress(first, 15, 6, first, &mut out));
        // The peer's decompressor, kept between messages, holds `first` already.
        let mut peer = Inflater::own(true);
        let mut plain = Vec::new();
        assert!(compress(first, 15, 6, &[], &mut plain));
        assert_eq!(inflate(&mut peer, &plain, 1000).unwrap(), first);
        assert_eq!(inflate(&mut peer, &out, 1000).unwrap(), first);
        assert!(out.len() < plain.len(), "{} vs {}", out.len(), plain.len());
    }

    #[test]
    fn bombs_stop_at_the_limit_having_held_no_more() {
        let zeros = vec![0u8; 10 << 20];
        let bomb = squeeze(&zeros, 15).unwrap();
        assert!(bomb.len() < 20_000, "{}", bomb.len());
        for max in [0, 1, 1000, 65_536, (10 << 20) - 1] {
            assert_eq!(
                inflate(&mut Inflater::Shared, &bomb, max),
                Err(WsError::TooBig),
                "{max}"
            );
        }
        assert_eq!(
            inflate(&mut Inflater::Shared, &bomb, 10 << 20)
                .unwrap()
                .len(),
            10 << 20
        );
    }

    #[test]
    fn broken_streams_earn_1007() {
        let cases: &[&[u8]] = &[
            &[0xff; 10],                     // reserved block type
            &[0x03, 0x00, 0x01],             // a final empty block, then garbage
            &[0x00, 0x05, 0x00, 0x05, 0x00], // a stored block whose length check fails
        ];
        for data in cases {
            let got = inflate(&mut Inflater::Shared, data, 1000);
            assert_eq!(got, Err(WsError::InvalidData), "{data:?}");
        }
        // And the worker's decompressor still works after each.
        let ok = squeeze(&[b'z'; 100], 15).unwrap();
        assert_eq!(
            inflate(&mut Inflater::Shared, &ok, 100).unwrap(),
            vec![b'z'; 100]
        );
    }

    #[test]
    fn a_final_block_ends_the_message() {
        // "a" as a final fixed-Huffman block, as some peers send a message.
        let mut c = Compressor::new(6, false, 15);
        let mut out = vec![0u8; 64];
        c.compress(b"abcabcabc", &mut out, DeflateFlush::Finish)
            .unwrap();
        out.truncate(c.total_out() as usize);
        assert_eq!(
            inflate(&mut Inflater::Shared, &out, 100).unwrap(),
            b"abcabcabc"
        );
    }
}
