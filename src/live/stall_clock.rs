//! The clock the stall rule times each handler call with, read twice a call: the CPU's
//! time-stamp counter where the kernel keeps its own monotonic clock by that counter (x86-64
//! Linux with the `tsc` clock source, which the kernel chooses only once it found the counter
//! constant-rate and in step across CPUs), else nanoseconds of [`Instant`]. A read of the
//! counter is one instruction, where `Instant::now()` calls into the vDSO, which reads the same
//! counter and scales it.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A monotonic count of ticks and how fast it runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StallClock {
    source: Source,
    /// Ticks in a second.
    per_second: u64,
}

#[derive(Clone, Copy, Debug)]
enum Source {
    /// The CPU's time-stamp counter (where it may be chosen).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    Tsc,
    /// Nanoseconds since this instant.
    Monotonic(Instant),
}

/// How long the counter's rate is measured against the monotonic clock, once per process.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const CALIBRATION: Duration = Duration::from_millis(5);

impl StallClock {
    /// The process's clock (its rate measured on first use, for a few milliseconds).
    pub(crate) fn get() -> StallClock {
        static CLOCK: OnceLock<StallClock> = OnceLock::new();
        *CLOCK.get_or_init(StallClock::choose)
    }

    /// The counter where the kernel's clock is that counter and this thread may read it; the
    /// monotonic clock otherwise.
    fn choose() -> StallClock {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if kernel_clock_is_the_counter() && tsc::readable() {
            let (i0, t0) = tsc::paired();
            std::thread::sleep(CALIBRATION);
            let (i1, t1) = tsc::paired();
            let nanos = u64::try_from(i1.duration_since(i0).as_nanos()).unwrap_or(u64::MAX);
            // A rate that cannot be right (a counter that went back, or stood) is not used.
            if let Some(per_second) = rate(t1.wrapping_sub(t0), nanos) {
                return StallClock {
                    source: Source::Tsc,
                    per_second,
                };
            }
        }
        StallClock::monotonic()
    }

    /// Nanoseconds of the monotonic clock.
    pub(crate) fn monotonic() -> StallClock {
        StallClock {
            source: Source::Monotonic(Instant::now()),
            per_second: 1_000_000_000,
        }
    }

    /// The count now.
    #[inline]
    pub(crate) fn read(&self) -> u64 {
        match self.source {
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            Source::Tsc => tsc::read(),
            Source::Monotonic(base) => u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Ticks in `d` (saturating).
    pub(crate) fn ticks(&self, d: Duration) -> u64 {
        let ticks = d.as_nanos().saturating_mul(u128::from(self.per_second)) / 1_000_000_000;
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }

    /// How long `ticks` last.
    pub(crate) fn duration(&self, ticks: u64) -> Duration {
        let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(self.per_second);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// Ticks per second for `ticks` counted in `nanos`: `None` unless both moved and the rate is
/// between 1 MHz and 100 GHz.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
fn rate(ticks: u64, nanos: u64) -> Option<u64> {
    if nanos == 0 {
        return None;
    }
    let per_second = u128::from(ticks) * 1_000_000_000 / u128::from(nanos);
    let per_second = u64::try_from(per_second).ok()?;
    (1_000_000..=100_000_000_000)
        .contains(&per_second)
        .then_some(per_second)
}

/// Whether the kernel's monotonic clock is read from the time-stamp counter.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn kernel_clock_is_the_counter() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|source| source.trim() == "tsc")
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod tsc {
    /// Whether this process may read the counter (`prctl(PR_SET_TSC)` can make a read fault).
    pub(super) fn readable() -> bool {
        let mut state: libc::c_int = 0;
        // SAFETY: `PR_GET_TSC` writes one `int` through its second argument, which points to
        // `state`, alive and writable for the call.
        let got = unsafe { libc::prctl(libc::PR_GET_TSC, &mut state as *mut libc::c_int) };
        got == 0 && state == libc::PR_TSC_ENABLE
    }

    /// The monotonic clock and the counter read together: of a few tries, the pair read
    /// closest together (a thread preempted between the two reads would skew the rate).
    pub(super) fn paired() -> (std::time::Instant, u64) {
        let mut best = (u64::MAX, std::time::Instant::now(), 0);
        for _ in 0..5 {
            let before = read();
            let instant = std::time::Instant::now();
            let after = read();
            let gap = after.wrapping_sub(before);
            if gap < best.0 {
                best = (gap, instant, before.wrapping_add(gap / 2));
            }
        }
        (best.1, best.2)
    }

    /// The counter.
    #[inline]
    pub(super) fn read() -> u64 {
        // SAFETY: RDTSC exists on every x86-64 CPU and reads a register; it faults only when
        // the process turned reading it off (`PR_TSC_SIGSEGV`), which `readable` ruled out
        // before this clock was chosen.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_that_cannot_be_right_are_refused() {
        assert_eq!(rate(2_000_000, 1_000_000), Some(2_000_000_000));
        assert_eq!(rate(0, 1_000_000), None, "a counter that stood");
        assert_eq!(rate(5, 0), None);
        assert_eq!(rate(u64::MAX, 1), None, "a counter that went back");
        assert_eq!(rate(999, 1_000_000), None, "under 1 MHz");
    }

    #[test]
    fn ticks_and_durations_convert_both_ways() {
        let clock = StallClock {
            source: Source::Monotonic(Instant::now()),
            per_second: 3_000_000_000,
        };
        assert_eq!(clock.ticks(Duration::from_millis(50)), 150_000_000);
        assert_eq!(clock.duration(150_000_000), Duration::from_millis(50));
        assert_eq!(clock.ticks(Duration::MAX), u64::MAX);
        assert_eq!(clock.duration(u64::MAX).as_secs(), u64::MAX / 3_000_000_000);
    }

    #[test]
    fn the_process_clock_moves_with_the_monotonic_clock() {
        let clock = StallClock::get();
        let (i0, t0) = (Instant::now(), clock.read());
        std::thread::sleep(Duration::from_millis(20));
        let (t1, i1) = (clock.read(), Instant::now());
        let counted = clock.duration(t1.wrapping_sub(t0));
        // Read inside the monotonic reads: within a few percent of what they say (the rate
        // is measured over a few milliseconds).
        let between = i1 - i0;
        assert!(
            counted <= between + between / 20,
            "{counted:?} in {between:?}"
        );
        assert!(
            counted >= Duration::from_millis(19),
            "{counted:?} in {between:?}"
        );
    }
}
