//! Group commit's gather: an fsync releases the committers it covered, and a producer
//! that commits in a loop is back with its next record a scheduling delay later. The
//! next lock holder waits for as many arrivals as the last fsync released (at most half
//! that fsync's time) before it writes, instead of fsyncing the first arrival alone and
//! leaving the others to the fsync after: with N producers, each fsync then carries
//! about N records, not N/2 + 1.
//!
//! The gather only delays a write; it never decides what is written, fsynced or
//! acknowledged. Its counts are a forecast, so a wrong one costs at most the bound.
//! With a clock that stands still (tests), fsyncs take no time and nothing waits.

use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Default)]
pub(super) struct Gather {
    /// The `sync` calls waiting for their records to be committed, by target, that no
    /// fsync has released yet.
    waiting: BTreeMap<u64, usize>,
    /// Committers the last fsync released, and how many `sync` calls came in since.
    released: usize,
    arrived: usize,
    /// When the next lock holder stops waiting for arrivals.
    deadline: Duration,
}

impl Gather {
    /// A `sync` call for `target` starts waiting (its records are queued). Returns
    /// whether it completes the group the next fsync waits for.
    pub(super) fn arrive(&mut self, target: u64) -> bool {
        *self.waiting.entry(target).or_default() += 1;
        self.arrived += 1;
        self.arrived == self.released
    }

    /// A `sync` call for `target` stops waiting without an fsync releasing it (it was
    /// committed by one that released it already, failed, or was dropped).
    pub(super) fn leave(&mut self, target: u64) {
        if let Some(count) = self.waiting.get_mut(&target) {
            *count -= 1;
            if *count == 0 {
                self.waiting.remove(&target);
            }
        }
    }

    /// An fsync that took `took` moved the HWM to `hwm` at `now`: every call waiting
    /// for a target at or below it is released.
    pub(super) fn fsynced(&mut self, hwm: u64, now: Duration, took: Duration) {
        let still = self.waiting.split_off(&(hwm + 1));
        self.released = std::mem::replace(&mut self.waiting, still)
            .into_values()
            .sum();
        self.arrived = 0;
        self.deadline = now + took / 2;
    }

    /// How long the lock holder should still wait for arrivals at `now`, if at all.
    pub(super) fn wait_at(&self, now: Duration) -> Option<Duration> {
        (self.arrived < self.released && now < self.deadline).then(|| self.deadline - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn an_fsync_waits_for_as_many_arrivals_as_the_last_one_released() {
        let mut g = Gather::default();
        g.arrive(1);
        g.arrive(2);
        g.arrive(3);
        g.fsynced(2, 10 * MS, 4 * MS);
        assert_eq!(g.released, 2, "the calls for 1 and 2, not 3");
        assert_eq!(g.wait_at(10 * MS), Some(2 * MS));
        assert!(!g.arrive(4));
        assert_eq!(g.wait_at(11 * MS), Some(MS));
        assert!(g.arrive(5), "the second arrival completes the group");
        assert_eq!(g.wait_at(11 * MS), None);
    }

    #[test]
    fn the_wait_ends_at_half_the_last_fsync() {
        let mut g = Gather::default();
        g.arrive(1);
        g.fsynced(1, 10 * MS, 4 * MS);
        assert_eq!(g.wait_at(12 * MS), None);
        g.fsynced(1, 20 * MS, Duration::ZERO);
        assert_eq!(
            g.wait_at(20 * MS),
            None,
            "an fsync that took no time: no wait"
        );
    }

    #[test]
    fn a_call_that_leaves_is_not_released_again() {
        let mut g = Gather::default();
        g.arrive(1);
        g.arrive(1);
        g.leave(1);
        g.fsynced(1, MS, MS);
        assert_eq!(g.released, 1);
        g.leave(1);
        g.fsynced(1, 2 * MS, MS);
        assert_eq!(g.released, 0, "released once");
    }
}
