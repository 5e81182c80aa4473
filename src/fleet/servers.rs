//! What the fleet talks to — one Redis server, or a Redis Cluster given by some of its nodes —
//! and one thread's connection to it, through which each command goes where its key lives:
//! the one server, or the master of the key's slot (see `cluster.rs`).
//!
//! The differences the rest of the fleet sees are two: a cluster's pub/sub is sharded
//! (`SPUBLISH`/`SSUBSCRIBE`, Redis 7), so that a message goes to its channel's shard alone; and
//! a script is loaded on every master a thread reaches, not once.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use redis::{ConnectionInfo, Value};
use sha1::{Digest, Sha1};

use super::cluster::{Masters, Seeds};
use super::resp::RedisConn;

/// A URL of this scheme names a cluster by some of its nodes:
/// `redis+cluster://HOST:PORT,HOST:PORT/` (a user and password before the first host apply to
/// every node).
pub(crate) const CLUSTER_SCHEME: &str = "redis+cluster://";

/// What the fleet was given.
#[derive(Clone, Debug)]
pub(crate) enum Servers {
    One(ConnectionInfo),
    /// A cluster's seed nodes: the map of its slots is asked of them.
    Cluster(Arc<Seeds>),
}

impl Servers {
    /// `redis://…` for one server; `redis+cluster://HOST:PORT,HOST:PORT/` for a cluster.
    pub(crate) fn parse(url: &str) -> io::Result<Servers> {
        match url.strip_prefix(CLUSTER_SCHEME) {
            None => info(url).map(Servers::One),
            Some(rest) => {
                let (credentials, rest) = match rest.rsplit_once('@') {
                    Some((who, rest)) => (format!("{who}@"), rest),
                    None => (String::new(), rest),
                };
                let hosts = rest.trim_end_matches('/');
                let seeds = hosts
                    .split(',')
                    .map(|host| info(&format!("redis://{credentials}{host}/")))
                    .collect::<io::Result<Vec<_>>>()?;
                Ok(Servers::Cluster(Arc::new(Seeds::new(seeds))))
            }
        }
    }

    /// A cluster given by `urls` (each `redis://HOST:PORT/`, credentials included).
    pub(crate) fn cluster(urls: &[&str]) -> io::Result<Servers> {
        if urls.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a Redis Cluster needs at least one node's URL",
            ));
        }
        urls.iter()
            .map(|url| info(url))
            .collect::<io::Result<Vec<_>>>()
            .map(|seeds| Servers::Cluster(Arc::new(Seeds::new(seeds))))
    }

    /// The addresses, as a log line shows them.
    pub(crate) fn describe(&self) -> String {
        match self {
            Servers::One(info) => info.addr().to_string(),
            Servers::Cluster(seeds) => {
                let given = seeds.given().iter();
                let all: Vec<String> = given.map(|s| s.addr().to_string()).collect();
                format!("cluster {}", all.join(","))
            }
        }
    }

    /// A connection (to a cluster: its map read, no master connected yet) whose replies must
    /// arrive whole within `timeout`.
    pub(crate) fn connect(&self, timeout: Duration) -> io::Result<Session> {
        match self {
            Servers::One(info) => RedisConn::open(info, timeout).map(Session::One),
            Servers::Cluster(seeds) => Masters::open(seeds, timeout).map(Session::Cluster),
        }
    }
}

/// A URL read as the `redis` crate reads it; an unreadable one is `InvalidInput`.
fn info(url: &str) -> io::Result<ConnectionInfo> {
    redis::IntoConnectionInfo::into_connection_info(url).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a Redis URL ({url}): {e}"),
        )
    })
}

/// One thread's connection to what the fleet talks to.
pub(crate) enum Session {
    One(RedisConn),
    Cluster(Masters),
}

impl Session {
    /// How long every later reply may take to arrive whole.
    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        match self {
            Session::One(conn) => conn.set_timeout(timeout),
            Session::Cluster(masters) => masters.set_timeout(timeout),
        }
    }

    /// Sends `pipe`'s commands (to a cluster: each to its key's master) and reads their
    /// replies, in the commands' order.
    pub(crate) fn query(&mut self, pipe: &redis::Pipeline) -> io::Result<Vec<Value>> {
        match self {
            Session::One(conn) => conn.query(&pipe.get_packed_pipeline(), pipe.cmd_iter().count()),
            Session::Cluster(masters) => {
                let routed: Vec<(u16, Vec<u8>)> = pipe
                    .cmd_iter()
                    .map(|cmd| {
                        (
                            super::cluster::slot(routing_key(cmd)),
                            cmd.get_packed_command(),
                        )
                    })
                    .collect();
                masters.query(&routed)
            }
        }
    }

    /// Sends one command and reads its reply.
    pub(crate) fn query_one(&mut self, cmd: &redis::Cmd) -> io::Result<Value> {
        let mut pipe = redis::pipe();
        pipe.add_command(cmd.clone());
        self.query(&pipe)?
            .pop()
            .ok_or_else(|| io::Error::other("Redis answered nothing"))
    }

    /// Loads `scripts` (on one server now; on a cluster's every master, each when first
    /// reached): their SHA-1s, for `EVALSHA`.
    pub(crate) fn load(&mut self, scripts: &[&str]) -> io::Result<Vec<String>> {
        match self {
            Session::One(conn) => conn.load_scripts(scripts),
            Session::Cluster(masters) => {
                for script in scripts {
                    masters.keep_loaded(script)?;
                }
                Ok(scripts.iter().map(|s| sha1_hex(s)).collect())
            }
        }
    }

    /// The command that publishes on a channel: `SPUBLISH` on a cluster (to the channel's
    /// shard alone), `PUBLISH` on one server.
    pub(crate) fn publish_command(&self) -> &'static str {
        match self {
            Session::One(_) => "PUBLISH",
            Session::Cluster(_) => "SPUBLISH",
        }
    }
}

/// A script's SHA-1 as `EVALSHA` names it (lower-case hex).
fn sha1_hex(script: &str) -> String {
    Sha1::digest(script.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The bytes whose slot a command goes to: a script's first key (`EVAL`, `EVALSHA`: the
/// fleet's scripts take their room's keys, all on one slot), or the first argument (the key
/// or channel of every other command the fleet sends).
fn routing_key(cmd: &redis::Cmd) -> &[u8] {
    let mut args = cmd.args_iter().map(|a| match a {
        redis::Arg::Simple(bytes) => bytes,
        _ => &b""[..],
    });
    let name = args.next().unwrap_or_default();
    let scripted = name.eq_ignore_ascii_case(b"EVAL") || name.eq_ignore_ascii_case(b"EVALSHA");
    // (The script and the number of keys come before a script's first key.)
    let skip = if scripted { 2 } else { 0 };
    args.nth(skip).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_url_names_every_seed_with_the_credentials_and_one_url_one_server() {
        let Servers::Cluster(seeds) =
            Servers::parse("redis+cluster://:pw@127.0.0.1:7000,127.0.0.1:7001/").unwrap()
        else {
            panic!("a cluster");
        };
        let addrs: Vec<String> = seeds.given().iter().map(|s| s.addr().to_string()).collect();
        assert_eq!(addrs, ["127.0.0.1:7000", "127.0.0.1:7001"]);
        assert!(
            seeds
                .given()
                .iter()
                .all(|s| s.redis_settings().password() == Some("pw"))
        );
        assert!(matches!(
            Servers::parse("redis://127.0.0.1:6379/").unwrap(),
            Servers::One(_)
        ));
        for bad in ["http://x/", "redis+cluster://", "redis+cluster://a:b:c,/"] {
            let e = Servers::parse(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
        assert!(Servers::cluster(&[]).is_err());
    }

    #[test]
    fn a_command_is_routed_by_its_key_and_a_script_by_its_first_key() {
        let key = |cmd: &redis::Cmd| String::from_utf8_lossy(routing_key(cmd)).into_owned();
        assert_eq!(key(redis::cmd("INCRBY").arg("{w:c}:r").arg(1)), "{w:c}:r");
        assert_eq!(
            key(redis::cmd("EVALSHA")
                .arg("abc")
                .arg(2)
                .arg("{w:r}:seq")
                .arg("x")),
            "{w:r}:seq"
        );
        assert_eq!(
            key(redis::cmd("SPUBLISH").arg("{w:r}:room").arg("m")),
            "{w:r}:room"
        );
        assert_eq!(key(&redis::cmd("PING")), "");
    }

    #[test]
    fn a_scripts_sha1_is_the_one_redis_gives() {
        // `SCRIPT LOAD "return 1"` answers this.
        assert_eq!(
            sha1_hex("return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }
}
