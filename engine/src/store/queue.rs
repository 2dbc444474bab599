//! Queue semantics over one partition log: leases, ack, nack, expiry, the delay gate
//! and the consumer frontier.
//!
//! Invariants:
//! - `log_start <= frontier <= next_scan <= hwm`: the frontier is the lowest offset not
//!   yet settled (acked, or skipped as unreadable); every offset below it is settled;
//! - an offset is in at most one of `leased`, `ready`, `settled`;
//! - the persisted frontier never passes the in-memory frontier nor the persisted HWM,
//!   so after a crash delivery restarts at or below every unacknowledged offset.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A lease on a delivered record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Lease {
    pub deadline: Duration,
    pub attempt: u32,
}

/// The queue state of one partition (loaded lazily).
#[derive(Debug)]
pub(super) struct Queue {
    pub frontier: u64,
    pub persisted_frontier: u64,
    pub next_scan: u64,
    pub leased: BTreeMap<u64, Lease>,
    /// Nacked or expired: deliverable again.
    pub ready: BTreeSet<u64>,
    /// Acked (or skipped) above the frontier.
    pub settled: BTreeSet<u64>,
    /// Deliveries so far per unsettled offset.
    pub attempts: BTreeMap<u64, u32>,
    /// The wall time at which the first gated record becomes deliverable.
    pub gate_opens_at_ms: Option<u64>,
}

impl Queue {
    pub fn new(frontier: u64) -> Self {
        Queue {
            frontier,
            persisted_frontier: frontier,
            next_scan: frontier,
            leased: BTreeMap::new(),
            ready: BTreeSet::new(),
            settled: BTreeSet::new(),
            attempts: BTreeMap::new(),
            gate_opens_at_ms: None,
        }
    }

    /// Moves expired leases to `ready`; returns how many expired.
    pub fn expire(&mut self, now: Duration) -> u64 {
        let expired: Vec<u64> = self
            .leased
            .iter()
            .filter(|(_, l)| l.deadline <= now)
            .map(|(o, _)| *o)
            .collect();
        for offset in &expired {
            self.leased.remove(offset);
            self.ready.insert(*offset);
        }
        expired.len() as u64
    }

    /// Leases `offset`; returns the attempt number (1 for the first delivery).
    pub fn lease(&mut self, offset: u64, deadline: Duration) -> u32 {
        let attempt = self.attempts.entry(offset).or_insert(0);
        *attempt += 1;
        let attempt = *attempt;
        self.ready.remove(&offset);
        self.leased.insert(offset, Lease { deadline, attempt });
        attempt
    }

    /// Settles `offset` (ack or skip) and advances the frontier over settled offsets.
    pub fn settle(&mut self, offset: u64) {
        self.leased.remove(&offset);
        self.ready.remove(&offset);
        if offset >= self.frontier {
            self.settled.insert(offset);
        }
        self.advance();
    }

    fn advance(&mut self) {
        while self.frontier < self.next_scan && self.settled.remove(&self.frontier) {
            self.attempts.remove(&self.frontier);
            self.frontier += 1;
        }
        debug_assert!(self.frontier <= self.next_scan);
    }

    /// Whether `offset` is delivered and not yet settled.
    pub fn is_outstanding(&self, offset: u64) -> bool {
        self.leased.contains_key(&offset) || self.ready.contains(&offset)
    }

    /// Retention moved the log start past some offsets: forget them.
    pub fn drop_below(&mut self, log_start: u64) {
        if self.frontier >= log_start {
            return;
        }
        self.frontier = log_start;
        self.next_scan = self.next_scan.max(log_start);
        self.leased = self.leased.split_off(&log_start);
        self.ready = self.ready.split_off(&log_start);
        self.settled = self.settled.split_off(&log_start);
        self.attempts = self.attempts.split_off(&log_start);
        self.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontier_moves_only_over_settled_offsets() {
        let mut q = Queue::new(0);
        q.next_scan = 3;
        for o in 0..3 {
            q.lease(o, Duration::from_secs(1));
        }
        q.settle(1);
        assert_eq!(q.frontier, 0, "offset 0 is still leased");
        q.settle(0);
        assert_eq!(q.frontier, 2);
        q.settle(2);
        assert_eq!(q.frontier, 3);
    }

    #[test]
    fn expired_leases_become_ready_and_attempts_count_up() {
        let mut q = Queue::new(0);
        q.next_scan = 1;
        assert_eq!(q.lease(0, Duration::from_millis(10)), 1);
        assert_eq!(q.expire(Duration::from_millis(5)), 0);
        assert_eq!(q.expire(Duration::from_millis(10)), 1);
        assert!(q.ready.contains(&0) && q.is_outstanding(0));
        assert_eq!(q.lease(0, Duration::from_millis(30)), 2);
    }
}
