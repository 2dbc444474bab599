//! Group commit's gather: an fsync releases the committers it covered, and a producer
//! that commits in a loop is back with its next record a scheduling delay later. The
//! next lock holder waits for as many arrivals as the last fsync released (at most half
//! that fsync's time, and never more than [`GATHER_WAIT_MAX`]) before it writes,
//! instead of fsyncing the first arrival alone and leaving the others to the fsync
//! after: with N producers, each fsync then carries about N records, not N/2 + 1.
//!
//! The gather only delays a write; it never decides what is written, fsynced or
//! acknowledged. Its counts are a forecast, so a wrong one costs at most the bound. A
//! clock that stands still through an fsync (tests) gives a bound of zero.

use std::collections::BTreeMap;
use std::time::Duration;

/// The longest a lock holder waits for arrivals, whatever the last fsync took: a disk
/// stall must not turn into a stall of every commit behind it.
pub(super) const GATHER_WAIT_MAX: Duration = Duration::from_millis(1);

#[derive(Debug, Default)]
pub(super) struct Gather {
    /// The `sync` calls waiting for their records to be committed, by target, that no
    /// fsync has released yet.
    waiting: BTreeMap<u64, usize>,
    /// Committers the last fsync released, and how many `sync` calls came in since.
    released: usize,
    arrived: usize,
    /// Fsyncs counted so far: an arrival undone by its `leave` only before the next.
    epoch: u64,
    /// When the next lock holder stops waiting for arrivals.
    deadline: Duration,
}

impl Gather {
    /// A `sync` call for `target` starts waiting (its records are queued). Returns the
    /// epoch to [`Gather::leave`] with, and whether it completes the group the next
    /// fsync waits for.
    pub(super) fn arrive(&mut self, target: u64) -> (u64, bool) {
        *self.waiting.entry(target).or_default() += 1;
        self.arrived += 1;
        (self.epoch, self.arrived == self.released)
    }

    /// A `sync` call for `target` that arrived at `epoch` returns, committed or not.
    /// Before any fsync released it (an error, or dropped), it stops counting: as a
    /// waiter, and as an arrival if no fsync came since.
    pub(super) fn leave(&mut self, target: u64, epoch: u64) {
        if let Some(count) = self.waiting.get_mut(&target) {
            *count -= 1;
            if *count == 0 {
                self.waiting.remove(&target);
            }
            if epoch == self.epoch {
                self.arrived = self.arrived.saturating_sub(1);
            }
        }
    }

    /// An fsync that took `took` moved the HWM to `hwm` at `now`: every call waiting
    /// for a target at or below it is released.
    pub(super) fn fsynced(&mut self, hwm: u64, now: Duration, took: Duration) {
        let still = self.waiting.split_off(&hwm.saturating_add(1));
        self.released = std::mem::replace(&mut self.waiting, still)
            .into_values()
            .sum();
        self.arrived = 0;
        self.epoch += 1;
        self.deadline = now + (took / 2).min(GATHER_WAIT_MAX);
    }

    /// How long the lock holder should still wait for arrivals at `now`, if at all.
    pub(super) fn wait_at(&self, now: Duration) -> Option<Duration> {
        (self.arrived < self.released && now < self.deadline).then(|| self.deadline - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn an_fsync_waits_for_as_many_arrivals_as_the_last_one_released() {
        let mut g = Gather::default();
        g.arrive(1);
        g.arrive(2);
        g.arrive(3);
        g.fsynced(2, 100 * US, 400 * US);
        assert_eq!(g.released, 2, "the calls for 1 and 2, not 3");
        assert_eq!(g.wait_at(100 * US), Some(200 * US));
        assert!(!g.arrive(4).1);
        assert_eq!(g.wait_at(150 * US), Some(150 * US));
        assert!(g.arrive(5).1, "the second arrival completes the group");
        assert_eq!(g.wait_at(150 * US), None);
    }

    #[test]
    fn the_wait_ends_at_half_the_last_fsync_and_at_most_the_cap() {
        let mut g = Gather::default();
        g.arrive(1);
        g.arrive(1);
        g.fsynced(1, 100 * US, 400 * US);
        assert_eq!(g.wait_at(299 * US), Some(US));
        assert_eq!(g.wait_at(300 * US), None, "half the fsync has passed");
        g.arrive(2);
        g.arrive(2);
        g.fsynced(2, 1000 * US, Duration::from_secs(2));
        assert_eq!(
            g.wait_at(1000 * US),
            Some(GATHER_WAIT_MAX),
            "a stalled fsync does not stretch the wait"
        );
        g.arrive(3);
        g.arrive(3);
        g.fsynced(3, 5000 * US, Duration::ZERO);
        assert_eq!(g.wait_at(5000 * US), None, "an fsync that took no time");
    }

    #[test]
    fn a_call_that_leaves_before_an_fsync_stops_counting() {
        let mut g = Gather::default();
        let (epoch, _) = g.arrive(1);
        g.arrive(1);
        g.leave(1, epoch);
        g.fsynced(1, US, 10 * US);
        assert_eq!(g.released, 1, "the call that left is not released");
        // An arrival that leaves before the next fsync is not waited for.
        let (epoch, _) = g.arrive(2);
        g.leave(2, epoch);
        assert_eq!(g.wait_at(US), Some(5 * US), "still waiting for one");
        assert!(g.arrive(3).1, "the one that stayed completes the group");
    }

    #[test]
    fn a_released_call_leaving_late_changes_nothing() {
        let mut g = Gather::default();
        let (old, _) = g.arrive(7);
        g.fsynced(7, US, 10 * US);
        // A newer call for the same target, already covered, then the old one leaves.
        g.arrive(7);
        g.leave(7, old);
        assert_eq!(g.arrived, 1, "the old epoch's leave undoes no new arrival");
        g.fsynced(u64::MAX, 2 * US, 10 * US);
        assert_eq!(g.released, 0, "its entry went with the late leave");
    }
}
