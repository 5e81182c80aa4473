//! What the fleet's instances call things in Redis: a room's pub/sub channel and a caller's
//! rate-limit counter. Pure functions, so every instance derives the same names.
//!
//! | what | name |
//! |---|---|
//! | room `R` | `{prefix}:room:R` (channel) |
//! | room `R`'s recent messages | `{prefix}:history:R` (list of `ID TEXT`, oldest first) |
//! | room `R`'s next id and last published id | `{prefix}:seq:R` (hash `next`, `done`, `blocked`) |
//! | room `R`'s posts waiting for their turn | `{prefix}:pending:R` (hash id → entry) |
//! | instance `I`'s members per room | `{prefix}:presence:I` (hash, `I` in hex; expires) |
//! | the instances that reported presence | `{prefix}:instances` (set of `I`) |
//! | caller `C`'s writes in second `S` | `{prefix}:rate:S:w:C` (counter, expires after 2 s) |
//! | caller `C`'s reads in second `S` | `{prefix}:rate:S:r:C` |
//!
//! Redis names are binary-safe, so a room or caller name is used as it is; a caller name longer
//! than [`MAX_CALLER`] bytes (the caller's `X-Forwarded-For` entry is the client's to write on a
//! direct connection) is replaced by `#` and its SHA-1 in hex, which keeps keys short.

use sha1::{Digest, Sha1};

/// Longest caller name used as it is in a counter's key.
pub(crate) const MAX_CALLER: usize = 64;

/// The pub/sub channel of `room`.
pub(crate) fn room_channel(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, b":room:", room)
}

/// `{prefix}{kind}{room}`: a room name is used as it is (Redis names are binary-safe).
fn of_room(prefix: &str, kind: &[u8], room: &str) -> Vec<u8> {
    [prefix.as_bytes(), kind, room.as_bytes()].concat()
}

/// The list of `room`'s recent messages.
pub(crate) fn history_key(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, b":history:", room)
}

/// Room `room`'s id counter.
pub(crate) fn seq_key(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, b":seq:", room)
}

/// Room `room`'s posts waiting for their turn.
pub(crate) fn pending_key(prefix: &str, room: &str) -> Vec<u8> {
    of_room(prefix, b":pending:", room)
}

/// Instance `instance`'s members per room; [`presence_prefix`] and the instance in hex.
pub(crate) fn presence_key(prefix: &str, instance: u64) -> String {
    format!("{}{}", presence_prefix(prefix), instance_name(instance))
}

/// What every instance's presence key starts with.
pub(crate) fn presence_prefix(prefix: &str) -> String {
    format!("{prefix}:presence:")
}

/// An instance as the presence keys and the instances' set name it.
pub(crate) fn instance_name(instance: u64) -> String {
    format!("{instance:016x}")
}

/// The set of instances that reported presence.
pub(crate) fn instances_key(prefix: &str) -> String {
    format!("{prefix}:instances")
}

/// The room a channel of this prefix is for; `None` for any other channel, or a room name
/// that is not UTF-8 (no instance of ours publishes such a channel).
pub(crate) fn room_of<'a>(prefix: &str, channel: &'a [u8]) -> Option<&'a str> {
    let rest = channel.strip_prefix(prefix.as_bytes())?;
    let room = rest.strip_prefix(b":room:")?;
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
    let mut key = format!(
        "{prefix}:rate:{second}:{}:",
        match bucket {
            Bucket::Reads => 'r',
            Bucket::Writes => 'w',
        }
    )
    .into_bytes();
    if caller.len() <= MAX_CALLER {
        key.extend_from_slice(caller.as_bytes());
    } else {
        key.push(b'#');
        for b in Sha1::digest(caller.as_bytes()) {
            key.extend_from_slice(format!("{b:02x}").as_bytes());
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_channels_name_the_room_and_read_back() {
        let cases: &[(&str, &str, &[u8])] = &[
            ("web", "lobby", b"web:room:lobby"),
            ("web", "", b"web:room:"),
            ("app1", "a:room:b", b"app1:room:a:room:b"),
            ("web", "ünï", "web:room:ünï".as_bytes()),
            ("", "x", b":room:x"),
        ];
        for &(prefix, room, channel) in cases {
            assert_eq!(room_channel(prefix, room), channel, "{prefix} {room}");
            assert_eq!(room_of(prefix, channel), Some(room), "{prefix} {room}");
        }
    }

    #[test]
    fn history_ids_and_presence_have_their_documented_names() {
        assert_eq!(history_key("web", "lobby"), b"web:history:lobby");
        assert_eq!(history_key("app", "a:b"), b"app:history:a:b");
        assert_eq!(seq_key("web", "lobby"), b"web:seq:lobby");
        assert_eq!(pending_key("web", "a:b"), b"web:pending:a:b");
        assert_eq!(presence_key("web", 0xab), "web:presence:00000000000000ab");
        assert!(presence_key("web", u64::MAX).starts_with(&presence_prefix("web")));
        assert_eq!(instance_name(1), "0000000000000001");
        assert_eq!(instances_key("chat"), "chat:instances");
    }

    #[test]
    fn channels_of_another_prefix_or_kind_are_not_rooms() {
        let cases: &[(&str, &[u8])] = &[
            ("web", b"other:room:lobby"),
            ("web", b"web:rate:1:w:x"),
            ("web", b"web:roomlobby"),
            ("web", b"we"),
            ("web", b""),
            ("web", b"web:room:\xff"),
            ("app", b"web:room:lobby"),
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
                b"web:rate:1700000000:w:127.0.0.2",
            ),
            (
                1_700_000_000,
                Bucket::Reads,
                "127.0.0.2",
                b"web:rate:1700000000:r:127.0.0.2",
            ),
            (
                1_700_000_001,
                Bucket::Writes,
                "127.0.0.2",
                b"web:rate:1700000001:w:127.0.0.2",
            ),
            (0, Bucket::Writes, "anyone", b"web:rate:0:w:anyone"),
            (5, Bucket::Reads, "2001:db8::1", b"web:rate:5:r:2001:db8::1"),
        ];
        for &(second, bucket, caller, key) in cases {
            assert_eq!(rate_key("web", second, bucket, caller), key, "{caller}");
        }
    }

    #[test]
    fn long_caller_names_are_hashed_to_a_short_key() {
        let exactly = "a".repeat(MAX_CALLER);
        let key = rate_key("web", 1, Bucket::Writes, &exactly);
        assert!(key.ends_with(exactly.as_bytes()));
        let long = "b".repeat(16 * 1024);
        let key = rate_key("web", 1, Bucket::Writes, &long);
        assert_eq!(key.len(), b"web:rate:1:w:#".len() + 40);
        assert!(key.starts_with(b"web:rate:1:w:#"));
        // The same name gives the same key on every instance; another name another key.
        assert_eq!(key, rate_key("web", 1, Bucket::Writes, &long));
        let other = format!("{long}c");
        assert_ne!(key, rate_key("web", 1, Bucket::Writes, &other));
        // A known answer: SHA-1 of 65 times "x" (Python's hashlib).
        let key = rate_key("web", 2, Bucket::Reads, &"x".repeat(MAX_CALLER + 1));
        assert_eq!(
            key,
            b"web:rate:2:r:#78c741ddc482e4cdf8c474a0876347a0905b6233"
        );
    }
}
