//! Where posted messages' ids come from: the clock, so that they keep growing across a
//! restart — of a server alone, or of a fleet whose Redis lost its counters.
//!
//! An id is at least the milliseconds since 2025 times 2¹¹ ([`from_clock`]): a counter may
//! give 2 048 ids a millisecond on average before it runs ahead of the clock, and one that
//! starts again (a restart) starts from the clock, above every id given before unless more
//! than that was posted. Ids stay below 2⁵³ until 2094: exact as a JavaScript number (what a
//! browser's `Last-Event-ID` and JSON hold) and as Lua's doubles (what the fleet's scripts
//! count with).

use std::time::{SystemTime, UNIX_EPOCH};

/// 2025-01-01T00:00:00Z in milliseconds since the Unix epoch.
const EPOCH_MS: u64 = 1_735_689_600_000;
/// Ids a millisecond may give before the counter runs ahead of the clock: 2^SPREAD.
const SPREAD: u32 = 11;

/// The least id the clock allows now.
pub(crate) fn from_clock() -> u64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    ms.saturating_sub(EPOCH_MS) << SPREAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_start_from_the_clock_and_stay_exact_as_doubles_until_2094() {
        let floor = from_clock();
        assert!(floor > 1 << 40, "{floor}");
        const { assert!(((2094 - 2025) * 365 * 86_400_000u64) << SPREAD < 1 << 53) };
    }
}
