//! How many members each room has on every instance.
//!
//! Every [`BEAT`] the publisher thread writes this instance's count of every room with
//! members (`{prefix:R}:presence:I`, a count that expires [`EXPIRY`] later unless written
//! again) and names the instance in the room's set (`{prefix:R}:presence`); a room whose last
//! member here left since the last beat has its count deleted. A reader sums the other
//! instances' counts of the room in Redis (one script on the room's keys, one round trip) and
//! adds this instance's own count as it is now. So a join or a leave costs Redis nothing;
//! another instance's changes show within one `BEAT` plus the round trip, and an instance that
//! dies without saying goodbye stops counting within `EXPIRY`. A stopping instance deletes its
//! counts. After Redis lost its data, the next beat writes every instance's counts again. A
//! room's presence keys share its hash tag, so on a cluster they live on its master.

use std::io;
use std::time::Duration;

use super::servers::Session;
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

/// The other instances' members of a room: `KEYS[1]` the room's set of instances, each
/// instance's count under the set's name, a colon and the instance; `ARGV[1]` the reader's own
/// instance, `ARGV[2]` the most one instance may report. An instance whose count has expired
/// is taken out of the set.
const SUM: &str = r"
local n = 0
for _, i in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if i ~= ARGV[1] then
    local c = redis.call('GET', KEYS[1] .. ':' .. i)
    if c then
      local v = tonumber(c)
      if v and v >= 0 and v <= tonumber(ARGV[2]) and v == math.floor(v) then n = n + v end
    else
      redis.call('SREM', KEYS[1], i)
    end
  end
end
return n
";

/// Writes this instance's counts (`rooms`: each room with members here, and how many), and
/// deletes those of `left` (rooms counted at the last beat that have none now).
pub(crate) fn beat(
    session: &mut Session,
    prefix: &str,
    instance: u64,
    rooms: &[(String, usize)],
    left: &[String],
) -> io::Result<()> {
    let expiry = u64::try_from(EXPIRY.as_millis()).unwrap_or(u64::MAX);
    let me = names::instance_name(instance);
    let mut pipe = redis::pipe();
    for (room, n) in rooms {
        pipe.cmd("SET")
            .arg(names::presence_key(prefix, room, instance))
            .arg(n)
            .arg("PX")
            .arg(expiry);
        let set = names::presence_set(prefix, room);
        pipe.cmd("SADD").arg(&set).arg(&me);
        pipe.cmd("PEXPIRE").arg(&set).arg(expiry);
    }
    for room in left {
        pipe.cmd("DEL")
            .arg(names::presence_key(prefix, room, instance));
    }
    if rooms.is_empty() && left.is_empty() {
        return Ok(());
    }
    let replies = session.query(&pipe)?;
    match replies
        .iter()
        .find(|r| matches!(r, redis::Value::ServerError(_)))
    {
        None => Ok(()),
        Some(refused) => Err(resp::answered("presence", refused)),
    }
}

/// Takes this instance's counts of `rooms` out (a stopping instance).
pub(crate) fn goodbye(
    session: &mut Session,
    prefix: &str,
    instance: u64,
    rooms: &[String],
) -> io::Result<()> {
    beat(session, prefix, instance, &[], rooms)
}

/// The members of `room` on the other instances, as they last reported them.
pub(crate) fn others(
    session: &mut Session,
    prefix: &str,
    instance: u64,
    room: &str,
) -> io::Result<usize> {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(SUM)
        .arg(1)
        .arg(names::presence_set(prefix, room))
        .arg(names::instance_name(instance))
        .arg(MAX_COUNT);
    match session.query_one(&cmd)? {
        redis::Value::Int(n) => u64::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_OTHERS)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| io::Error::other(format!("a count out of bounds: {n}"))),
        other => Err(resp::answered("presence", &other)),
    }
}
