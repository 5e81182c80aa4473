//! The timer wheel: a hashed timing wheel whose slot lists are intrusive doubly-linked lists
//! threaded through the slab entries.
//!
//! Time is counted in ticks of [`TIMER_TICK`] since the worker started. A deadline due at
//! tick `t` is linked into slot `t % SLOTS`; each entry stores `prev`, `next` (slab keys) and its
//! `due` tick in its own slab entry ([`Link`], 12 bytes), so arming, moving and cancelling a timer
//! is O(1) and allocates nothing. Each tick the wheel walks one slot and expires the entries whose
//! due tick has come; entries due in a later round (deadlines beyond the wheel's span,
//! `SLOTS × TIMER_TICK` ≈ 41 s, such as a 75 s keep-alive) stay linked and are looked at once per
//! round. Nothing ever scans all connections. A bitmap of non-empty slots tells the worker how long
//! it may sleep. (`cargo test -p web-reactor --release --lib wheel -- --nocapture` prints what
//! moving a deadline costs with 100 000 timers armed.)

use std::time::{Duration, Instant};

/// Resolution of strand deadlines: a deadline fires at most about one tick late, never early.
///
/// ```
/// assert!(reactor::TIMER_TICK <= std::time::Duration::from_millis(100));
/// ```
pub const TIMER_TICK: Duration = Duration::from_millis(10);
/// Number of slots of the wheel (a power of two).
pub(crate) const SLOTS: usize = 4096;
const MASK: u32 = SLOTS as u32 - 1;
const WORDS: usize = SLOTS / 64;
// `Wheel::summary` has one bit per word.
const _: () = assert!(WORDS == 64);
/// End of a list (`next` of the tail, `prev` of the head, an empty slot).
pub(crate) const NIL: u32 = u32::MAX;
/// `prev` of an entry that is in no list.
const UNLINKED: u32 = u32::MAX - 1;
/// Farthest a deadline may be, in ticks, for wrapping comparisons to hold (~124 days).
const MAX_AHEAD: u32 = 1 << 30;

/// The timer fields stored in each slab entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    prev: u32,
    next: u32,
    due: u32,
}

impl Link {
    /// A link in no list.
    pub(crate) const fn new() -> Link {
        Link {
            prev: UNLINKED,
            next: NIL,
            due: 0,
        }
    }

    /// Whether the entry is armed.
    pub(crate) fn is_linked(&self) -> bool {
        self.prev != UNLINKED
    }

    /// The tick the entry is due at, when armed.
    pub(crate) fn due(&self) -> Option<u32> {
        self.is_linked().then_some(self.due)
    }
}

/// Whatever stores the links, indexed by slab key (the worker's slab; a `Vec` in tests).
pub(crate) trait Links {
    /// The link of the entry under `key`, which must exist.
    fn link(&mut self, key: u32) -> &mut Link;
}

impl Links for Vec<Link> {
    fn link(&mut self, key: u32) -> &mut Link {
        &mut self[key as usize]
    }
}

/// Converts instants to ticks since a worker's start.
#[derive(Clone, Debug)]
pub(crate) struct Clock {
    start: Instant,
    /// The last instant converted and its nanoseconds: a turn converts its own clock read
    /// several times (the timers due, the poll's timeout, a strand's deadline read back).
    last: std::cell::Cell<(Instant, u64)>,
}

impl Clock {
    pub(crate) fn new(start: Instant) -> Clock {
        Clock {
            start,
            last: std::cell::Cell::new((start, 0)),
        }
    }

    /// Nanoseconds from the worker's start to `t` (zero before it). In `u64`: 584 years, and
    /// the divisions below by the constant tick compile to multiplications (`u128` ones would
    /// be library calls, on every request).
    fn nanos(&self, t: Instant) -> u64 {
        let (last, nanos) = self.last.get();
        if last == t {
            return nanos;
        }
        let d = t.saturating_duration_since(self.start);
        let nanos = d
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(d.subsec_nanos()));
        self.last.set((t, nanos));
        nanos
    }

    /// The tick `now` falls in (rounded down).
    pub(crate) fn tick(&self, now: Instant) -> u32 {
        (self.nanos(now) / TICK_NANOS) as u32
    }

    /// The first tick at or after `deadline` (rounded up, so a timer never fires early).
    pub(crate) fn due_tick(&self, deadline: Instant) -> u32 {
        self.nanos(deadline).div_ceil(TICK_NANOS) as u32
    }

    /// The instant tick `due` starts, seen from `now` (wrapping comparison, as the wheel's): a
    /// tick begun reads as its start, so that every read within it gives the same instant; a
    /// tick past reads as the start of the current one.
    pub(crate) fn tick_start(&self, now: Instant, due: u32) -> Instant {
        let nanos = self.nanos(now);
        let ahead = due.wrapping_sub((nanos / TICK_NANOS) as u32);
        if ahead == 0 || ahead > MAX_AHEAD {
            now.checked_sub(Duration::from_nanos(nanos % TICK_NANOS))
                .unwrap_or(now)
        } else {
            now + Self::until_nanos(nanos, ahead)
        }
    }

    /// Time from `now` to the start of the tick `ahead` ticks after the one `now` falls in
    /// (computed without absolute ticks, so the `u32` tick counter may wrap).
    pub(crate) fn until(&self, now: Instant, ahead: u32) -> Duration {
        Self::until_nanos(self.nanos(now), ahead)
    }

    fn until_nanos(now_nanos: u64, ahead: u32) -> Duration {
        let into = now_nanos % TICK_NANOS;
        Duration::from_nanos((u64::from(ahead) * TICK_NANOS).saturating_sub(into))
    }
}

/// [`TIMER_TICK`] in nanoseconds.
const TICK_NANOS: u64 = TIMER_TICK.as_nanos() as u64;

/// The wheel: slot heads, a bitmap of non-empty slots and the last tick processed.
pub(crate) struct Wheel {
    heads: Box<[u32]>,
    occupied: Box<[u64]>,
    /// Bit `w` set when `occupied[w]` is not zero: finds the next non-empty slot in O(1).
    summary: u64,
    current: u32,
    len: usize,
}

impl Wheel {
    /// An empty wheel whose last processed tick is `current`.
    pub(crate) fn new(current: u32) -> Wheel {
        Wheel {
            heads: vec![NIL; SLOTS].into_boxed_slice(),
            occupied: vec![0; WORDS].into_boxed_slice(),
            summary: 0,
            current,
            len: 0,
        }
    }

    /// Number of armed timers.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Clamps a due tick into `(current, current + MAX_AHEAD]`: a deadline already past fires
    /// on the next tick.
    fn clamp(&self, due: u32) -> u32 {
        let ahead = due.wrapping_sub(self.current);
        if ahead == 0 || ahead > MAX_AHEAD {
            if (ahead as i32) <= 0 {
                self.current.wrapping_add(1)
            } else {
                self.current.wrapping_add(MAX_AHEAD)
            }
        } else {
            due
        }
    }

    /// Arms (or moves) the timer of `key` to `due`; O(1), nothing when it is already there.
    pub(crate) fn set<L: Links>(&mut self, links: &mut L, key: u32, due: u32) {
        let due = self.clamp(due);
        let link = *links.link(key);
        if link.is_linked() {
            if link.due == due {
                return;
            }
            self.remove(links, key);
        }
        let slot = (due & MASK) as usize;
        let head = self.heads[slot];
        *links.link(key) = Link {
            prev: NIL,
            next: head,
            due,
        };
        if head != NIL {
            links.link(head).prev = key;
        }
        self.heads[slot] = key;
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.summary |= 1 << (slot / 64);
        self.len += 1;
    }

    /// Disarms the timer of `key`; O(1), nothing when it is not armed.
    pub(crate) fn remove<L: Links>(&mut self, links: &mut L, key: u32) {
        let link = *links.link(key);
        if !link.is_linked() {
            return;
        }
        let slot = (link.due & MASK) as usize;
        if link.prev == NIL {
            self.heads[slot] = link.next;
            if link.next == NIL {
                self.occupied[slot / 64] &= !(1 << (slot % 64));
                if self.occupied[slot / 64] == 0 {
                    self.summary &= !(1 << (slot / 64));
                }
            }
        } else {
            links.link(link.prev).next = link.next;
        }
        if link.next != NIL {
            links.link(link.next).prev = link.prev;
        }
        *links.link(key) = Link::new();
        self.len -= 1;
    }

    /// Advances to tick `now`, disarming every timer due by then and pushing its key to `out`.
    pub(crate) fn expire<L: Links>(&mut self, links: &mut L, now: u32, out: &mut Vec<u32>) {
        let behind = now.wrapping_sub(self.current);
        if behind == 0 {
            return;
        }
        if self.len == 0 || behind > MAX_AHEAD {
            // Nothing armed (or the clock jumped beyond any armed deadline's reach).
            self.current = now;
            return;
        }
        if behind as usize >= SLOTS {
            // Slept more than a round: look at every slot once.
            for slot in 0..SLOTS {
                self.expire_slot(links, slot, now, out);
            }
            self.current = now;
            return;
        }
        while self.current != now {
            self.current = self.current.wrapping_add(1);
            let slot = (self.current & MASK) as usize;
            self.expire_slot(links, slot, self.current, out);
        }
    }

    fn expire_slot<L: Links>(&mut self, links: &mut L, slot: usize, upto: u32, out: &mut Vec<u32>) {
        if self.occupied[slot / 64] & (1 << (slot % 64)) == 0 {
            return;
        }
        let mut key = self.heads[slot];
        while key != NIL {
            let link = *links.link(key);
            if (upto.wrapping_sub(link.due) as i32) >= 0 {
                self.remove(links, key);
                out.push(key);
            }
            key = link.next;
        }
    }

    /// Ticks from the current tick to the next non-empty slot (`None` when no timer is armed).
    /// The entries there may be due in a later round: the worker then wakes, finds nothing due and
    /// sleeps again, at most once per round per slot.
    pub(crate) fn next_in(&self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let start = (self.current.wrapping_add(1) & MASK) as usize;
        let (sw, sb) = (start / 64, start % 64);
        let first = self.occupied[sw] & (!0u64 << sb);
        // The next non-empty slot: in the starting word at or after `start`, else in the next
        // non-empty word (wrapping round), else in the starting word before `start`.
        let after = if sw + 1 < WORDS {
            self.summary & (!0u64 << (sw + 1))
        } else {
            0
        };
        let before = self.summary & ((1u64 << sw) - 1);
        let found = if first != 0 {
            Some(sw * 64 + first.trailing_zeros() as usize)
        } else if after != 0 || before != 0 {
            let w = if after != 0 {
                after.trailing_zeros()
            } else {
                before.trailing_zeros()
            } as usize;
            Some(w * 64 + self.occupied[w].trailing_zeros() as usize)
        } else {
            let wrapped = self.occupied[sw] & ((1u64 << sb) - 1);
            (wrapped != 0).then(|| sw * 64 + wrapped.trailing_zeros() as usize)
        };
        let slot = found? as u32;
        let d = slot.wrapping_sub(self.current) & MASK;
        Some(if d == 0 { SLOTS as u32 } else { d })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    enum Op {
        Set(u32, u32),
        Remove(u32),
        /// Advance to a tick and expect these keys (any order) to expire.
        Advance(u32, &'static [u32]),
        /// Expect the next non-empty slot this many ticks ahead.
        NextIn(Option<u32>),
    }
    use Op::*;

    /// `next_in` by scanning every slot, to check the summary-word search against.
    fn next_in_by_scan(wheel: &Wheel) -> Option<u32> {
        if wheel.len == 0 {
            return None;
        }
        (1..=SLOTS as u32).find(|d| {
            let slot = (wheel.current.wrapping_add(*d) & MASK) as usize;
            wheel.occupied[slot / 64] & (1 << (slot % 64)) != 0
        })
    }

    #[test]
    fn next_in_agrees_with_a_full_scan_under_random_operations() {
        let mut links = vec![Link::new(); 64];
        let mut wheel = Wheel::new(4000);
        let mut out = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let key = (rand() % 64) as u32;
            match rand() % 4 {
                0 | 1 => {
                    let due = wheel.current.wrapping_add(1 + (rand() % 9000) as u32);
                    wheel.set(&mut links, key, due);
                }
                2 => wheel.remove(&mut links, key),
                _ => {
                    out.clear();
                    let now = wheel.current.wrapping_add((rand() % 700) as u32);
                    wheel.expire(&mut links, now, &mut out);
                }
            }
            assert_eq!(wheel.next_in(), next_in_by_scan(&wheel));
        }
    }

    fn run(name: &str, start: u32, ops: &[Op]) {
        let mut links = vec![Link::new(); 16];
        let mut wheel = Wheel::new(start);
        let mut out = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Set(key, due) => wheel.set(&mut links, key, due),
                Remove(key) => wheel.remove(&mut links, key),
                Advance(now, want) => {
                    out.clear();
                    wheel.expire(&mut links, now, &mut out);
                    out.sort_unstable();
                    let mut want = want.to_vec();
                    want.sort_unstable();
                    assert_eq!(out, want, "{name}: op {i}: expired keys");
                    for k in &out {
                        assert!(
                            !links[*k as usize].is_linked(),
                            "{name}: op {i}: {k} linked"
                        );
                    }
                }
                NextIn(want) => assert_eq!(wheel.next_in(), want, "{name}: op {i}: next_in"),
            }
        }
        let armed = links.iter().filter(|l| l.is_linked()).count();
        assert_eq!(wheel.len(), armed, "{name}: len agrees with links");
    }

    #[test]
    fn table() {
        let s = SLOTS as u32;
        run("empty", 0, &[NextIn(None), Advance(100, &[])]);
        run(
            "fires at its tick, not before",
            0,
            &[
                Set(1, 5),
                NextIn(Some(5)),
                Advance(4, &[]),
                Advance(5, &[1]),
                NextIn(None),
            ],
        );
        run(
            "same slot, different rounds",
            0,
            &[
                Set(1, 3),
                Set(2, 3 + s),
                Advance(3, &[1]),
                NextIn(Some(s)),
                Advance(3 + s - 1, &[]),
                Advance(3 + s, &[2]),
            ],
        );
        run(
            "moving a deadline later does not fire early",
            0,
            &[Set(1, 5), Set(1, 50), Advance(10, &[]), Advance(50, &[1])],
        );
        run(
            "moving a deadline earlier",
            0,
            &[
                Set(1, 50),
                Set(1, 5),
                NextIn(Some(5)),
                Advance(5, &[1]),
                Advance(60, &[]),
            ],
        );
        run(
            "remove head, middle, tail of one slot",
            0,
            &[
                Set(1, 7),
                Set(2, 7),
                Set(3, 7),
                Set(4, 7),
                Remove(4),
                Remove(2),
                Remove(1),
                Advance(7, &[3]),
                NextIn(None),
            ],
        );
        run(
            "remove unarmed is a no-op",
            0,
            &[Remove(3), Set(3, 2), Remove(3), Remove(3), Advance(9, &[])],
        );
        run(
            "past deadline fires on the next tick",
            100,
            &[
                Set(1, 40),
                Set(2, 100),
                NextIn(Some(1)),
                Advance(101, &[1, 2]),
            ],
        );
        run(
            "a long sleep expires everything due once",
            0,
            &[
                Set(1, 10),
                Set(2, 2 * s),
                Set(3, 3 * s + 5),
                Advance(2 * s + 7, &[1, 2]),
                Advance(3 * s + 5, &[3]),
            ],
        );
        run(
            "wrapping tick counter",
            u32::MAX - 2,
            &[
                Set(1, u32::MAX),
                Set(2, 1),
                NextIn(Some(2)),
                Advance(u32::MAX, &[1]),
                Advance(1, &[2]),
            ],
        );
        run(
            "next_in wraps around the bitmap",
            s - 3,
            &[
                Set(1, s + 2),
                NextIn(Some(5)),
                Set(2, s - 1),
                NextIn(Some(2)),
            ],
        );
    }

    #[test]
    fn clock_rounds_deadlines_up_and_sleeps_to_tick_starts() {
        let start = Instant::now();
        let clock = Clock::new(start);
        let ms = Duration::from_millis;
        for (at, tick, due) in [(0, 0, 0), (3, 0, 1), (10, 1, 1), (19, 1, 2), (25, 2, 3)] {
            assert_eq!(clock.tick(start + ms(at)), tick, "tick of {at} ms");
            assert_eq!(clock.due_tick(start + ms(at)), due, "due tick of {at} ms");
        }
        assert_eq!(clock.until(start + ms(3), 1), ms(7));
        assert_eq!(clock.until(start + ms(20), 2), ms(20));
    }

    /// What `Io::deadline` reads back: a deadline as stored (its due tick) is never earlier than
    /// the one given, and no later than one tick after it; a tick begun reads as its start.
    #[test]
    fn a_deadline_read_back_from_its_tick_is_not_early_and_at_most_a_tick_late() {
        let start = Instant::now();
        let clock = Clock::new(start);
        let ms = Duration::from_millis;
        for (now, deadline) in [(0, 0), (0, 3), (3, 10), (5, 75_000), (12, 19), (40, 41)] {
            let (now, deadline) = (start + ms(now), start + ms(deadline));
            let read = clock.tick_start(now, clock.due_tick(deadline));
            assert!(read >= deadline, "{read:?} before {deadline:?}");
            assert!(
                read < deadline + TIMER_TICK,
                "{read:?} a tick after {deadline:?}"
            );
            // Read again later within the due tick: the same instant.
            let later = read + TIMER_TICK / 2;
            assert_eq!(clock.tick_start(later, clock.due_tick(deadline)), read);
        }
        let now = start + ms(55);
        assert_eq!(
            clock.tick_start(now, clock.tick(now)),
            start + ms(50),
            "this tick: its start"
        );
        assert_eq!(clock.tick_start(now, 2), start + ms(50), "a past tick");
    }

    /// Micro figure: moving a deadline (what every keep-alive request does) with many armed
    /// timers. Run with `cargo test -p web-reactor --release wheel -- --nocapture`.
    #[test]
    fn reschedule_cost_figure() {
        const N: u32 = 100_000;
        let mut links = vec![Link::new(); N as usize];
        let mut wheel = Wheel::new(0);
        for k in 0..N {
            wheel.set(&mut links, k, 1 + k % 7000);
        }
        let t = Instant::now();
        for round in 1..=10u32 {
            for k in 0..N {
                wheel.set(&mut links, k, 1 + (k + round * 13) % 7000);
            }
        }
        let ns = t.elapsed().as_nanos() / (10 * N as u128);
        eprintln!("wheel: {ns} ns per deadline move with {N} armed timers");
        assert_eq!(wheel.len(), N as usize);
    }
}
