//! Memory given back to the system after busy times: the allocator settings that let large
//! buffers go back the moment they are freed, and each worker's policy for asking the allocator
//! to return what it keeps (`malloc_trim`) — when the worker goes idle after its strands held
//! large buffers, or its last connection closed; at most once per [`TRIM_INTERVAL`].
//!
//! Only glibc keeps freed memory this way; elsewhere both calls do nothing.

use std::time::{Duration, Instant};

/// Heap held by a worker's strands (buffers of requests and replies being read or written)
/// after which the worker gives free memory back to the system once they are done.
pub(crate) const TRIM_AFTER_HELD: usize = 1 << 20;
/// The least time between two trims of one worker.
pub(crate) const TRIM_INTERVAL: Duration = Duration::from_secs(1);

/// Has every thread allocate from glibc's main arena (`M_ARENA_MAX` 1) — the one arena whose
/// free memory at the top `malloc_trim` gives back. By default each worker thread gets an arena
/// of its own, and what a burst of large buffers left at the top of one stays resident for good
/// (a trim only returns free pages in the middle of such an arena): 20 concurrent 1 MB bodies
/// left ~2 MiB per worker. Large buffers stay reusable while busy (glibc's own `mmap`
/// threshold, which adapts), and go back when the worker goes idle. Process-wide and
/// set once: by the first worker before its thread allocates, and by any program that starts
/// threads of its own before the workers (a thread that allocates before it gets an arena of
/// its own, which a worker started later may then share). Threads that already have an arena
/// keep it. Only where the allocator is glibc's.
///
/// Does nothing once [`arena_sharing`]`(false)` was called.
///
/// ```
/// reactor::share_one_arena(); // before starting threads that allocate
/// ```
pub fn share_one_arena() {
    if !SHARING.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: mallopt(3) takes two integers and only changes a tuning parameter of the
        // allocator; it is safe to call at any time from any thread.
        ONCE.call_once(|| unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        });
    }
}

/// Whether [`share_one_arena`] may act (process-wide, like the allocator setting it makes).
static SHARING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether the library's threads make the process share glibc's main arena (default `true`;
/// see [`share_one_arena`]). Process-wide, as the allocator's setting is: turn it off before
/// anything starts threads (`web`'s `Server::share_one_arena(false)` does, when its server
/// starts). Once the arena is shared it stays so; turning sharing off then only stops further
/// calls.
///
/// ```
/// reactor::arena_sharing(false); // this program's threads keep arenas of their own
/// # reactor::arena_sharing(true);
/// ```
pub fn arena_sharing(on: bool) {
    SHARING.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Asks the allocator to return freed memory to the system (glibc keeps freed chunks in its
/// heaps otherwise).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim(3) takes no pointers and may be called at any time; it only returns
    // free heap memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// One worker's trim policy. The worker reports what its strands hold ([`Trim::held`]) and when
/// its last connection closed ([`Trim::last_closed`]); at the end of each turn
/// ([`Trim::end_of_turn`]) this trims when it is wanted, nothing is held any more and the
/// interval since the last trim has passed — or says when to wake up for it.
#[derive(Debug, Default)]
pub(crate) struct Trim {
    /// The most heap the strands held since memory was last given back.
    held_peak: usize,
    /// When memory was last given back.
    last: Option<Instant>,
    /// Free memory should go back once no strand holds buffers.
    wanted: bool,
    /// A trim waiting for its interval to pass.
    due: Option<Instant>,
    /// Trims done.
    done: u64,
}

impl Trim {
    /// The strands hold `bytes` now (or did a moment ago).
    pub(crate) fn held(&mut self, bytes: usize) {
        self.held_peak = self.held_peak.max(bytes);
    }

    /// The worker's last connection closed: what busy times kept goes back.
    pub(crate) fn last_closed(&mut self) {
        self.wanted = true;
    }

    /// The worker's slab moved to a larger block: the old one, freed, may lie in the heap
    /// (glibc serves blocks under its adaptive `mmap` threshold there, and a burst of large
    /// bodies raises that threshold), where it stays resident until trimmed. Worth a trim when
    /// it was at least [`TRIM_AFTER_HELD`] / 4.
    pub(crate) fn slab_grew(&mut self, old_bytes: usize) {
        if old_bytes >= TRIM_AFTER_HELD / 4 {
            self.wanted = true;
        }
    }

    /// When the worker must wake up for a trim that waits for its interval, if one does.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.due
    }

    /// At the end of a worker's turn, with `held` the bytes its strands hold now: gives free
    /// memory back once the strands that held [`TRIM_AFTER_HELD`] or more have let go of it
    /// (or the last connection closed) — at most once per [`TRIM_INTERVAL`], so a steady
    /// stream of large bodies costs one `malloc_trim` a second, not one per request.
    pub(crate) fn end_of_turn(&mut self, now: Instant, held: usize) {
        self.held(held);
        if held == 0 && self.held_peak >= TRIM_AFTER_HELD {
            self.wanted = true;
        }
        if !self.wanted || held != 0 {
            self.due = None;
            return;
        }
        let due_at = self.last.map_or(now, |t| t + TRIM_INTERVAL);
        if now >= due_at {
            release_free_memory();
            self.done += 1;
            self.held_peak = 0;
            self.wanted = false;
            self.last = Some(now);
            self.due = None;
        } else {
            // Too soon after the last one: wake up for it even if nothing else happens.
            self.due = Some(due_at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_never_trim_and_large_ones_trim_once_let_go() {
        let t0 = Instant::now();
        let mut trim = Trim::default();
        trim.end_of_turn(t0, 64 * 1024);
        trim.end_of_turn(t0, 0);
        assert_eq!(trim.done, 0, "a peak under the threshold does not trim");
        trim.end_of_turn(t0, 2 << 20);
        assert_eq!(trim.done, 0, "never while buffers are held");
        trim.end_of_turn(t0, 0);
        assert_eq!((trim.done, trim.due()), (1, None));
        trim.end_of_turn(t0 + TRIM_INTERVAL * 5, 0);
        assert_eq!(trim.done, 1, "once per burst");
    }

    #[test]
    fn at_most_once_per_interval_with_a_wake_up_for_the_late_one() {
        let t0 = Instant::now();
        let mut trim = Trim::default();
        trim.last_closed();
        trim.end_of_turn(t0, 0);
        assert_eq!(trim.done, 1);
        let soon = t0 + TRIM_INTERVAL / 10;
        trim.held(TRIM_AFTER_HELD);
        trim.end_of_turn(soon, 0);
        trim.last_closed();
        trim.end_of_turn(soon, 0);
        assert_eq!(trim.done, 1, "too soon");
        assert_eq!(trim.due(), Some(t0 + TRIM_INTERVAL));
        trim.end_of_turn(t0 + TRIM_INTERVAL, 0);
        assert_eq!((trim.done, trim.due()), (2, None));
    }

    #[test]
    fn a_large_slab_moving_to_a_larger_block_trims_once_and_a_small_one_does_not() {
        let t0 = Instant::now();
        let mut trim = Trim::default();
        trim.slab_grew(64 * 1024);
        trim.end_of_turn(t0, 0);
        assert_eq!(trim.done, 0, "a small old block is not worth a trim");
        trim.slab_grew(TRIM_AFTER_HELD / 4);
        trim.end_of_turn(t0, 0);
        assert_eq!(trim.done, 1);
        trim.end_of_turn(t0 + TRIM_INTERVAL * 2, 0);
        assert_eq!(trim.done, 1, "once");
    }

    #[test]
    fn a_wanted_trim_waits_while_buffers_are_held() {
        let t0 = Instant::now();
        let mut trim = Trim::default();
        trim.last_closed();
        trim.end_of_turn(t0, 100);
        assert_eq!((trim.done, trim.due()), (0, None));
        trim.end_of_turn(t0, 0);
        assert_eq!(trim.done, 1);
    }
}
