//! The oracle: checkers that judge a run's [`History`] against the durability
//! contract (DESIGN.md, "Durability contract" and "Checkers").
//!
//! [`check`] indexes the history once ([`facts`]), computes the [`Accounting`], runs
//! every checker and returns a [`CheckReport`]; [`CheckReport::verdict`] turns it into
//! a [`Verdict`] with an exit code. Each checker is named by [`CheckerName`] (stable
//! snake_case names) and returns a typed report whose `violations` are empty on pass.
//!
//! Safety checkers:
//! - `no_lost_ack`: every acknowledged record is delivered intact at least once by the
//!   end of the run. Excused, in this order, and named per record in the report: the
//!   partition was refused at open (R3: the engine said so loudly); loss the engine
//!   recorded on that partition (clamp counter R4 plus consume-time skips, one record
//!   per unit, spent first on records no fault could explain); an out-of-contract
//!   fault (lost fsync, torn HWM write) on that partition injected before the ack with
//!   no crash in between (the only acks such a fault can undo); damage at rest that
//!   destroyed both durable copies (a `WalEntriesDamaged` event names the record's WAL
//!   entry, unread before the first open that needed it, and that open's recovery found
//!   its log frame gone: never durable, or damage at rest to its own frame; damage to
//!   a frame below it excuses nothing, since the R2 cut salvages readable records whose
//!   WAL entry is gone). Why: loss is allowed only when it is recorded or attributable; silent
//!   loss is the bug.
//! - `bounded_duplicates`: a duplicate is one produce id delivered from two offsets
//!   (redelivery of one offset is not). Each extra copy must be explained by a crash
//!   whose hidden tail `[persisted_hwm, durable_tail)` on that partition held the
//!   earlier copy, the crash preceding the later copy's first delivery; each crash
//!   explains at most `sum(durable_tail - persisted_hwm)` duplicates. A crash-free run
//!   therefore has none. Excused: a partition with an out-of-contract fault in the
//!   incarnation the crash ended has no bound (reported as unbounded); a pair whose
//!   earlier copy was damaged at rest between the two deliveries (the WAL re-commits a
//!   record whose visible copy became unreadable, reported as `after_damage`).
//! - `monotonic_commit_time`: per partition, `committed_at_ms` (from deliveries and
//!   acks) never decreases along offsets, whichever incarnation observed it. The
//!   engine must hold this against a wall clock stepping backwards; the only thing
//!   left out is an observation a recorded clamp (or a crash after an out-of-contract
//!   fault) superseded, since that offset may now hold a newer, unobserved record.
//! - `stable_offsets`: once read (delivered or acked at an offset), the record at an
//!   offset never changes; a read offset does not vanish by the end of the run; the
//!   in-memory HWM never moves backwards within an incarnation; after a restart it is
//!   not below the persisted HWM at the crash; the persisted HWM never decreases; no
//!   HWM exceeds the durable tail; the log start never moves backwards. Excused: a
//!   recorded clamp (offsets at or above the clamped HWM may be reused or vanish, and
//!   the HWM may drop by the recorded amount), a refusal, an out-of-contract fault on
//!   the partition, retention (below the log start), the hidden tail of the last crash.
//! - `no_corrupt_delivery`: no delivery whose payload has no id, whose bytes differ
//!   from the produce of its id, or whose id was never produced. And every damage at
//!   rest to a segment (bit flip, misdirected write) that a restart's recovery scan
//!   read is detected: a refusal or a rise of the recorded-loss / skip counters of
//!   that partition. Excused: damage deleted by retention before it was read, damage
//!   never scanned (no restart; consume-time reads are judged by the byte checks and
//!   by `no_lost_ack`), and damage wholly above the persisted HWM (R1/R2 truncate it
//!   silently by design).
//! - `frontier_safe`: every frontier written or recovered passes only acknowledged
//!   offsets (offsets below the log start are retention's, not the consumer's); a
//!   frontier recovered after a restart is 0 or a value the engine wrote earlier (old
//!   or new, never torn). Nothing excused.
//! - `poison_acks_nothing`: after `PartitionPoisoned`, no produce ack on that partition
//!   and no HWM advance in the same incarnation. Nothing excused: after a failed fsync
//!   nothing on that file can be trusted.
//!
//! Liveness checker:
//! - `delivered_after_heal`: every acknowledged record is delivered by
//!   `max(heal, ack) + delivery_bound_ms`. A refused partition is reported as refused,
//!   loss excused by `no_lost_ack` as excused, and records whose deadline lies beyond
//!   the end of the history as inconclusive, none of them as a hang. Without a heal the
//!   checker has nothing to measure and passes, saying so.

#![deny(clippy::unwrap_used)]

pub mod accounting;
pub mod commit_time;
pub mod corruption;
pub mod duplicates;
pub mod facts;
pub mod frontier;
pub mod liveness;
pub mod loss;
pub mod offsets;
pub mod poison;
pub mod verdict;

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
    PoisonAcksNothing,
    DeliveredAfterHeal,
}

impl CheckerName {
    pub const ALL: [CheckerName; 8] = [
        CheckerName::NoLostAck,
        CheckerName::BoundedDuplicates,
        CheckerName::MonotonicCommitTime,
        CheckerName::StableOffsets,
        CheckerName::NoCorruptDelivery,
        CheckerName::FrontierSafe,
        CheckerName::PoisonAcksNothing,
        CheckerName::DeliveredAfterHeal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckerName::NoLostAck => "no_lost_ack",
            CheckerName::BoundedDuplicates => "bounded_duplicates",
            CheckerName::MonotonicCommitTime => "monotonic_commit_time",
            CheckerName::StableOffsets => "stable_offsets",
            CheckerName::NoCorruptDelivery => "no_corrupt_delivery",
            CheckerName::FrontierSafe => "frontier_safe",
            CheckerName::PoisonAcksNothing => "poison_acks_nothing",
            CheckerName::DeliveredAfterHeal => "delivered_after_heal",
        }
    }

    pub fn is_liveness(self) -> bool {
        self == CheckerName::DeliveredAfterHeal
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
    /// Events shown before and after each event a failure is about.
    pub context_events: usize,
}

impl Default for CheckConfig {
    fn default() -> Self {
        Self {
            delivery_bound_ms: 30_000,
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
    pub poison_acks_nothing: poison::PoisonReport,
    pub delivered_after_heal: liveness::LivenessReport,
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
            CheckerName::PoisonAcksNothing => &self.poison_acks_nothing.violations,
            CheckerName::DeliveredAfterHeal => &self.delivered_after_heal.violations,
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
        poison_acks_nothing: poison::check(&facts),
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
