//! What the fleet's instances call things in Redis: a room's pub/sub channel and keys, and a
//! caller's rate-limit counters. Pure functions, so every instance derives the same names.
//!
//! Every name of a room starts with the room in a hash tag (`{prefix:R}`), and every name of a
//! caller with the caller in one: on a Redis Cluster all of a room's keys and its channel live
//! on one slot (a room's scripts run on its master, its messages go through its shard), and a
//! caller's counts on one. On one server the braces are only characters.
//!
//! | what | name |
//! |---|---|
//! | room `R` | `{prefix:R}:room` (channel) |
//! | room `R`'s recent messages | `{prefix:R}:history` (list of `ID TEXT`, oldest first) |
//! | room `R`'s next id and last published id | `{prefix:R}:seq` (hash `next`, `done`, `blocked`) |
//! | room `R`'s posts waiting for their turn | `{prefix:R}:pending` (hash id → entry) |
//! | the instances with members in room `R` | `{prefix:R}:presence` (set of `I`, `I` in hex) |
//! | instance `I`'s members of room `R` | `{prefix:R}:presence:I` (a count; expires) |
//! | caller `C`'s writes in second `S` | `{prefix:C}:rate:S:w` (counter, expires after 2 s) |
//! | caller `C`'s reads in second `S` | `{prefix:C}:rate:S:r` |
//!
//! Redis names are binary-safe, so a room or caller name is used as it is; a caller name longer
//! than [`MAX_CALLER`] bytes (the caller's `X-Forwarded-For` entry is the client's to write on a
//! direct connection) is replaced by `#` and its SHA-1 in hex, which keeps keys short. (A `}`
//! in a room's name ends its hash tag early; all its names still share that tag.)

use sha1::{Digest, Sha1};

/// Longest caller name used as it is in a counter's key.
pub(crate) const MAX_CALLER: usize = 64;

/// The pub/sub channel of `room`.
pub(crate) fn room_channel(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, room, b":room")
}

/// `{prefix:room}kind`: a room name is used as it is (Redis names are binary-safe).
fn of_room(prefix: &str, room: &str, kind: &[u8]) -> Vec<u8> {
    [b"{", prefix.as_bytes(), b":", room.as_bytes(), b"}", kind].concat()
}

/// The list of `room`'s recent messages.
pub(crate) fn history_key(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, room, b":history")
}

/// Room `room`'s id counter.
pub(crate) fn seq_key(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, room, b":seq")
}

/// Room `room`'s posts waiting for their turn.
pub(crate) fn pending_key(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, room, b":pending")
}

/// The set of instances that reported members of `room`; [`presence_key`] is the set's name,
/// a colon and the instance's.
pub(crate) fn presence_set(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, room, b":presence")
}

/// Instance `instance`'s members of `room`.
pub(crate) fn presence_key(prefix: &str, room: &str, instance: u64) -> Vec<u8> {
    let mut key = presence_set(prefix, room);
    key.push(b':');
    key.extend_from_slice(instance_name(instance).as_bytes());
    key
}

/// An instance as the presence keys and sets name it.
pub(crate) fn instance_name(instance: u64) -> String {
    format!("{instance:016x}")
}

/// The room a channel of this prefix is for; `None` for any other channel, or a room name
/// that is not UTF-8 (no instance of ours publishes such a channel).
pub(crate) fn room_of<'a>(prefix: &str, channel: &'a [u8]) -> Option<&'a str> {
    let rest = channel
        .strip_prefix(b"{")?
        .strip_prefix(prefix.as_bytes())?;
    let room = rest.strip_prefix(b":")?.strip_suffix(b"}:room")?;
    std::str::from_utf8(room).ok()
}

/// Which bucket a rate-limit counter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bucket {
    Reads,
    Writes,
}

/// The counter of `caller`'s `bucket` in wall-clock second `second`.
pub(crate) fn rate_key(prefix: &str, second: u64, bucket: Bucket, caller: &str) -> Vec<u8> {
    let mut key = format!("{{{prefix}:").into_bytes();
    if caller.len() <= MAX_CALLER {
        key.extend_from_slice(caller.as_bytes());
    } else {
        key.push(b'#');
        for b in Sha1::digest(caller.as_bytes()) {
            key.extend_from_slice(format!("{b:02x}").as_bytes());
        }
    }
    let bucket = match bucket {
        Bucket::Reads => 'r',
        Bucket::Writes => 'w',
    };
    key.extend_from_slice(format!("}}:rate:{second}:{bucket}").as_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_channels_name_the_room_and_read_back() {
        let cases: &[(&str, &str, &[u8])] = &[
            ("web", "lobby", b"{web:lobby}:room"),
            ("web", "", b"{web:}:room"),
            ("app1", "a:room:b", b"{app1:a:room:b}:room"),
            ("web", "a}:room", b"{web:a}:room}:room"),
            ("web", "ünï", "{web:ünï}:room".as_bytes()),
            ("", "x", b"{:x}:room"),
        ];
        for &(prefix, room, channel) in cases {
            assert_eq!(room_channel(prefix, room), channel, "{prefix} {room}");
            assert_eq!(room_of(prefix, channel), Some(room), "{prefix} {room}");
        }
    }

    #[test]
    fn history_ids_and_presence_have_their_documented_names() {
        assert_eq!(history_key("web", "lobby"), b"{web:lobby}:history");
        assert_eq!(history_key("app", "a:b"), b"{app:a:b}:history");
        assert_eq!(seq_key("web", "lobby"), b"{web:lobby}:seq");
        assert_eq!(pending_key("web", "a:b"), b"{web:a:b}:pending");
        assert_eq!(presence_set("web", "r"), b"{web:r}:presence");
        assert_eq!(
            presence_key("web", "r", 0xab),
            b"{web:r}:presence:00000000000000ab"
        );
        assert_eq!(instance_name(1), "0000000000000001");
    }

    #[test]
    fn a_rooms_names_and_a_callers_counters_share_one_cluster_slot() {
        use super::super::cluster::slot;
        for room in ["lobby", "a:b", "a}b", "", "ünï"] {
            let channel = slot(&room_channel("web", room));
            for key in [
                history_key("web", room),
                seq_key("web", room),
                pending_key("web", room),
                presence_set("web", room),
                presence_key("web", room, 7),
            ] {
                assert_eq!(slot(&key), channel, "{room}");
            }
        }
        let caller = |second, bucket| slot(&rate_key("web", second, bucket, "10.0.0.1"));
        assert_eq!(caller(1, Bucket::Reads), caller(2, Bucket::Writes));
        assert_ne!(
            slot(&room_channel("web", "a")),
            slot(&room_channel("web", "b"))
        );
    }

    #[test]
    fn channels_of_another_prefix_or_kind_are_not_rooms() {
        let cases: &[(&str, &[u8])] = &[
            ("web", b"{other:lobby}:room"),
            ("web", b"{web:x}:rate:1:w"),
            ("web", b"{web:lobby}:history"),
            ("web", b"{weblobby}:room"),
            ("web", b"{we"),
            ("web", b""),
            ("web", b"{web:\xff}:room"),
            ("app", b"{web:lobby}:room"),
        ];
        for &(prefix, channel) in cases {
            assert_eq!(room_of(prefix, channel), None, "{prefix} {channel:?}");
        }
    }

    #[test]
    fn rate_keys_separate_callers_buckets_and_seconds() {
        let cases: &[(u64, Bucket, &str, &[u8])] = &[
            (
                1_700_000_000,
                Bucket::Writes,
                "127.0.0.2",
                b"{web:127.0.0.2}:rate:1700000000:w",
            ),
            (
                1_700_000_000,
                Bucket::Reads,
                "127.0.0.2",
                b"{web:127.0.0.2}:rate:1700000000:r",
            ),
            (
                1_700_000_001,
                Bucket::Writes,
                "127.0.0.2",
                b"{web:127.0.0.2}:rate:1700000001:w",
            ),
            (0, Bucket::Writes, "anyone", b"{web:anyone}:rate:0:w"),
            (
                5,
                Bucket::Reads,
                "2001:db8::1",
                b"{web:2001:db8::1}:rate:5:r",
            ),
        ];
        for &(second, bucket, caller, key) in cases {
            assert_eq!(rate_key("web", second, bucket, caller), key, "{caller}");
        }
    }

    #[test]
    fn long_caller_names_are_hashed_to_a_short_key() {
        let exactly = "a".repeat(MAX_CALLER);
        let key = rate_key("web", 1, Bucket::Writes, &exactly);
        assert!(key.starts_with(format!("{{web:{exactly}}}").as_bytes()));
        let long = "b".repeat(16 * 1024);
        let key = rate_key("web", 1, Bucket::Writes, &long);
        assert_eq!(key.len(), b"{web:#}:rate:1:w".len() + 40);
        assert!(key.starts_with(b"{web:#") && key.ends_with(b"}:rate:1:w"));
        // The same name gives the same key on every instance; another name another key.
        assert_eq!(key, rate_key("web", 1, Bucket::Writes, &long));
        let other = format!("{long}c");
        assert_ne!(key, rate_key("web", 1, Bucket::Writes, &other));
        // A known answer: SHA-1 of 65 times "x" (Python's hashlib).
        let key = rate_key("web", 2, Bucket::Reads, &"x".repeat(MAX_CALLER + 1));
        assert_eq!(
            key,
            b"{web:#78c741ddc482e4cdf8c474a0876347a0905b6233}:rate:2:r"
        );
    }
}
