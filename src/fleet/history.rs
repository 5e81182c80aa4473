//! Rooms' recent messages in Redis, and the fleet's message ids.
//!
//! **History.** The publisher thread writes each posted message to its room's list
//! (`{prefix}:history:R`, entries `ID TEXT`) in the same round trip as the `PUBLISH`, trims
//! the list to the history's length and gives it the history's lifetime in Redis (renewed by
//! every write): Redis holds, for every room written to within that lifetime, at most that
//! many messages. One publisher thread per instance and one Redis mean every list is in the
//! order Redis took the messages, the same for every reader.
//!
//! **Ids.** A posted message's id must mean the same message on every instance (a reader
//! resuming after `Last-Event-ID` may come back on another one). The publisher thread takes
//! blocks of [`BLOCK`] ids from one counter (`INCRBY`), which starts, the first time any
//! instance uses it, at the milliseconds since 2025 times 2¹¹ — so ids keep growing even if
//! Redis loses the counter — and workers take ids from the block without waiting. Until the
//! first block arrives, or when a block runs out while Redis is unreachable, an instance makes
//! its own: 2⁵² plus the milliseconds since 2025 times 2¹¹ plus 11 bits of its instance id,
//! apart from the counter's, all below 2⁵³ (exact as a JavaScript number) until 2094.

use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::resp;
use crate::ws::history::Entry;

/// Ids taken from the fleet's counter at a time.
pub(crate) const BLOCK: u64 = 1024;
/// 2025-01-01T00:00:00Z in milliseconds since the Unix epoch.
const EPOCH_MS: u64 = 1_735_689_600_000;
/// Low bits of an id below the milliseconds.
const SPREAD: u32 = 11;
/// Set on the ids an instance makes itself.
const OWN: u64 = 1 << 52;

/// A room's history as one entry of its list: the id in decimal, a space, the text.
pub(crate) fn entry(id: u64, text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(21 + text.len());
    out.extend_from_slice(id.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(text.as_bytes());
    out
}

/// An entry of a history list; `None` for anything this code does not write.
pub(crate) fn parse_entry(bytes: &[u8]) -> Option<Entry> {
    let space = bytes.iter().position(|&b| b == b' ')?;
    let digits = std::str::from_utf8(&bytes[..space]).ok()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id = digits.parse().ok()?;
    let text = std::str::from_utf8(&bytes[space + 1..]).ok()?;
    Some((id, Arc::from(text)))
}

/// The last `n` messages of the history list `key`, oldest first (entries this code did not
/// write are passed over).
pub(crate) fn read(conn: &mut resp::Conn, key: &[u8], n: usize) -> io::Result<Vec<Entry>> {
    let last = i64::try_from(n).unwrap_or(i64::MAX);
    let cmd = redis::cmd("LRANGE")
        .arg(key)
        .arg(-last)
        .arg(-1)
        .get_packed_command();
    match conn.query(&cmd, 1)?.pop() {
        Some(redis::Value::Array(items)) => Ok(items
            .iter()
            .filter_map(|item| match item {
                redis::Value::BulkString(bytes) => parse_entry(bytes),
                _ => None,
            })
            .collect()),
        other => Err(io::Error::other(format!("LRANGE answered {other:?}"))),
    }
}

/// Adds to `pipe` the commands that append `entry` to the history list `key`, keep its last
/// `keep` entries and let it live `ttl` from now; how many replies they have.
pub(crate) fn append(
    pipe: &mut redis::Pipeline,
    key: &[u8],
    entry: &[u8],
    keep: usize,
    ttl: Duration,
) -> usize {
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    pipe.cmd("RPUSH").arg(key).arg(entry);
    pipe.cmd("LTRIM").arg(key).arg(-keep).arg(-1);
    pipe.cmd("PEXPIRE")
        .arg(key)
        .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
    3
}

/// Milliseconds since 2025, shifted to leave the low bits free.
fn now_spread() -> u64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    ms.saturating_sub(EPOCH_MS) << SPREAD
}

/// Takes the next block from the fleet's counter `key` (starting it from the clock the first
/// time): the block's ids, `start..end`.
pub(crate) fn take_block(conn: &mut resp::Conn, key: &str) -> io::Result<(u64, u64)> {
    let mut pipe = redis::pipe();
    pipe.cmd("SET").arg(key).arg(now_spread()).arg("NX");
    pipe.cmd("INCRBY").arg(key).arg(BLOCK);
    let replies = conn.query(&pipe.get_packed_pipeline(), 2)?;
    match replies.as_slice() {
        [
            redis::Value::Okay | redis::Value::Nil,
            redis::Value::Int(end),
        ] => {
            let end = u64::try_from(*end).map_err(|_| io::Error::other("ids below zero"))?;
            Ok((end.saturating_sub(BLOCK) + 1, end + 1))
        }
        other => Err(io::Error::other(format!("ids answered {other:?}"))),
    }
}

/// Where a worker takes the next id from.
#[derive(Debug)]
pub(crate) struct Ids {
    /// The block from the counter: `next..end`.
    next: u64,
    end: u64,
    /// The last id this instance made itself.
    own: u64,
    /// This instance's bits in the ids it makes.
    tag: u64,
}

impl Ids {
    pub(crate) fn new(instance: u64) -> Ids {
        Ids {
            next: 0,
            end: 0,
            own: 0,
            tag: instance & ((1 << SPREAD) - 1),
        }
    }

    /// The next id: from the block while it lasts, else one of this instance's own.
    pub(crate) fn take(&mut self) -> u64 {
        if self.next < self.end {
            self.next += 1;
            return self.next - 1;
        }
        let id = (OWN | now_spread() | self.tag).max(self.own + (1 << SPREAD));
        self.own = id;
        id
    }

    /// Whether a new block should be fetched (less than half of one left).
    pub(crate) fn low(&self) -> bool {
        self.end - self.next < BLOCK / 2
    }

    /// A new block, `start..end`, from [`take_block`]; what is left of the old one is given up.
    pub(crate) fn refill(&mut self, (start, end): (u64, u64)) {
        self.next = start;
        self.end = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_and_foreign_ones_are_passed_over() {
        for (id, text) in [
            (0, ""),
            (1, "hi"),
            (u64::MAX, "a b  c"),
            (42, "ünï {\"x\":1}"),
        ] {
            let bytes = entry(id, text);
            assert_eq!(parse_entry(&bytes), Some((id, Arc::from(text))), "{id}");
        }
        let foreign: &[&[u8]] = &[
            b"",
            b"12",
            b" text",
            b"-1 x",
            b"+1 x",
            b"1.5 x",
            b"99999999999999999999 x",
            b"7 \xff",
        ];
        for &bytes in foreign {
            assert_eq!(parse_entry(bytes), None, "{bytes:?}");
        }
    }

    #[test]
    fn ids_come_from_the_block_then_from_the_instance_itself() {
        let mut ids = Ids::new(0xabc_def);
        assert!(ids.low());
        let own = ids.take();
        assert!(own & OWN != 0 && own < 1 << 53, "{own:#x}");
        assert_eq!(own & ((1 << SPREAD) - 1), 0xabc_def & ((1 << SPREAD) - 1));
        let next_own = ids.take();
        assert!(next_own > own, "an instance's own ids grow");
        ids.refill((5000, 5000 + BLOCK));
        assert!(!ids.low());
        assert_eq!((ids.take(), ids.take()), (5000, 5001));
        for _ in 0..BLOCK / 2 {
            ids.take();
        }
        assert!(ids.low());
        while ids.next < ids.end {
            ids.take();
        }
        assert!(
            ids.take() > next_own,
            "after the block: own ids, still growing"
        );
        // The counter's ids stay below the instance's own until 2094.
        assert!(now_spread() < OWN && ((2094 - 2025) * 365 * 86_400_000u64) << SPREAD < OWN);
    }

    proptest::proptest! {
        /// Any bytes in a history list are read as an entry or passed over, never a panic; an
        /// entry read writes back to the same bytes.
        #[test]
        fn any_list_entry_is_read_or_passed_over(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48)) {
            if let Some((id, text)) = parse_entry(&bytes) {
                // Leading zeros are read but not written.
                let canonical = !bytes.starts_with(b"0") || bytes.starts_with(b"0 ");
                if canonical {
                    proptest::prop_assert_eq!(entry(id, &text), bytes);
                }
            }
        }

        #[test]
        fn entries_round_trip(id: u64, text in ".{0,40}") {
            proptest::prop_assert_eq!(parse_entry(&entry(id, &text)), Some((id, Arc::from(text.as_str()))));
        }
    }
}
