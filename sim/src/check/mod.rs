//! The oracle: checkers that judge a run's [`History`] against the durability
//! contract (DESIGN.md, "Durability contract" and "Checkers").
//!
//! [`check`] indexes the history once ([`facts`]: crashes, acknowledgements, faults, the
//! engine's alarms and the disk each open read, the reach of every out-of-contract
//! fault), computes the [`Accounting`], runs every checker and returns a
//! [`CheckReport`]; [`CheckReport::verdict`] turns it into a [`Verdict`] with an exit
//! code. Each checker is named by [`CheckerName`] (stable snake_case names) and returns a
//! typed report whose `violations` are empty on pass.
//!
//! **Excuses are data.** Every excuse a checker makes is a row of [`excuse::ExcuseKind`],
//! built by [`excuse::Excuses`]: it names the events it rests on (history indices) and
//! covers only the records or offsets its cause reaches. An excuse rests either on
//! something the engine recorded (an alarm: refusal, clamp, cut, skip), which
//! `alarms_explained` in turn holds to a cause and to the oracle's own decode of the
//! disk, or on an out-of-contract fault whose reach ([`contract`]) names the record.
//! [`CheckReport::excuses_used`] counts them; sweeps print the table.
//!
//! Safety checkers:
//! - `no_lost_ack`: every acknowledged record is delivered intact at least once by the
//!   end of the run. Excused (rows `refused`, `clamped`, `skipped`, `retention`,
//!   `out_of_contract`, `both_copies_damaged`), per record, by identity.
//! - `bounded_duplicates`: a duplicate is one produce id delivered from two offsets
//!   (redelivery of one offset is not). Each extra copy must be explained by a crash
//!   whose hidden tail on that partition held the earlier copy (`hidden_tail`), within
//!   that crash's budget; a crash-free run has none. Also `damaged_copy_recommitted`,
//!   `checkpoint_lost`, `out_of_contract`.
//! - `monotonic_commit_time`: per partition, `committed_at_ms` (from deliveries and
//!   acks) never decreases along offsets, whichever incarnation observed it; an
//!   observation a later clamp, cut above the HWM or out-of-contract fault superseded is
//!   left out.
//! - `stable_offsets`: once read, the record at an offset never changes or vanishes;
//!   the in-memory HWM never moves backwards within an incarnation; after a restart it is
//!   not below the persisted HWM at the crash; the persisted HWM never decreases; no HWM
//!   exceeds the durable tail; the log start never moves backwards. Excused by
//!   `clamped`, `cut_above_hwm`, `out_of_contract`, `refused`, `last_hidden_tail`.
//! - `no_corrupt_delivery`: no delivery whose payload has no id, whose bytes differ
//!   from the produce of its id, or whose id was never produced; and every placed
//!   damage at rest to a segment is detected by an alarm that names its frame or cuts
//!   below it (`damage_never_scanned`, `damage_deleted_before_scan` and
//!   `damage_repaired_before_scan` owe nothing).
//! - `frontier_safe`: every frontier written or recovered passes only acknowledged
//!   offsets (or ones the engine skipped with a counter, or a `consumer.offset` fault's
//!   reach); a recovered frontier is 0 or a value the engine wrote (old or new, never
//!   torn).
//! - `frontier_durable`: a frontier an open loads is at least the last one the engine
//!   reported durable (its replace of `consumer.offset` returned) with no fault on the
//!   file or its directory since, and at most one it began to write since (or the log
//!   start). Excused by `out_of_contract` (a fault on the word or its directory).
//! - `poison_acks_nothing`: after `PartitionPoisoned` (or, where the world never
//!   reported it, a watchdog period after the engine's poison alarm), no produce ack on
//!   that partition and no HWM advance in the same incarnation.
//! - `alarms_explained`: every engine alarm agrees with the disk its open read (the
//!   reference decoder's view), has an injected cause that can reach it, and the
//!   engine's counters equal the sum of its alarms; no open writes an `hwm` word below
//!   the HWM that view gives, and no write falls below an earlier one of its
//!   incarnation.
//! - `delay_gate`: no record of a delayed topic is delivered before
//!   `committed_at_ms + delay_ms` by the highest clock the engine may read then (the
//!   wall-clock floor of DESIGN.md, bounded from the run's timeline alone), and no
//!   commit time runs ahead of that clock.
//! - `lease_exclusive`: within an incarnation, an offset is delivered again only after
//!   a nack of it or once its lease (from when it was asked for) can have expired, and
//!   never after an accepted ack.
//! - `retention_safe`: every segment the reaper deletes (an unlink the world saw after
//!   the partition's open) was sealed and its latest commit seen was `retention_ms` old
//!   by the highest clock the engine may read; every log start is a segment's base.
//!   Its deletions are what `no_lost_ack`'s `retention` row excuses.
//! - `layout`: the frames and segments the engine left hold the spec's shapes: at most
//!   `flush_records` records and `flush_bytes` of records per frame (one larger record
//!   alone), zstd only at `compress_min_bytes` and up, segments within `segment_bytes`
//!   (one larger frame alone), rolled only when the next frame would overflow, sealed
//!   at their last frame.
//!
//! Liveness checker:
//! - `delivered_after_heal`: every acknowledged record is delivered by
//!   `max(heal, ack) + delivery_bound_ms`. A refused partition is reported as refused,
//!   loss excused by `no_lost_ack` as excused, and records whose deadline lies beyond
//!   the end of the history as inconclusive, none of them as a hang. Without a heal the
//!   checker has nothing to measure and passes, saying so.
//! - `redelivered_after_expiry`: after the heal, an unsettled delivery is delivered
//!   again by `t + lease_ms + redelivery_bound_ms`, a nacked one by the nack plus the
//!   bound, and a record last delivered before the heal and never acked is delivered
//!   again by `max(heal, t) + delivery_bound_ms`. A crash, a reap or a skip of the
//!   offset ends the obligation; a deadline past the end is inconclusive.
//! - `woken_promptly`: a receive parked when a record becomes deliverable to it (a
//!   commit, a nack, an expired lease, an opened delay gate) is answered, or the record
//!   delivered to another, within `wake_bound_ms`; judged where the disk answers at
//!   once (no I/O latency, or after the heal) and no crash cuts the window.
//! - `hwm_persisted`: after the heal (and before it, on a disk without latency), the HWM
//!   the engine showed at `t` is in the `hwm` word on the platter (read by the world)
//!   by `t + hwm_persist_interval + 250 ms`, on every partition not poisoned in that
//!   incarnation and whose word took no fault.
//! - `wal_progress`: at the end of a run whose WAL has been quiet since the heal for a
//!   persister interval, two checkpoint periods and the slack, the WAL directory lists
//!   only its newest segment, but for segments holding a refused partition's entries.
//! - `retention_progress`: at the end of such a run, a reaper interval and a sweep's
//!   slack later, no partition lists a sealed lowest segment that retention had aged,
//!   below the HWM shown and the WAL checkpoint's floor.
//! - `frontier_progress`: after the heal, the offsets acked in an incarnation past
//!   the frontier its open loaded (capped by the persisted HWM) are in the
//!   `consumer.offset` word on the platter (read by the world) by
//!   `t + frontier_persist_interval + a tick + 250 ms` (plus the clock's steps back).

#![deny(clippy::unwrap_used)]

pub mod accounting;
pub mod alarms;
pub mod commit_time;
pub mod contract;
pub mod corruption;
pub mod delay_gate;
pub mod duplicates;
pub mod engine_clock;
pub mod excuse;
pub mod explain;
pub mod explained;
pub mod facts;
mod flow;
pub mod frontier;
pub mod frontier_durable;
pub mod frontier_progress;
pub mod hwm_persisted;
pub mod layout;
pub mod lease_exclusive;
pub mod liveness;
pub mod loss;
pub mod offsets;
pub mod poison;
pub mod reaped;
pub mod redelivery;
pub mod retention_moves;
pub mod retention_progress;
pub mod retention_safe;
pub mod verdict;
pub mod wal_progress;
pub mod woken;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use accounting::{Accounting, AccountingCounts};
pub use facts::Facts;
pub use verdict::{
    EXIT_LIVENESS_FAILURE, EXIT_PASS, EXIT_SAFETY_FAILURE, EXIT_SIMULATOR_CRASH, Failure, Verdict,
};

use crate::history::{History, Offset, ProduceId, TopicPartition};

/// Every checker, in the order they are run and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckerName {
    NoLostAck,
    BoundedDuplicates,
    MonotonicCommitTime,
    StableOffsets,
    NoCorruptDelivery,
    FrontierSafe,
    FrontierDurable,
    PoisonAcksNothing,
    AlarmsExplained,
    DelayGate,
    LeaseExclusive,
    RetentionSafe,
    Layout,
    DeliveredAfterHeal,
    RedeliveredAfterExpiry,
    WokenPromptly,
    HwmPersisted,
    WalProgress,
    RetentionProgress,
    FrontierProgress,
}

impl CheckerName {
    pub const ALL: [CheckerName; 20] = [
        CheckerName::NoLostAck,
        CheckerName::BoundedDuplicates,
        CheckerName::MonotonicCommitTime,
        CheckerName::StableOffsets,
        CheckerName::NoCorruptDelivery,
        CheckerName::FrontierSafe,
        CheckerName::FrontierDurable,
        CheckerName::PoisonAcksNothing,
        CheckerName::AlarmsExplained,
        CheckerName::DelayGate,
        CheckerName::LeaseExclusive,
        CheckerName::RetentionSafe,
        CheckerName::Layout,
        CheckerName::DeliveredAfterHeal,
        CheckerName::RedeliveredAfterExpiry,
        CheckerName::WokenPromptly,
        CheckerName::HwmPersisted,
        CheckerName::WalProgress,
        CheckerName::RetentionProgress,
        CheckerName::FrontierProgress,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckerName::NoLostAck => "no_lost_ack",
            CheckerName::BoundedDuplicates => "bounded_duplicates",
            CheckerName::MonotonicCommitTime => "monotonic_commit_time",
            CheckerName::StableOffsets => "stable_offsets",
            CheckerName::NoCorruptDelivery => "no_corrupt_delivery",
            CheckerName::FrontierSafe => "frontier_safe",
            CheckerName::FrontierDurable => "frontier_durable",
            CheckerName::PoisonAcksNothing => "poison_acks_nothing",
            CheckerName::AlarmsExplained => "alarms_explained",
            CheckerName::DelayGate => "delay_gate",
            CheckerName::LeaseExclusive => "lease_exclusive",
            CheckerName::RetentionSafe => "retention_safe",
            CheckerName::Layout => "layout",
            CheckerName::DeliveredAfterHeal => "delivered_after_heal",
            CheckerName::RedeliveredAfterExpiry => "redelivered_after_expiry",
            CheckerName::WokenPromptly => "woken_promptly",
            CheckerName::HwmPersisted => "hwm_persisted",
            CheckerName::WalProgress => "wal_progress",
            CheckerName::RetentionProgress => "retention_progress",
            CheckerName::FrontierProgress => "frontier_progress",
        }
    }

    pub fn is_liveness(self) -> bool {
        matches!(
            self,
            CheckerName::DeliveredAfterHeal
                | CheckerName::RedeliveredAfterExpiry
                | CheckerName::WokenPromptly
                | CheckerName::HwmPersisted
                | CheckerName::WalProgress
                | CheckerName::RetentionProgress
                | CheckerName::FrontierProgress
        )
    }
}

impl fmt::Display for CheckerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record a violation is about; fields are `None` when not known.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordRef {
    pub tp: Option<TopicPartition>,
    pub offset: Option<Offset>,
    pub id: Option<ProduceId>,
}

impl RecordRef {
    pub fn new(tp: &TopicPartition, offset: Option<Offset>, id: Option<ProduceId>) -> Self {
        Self {
            tp: Some(tp.clone()),
            offset,
            id,
        }
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// One line naming topic/partition, offsets and produce ids.
    pub message: String,
    pub records: Vec<RecordRef>,
    /// History indices the violation is about (for the events-around excerpt).
    pub events: Vec<usize>,
}

/// Checker parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckConfig {
    /// `delivered_after_heal`: simulated ms after `max(heal, ack)` by which every
    /// acknowledged record must have been delivered.
    pub delivery_bound_ms: u64,
    /// `redelivered_after_expiry`: simulated ms after a lease can have expired, or a
    /// nack was accepted, by which the offset must be delivered again.
    pub redelivery_bound_ms: u64,
    /// `woken_promptly`: simulated ms within which a parked receive answers once a
    /// record became deliverable to it.
    pub wake_bound_ms: u64,
    /// The engine ticker's period: a lease expiry or an opened delay gate wakes
    /// receivers at the next tick.
    pub tick_ms: u64,
    /// Events shown before and after each event a failure is about.
    pub context_events: usize,
}

impl Default for CheckConfig {
    fn default() -> Self {
        Self {
            delivery_bound_ms: 30_000,
            redelivery_bound_ms: 1_000,
            wake_bound_ms: 50,
            tick_ms: 10,
            context_events: 3,
        }
    }
}

/// The results of every checker over one history.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub accounting: Accounting,
    pub no_lost_ack: loss::LossReport,
    pub bounded_duplicates: duplicates::DuplicatesReport,
    pub monotonic_commit_time: commit_time::CommitTimeReport,
    pub stable_offsets: offsets::OffsetsReport,
    pub no_corrupt_delivery: corruption::CorruptionReport,
    pub frontier_safe: frontier::FrontierReport,
    pub frontier_durable: frontier_durable::FrontierDurableReport,
    pub poison_acks_nothing: poison::PoisonReport,
    pub alarms_explained: explained::AlarmsReport,
    pub delay_gate: delay_gate::DelayGateReport,
    pub lease_exclusive: lease_exclusive::LeaseReport,
    pub retention_safe: retention_safe::RetentionReport,
    pub layout: layout::LayoutReport,
    pub delivered_after_heal: liveness::LivenessReport,
    pub redelivered_after_expiry: redelivery::RedeliveryReport,
    pub woken_promptly: woken::WokenReport,
    pub hwm_persisted: hwm_persisted::HwmPersistedReport,
    pub wal_progress: wal_progress::WalProgressReport,
    pub retention_progress: retention_progress::RetentionProgressReport,
    pub frontier_progress: frontier_progress::FrontierProgressReport,
}

impl CheckReport {
    pub fn violations_of(&self, checker: CheckerName) -> &[Violation] {
        match checker {
            CheckerName::NoLostAck => &self.no_lost_ack.violations,
            CheckerName::BoundedDuplicates => &self.bounded_duplicates.violations,
            CheckerName::MonotonicCommitTime => &self.monotonic_commit_time.violations,
            CheckerName::StableOffsets => &self.stable_offsets.violations,
            CheckerName::NoCorruptDelivery => &self.no_corrupt_delivery.violations,
            CheckerName::FrontierSafe => &self.frontier_safe.violations,
            CheckerName::FrontierDurable => &self.frontier_durable.violations,
            CheckerName::PoisonAcksNothing => &self.poison_acks_nothing.violations,
            CheckerName::AlarmsExplained => &self.alarms_explained.violations,
            CheckerName::DelayGate => &self.delay_gate.violations,
            CheckerName::LeaseExclusive => &self.lease_exclusive.violations,
            CheckerName::RetentionSafe => &self.retention_safe.violations,
            CheckerName::Layout => &self.layout.violations,
            CheckerName::DeliveredAfterHeal => &self.delivered_after_heal.violations,
            CheckerName::RedeliveredAfterExpiry => &self.redelivered_after_expiry.violations,
            CheckerName::WokenPromptly => &self.woken_promptly.violations,
            CheckerName::HwmPersisted => &self.hwm_persisted.violations,
            CheckerName::WalProgress => &self.wal_progress.violations,
            CheckerName::RetentionProgress => &self.retention_progress.violations,
            CheckerName::FrontierProgress => &self.frontier_progress.violations,
        }
    }

    /// Every violation, in checker order.
    pub fn violations(&self) -> Vec<(CheckerName, &Violation)> {
        CheckerName::ALL
            .iter()
            .flat_map(|c| self.violations_of(*c).iter().map(move |v| (*c, v)))
            .collect()
    }

    /// The checkers that found something, in order.
    pub fn failed_checkers(&self) -> Vec<CheckerName> {
        CheckerName::ALL
            .into_iter()
            .filter(|c| !self.violations_of(*c).is_empty())
            .collect()
    }

    /// How many times each excuse row fired in the run, over every checker
    /// ([`excuse`]): what a green verdict rests on.
    pub fn excuses_used(&self) -> std::collections::BTreeMap<excuse::ExcuseKind, u64> {
        use excuse::ExcuseKind;
        let mut out = excuse::tally(
            self.no_lost_ack
                .excused
                .iter()
                .map(|e| &e.excuse)
                .chain(self.stable_offsets.excused.iter().map(|e| &e.excuse))
                .chain(self.bounded_duplicates.excused.iter().map(|(_, e)| e))
                .chain(self.frontier_durable.excused.iter())
                .chain(self.redelivered_after_expiry.excused.iter()),
        );
        for (kind, n) in &self.monotonic_commit_time.superseded {
            *out.entry(*kind).or_insert(0) += n;
        }
        let hidden: u64 = self
            .bounded_duplicates
            .crashes
            .iter()
            .map(|c| c.count)
            .sum::<u64>();
        if hidden > 0 {
            *out.entry(ExcuseKind::HiddenTail).or_insert(0) += hidden;
        }
        for d in &self.no_corrupt_delivery.damages {
            let kind = match d.outcome {
                corruption::DamageOutcome::NeverScanned => ExcuseKind::DamageNeverScanned,
                corruption::DamageOutcome::DeletedBeforeScan { .. } => {
                    ExcuseKind::DamageDeletedBeforeScan
                }
                corruption::DamageOutcome::RepairedBeforeScan { .. } => {
                    ExcuseKind::DamageRepairedBeforeScan
                }
                _ => continue,
            };
            *out.entry(kind).or_insert(0) += 1;
        }
        out
    }

    /// The first safety violation wins; else the first liveness one; else pass.
    pub fn verdict(&self, history: &History, config: &CheckConfig) -> Verdict {
        Verdict::from_report(self, history, config)
    }
}

/// Runs every checker over `history`.
pub fn check(history: &History, config: &CheckConfig) -> CheckReport {
    let facts = Facts::new(history);
    let accounting = Accounting::compute(&facts);
    let no_lost_ack = loss::check(&facts, &accounting);
    let delivered_after_heal = liveness::check(&facts, &accounting, &no_lost_ack, config);
    CheckReport {
        bounded_duplicates: duplicates::check(&facts, &accounting),
        monotonic_commit_time: commit_time::check(&facts),
        stable_offsets: offsets::check(&facts, &accounting),
        no_corrupt_delivery: corruption::check(&facts, &accounting),
        frontier_safe: frontier::check(&facts),
        frontier_durable: frontier_durable::check(&facts),
        poison_acks_nothing: poison::check(&facts),
        alarms_explained: explained::check(&facts),
        delay_gate: delay_gate::check(&facts),
        lease_exclusive: lease_exclusive::check(&facts),
        retention_safe: retention_safe::check(&facts),
        layout: layout::check(&facts),
        redelivered_after_expiry: redelivery::check(&facts, config),
        woken_promptly: woken::check(&facts, config),
        hwm_persisted: hwm_persisted::check(&facts),
        wal_progress: wal_progress::check(&facts),
        retention_progress: retention_progress::check(&facts),
        frontier_progress: frontier_progress::check(&facts),
        accounting,
        no_lost_ack,
        delivered_after_heal,
    }
}

/// Formats up to `max` items, then "and N more", so messages stay one readable line.
pub(crate) fn list<T: fmt::Display>(items: &[T], max: usize) -> String {
    let mut out = items
        .iter()
        .take(max)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        out.push_str(&format!(" and {} more", items.len() - max));
    }
    out
}
