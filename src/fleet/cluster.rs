//! A Redis Cluster as the fleet's threads see it: the slot of every key (CRC16 of its hash
//! tag, modulo 16 384), which master serves each slot (`CLUSTER SLOTS`, asked of any node that
//! answers), and one thread's connections to the masters: each command of a pipeline sent to
//! the master of its key's slot, `MOVED` followed after the map is read again, `ASK` followed
//! once with `ASKING`.
//!
//! Every key of a room carries the room in a hash tag (`{prefix:room}`, see `names.rs`), so a
//! room's scripts run on one master, and a room's order is that master's.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, Value};

use super::resp::{self, RedisConn};

/// Hash slots of a cluster.
const SLOTS: u16 = 16_384;

/// Rounds in which a pipeline's commands are sent: those redirected (`MOVED`, `ASK` that
/// answered `MOVED`) or refused while their slot's keys are moved (`TRYAGAIN`) go again.
/// Past the last the pipeline fails.
const ROUNDS: usize = 8;

/// The pause before a round that sends commands refused with `TRYAGAIN`, doubling each round
/// (10 ms to 640 ms: about 1.3 s in all, what moving a room's few keys takes).
const PAUSE: Duration = Duration::from_millis(10);

/// The slot of `key`: its hash tag's (the bytes between the first `{` and the next `}`, when
/// there are any) or, without one, the whole key's.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % SLOTS
}

fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    let rest = &key[open + 1..];
    match rest.iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &rest[..len],
        _ => key,
    }
}

/// CRC16-CCITT (XMODEM: polynomial 0x1021, start 0), as Redis Cluster hashes keys.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (0..8).fold(crc ^ (u16::from(b) << 8), |c, _| match c & 0x8000 {
            0 => c << 1,
            _ => (c << 1) ^ 0x1021,
        })
    })
}

/// A node as the cluster names it: host and port.
pub(crate) type Node = (String, u16);

/// Which master serves each slot: ranges sorted by their first slot; and every node named,
/// replicas included.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Map {
    ranges: Vec<(u16, u16, Node)>,
    nodes: Vec<Node>,
}

impl Map {
    /// Reads `CLUSTER SLOTS`' answer: `[[first, last, [host, port, ...], replicas...], ...]`.
    /// A range out of the slots, or without a master, is refused.
    pub(crate) fn parse(reply: &Value) -> io::Result<Map> {
        let Value::Array(ranges) = reply else {
            return Err(resp::answered("CLUSTER SLOTS", reply));
        };
        let mut map = Map::default();
        for range in ranges {
            let parsed = match range {
                Value::Array(parts) => match parts.as_slice() {
                    [
                        Value::Int(first),
                        Value::Int(last),
                        Value::Array(master),
                        replicas @ ..,
                    ] => {
                        map.nodes.extend(replicas.iter().filter_map(|r| match r {
                            Value::Array(replica) => node_of(replica),
                            _ => None,
                        }));
                        match (u16::try_from(*first), u16::try_from(*last), node_of(master)) {
                            (Ok(first), Ok(last), Some(node)) if first <= last && last < SLOTS => {
                                Some((first, last, node))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                },
                _ => None,
            };
            map.ranges
                .push(parsed.ok_or_else(|| resp::answered("CLUSTER SLOTS", range))?);
        }
        map.ranges.sort_by_key(|(first, _, _)| *first);
        map.nodes
            .extend(map.ranges.iter().map(|(_, _, node)| node.clone()));
        map.nodes.sort();
        map.nodes.dedup();
        Ok(map)
    }

    /// The master serving `slot`, if any does.
    pub(crate) fn owner(&self, slot: u16) -> Option<&Node> {
        let at = self.ranges.partition_point(|(first, _, _)| *first <= slot);
        let (_, last, node) = self.ranges.get(at.checked_sub(1)?)?;
        (slot <= *last).then_some(node)
    }

    /// Every master, once each.
    pub(crate) fn masters(&self) -> Vec<Node> {
        let mut all: Vec<Node> = self.ranges.iter().map(|(_, _, n)| n.clone()).collect();
        all.sort();
        all.dedup();
        all
    }
}

/// `[host, port, ...]` of a `CLUSTER SLOTS` range.
fn node_of(parts: &[Value]) -> Option<Node> {
    match parts {
        [Value::BulkString(host), Value::Int(port), ..] => Some((
            String::from_utf8(host.clone()).ok()?,
            u16::try_from(*port).ok()?,
        )),
        _ => None,
    }
}

/// Where or when an answer sends its command again: `MOVED` (the slot has a new master: read
/// the map again), `ASK` (the slot is migrating: ask that node, this once), `TRYAGAIN` (some
/// of a script's keys are moved already and some not: in a moment).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    Moved(Node),
    Ask(Node),
    TryAgain,
}

impl Redirect {
    /// `-MOVED 3999 127.0.0.1:7002`, `-ASK 3999 127.0.0.1:7002`, `-TRYAGAIN …`; `None` for any
    /// other answer.
    pub(crate) fn of(reply: &Value) -> Option<Redirect> {
        let Value::ServerError(e) = reply else {
            return None;
        };
        if e.code() == "TRYAGAIN" {
            return Some(Redirect::TryAgain);
        }
        let (_slot, addr) = e.details()?.split_once(' ')?;
        let (host, port) = addr.rsplit_once(':')?;
        let node = (host.to_owned(), port.parse().ok()?);
        match e.code() {
            "MOVED" => Some(Redirect::Moved(node)),
            "ASK" => Some(Redirect::Ask(node)),
            _ => None,
        }
    }
}

/// The nodes a fleet knows a cluster by: those it was given, and every node (master or
/// replica) the last map read named — so that losing the nodes it was given, in a failover
/// say, does not lose it the cluster.
#[derive(Debug)]
pub(crate) struct Seeds {
    given: Vec<ConnectionInfo>,
    learned: Mutex<Vec<Node>>,
}

impl Seeds {
    pub(crate) fn new(given: Vec<ConnectionInfo>) -> Seeds {
        Seeds {
            given,
            learned: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn given(&self) -> &[ConnectionInfo] {
        &self.given
    }

    /// How to reach `node`: as the first node given says (its credentials), at its address.
    pub(crate) fn info(&self, node: &Node) -> ConnectionInfo {
        let first = self.given.first().cloned().unwrap_or_else(|| {
            redis::IntoConnectionInfo::into_connection_info((node.0.as_str(), node.1))
                .unwrap_or_else(|_| unreachable_info())
        });
        first.set_addr(ConnectionAddr::Tcp(node.0.clone(), node.1))
    }

    /// Every node to ask the map of: those given, then those learned.
    fn all(&self) -> Vec<ConnectionInfo> {
        let learned = self
            .learned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut all = self.given.clone();
        all.extend(learned.iter().map(|node| self.info(node)));
        all
    }

    /// The nodes a map named (at most [`MAX_LEARNED`] of them).
    fn learn(&self, nodes: &[Node]) {
        let nodes = nodes.iter().take(MAX_LEARNED).cloned().collect();
        *self.learned.lock().unwrap_or_else(PoisonError::into_inner) = nodes;
    }
}

/// The most nodes a fleet remembers of a cluster's map (Redis Cluster's own bound on its size
/// is about 1 000 nodes).
const MAX_LEARNED: usize = 1024;

/// One thread's connections to a cluster's masters, made as they are needed.
pub(crate) struct Masters {
    /// The nodes to ask the map of when no master answers.
    seeds: Arc<Seeds>,
    map: Map,
    conns: HashMap<Node, RedisConn>,
    timeout: Duration,
    /// Scripts loaded on every master reached (`EVALSHA` finds them there).
    scripts: Vec<String>,
}

impl Masters {
    /// Reads the map from the first of `seeds` that answers.
    pub(crate) fn open(seeds: &Arc<Seeds>, timeout: Duration) -> io::Result<Masters> {
        let mut masters = Masters {
            seeds: Arc::clone(seeds),
            map: Map::default(),
            conns: HashMap::new(),
            timeout,
            scripts: Vec::new(),
        };
        masters.refresh()?;
        Ok(masters)
    }

    /// How long a reply may take to arrive whole.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How long every later reply may take to arrive whole.
    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        for conn in self.conns.values_mut() {
            conn.set_timeout(timeout);
        }
    }

    /// Reads the map again: from a master this thread is connected to, else from a seed. The
    /// connections to nodes no longer masters are closed.
    pub(crate) fn refresh(&mut self) -> io::Result<()> {
        let ask = redis::cmd("CLUSTER").arg("SLOTS").get_packed_command();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no Redis Cluster node given");
        let known: Vec<Node> = self.conns.keys().cloned().collect();
        for node in known {
            let Some(conn) = self.conns.get_mut(&node) else {
                continue;
            };
            match conn.query(&ask, 1).and_then(|mut r| one(&mut r)) {
                Ok(reply) => return self.take_map(&reply),
                Err(e) => {
                    self.conns.remove(&node);
                    last = e;
                }
            }
        }
        for seed in self.seeds.all() {
            let answer = RedisConn::open(&seed, self.timeout)
                .and_then(|mut conn| conn.query(&ask, 1))
                .and_then(|mut r| one(&mut r));
            match answer {
                Ok(reply) => return self.take_map(&reply),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn take_map(&mut self, reply: &Value) -> io::Result<()> {
        let map = Map::parse(reply)?;
        if map.ranges.is_empty() {
            return Err(io::Error::other("the Redis Cluster serves no slot"));
        }
        let masters = map.masters();
        self.conns.retain(|node, _| masters.contains(node));
        self.seeds.learn(&map.nodes);
        self.map = map;
        Ok(())
    }

    /// The masters as the map last read says.
    pub(crate) fn masters(&self) -> Vec<Node> {
        self.map.masters()
    }

    /// The master of `slot` as the map says.
    pub(crate) fn owner(&self, slot: u16) -> io::Result<Node> {
        self.map
            .owner(slot)
            .cloned()
            .ok_or_else(|| io::Error::other(format!("no Redis Cluster master serves slot {slot}")))
    }

    /// Loads `script` on every master connected, and on each connected later.
    pub(crate) fn keep_loaded(&mut self, script: &str) -> io::Result<()> {
        if self.scripts.iter().any(|s| s == script) {
            return Ok(());
        }
        self.scripts.push(script.to_owned());
        for conn in self.conns.values_mut() {
            conn.load_scripts(&[script])?;
        }
        Ok(())
    }

    /// The connection to `node`, made if there is none (with the seeds' credentials), the
    /// scripts loaded on it.
    pub(crate) fn conn(&mut self, node: &Node) -> io::Result<&mut RedisConn> {
        match self.conns.entry(node.clone()) {
            Entry::Occupied(kept) => Ok(kept.into_mut()),
            Entry::Vacant(slot) => {
                let mut conn = RedisConn::open(&self.seeds.info(node), self.timeout)?;
                if !self.scripts.is_empty() {
                    conn.load_scripts(&self.scripts)?;
                }
                Ok(slot.insert(conn))
            }
        }
    }

    /// How to reach `node`.
    pub(crate) fn info(&self, node: &Node) -> ConnectionInfo {
        self.seeds.info(node)
    }

    /// Sends every command (its slot, its encoding) to its slot's master, a pipeline per
    /// master, and answers their replies in the commands' order. `MOVED` reads the map again
    /// and sends the command where it says; `ASK` sends it once to the node named, after
    /// `ASKING`; `TRYAGAIN` sends it again after a pause. A failed connection is dropped (the
    /// next command to its node makes it again) and fails the call.
    pub(crate) fn query(&mut self, cmds: &[(u16, Vec<u8>)]) -> io::Result<Vec<Value>> {
        let mut replies: Vec<Option<Value>> = vec![None; cmds.len()];
        let mut todo: Vec<usize> = (0..cmds.len()).collect();
        for round in 0..ROUNDS {
            if todo.is_empty() {
                break;
            }
            let mut by_node: Vec<(Node, Vec<usize>)> = Vec::new();
            for &i in &todo {
                let node = self.owner(cmds[i].0)?;
                match by_node.iter_mut().find(|(n, _)| *n == node) {
                    Some((_, of_node)) => of_node.push(i),
                    None => by_node.push((node, vec![i])),
                }
            }
            let mut again = Vec::new();
            let (mut moved, mut wait) = (false, false);
            for (node, of_node) in by_node {
                let packed: Vec<u8> = of_node
                    .iter()
                    .flat_map(|&i| cmds[i].1.iter().copied())
                    .collect();
                let answers = self.pipeline(&node, &packed, of_node.len())?;
                for (i, answer) in of_node.into_iter().zip(answers) {
                    let answer = match Redirect::of(&answer) {
                        Some(Redirect::Ask(to)) => self.ask(&to, &cmds[i].1)?,
                        _ => answer,
                    };
                    match Redirect::of(&answer) {
                        None => replies[i] = Some(answer),
                        Some(Redirect::TryAgain) => wait = true,
                        Some(Redirect::Moved(_) | Redirect::Ask(_)) => moved = true,
                    }
                    if replies[i].is_none() {
                        again.push(i);
                    }
                }
            }
            if moved {
                self.refresh()?;
            }
            if wait && !again.is_empty() {
                std::thread::sleep(PAUSE * (1 << round.min(6)));
            }
            todo = again;
        }
        replies
            .into_iter()
            .map(|r| r.ok_or_else(|| io::Error::other("a Redis Cluster slot kept moving")))
            .collect()
    }

    /// Sends `packed` (`n` commands) to `node` as one pipeline and reads their replies; the
    /// connection is dropped if that fails.
    fn pipeline(&mut self, node: &Node, packed: &[u8], n: usize) -> io::Result<Vec<Value>> {
        let answered = self.conn(node).and_then(|conn| conn.query(packed, n));
        if answered.is_err() {
            self.conns.remove(node);
        }
        answered
    }

    /// `cmd` sent to `node` after `ASKING`: its reply.
    fn ask(&mut self, node: &Node, cmd: &[u8]) -> io::Result<Value> {
        let mut packed = redis::cmd("ASKING").get_packed_command();
        packed.extend_from_slice(cmd);
        let mut answers = self.pipeline(node, &packed, 2)?;
        one(&mut answers)
    }
}

/// The one reply of a query of one command.
fn one(replies: &mut Vec<Value>) -> io::Result<Value> {
    replies
        .pop()
        .ok_or_else(|| io::Error::other("Redis answered nothing"))
}

/// A `ConnectionInfo` for no reachable address (never used: a cluster has seeds).
fn unreachable_info() -> ConnectionInfo {
    redis::IntoConnectionInfo::into_connection_info("redis://127.0.0.1:0/")
        .unwrap_or_else(|_| unreachable!("a fixed URL parses"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_clusters_for_keys_and_hash_tags() {
        // Redis's own figures (`CLUSTER KEYSLOT`).
        for (key, want) in [
            (&b"123456789"[..], 12_739),
            (b"foo", 12_182),
            (b"{user1000}.following", 3_443),
            (b"{user1000}.followers", 3_443),
            (b"foo{}{bar}", 8_363),
            (b"foo{{bar}}zap", 4_015),
            (b"foo{bar}{zap}", 5_061),
            (b"", 0),
        ] {
            assert_eq!(slot(key), want, "{}", String::from_utf8_lossy(key));
        }
        assert_eq!(crc16(b"123456789"), 0x31C3, "XMODEM's check value");
        assert_eq!(slot(b"{web:lobby}:history"), slot(b"{web:lobby}:seq"));
    }

    fn range(first: i64, last: i64, host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(first),
            Value::Int(last),
            Value::Array(vec![
                Value::BulkString(host.into()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ]),
            Value::Array(vec![Value::BulkString(host.into()), Value::Int(port + 3)]),
        ])
    }

    #[test]
    fn a_map_says_which_master_serves_a_slot_and_refuses_what_is_not_one() {
        let reply = Value::Array(vec![
            range(10_923, 16_383, "127.0.0.1", 7002),
            range(0, 5_460, "127.0.0.1", 7000),
            range(5_461, 10_922, "127.0.0.1", 7001),
        ]);
        let map = Map::parse(&reply).unwrap();
        let port = |slot| map.owner(slot).map(|n| n.1);
        assert_eq!(
            [
                port(0),
                port(5_460),
                port(5_461),
                port(10_923),
                port(16_383)
            ],
            [Some(7000), Some(7000), Some(7001), Some(7002), Some(7002)]
        );
        assert_eq!(map.masters().len(), 3);
        assert_eq!(map.nodes.len(), 6, "replicas named too");
        let gap = Map::parse(&Value::Array(vec![range(0, 99, "h", 1)])).unwrap();
        assert_eq!(gap.owner(100), None, "a slot no range covers");
        for bad in [
            Value::Int(1),
            Value::Array(vec![range(5, 4, "h", 1)]),
            Value::Array(vec![range(0, 16_384, "h", 1)]),
            Value::Array(vec![range(0, 1, "h", 70_000)]),
            Value::Array(vec![Value::Array(vec![Value::Int(0), Value::Int(1)])]),
        ] {
            assert!(Map::parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn moved_and_ask_name_where_to_go_and_other_errors_do_not() {
        let error = |text: &str| redis::parse_redis_value(format!("-{text}\r\n").as_bytes());
        assert_eq!(
            Redirect::of(&error("MOVED 3999 127.0.0.1:7002").unwrap()),
            Some(Redirect::Moved(("127.0.0.1".into(), 7002)))
        );
        assert_eq!(
            Redirect::of(&error("ASK 3999 ::1:7002").unwrap()),
            Some(Redirect::Ask(("::1".into(), 7002)))
        );
        assert_eq!(
            Redirect::of(
                &error("TRYAGAIN Multiple keys request during rehashing of slot").unwrap()
            ),
            Some(Redirect::TryAgain)
        );
        for other in ["ERR wrong", "MOVED nonsense", "MOVED 1 host:port"] {
            assert_eq!(Redirect::of(&error(other).unwrap()), None, "{other}");
        }
        assert_eq!(Redirect::of(&Value::Okay), None);
    }
}
