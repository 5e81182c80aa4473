//! How many members each room has on every instance.
//!
//! Every [`BEAT`] the publisher thread writes this instance's count of every room with
//! members as one hash (`{prefix}:presence:I`, replaced whole in one transaction) that expires
//! [`EXPIRY`] later unless written again, and names the instance in `{prefix}:instances`. A
//! reader sums the other instances' counts of the room in Redis (one script, one round trip)
//! and adds this instance's own count as it is now. So a join or a leave costs Redis nothing;
//! another instance's changes show within one `BEAT` plus the round trip, and an instance that
//! dies without saying goodbye stops counting within `EXPIRY`. A stopping instance deletes its
//! hash. After Redis lost its data, the next beat writes every instance's counts again.

use std::io;
use std::time::Duration;

use super::{names, resp};

/// How often an instance writes its counts.
pub const BEAT: Duration = Duration::from_secs(1);
/// How long an instance's counts live in Redis unless written again.
pub const EXPIRY: Duration = Duration::from_secs(3);

/// The most members one instance may report for a room (more connections than one process can
/// hold); a count past it, or one that is not a whole number, is passed over.
const MAX_COUNT: u64 = 1 << 24;

/// The most members the other instances together may be said to have (1 024 instances at
/// [`MAX_COUNT`]): an answer past it is not Redis's script's, and is refused.
const MAX_OTHERS: u64 = MAX_COUNT << 10;

/// The other instances' members of a room: `KEYS[1]` the instances' set, `ARGV[1]` the
/// presence keys' prefix, `ARGV[2]` the room, `ARGV[3]` the reader's own instance. An instance
/// whose hash has expired is taken out of the set.
const SUM: &str = r"
local n = 0
for _, i in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if i ~= ARGV[3] then
    local key = ARGV[1] .. i
    local c = redis.call('HGET', key, ARGV[2])
    if c then
      local v = tonumber(c)
      if v and v >= 0 and v <= tonumber(ARGV[4]) and v == math.floor(v) then n = n + v end
    elseif redis.call('EXISTS', key) == 0 then
      redis.call('SREM', KEYS[1], i)
    end
  end
end
return n
";

/// Writes this instance's counts (`rooms`: each room with members here, and how many).
pub(crate) fn beat(
    conn: &mut resp::RedisConn,
    prefix: &str,
    instance: u64,
    rooms: &[(String, usize)],
) -> io::Result<()> {
    let key = names::presence_key(prefix, instance);
    let mut pipe = redis::pipe();
    pipe.cmd("MULTI").cmd("DEL").arg(&key);
    let mut queued = 1;
    if !rooms.is_empty() {
        let hset = pipe.cmd("HSET").arg(&key);
        for (room, n) in rooms {
            hset.arg(room).arg(n);
        }
        queued += 1;
    }
    pipe.cmd("PEXPIRE")
        .arg(&key)
        .arg(u64::try_from(EXPIRY.as_millis()).unwrap_or(u64::MAX));
    pipe.cmd("SADD")
        .arg(names::instances_key(prefix))
        .arg(names::instance_name(instance));
    pipe.cmd("EXEC");
    queued += 2;
    let replies = conn.query(&pipe.get_packed_pipeline(), queued + 2)?;
    match replies.last() {
        Some(redis::Value::Array(done)) if done.len() == queued => Ok(()),
        other => Err(resp::answered("presence", &other)),
    }
}

/// Takes this instance's counts out (a stopping instance).
pub(crate) fn goodbye(conn: &mut resp::RedisConn, prefix: &str, instance: u64) -> io::Result<()> {
    let mut pipe = redis::pipe();
    pipe.cmd("DEL").arg(names::presence_key(prefix, instance));
    pipe.cmd("SREM")
        .arg(names::instances_key(prefix))
        .arg(names::instance_name(instance));
    conn.query(&pipe.get_packed_pipeline(), 2).map(drop)
}

/// The members of `room` on the other instances, as they last reported them.
pub(crate) fn others(
    conn: &mut resp::RedisConn,
    prefix: &str,
    instance: u64,
    room: &str,
) -> io::Result<usize> {
    let cmd = redis::cmd("EVAL")
        .arg(SUM)
        .arg(1)
        .arg(names::instances_key(prefix))
        .arg(names::presence_prefix(prefix))
        .arg(room)
        .arg(names::instance_name(instance))
        .arg(MAX_COUNT)
        .get_packed_command();
    match conn.query(&cmd, 1)?.pop() {
        Some(redis::Value::Int(n)) => u64::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_OTHERS)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| io::Error::other(format!("a count out of bounds: {n}"))),
        other => Err(resp::answered("presence", &other)),
    }
}
