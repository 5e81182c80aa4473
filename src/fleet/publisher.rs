//! The publisher thread: `PUBLISH`es what this instance's rooms hand it, in the order handed, a
//! batch of what is waiting per round trip (one pipeline). Posts take two round trips per batch
//! (see `history`): their ids from their rooms' counters, then — their texts made — Redis's
//! script publishes them in each room's order and keeps them in its history. While Redis is
//! unreachable it drops what arrives (counted; a post's poster is told `None`) instead of
//! keeping it, so no message reaches other instances late. Between batches it writes this
//! instance's presence.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::link::{Outgoing, Post};
use super::servers::Session;
use super::{Counters, Fleet, history, names, presence, resp};
use crate::rooms::Rooms;

/// Most messages sent in one round trip.
const BATCH: usize = 256;
/// How often an idle publisher looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// The publisher thread, until `stop`: also writes this instance's presence (`rooms`' counts)
/// every [`presence::BEAT`].
pub(crate) fn run(fleet: &Fleet, outgoing: &Receiver<Outgoing>, rooms: &Rooms, stop: &AtomicBool) {
    let counters = &fleet.counters;
    let mut failures = 0u32;
    let mut floor = history::Floor::default();
    // The rooms counted at the last beat: a room not among them since is deleted.
    let mut counted: Vec<String> = Vec::new();
    loop {
        let wait = |d| drop_for(outgoing, rooms, counters, stop, d);
        let Some(mut con) = fleet.connect_after(&mut failures, 1, wait) else {
            return;
        };
        let kept = (&mut floor, &mut counted);
        match serve(fleet, &mut con, outgoing, rooms, kept, stop) {
            Ok(()) => {
                // Stopping: this instance's members no longer count.
                let _ = presence::goodbye(&mut con, &fleet.prefix, fleet.instance, &counted);
                return;
            }
            Err(e) => {
                counters.error(&format!("publishing to Redis failed: {e}"));
                failures = 1;
            }
        }
    }
}

/// One connection's work: batches until `stop` (`Ok`) or a failure (`Err`, the batch
/// dropped and counted).
fn serve(
    fleet: &Fleet,
    con: &mut Session,
    outgoing: &Receiver<Outgoing>,
    rooms: &Rooms,
    (floor, counted): (&mut history::Floor, &mut Vec<String>),
    stop: &AtomicBool,
) -> io::Result<()> {
    let counters = &fleet.counters;
    let scripts = Scripts::load(con)?;
    let mut next_beat = Instant::now();
    let mut batch = Vec::with_capacity(16);
    loop {
        if Instant::now() >= next_beat {
            let now = rooms.list();
            let here: HashSet<&str> = now.iter().map(|(room, _)| room.as_str()).collect();
            let left: Vec<String> = counted
                .iter()
                .filter(|room| !here.contains(room.as_str()))
                .cloned()
                .collect();
            presence::beat(con, &fleet.prefix, fleet.instance, &now, &left)?;
            *counted = now.into_iter().map(|(room, _)| room).collect();
            next_beat = Instant::now() + presence::BEAT;
        }
        match outgoing.recv_timeout(POLL) {
            Ok(first) => batch.push(first),
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Acquire) => continue,
            Err(_) => return Ok(()),
        }
        while batch.len() < BATCH {
            match outgoing.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let sent = batch.len() as u64;
        let mut publishes = Vec::new();
        let mut posts = Posts::default();
        for out in batch.drain(..) {
            match out {
                Outgoing::Publish { channel, envelope } => publishes.push((channel, envelope)),
                Outgoing::Post(post) => posts.add(post),
            }
        }
        let mut unplaced = Vec::new();
        let ids = Ids { rooms, floor };
        match send(fleet, con, &scripts, ids, publishes, posts, &mut unplaced) {
            Ok(()) => Counters::add(&counters.published, sent),
            Err(e) => {
                Counters::add(&counters.dropped, sent);
                // Redis failed them (gone, most likely): they reach this instance alone, as
                // posts do while Redis is away.
                for post in unplaced {
                    post.alone(rooms);
                }
                return Err(e);
            }
        }
    }
}

/// What a batch's ids must stay above: this instance's rooms (their copies' newest ids) and
/// what Redis gave it before.
struct Ids<'a> {
    rooms: &'a Rooms,
    floor: &'a mut history::Floor,
}

/// The two scripts, loaded on each connection (Redis may have restarted since the last), and
/// the command that publishes.
struct Scripts {
    reserve: String,
    publish: String,
    publishes_with: &'static str,
}

impl Scripts {
    fn load(con: &mut Session) -> io::Result<Scripts> {
        let publishes_with = con.publish_command();
        let publish = history::publish_script(publishes_with);
        match con.load(&[history::RESERVE, &publish])?.as_slice() {
            [reserve, publish] => Ok(Scripts {
                reserve: reserve.clone(),
                publish: publish.clone(),
                publishes_with,
            }),
            other => Err(resp::answered("SCRIPT LOAD", &other)),
        }
    }
}

/// A batch's posts, by room in the order each room first came.
#[derive(Default)]
struct Posts(Vec<(Box<str>, Vec<Post>)>);

impl Posts {
    fn add(&mut self, post: Post) {
        match self.0.iter_mut().find(|(room, _)| *room == post.room) {
            Some((_, posts)) => posts.push(post),
            None => self.0.push((post.room.clone(), vec![post])),
        }
    }
}

/// Sends one batch: the posts' ids (a round trip, when there are posts), then the publishes
/// and the posts, in one pipeline; the posts' posters told their ids.
fn send(
    fleet: &Fleet,
    con: &mut Session,
    scripts: &Scripts,
    ids: Ids<'_>,
    publishes: Vec<(Vec<u8>, Vec<u8>)>,
    posts: Posts,
    unplaced: &mut Vec<Post>,
) -> io::Result<()> {
    let prefix = &fleet.prefix;
    let reserved = reserve(prefix, con, scripts, ids, &posts);
    let firsts = match reserved {
        Ok(firsts) => firsts,
        Err(e) => {
            unplaced.extend(posts.0.into_iter().flat_map(|(_, of_room)| of_room));
            return Err(e);
        }
    };
    send_reserved(prefix, con, scripts, publishes, posts, firsts, unplaced)
}

/// Round trip 1: the ids of a batch's posts, per room (the first and the one before it).
fn reserve(
    prefix: &str,
    con: &mut Session,
    scripts: &Scripts,
    ids: Ids<'_>,
    posts: &Posts,
) -> io::Result<Vec<(u64, u64)>> {
    let firsts = if posts.0.is_empty() {
        Vec::new()
    } else {
        let mut pipe = redis::pipe();
        for (room, of_room) in &posts.0 {
            let ttl = of_room.iter().map(|p| p.ttl).max().unwrap_or_default();
            pipe.cmd("EVALSHA")
                .arg(&scripts.reserve)
                .arg(1)
                .arg(names::seq_key(prefix, room))
                .arg(ids.floor.of(ids.rooms.last_id(room)))
                .arg(of_room.len())
                .arg(history::millis(ttl));
        }
        let replies = con.query(&pipe)?;
        replies
            .iter()
            .map(|r| match r {
                redis::Value::Array(pair) => match pair.as_slice() {
                    [redis::Value::Int(first), redis::Value::Int(before)] => {
                        match (u64::try_from(*first), u64::try_from(*before)) {
                            (Ok(first), Ok(before))
                                if before < first && first < history::MAX_ID =>
                            {
                                Ok((first, before))
                            }
                            _ => Err(io::Error::other("a room's counter out of its range")),
                        }
                    }
                    other => Err(resp::answered("ids", &other)),
                },
                other => Err(resp::answered("ids", &other)),
            })
            .collect::<io::Result<Vec<(u64, u64)>>>()?
    };
    for ((first, _), (_, of_room)) in firsts.iter().zip(&posts.0) {
        ids.floor
            .gave(first.saturating_add((of_room.len() as u64).saturating_sub(1)));
    }
    Ok(firsts)
}

/// Round trip 2: the publishes, and the posts with their texts made; the posters told.
fn send_reserved(
    prefix: &str,
    con: &mut Session,
    scripts: &Scripts,
    publishes: Vec<(Vec<u8>, Vec<u8>)>,
    posts: Posts,
    firsts: Vec<(u64, u64)>,
    unplaced: &mut Vec<Post>,
) -> io::Result<()> {
    let mut pipe = redis::pipe();
    for (channel, envelope) in &publishes {
        pipe.cmd(scripts.publishes_with).arg(channel).arg(envelope);
    }
    let head = super::envelope::posted_head();
    let mut placed = Vec::new();
    for ((room, of_room), (first, before)) in posts.0.into_iter().zip(firsts) {
        let keep = of_room.iter().map(|p| p.keep).max().unwrap_or(0);
        let ttl = of_room.iter().map(|p| p.ttl).max().unwrap_or_default();
        let cmd = pipe
            .cmd("EVALSHA")
            .arg(&scripts.publish)
            .arg(3)
            .arg(names::seq_key(prefix, &room))
            .arg(names::pending_key(prefix, &room))
            .arg(names::history_key(prefix, &room))
            .arg(names::room_channel(prefix, &room))
            .arg(&head)
            .arg(keep)
            .arg(history::millis(ttl))
            .arg(history::millis(history::STALE));
        let mut before = before;
        for (id, mut post) in (first..).zip(of_room) {
            let text = post.text(id);
            cmd.arg(before).arg(history::entry(id, &text));
            placed.push((id, post));
            before = id;
        }
    }
    let answered = con.query(&pipe);
    let published = answered
        .as_ref()
        .is_ok_and(|answers| answers.iter().all(|r| matches!(r, redis::Value::Int(_))));
    if !published {
        // Perhaps published, perhaps not: the posts go to this instance's members alone (with
        // the ids Redis gave them; a gap the others pass after `STALE`).
        unplaced.extend(placed.into_iter().map(|(_, post)| post));
        return Err(match answered {
            Err(e) => e,
            Ok(answers) => resp::answered("PUBLISH", &answers),
        });
    }
    for (id, post) in placed {
        post.placed(id);
    }
    Ok(())
}

/// While Redis is away, for `wait`: drops what arrives for other instances (counted), and
/// delivers posts to this instance's members alone (see `Rooms::post_alone`; counted as
/// dropped too: no other instance gets them); `false` when the thread should end.
fn drop_for(
    outgoing: &Receiver<Outgoing>,
    rooms: &Rooms,
    counters: &Counters,
    stop: &AtomicBool,
    wait: Duration,
) -> bool {
    let until = Instant::now() + wait;
    loop {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match outgoing.recv_timeout(left.min(POLL)) {
            Ok(out) => {
                Counters::add(&counters.dropped, 1);
                if let Outgoing::Post(post) = out {
                    post.alone(rooms);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}
