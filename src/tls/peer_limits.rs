//! What a peer may do after the handshake that the RFCs leave unbounded and that costs us an
//! answer or CPU each time: key updates, warning alerts, renegotiation requests, empty records.
//! The bounds are rustls' (its `TemperCounters` and empty-fragment count, after BoringSSL),
//! kept once our records take over from rustls'; past one, the connection ends with
//! `unexpected_message`. A pure counter, no I/O.

/// Key updates accepted until application data arrives (rustls, BoringSSL `kMaxKeyUpdates`).
pub(crate) const KEY_UPDATES: u8 = 32;
/// Warning alerts (TLS 1.2 warnings, TLS 1.3 `user_canceled`) in a connection's life.
pub(crate) const WARNINGS: u8 = 4;
/// TLS 1.2 renegotiation requests refused with a warning; the next one is fatal.
pub(crate) const RENEGOTIATIONS: u8 = 1;
/// Empty records in a row (rustls' `ALLOWED_CONSECUTIVE_EMPTY_FRAGMENTS_MAX`).
pub(crate) const EMPTY_RECORDS: u8 = 32;

/// Which bound a peer went past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TooMany {
    KeyUpdates,
    Warnings,
    Renegotiations,
    EmptyRecords,
}

impl TooMany {
    /// Why the connection ended, for its error.
    pub(crate) fn why(self) -> &'static str {
        match self {
            TooMany::KeyUpdates => "too many TLS key updates without application data",
            TooMany::Warnings => "too many TLS warning alerts",
            TooMany::Renegotiations => "a second TLS renegotiation request",
            TooMany::EmptyRecords => "too many empty TLS records in a row",
        }
    }
}

/// What is left of each allowance on one connection (4 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PeerLimits {
    key_updates: u8,
    warnings: u8,
    renegotiations: u8,
    empty_records: u8,
}

impl Default for PeerLimits {
    fn default() -> PeerLimits {
        PeerLimits {
            key_updates: KEY_UPDATES,
            warnings: WARNINGS,
            renegotiations: RENEGOTIATIONS,
            empty_records: EMPTY_RECORDS,
        }
    }
}

/// Takes one from `left`, or says the bound is passed.
fn spend(left: &mut u8, bound: TooMany) -> Result<(), TooMany> {
    *left = left.checked_sub(1).ok_or(bound)?;
    Ok(())
}

impl PeerLimits {
    /// Every record opened, with its content's length: a run of empty ones is bounded.
    pub(crate) fn record(&mut self, content: usize) -> Result<(), TooMany> {
        if content > 0 {
            self.empty_records = EMPTY_RECORDS;
            return Ok(());
        }
        spend(&mut self.empty_records, TooMany::EmptyRecords)
    }

    /// Application data arrived: key updates are allowed again.
    pub(crate) fn application_data(&mut self) {
        self.key_updates = KEY_UPDATES;
    }

    pub(crate) fn key_update(&mut self) -> Result<(), TooMany> {
        spend(&mut self.key_updates, TooMany::KeyUpdates)
    }

    pub(crate) fn warning(&mut self) -> Result<(), TooMany> {
        spend(&mut self.warnings, TooMany::Warnings)
    }

    pub(crate) fn renegotiation(&mut self) -> Result<(), TooMany> {
        spend(&mut self.renegotiations, TooMany::Renegotiations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each allowance: how many are taken, and what happens to the next one.
    #[test]
    fn each_allowance_takes_its_bound_and_refuses_the_next() {
        type Take = fn(&mut PeerLimits) -> Result<(), TooMany>;
        let cases: [(Take, u8, TooMany); 4] = [
            (PeerLimits::key_update, KEY_UPDATES, TooMany::KeyUpdates),
            (PeerLimits::warning, WARNINGS, TooMany::Warnings),
            (
                PeerLimits::renegotiation,
                RENEGOTIATIONS,
                TooMany::Renegotiations,
            ),
            (|l| l.record(0), EMPTY_RECORDS, TooMany::EmptyRecords),
        ];
        for (take, bound, too_many) in cases {
            let mut limits = PeerLimits::default();
            for n in 0..bound {
                assert_eq!(take(&mut limits), Ok(()), "{too_many:?} #{n}");
            }
            assert_eq!(take(&mut limits), Err(too_many));
            assert_eq!(take(&mut limits), Err(too_many), "stays refused");
        }
    }

    #[test]
    fn application_data_allows_key_updates_again_and_content_ends_a_run_of_empty_records() {
        let mut limits = PeerLimits::default();
        for _round in 0..3 {
            for _ in 0..KEY_UPDATES {
                limits.key_update().unwrap();
            }
            limits.application_data();
        }
        for _round in 0..3 {
            for _ in 0..EMPTY_RECORDS {
                limits.record(0).unwrap();
            }
            limits.record(1).unwrap();
        }
        // Warnings are for the connection's life: application data does not give them back.
        for _ in 0..WARNINGS {
            limits.warning().unwrap();
        }
        limits.application_data();
        limits.record(5).unwrap();
        assert_eq!(limits.warning(), Err(TooMany::Warnings));
    }
}
