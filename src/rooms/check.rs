//! The rooms against a model: any sequence of joins, leaves, joins coming back, ends, follows,
//! publishes, posts and reads, as connections on several workers make them, checked after
//! every step — who is counted, who each worker fans out to, what reaches which worker, which
//! ids a read returns. Run by the property test below and by the `rooms` fuzz target
//! (`web::fuzzing::rooms`), one piece of code for both.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use reactor::ConnId;

use super::{
    Delivery, Follow, History, Joined, Joining, Message, PLAIN, Rooms, Seat, Workers, join_back,
    leave_all, local_members,
};

/// Workers of the server the check plays.
const WORKERS: usize = 3;
/// Members it plays: connections 0–3 (connection `c` on worker `c % WORKERS`), and 4–6, three
/// streams of one HTTP/2 connection on worker 1 (one slab key and generation, ids told apart by
/// their stream alone).
pub(crate) const CONNS: u8 = 7;
/// The first member that is a stream of the HTTP/2 connection.
const STREAMS_FROM: u8 = 4;
/// Room names it uses.
pub(crate) const ROOMS: u8 = 4;
/// Messages each room's history keeps.
const PER_ROOM: usize = 3;

/// One step.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// Connection `conn` joins room `room` (through its seat, as a callback would).
    Join { conn: u8, room: u8 },
    /// Connection `conn` leaves room `room`.
    Leave { conn: u8, room: u8 },
    /// What was sent to connection `conn` comes back to it (its worker's queue, one message).
    Deliver { conn: u8 },
    /// Connection `conn` ends: it leaves every room.
    End { conn: u8 },
    /// A room is followed (`true`) or one follow of it dropped.
    Follow { room: u8, on: bool },
    /// A message published to a room.
    Publish { room: u8, text: u8 },
    /// A message posted to a room.
    Post { room: u8 },
    /// A room's history read after an id.
    Since { room: u8, after: u8 },
}

impl Op {
    /// The steps bytes describe (what the fuzz target plays): three bytes a step.
    pub(crate) fn decode(data: &[u8]) -> Vec<Op> {
        data.chunks_exact(3)
            .map(|b| {
                let (conn, room) = (b[1] % CONNS, b[2] % ROOMS);
                match b[0] % 9 {
                    0 | 1 => Op::Join { conn, room },
                    2 => Op::Leave { conn, room },
                    3 => Op::Deliver { conn },
                    4 => Op::End { conn },
                    5 => Op::Follow {
                        room,
                        on: b[1] % 2 == 0,
                    },
                    6 => Op::Publish { room, text: b[1] },
                    7 => Op::Post { room },
                    _ => Op::Since { room, after: b[1] },
                }
            })
            .collect()
    }
}

/// What the rooms sent, as the check's workers received it.
#[derive(Default)]
struct Sent {
    /// Publishes, per worker: (room, the message's form).
    to_workers: Vec<(usize, Arc<str>, Arc<[u8]>)>,
    /// Per connection, in order.
    to_conns: HashMap<ConnId, VecDeque<Delivery>>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Sent>>);

impl Recorder {
    fn sent(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Workers for Recorder {
    fn count(&self) -> usize {
        WORKERS
    }

    fn to_worker(&self, worker: usize, delivery: Delivery) -> bool {
        if let Delivery::Publish { room, forms } = delivery {
            self.sent().to_workers.push((worker, room, forms.message));
        }
        true
    }

    fn to_conn(&self, id: ConnId, delivery: Delivery) -> bool {
        self.sent()
            .to_conns
            .entry(id)
            .or_default()
            .push_back(delivery);
        true
    }
}

/// One connection as its strand holds it.
#[derive(Default)]
struct Member {
    joined: Joined,
    joining: Joining,
}

fn id(conn: u8) -> ConnId {
    if conn >= STREAMS_FROM {
        let stream = 1 + 2 * u32::from(conn - STREAMS_FROM);
        return ConnId::from_parts(1, u32::from(STREAMS_FROM), 0).with_stream(stream);
    }
    ConnId::from_parts(u32::from(conn) % WORKERS as u32, u32::from(conn), 0)
}

fn name(room: u8) -> String {
    format!("r{room}")
}

/// Plays `ops` and checks the rooms after each; panics on the first difference.
pub(crate) fn run(ops: &[Op]) {
    let rooms = Rooms::new(PLAIN);
    rooms.keep_history(History::new(PER_ROOM).rooms(2));
    let sent = Recorder::default();
    rooms.attach(Box::new(sent.clone()));
    let mut conns: BTreeMap<u8, Member> = BTreeMap::new();
    let mut follows: HashMap<u8, Vec<Follow>> = HashMap::new();
    let mut last_id = 0;
    for op in ops {
        match *op {
            Op::Join { conn, room } => {
                let c = conns.entry(conn).or_default();
                let mut seat = Seat {
                    id: id(conn),
                    rooms: &rooms,
                    joined: &mut c.joined,
                    joining: &mut c.joining,
                    max_rooms: 3,
                };
                let was = seat.joined.len();
                let member = seat.try_join(&name(room));
                assert_eq!(
                    member,
                    was < 3 || c.joined.contains(&name(room)),
                    "{op:?}: max_rooms"
                );
            }
            Op::Leave { conn, room } => {
                if let Some(c) = conns.get_mut(&conn) {
                    Seat {
                        id: id(conn),
                        rooms: &rooms,
                        joined: &mut c.joined,
                        joining: &mut c.joining,
                        max_rooms: 3,
                    }
                    .leave(&name(room));
                }
            }
            Op::Deliver { conn } => {
                let next = sent
                    .sent()
                    .to_conns
                    .get_mut(&id(conn))
                    .and_then(VecDeque::pop_front);
                if let (Some(Delivery::Join(room)), Some(c)) = (next, conns.get_mut(&conn)) {
                    join_back(Some(&mut c.joining), &c.joined, &rooms, &room, id(conn));
                }
            }
            Op::End { conn } => {
                if let Some(mut c) = conns.remove(&conn) {
                    leave_all(&mut c.joined, Some(&c.joining), &rooms, id(conn));
                }
                // What was on its way to it finds nobody.
                sent.sent().to_conns.remove(&id(conn));
            }
            Op::Follow { room, on: true } => {
                follows
                    .entry(room)
                    .or_default()
                    .push(rooms.follow(&name(room)));
            }
            Op::Follow { room, on: false } => {
                follows.get_mut(&room).and_then(Vec::pop);
            }
            Op::Publish { room, text } => {
                let counted = rooms.members(&name(room));
                let reached = rooms.publish(&name(room), &Message::Text(text.to_string()));
                assert_eq!(reached, counted, "{op:?}: every member counted is reached");
                check_published(&sent, &conns, room, format!("M:{text}").as_bytes());
            }
            Op::Post { room } => {
                let posted = rooms.post(&name(room), move |id| format!("{room}:{id}"));
                let Some(posted) = posted else {
                    panic!("{op:?}: a server alone posts at once");
                };
                assert!(posted > last_id, "{op:?}: ids grow");
                last_id = posted;
                let held = rooms.since(&name(room), 0, || {});
                assert_eq!(held.last().map(|l| l.0), Some(posted), "{op:?}: kept");
                check_published(&sent, &conns, room, format!("M:{room}:{posted}").as_bytes());
            }
            Op::Since { room, after } => {
                let all = rooms.since(&name(room), 0, || {});
                let ids: Vec<u64> = all.iter().map(|l| l.0).collect();
                assert!(ids.windows(2).all(|w| w[0] < w[1]), "{op:?}: in order");
                assert!(ids.len() <= PER_ROOM, "{op:?}: within the history's bound");
                assert!(ids.iter().all(|&i| i <= last_id));
                let after = u64::from(after) % (last_id + 2);
                let mut waited = false;
                let newer = rooms.since(&name(room), after, || waited = true);
                let want: Vec<_> = all.into_iter().filter(|l| l.0 > after).collect();
                assert_eq!(
                    waited,
                    want.is_empty(),
                    "{op:?}: waits when nothing is newer"
                );
                assert_eq!(newer, want, "{op:?}: after is by id");
            }
        }
        check(&rooms, &conns, &sent, op);
    }
    for (conn, mut c) in std::mem::take(&mut conns) {
        leave_all(&mut c.joined, Some(&c.joining), &rooms, id(conn));
    }
    drop(follows);
    check(&rooms, &conns, &sent, &Op::Deliver { conn: 0 });
    assert!(rooms.list().is_empty(), "every member gone");
    for room in 0..ROOMS {
        assert!(!rooms.followed(&name(room)), "nothing follows r{room}");
    }
}

/// What a publish to `room` sent: `form` once to each worker with members there, nothing to
/// the others.
fn check_published(sent: &Recorder, conns: &BTreeMap<u8, Member>, room: u8, form: &[u8]) {
    let mut sent = sent.sent();
    let reached: BTreeSet<usize> = sent.to_workers.iter().map(|s| s.0).collect();
    assert_eq!(
        reached.len(),
        sent.to_workers.len(),
        "one message per worker"
    );
    for (_, to, message) in sent.to_workers.drain(..) {
        assert_eq!(&*to, name(room));
        assert_eq!(&*message, form);
    }
    let with_members: BTreeSet<usize> = conns
        .iter()
        .filter(|(_, c)| c.joined.contains(&name(room)) && !c.joining.waits_history(&name(room)))
        .map(|(conn, _)| id(*conn).worker() as usize)
        .collect();
    assert_eq!(reached, with_members, "the workers with members of {room}");
}

/// The rooms agree with the connections: who is counted, who each worker's list holds.
fn check(rooms: &Rooms, conns: &BTreeMap<u8, Member>, sent: &Recorder, op: &Op) {
    let sent = sent.sent();
    let mut listed = Vec::new();
    for room in 0..ROOMS {
        let room = name(room);
        let members: Vec<u8> = conns
            .iter()
            .filter(|(_, c)| c.joined.contains(&room))
            .map(|(conn, _)| *conn)
            .collect();
        assert_eq!(
            rooms.members(&room),
            members.len(),
            "{op:?}: {room} counted"
        );
        if !members.is_empty() {
            listed.push((room.clone(), members.len()));
        }
        // A member is in its worker's list once the last join it queued came back.
        let entered: BTreeSet<ConnId> = members
            .iter()
            .filter(|conn| {
                !sent.to_conns.get(&id(**conn)).is_some_and(|queue| {
                    queue
                        .iter()
                        .any(|d| matches!(d, Delivery::Join(r) if **r == room))
                })
            })
            .map(|conn| id(*conn))
            .collect();
        let mut local = Vec::new();
        local_members(&room, &mut local);
        let local: BTreeSet<ConnId> = local.into_iter().collect();
        assert_eq!(local, entered, "{op:?}: the workers' lists of {room}");
    }
    assert_eq!(rooms.list(), listed, "{op:?}: list");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        let conn = 0..CONNS;
        let room = 0..ROOMS;
        prop_oneof![
            3 => (conn.clone(), room.clone()).prop_map(|(conn, room)| Op::Join { conn, room }),
            1 => (conn.clone(), room.clone()).prop_map(|(conn, room)| Op::Leave { conn, room }),
            3 => conn.clone().prop_map(|conn| Op::Deliver { conn }),
            1 => conn.prop_map(|conn| Op::End { conn }),
            1 => (room.clone(), any::<bool>()).prop_map(|(room, on)| Op::Follow { room, on }),
            2 => (room.clone(), any::<u8>()).prop_map(|(room, text)| Op::Publish { room, text }),
            2 => room.clone().prop_map(|room| Op::Post { room }),
            1 => (room, any::<u8>()).prop_map(|(room, after)| Op::Since { room, after }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn rooms_agree_with_the_model_after_any_steps(ops in proptest::collection::vec(op(), 0..120)) {
            run(&ops);
        }
    }

    #[test]
    fn a_join_left_and_joined_again_enters_on_its_last_join_alone() {
        run(&[
            Op::Join { conn: 0, room: 0 },
            Op::Leave { conn: 0, room: 0 },
            Op::Join { conn: 0, room: 0 },
            Op::Deliver { conn: 0 },
            Op::Publish { room: 0, text: 1 },
            Op::Deliver { conn: 0 },
            Op::Publish { room: 0, text: 2 },
            Op::End { conn: 0 },
        ]);
    }

    #[test]
    fn bytes_decode_to_steps_three_at_a_time() {
        let ops = Op::decode(&[0, 1, 2, 7, 0, 1, 3, 4]);
        assert_eq!(ops.len(), 2);
        assert!(matches!(ops[0], Op::Join { conn: 1, room: 2 }));
        assert!(matches!(ops[1], Op::Post { room: 1 }));
    }
}
