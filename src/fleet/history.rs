//! Rooms' recent messages in Redis, and the one order of each room's posts across the fleet.
//!
//! **One order per room.** A posted message gets its id from Redis, in two round trips of the
//! publisher thread (its text may contain its id, so the text is made between them):
//! 1. [`RESERVE`]: the room's counter (`{prefix}:seq:R`, a hash) gives the batch's posts to `R`
//!    their ids — consecutive, and never below the milliseconds since 2025 times 2¹¹, so ids
//!    keep growing across restarts even if Redis lost the counter, and stay above the ids an
//!    instance gave alone while Redis was away — and says which id came before them.
//! 2. [`PUBLISH`]: the posts go to the room's pending hash (`{prefix}:pending:R`, keyed by the
//!    id before each) and every pending post whose predecessor was the last published is
//!    published on the room's channel and appended to its history list — so Redis publishes a
//!    room's posts in id order whichever instance finished its round trips first. A post whose
//!    publisher died between its two round trips leaves a gap: the posts behind it wait
//!    [`STALE`] at most, and are published when the next post reaches the room after that.
//!
//! Every instance — the poster included — delivers a room's posts as its subscription receives
//! them: the same messages, in the same order, with ids that increase in it everywhere. So
//! "after id X" (a `Last-Event-ID`, a long-poll's `after`) means the same messages on every
//! instance, whether X is still held or evicted. While Redis is away, an instance delivers its
//! own posts to its own members alone, with ids from its clock (see `Rooms::post_alone`).
//!
//! **History.** The list `{prefix}:history:R` (entries `ID TEXT`) holds a room's last messages
//! in id order, trimmed to the history's length and expiring with its lifetime (renewed by
//! every write). What is read back obeys the same bounds as what is posted: at most the
//! history's length of entries, each at most [`MAX_ENTRY`] bytes.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::resp;
use super::servers::Session;
use crate::rooms::history::Entry;

/// Ids a room's counter gives stay below this (exact as a JavaScript number, and as Lua's
/// doubles); an answer at or past it is refused.
pub(crate) const MAX_ID: u64 = 1 << 52;

/// How long the posts behind a gap (a post reserved and never published) wait for it.
pub(crate) const STALE: Duration = Duration::from_secs(2);

/// The longest entry read back from Redis (what the chat posts is far shorter; the bound is
/// what keeps a hostile Redis from handing every join megabytes).
pub(crate) const MAX_ENTRY: usize = 1 << 20;

/// Gives `ARGV[2]` consecutive ids of room counter `KEYS[1]`, none below `ARGV[1]` (from the
/// clock): answers the first and the id given before it (the last published, for a counter
/// Redis did not hold). The counter lives `ARGV[3]` ms from its last use.
pub(crate) const RESERVE: &str = r"
local floor, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[1], 'last') or '')
if not last then
  last = floor - 1
  redis.call('HSET', KEYS[1], 'done', string.format('%d', last))
end
local first = math.max(last + 1, floor)
redis.call('HSET', KEYS[1], 'last', string.format('%d', first + n - 1))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {first, last}
";

/// Takes posts `ARGV[6..]` (pairs: the id before the post's, the post's history entry) into
/// room `KEYS[2]`'s pending hash, then publishes on channel `ARGV[1]` (envelope head `ARGV[2]`
/// before each entry) and appends to history list `KEYS[3]` (its last `ARGV[3]` entries; none
/// when 0) every pending post that follows counter `KEYS[1]`'s `done`, in turn. A gap older
/// than `ARGV[5]` ms is given up. Every key lives `ARGV[4]` ms from now. Answers how many
/// were published.
pub(crate) const PUBLISH: &str = r"
local seq, pending, hist = KEYS[1], KEYS[2], KEYS[3]
local keep, stale = tonumber(ARGV[3]), tonumber(ARGV[5])
for i = 6, #ARGV, 2 do
  redis.call('HSET', pending, ARGV[i], ARGV[i + 1])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function least()
  local low
  for _, k in ipairs(redis.call('HKEYS', pending)) do
    local v = tonumber(k)
    if v and (not low or v < low) then low = v end
  end
  return low
end
local done = tonumber(redis.call('HGET', seq, 'done') or '')
if not done then
  done = least() or 0
end
local published = 0
while true do
  local key = string.format('%d', done)
  local entry = redis.call('HGET', pending, key)
  if entry then
    redis.call('HDEL', pending, key)
    redis.call('PUBLISH', ARGV[1], ARGV[2] .. entry)
    if keep > 0 then redis.call('RPUSH', hist, entry) end
    done = tonumber(string.match(entry, '^%d+'))
    published = published + 1
    redis.call('HDEL', seq, 'blocked')
  else
    local low = least()
    if not low then break end
    local since = tonumber(redis.call('HGET', seq, 'blocked') or '')
    if not since then
      redis.call('HSET', seq, 'blocked', string.format('%d', now))
      since = now
    end
    if now - since < stale then break end
    redis.call('HDEL', seq, 'blocked')
    done = low
  end
end
redis.call('HSET', seq, 'done', string.format('%d', done))
if keep > 0 then
  redis.call('LTRIM', hist, -keep, -1)
  redis.call('PEXPIRE', hist, ARGV[4])
end
redis.call('PEXPIRE', seq, ARGV[4])
redis.call('PEXPIRE', pending, ARGV[4])
return published
";

/// [`PUBLISH`] publishing with `command` (`PUBLISH`, or `SPUBLISH` on a cluster: the room's
/// channel shares its keys' slot).
pub(crate) fn publish_script(command: &str) -> String {
    PUBLISH.replace("redis.call('PUBLISH',", &format!("redis.call('{command}',"))
}

/// A history list's entry: the id in decimal, a space, the text.
pub(crate) fn entry(id: u64, text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(21 + text.len());
    out.extend_from_slice(id.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(text.as_bytes());
    out
}

/// Reads an entry back; `None` for anything else (what another program left in the list, or
/// an entry longer than [`MAX_ENTRY`]).
pub(crate) fn parse_entry(bytes: &[u8]) -> Option<Entry> {
    if bytes.len() > MAX_ENTRY {
        return None;
    }
    let space = bytes.iter().position(|&b| b == b' ')?;
    let digits = std::str::from_utf8(&bytes[..space]).ok()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id = digits.parse().ok()?;
    let text = std::str::from_utf8(&bytes[space + 1..]).ok()?;
    Some((id, Arc::from(text)))
}

/// The last `n` entries of history list `key`, oldest first (what is not an entry passed
/// over, and never more than `n`, whatever Redis answers).
pub(crate) fn read(session: &mut Session, key: &[u8], n: usize) -> io::Result<Vec<Entry>> {
    let last = i64::try_from(n).unwrap_or(i64::MAX);
    let mut cmd = redis::cmd("LRANGE");
    cmd.arg(key).arg(-last).arg(-1);
    match session.query_one(&cmd)? {
        redis::Value::Array(items) => {
            let skip = items.len().saturating_sub(n);
            Ok(items[skip..]
                .iter()
                .filter_map(|item| match item {
                    redis::Value::BulkString(bytes) => parse_entry(bytes),
                    _ => None,
                })
                .collect())
        }
        other => Err(resp::answered("LRANGE", &other)),
    }
}

/// The first id a room's counter gives when Redis holds none: the milliseconds since 2025
/// times 2¹¹.
/// The least id a room's counter may give next, as this instance knows: the clock's
/// [`now_spread`], above every id this instance was given and above the last its copy of the
/// room holds — so that a counter Redis lost gives greater ids even within the millisecond of
/// the last.
#[derive(Debug, Default)]
pub(crate) struct Floor {
    /// The greatest id this instance was given, in any room.
    given: u64,
}

impl Floor {
    /// The floor for a room whose copy's newest id is `held`.
    pub(crate) fn of(&self, held: Option<u64>) -> u64 {
        // A held id out of the counter's range (a hostile Redis's history) raises nothing.
        let held = held.filter(|&id| id < MAX_ID).unwrap_or(0);
        let known = self.given.max(held);
        now_spread().max(known.saturating_add(1))
    }

    /// Redis gave ids up to `last`.
    pub(crate) fn gave(&mut self, last: u64) {
        self.given = self.given.max(last);
    }
}

/// The least id the clock allows now (see `rooms::history::ids`).
pub(crate) use crate::rooms::history::from_clock as now_spread;

/// A duration in whole milliseconds for Redis (at least 1).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_publish_script_publishes_with_the_command_given_and_only_that_changes() {
        let sharded = publish_script("SPUBLISH");
        assert_eq!(sharded.matches("redis.call('SPUBLISH',").count(), 1);
        assert!(!sharded.contains("redis.call('PUBLISH',"));
        assert_eq!(sharded.replace("SPUBLISH", "PUBLISH"), PUBLISH);
        assert_eq!(publish_script("PUBLISH"), PUBLISH);
    }

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
    fn a_floor_stays_above_every_id_known_even_within_the_clock_s_millisecond() {
        let mut floor = Floor::default();
        let now = now_spread();
        assert!(floor.of(None) >= now);
        // Ids given ahead of the clock (a busy millisecond, or a counter that ran ahead).
        let ahead = now + (1 << 20);
        floor.gave(ahead);
        assert_eq!(floor.of(None), ahead + 1);
        floor.gave(now);
        assert_eq!(floor.of(None), ahead + 1, "what was given never goes down");
        assert_eq!(
            floor.of(Some(ahead + 9)),
            ahead + 10,
            "the room's copy counts too"
        );
        let (before, of, after) = (
            now_spread(),
            Floor::default().of(Some(u64::MAX)),
            now_spread(),
        );
        assert!(
            before <= of && of <= after,
            "an id out of range raises nothing"
        );
        assert_eq!(Floor::default().of(Some(MAX_ID - 1)), MAX_ID);
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
