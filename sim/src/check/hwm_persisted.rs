//! `hwm_persisted`: once faults stop, the persisted HWM follows the HWM at a bounded
//! interval (the spec: "persisted ... at a bounded interval"). The HWM persister wakes
//! every `hwm_persist_interval` and writes the word when the HWM moved, so an HWM the
//! engine showed at `t` is on disk by `t + interval + slack`.
//!
//! Why it matters though no record is lost without it: a persister that stalls leaves
//! every later crash a hidden tail as long as the stall, and the WAL checkpoint (which
//! waits for the persisted HWM) stops moving, so the WAL grows and each replay commits
//! more again. Every other checker budgets for what the persisted word says, so only
//! this one sees the persister stop.
//!
//! Judged from the world's samples (`HwmObserved` with the engine's persisted HWM),
//! pairing a sample at `t` with the last sample of the same incarnation at or before
//! `t - bound`, for samples at least `bound` after both the heal and the incarnation's
//! restart. Not judged: a partition poisoned in that incarnation (a failed persist
//! poisons it and stops the persister until a restart), a topic whose interval the
//! history does not record (`RunStarted`, histories from before it was).

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{EventKind, Incarnation, Offset, TopicPartition};

/// Slack past the interval: a sampling period (100 ms), the persist's write and fsync
/// behind a flush holding the file lock, and a scheduling turn.
pub const SLACK_MS: u64 = 250;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HwmPersistedReport {
    /// Samples judged (each against an earlier one).
    pub checked: usize,
    /// (partition, incarnation) not judged because the partition was poisoned in it.
    pub poisoned: Vec<(TopicPartition, Incarnation)>,
    pub violations: Vec<Violation>,
}

struct Sample {
    index: usize,
    at_ms: u64,
    hwm: Offset,
    persisted: Offset,
}

pub fn check(facts: &Facts<'_>) -> HwmPersistedReport {
    let mut report = HwmPersistedReport::default();
    let Some((_, heal_ms)) = facts.heal else {
        return report;
    };
    let mut samples: BTreeMap<(TopicPartition, Incarnation), Vec<Sample>> = BTreeMap::new();
    let mut poisoned: BTreeMap<(TopicPartition, Incarnation), usize> = BTreeMap::new();
    let mut intervals: BTreeMap<&str, u64> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        match &event.kind {
            EventKind::RunStarted { topics, .. } => {
                for topic in topics {
                    if let Some(ms) = topic.hwm_persist_ms {
                        intervals.insert(&topic.name, ms);
                    }
                }
            }
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm: Some(persisted),
                ..
            } => samples
                .entry((tp.clone(), event.incarnation))
                .or_default()
                .push(Sample {
                    index,
                    at_ms: event.at_ms,
                    hwm: *hwm,
                    persisted: *persisted,
                }),
            EventKind::PartitionPoisoned { tp } => {
                poisoned
                    .entry((tp.clone(), event.incarnation))
                    .or_insert(index);
            }
            _ => {}
        }
    }
    for ((tp, incarnation), samples) in &samples {
        let Some(&interval) = intervals.get(tp.topic.as_str()) else {
            continue;
        };
        if poisoned.contains_key(&(tp.clone(), *incarnation)) {
            report.poisoned.push((tp.clone(), *incarnation));
            continue;
        }
        let bound = interval + SLACK_MS;
        let started = facts
            .restarts
            .get(incarnation)
            .map_or(0, |&restart| facts.at_ms(restart));
        let from = heal_ms.max(started) + bound;
        for sample in samples.iter().filter(|s| s.at_ms >= from) {
            let Some(earlier) = samples
                .iter()
                .rev()
                .find(|e| e.at_ms + bound <= sample.at_ms)
            else {
                continue;
            };
            report.checked += 1;
            if sample.persisted < earlier.hwm {
                report.violations.push(Violation {
                    message: format!(
                        "{tp}: the HWM was {} at t={}ms and the persisted HWM still {} at \
                         t={}ms, {}ms later (hwm_persist_interval {interval}ms, bound \
                         {bound}ms; faults healed at t={heal_ms}ms)",
                        earlier.hwm,
                        earlier.at_ms,
                        sample.persisted,
                        sample.at_ms,
                        sample.at_ms - earlier.at_ms
                    ),
                    records: vec![RecordRef::new(tp, Some(sample.persisted), None)],
                    events: vec![earlier.index, sample.index],
                });
                // One per partition and incarnation: the rest repeat it.
                break;
            }
        }
    }
    report
}
