//! How long an instance waits before its next attempt to reach Redis: doubling from
//! [`FIRST`] up to [`CEILING`], each wait shortened by up to a quarter (jitter, so instances
//! that lost Redis together do not knock together). With a ceiling of 2 s, an instance is
//! back at most about 2 s (plus one connection attempt) after Redis is.

use std::time::Duration;

/// The first wait after a failure.
pub(crate) const FIRST: Duration = Duration::from_millis(100);
/// The longest wait.
pub(crate) const CEILING: Duration = Duration::from_secs(2);

/// The wait before attempt `failures + 1`, after `failures` (≥ 1) failed attempts in a row;
/// `jitter` is any number (a different one per instance and attempt).
pub(crate) fn delay(failures: u32, jitter: u64) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    let full = FIRST.saturating_mul(1 << doublings).min(CEILING);
    // Take off up to a quarter: jitter modulo (full / 4 + 1) milliseconds.
    let quarter = full.as_millis() as u64 / 4;
    full - Duration::from_millis(jitter % (quarter + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_the_ceiling() {
        let ms = Duration::from_millis;
        let cases = [
            (0, ms(100)),
            (1, ms(100)),
            (2, ms(200)),
            (3, ms(400)),
            (4, ms(800)),
            (5, ms(1600)),
            (6, ms(2000)),
            (7, ms(2000)),
            (100, ms(2000)),
            (u32::MAX, ms(2000)),
        ];
        for (failures, want) in cases {
            assert_eq!(delay(failures, 0), want, "{failures}");
        }
    }

    #[test]
    fn jitter_shortens_a_wait_by_at_most_a_quarter() {
        let ms = Duration::from_millis;
        let cases = [
            (1, 25, ms(75)),
            (1, 26, ms(100)),
            (1, 13, ms(87)),
            (6, 500, ms(1500)),
            (6, 501, ms(2000)),
            (6, u64::MAX, ms(2000) - ms(u64::MAX % 501)),
        ];
        for (failures, jitter, want) in cases {
            assert_eq!(delay(failures, jitter), want, "{failures} {jitter}");
        }
        for jitter in 0..5000 {
            let d = delay(9, jitter);
            assert!(d >= ms(1500) && d <= CEILING, "{d:?}");
        }
    }
}
