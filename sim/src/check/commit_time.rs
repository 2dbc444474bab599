//! `monotonic_commit_time`: in every partition, `committed_at_ms` never decreases
//! along offsets, across all incarnations. The delay gate relies on it, and the wall
//! clock stepping backwards must not break it.
//!
//! Observations come from deliveries and from acks that report offset and commit
//! time; for an offset seen several times the latest observation stands (a record
//! that changed is `stable_offsets`' business, not this checker's). An observation
//! that a later clamp, a cut above the HWM or an out-of-contract fault's reach may have
//! superseded is left out (excuse rows `clamped`, `cut_above_hwm`, `out_of_contract`):
//! the offset may since hold a newer record that was never observed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::excuse::{ExcuseKind, Excuses};
use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{EventKind, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CommitTimeReport {
    /// Offsets with a known commit time, per partition.
    pub observed_offsets: BTreeMap<TopicPartition, usize>,
    /// Observations left out because something superseded them, per excuse row.
    pub superseded: BTreeMap<ExcuseKind, u64>,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> CommitTimeReport {
    // (partition) -> offset -> (committed_at_ms, history index)
    let mut seen: BTreeMap<TopicPartition, BTreeMap<Offset, (u64, usize)>> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let (tp, offset, committed_at_ms) = match &event.kind {
            EventKind::Delivery {
                tp,
                offset,
                committed_at_ms,
                ..
            } => (tp, *offset, *committed_at_ms),
            EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                committed_at_ms: Some(committed_at_ms),
                ..
            } => (tp, *offset, *committed_at_ms),
            _ => continue,
        };
        seen.entry(tp.clone())
            .or_default()
            .insert(offset, (committed_at_ms, index));
    }
    let mut report = CommitTimeReport::default();
    let excuses = Excuses::new(facts);
    for (tp, offsets) in &seen {
        report.observed_offsets.insert(tp.clone(), offsets.len());
        let mut previous: Option<(Offset, u64, usize)> = None;
        for (offset, (committed_at_ms, index)) in offsets {
            if let Some(excuse) = excuses.superseded(tp, *offset, *index) {
                *report.superseded.entry(excuse.kind).or_insert(0) += 1;
                continue;
            }
            if let Some((prev_offset, prev_ms, prev_index)) = previous
                && *committed_at_ms < prev_ms
            {
                report.violations.push(Violation {
                    message: format!(
                        "{tp}: committed_at_ms decreases along offsets: offset {prev_offset} \
                         has {prev_ms} (seen t={}ms inc {}) but offset {offset} has \
                         {committed_at_ms} (seen t={}ms inc {})",
                        facts.at_ms(prev_index),
                        facts.incarnation_at(prev_index),
                        facts.at_ms(*index),
                        facts.incarnation_at(*index),
                    ),
                    records: vec![
                        RecordRef::new(tp, Some(prev_offset), None),
                        RecordRef::new(tp, Some(*offset), None),
                    ],
                    events: vec![prev_index, *index],
                });
            }
            previous = Some((*offset, *committed_at_ms, *index));
        }
    }
    report
}
