//! Where posted messages' ids come from: the clock, so that they keep growing across a
//! restart — of a server alone, or of a fleet whose Redis lost its counters.
//!
//! An id is at least the milliseconds since 2025 times 2¹¹ ([`from_clock`]): a counter may
//! give 2 048 ids a millisecond on average before it runs ahead of the clock. One that starts
//! again (a restart) gives its first id in a millisecond that began after it started
//! ([`first`]), so above every id given before it, unless more than that was posted. Ids stay below 2⁵³ until 2094: exact as a JavaScript number (what a
//! browser's `Last-Event-ID` and JSON hold) and as Lua's doubles (what the fleet's scripts
//! count with).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// 2025-01-01T00:00:00Z in milliseconds since the Unix epoch.
const EPOCH_MS: u64 = 1_735_689_600_000;
/// Ids a millisecond may give before the counter runs ahead of the clock: 2^SPREAD.
const SPREAD: u32 = 11;

/// The least id the clock allows now.
pub(crate) fn from_clock() -> u64 {
    millis() << SPREAD
}

/// The first id of a counter that starts now: the least of the next millisecond, once it has
/// come (a wait under a millisecond, once per counter). Ids given in this millisecond before
/// the start — by a server that stopped just now — are below it.
pub(crate) fn first() -> u64 {
    let start = millis();
    // A clock set back never comes to the next millisecond soon: wait a few at most.
    for _ in 0..30 {
        let now = millis();
        if now > start {
            return now << SPREAD;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    from_clock().max(start.saturating_add(1) << SPREAD)
}

/// Milliseconds since 2025.
fn millis() -> u64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    ms.saturating_sub(EPOCH_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_start_from_the_clock_and_stay_exact_as_doubles_until_2094() {
        let floor = from_clock();
        assert!(floor > 1 << 40, "{floor}");
        assert!(
            first() > floor,
            "a first id is past the millisecond it started in"
        );
        const { assert!(((2094 - 2025) * 365 * 86_400_000u64) << SPREAD < 1 << 53) };
    }
}
