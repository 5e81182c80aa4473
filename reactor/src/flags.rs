//! [`Flags`]: the byte beside each slab entry that says what its socket is ready for, what its
//! strand waits for, and how the worker counts it. One place for every bit.

use std::ops::BitOr;

use crate::Wake;

/// A set of the bits below.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags(u8);

impl Flags {
    /// The socket has readiness to read that no read has consumed yet.
    pub(crate) const READ_READY: Flags = Flags(1);
    /// The socket has readiness to write that no write has consumed yet.
    pub(crate) const WRITE_READY: Flags = Flags(2);
    /// The strand wants to be resumed when readable.
    pub(crate) const WANT_READ: Flags = Flags(4);
    /// The strand wants to be resumed when writable.
    pub(crate) const WANT_WRITE: Flags = Flags(8);
    /// Counted in the worker's `parked`: the last `Then` was a `Park` without `write`.
    pub(crate) const PARKED: Flags = Flags(16);
    /// The peer closed its side (or the socket failed): a short read is then no proof that
    /// nothing more is owed — the end of stream may sit behind the data, and no new edge will
    /// announce it.
    pub(crate) const READ_CLOSED: Flags = Flags(32);
    /// In the worker's `again` list, not yet resumed: a strand handed many messages in one turn
    /// (a publish each) is listed once, not once per message.
    pub(crate) const AGAIN: Flags = Flags(64);
    /// A send of this connection is in the worker's gathered sends (see `sends.rs`), not yet
    /// answered: nothing else is written to the socket until it is.
    pub(crate) const IN_FLIGHT: Flags = Flags(128);
    /// What the socket has told and what the worker holds for it, which a new `Then` keeps
    /// (the rest it says anew).
    pub(crate) const TOLD: Flags = Flags(1 | 2 | 32 | 64 | 128);

    /// Whether any bit of `bits` is set.
    pub(crate) fn has(self, bits: Flags) -> bool {
        self.0 & bits.0 != 0
    }

    /// Sets `bits`.
    pub(crate) fn set(&mut self, bits: Flags) {
        self.0 |= bits.0;
    }

    /// Clears `bits`.
    pub(crate) fn clear(&mut self, bits: Flags) {
        self.0 &= !bits.0;
    }

    /// Only the bits of `bits`.
    pub(crate) fn only(self, bits: Flags) -> Flags {
        Flags(self.0 & bits.0)
    }

    /// Whether a write may go to the socket now: it was not found full since the last writable
    /// edge, and no gathered send of it waits for its answer (that send comes first).
    pub(crate) fn may_write(self) -> bool {
        self.has(Flags::WRITE_READY) && !self.has(Flags::IN_FLIGHT)
    }

    /// The wake the strand is owed: readiness it wants that has been recorded.
    pub(crate) fn wanted(self) -> Option<Wake> {
        let read = self.has(Flags::WANT_READ) && self.has(Flags::READ_READY);
        let write = self.has(Flags::WANT_WRITE) && self.has(Flags::WRITE_READY);
        match (read, write) {
            (true, true) => Some(Wake::Both),
            (true, false) => Some(Wake::Readable),
            (false, true) => Some(Wake::Writable),
            (false, false) => None,
        }
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_needs_both_the_wish_and_the_readiness() {
        let cases = [
            (Flags::WANT_READ | Flags::READ_READY, Some(Wake::Readable)),
            (Flags::WANT_WRITE | Flags::WRITE_READY, Some(Wake::Writable)),
            (
                Flags::WANT_READ | Flags::WANT_WRITE | Flags::READ_READY | Flags::WRITE_READY,
                Some(Wake::Both),
            ),
            (Flags::WANT_READ | Flags::WRITE_READY, None),
            (Flags::READ_READY | Flags::WRITE_READY | Flags::PARKED, None),
        ];
        for (flags, wake) in cases {
            assert_eq!(flags.wanted(), wake, "{flags:?}");
        }
        let mut f = Flags::TOLD | Flags::WANT_READ;
        f.clear(Flags::READ_READY);
        assert!(!f.has(Flags::READ_READY) && f.has(Flags::WANT_READ));
        assert_eq!(
            f.only(Flags::TOLD),
            Flags::WRITE_READY | Flags::READ_CLOSED | Flags::AGAIN | Flags::IN_FLIGHT
        );
    }
}
