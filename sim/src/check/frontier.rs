//! `frontier_safe`: the consumer frontier (every offset below it is acknowledged)
//! never passes an unacknowledged offset, and after a crash it holds an old or the new
//! value, never a torn one.
//!
//! 1. Every `FrontierWritten` and `FrontierObserved` value `f`: each offset in
//!    `[log_start, f)` was acked before that event (offsets below the log start were
//!    deleted by retention, not consumed).
//! 2. Every `FrontierObserved` value is 0 (no file yet) or a value some
//!    `FrontierWritten` of that partition recorded earlier.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation, list};
use crate::history::{EventKind, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrontierReport {
    /// Frontier values checked (written and observed).
    pub checked: usize,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> FrontierReport {
    let mut report = FrontierReport::default();
    // Per partition: offset -> index of its first ack.
    let mut acked: BTreeMap<TopicPartition, BTreeMap<Offset, usize>> = BTreeMap::new();
    let mut written: BTreeMap<TopicPartition, BTreeSet<Offset>> = BTreeMap::new();
    let mut log_start: BTreeMap<TopicPartition, Offset> = BTreeMap::new();
    let mut final_log_start: BTreeMap<TopicPartition, Offset> = BTreeMap::new();
    for event in facts.history.events() {
        if let EventKind::LogStartObserved { tp, log_start: s } = &event.kind {
            let entry = final_log_start.entry(tp.clone()).or_default();
            *entry = (*entry).max(*s);
        }
    }
    // Offsets of frames damaged at rest: the engine skips them at consume time with a
    // counter (recorded loss), and the frontier moves over them.
    let mut damaged: BTreeMap<TopicPartition, Vec<crate::history::OffsetRange>> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let (tp, frontier, observed) = match &event.kind {
            EventKind::Ack { tp, offset } => {
                acked
                    .entry(tp.clone())
                    .or_default()
                    .entry(*offset)
                    .or_insert(index);
                continue;
            }
            EventKind::LogStartObserved { tp, log_start: s } => {
                let entry = log_start.entry(tp.clone()).or_default();
                *entry = (*entry).max(*s);
                continue;
            }
            EventKind::Fault {
                kind, tp: Some(tp), ..
            } => {
                if let Some((Some(range), _)) = kind.segment_damage() {
                    damaged.entry(tp.clone()).or_default().push(range);
                }
                continue;
            }
            EventKind::FrontierWritten { tp, frontier } => (tp, *frontier, false),
            EventKind::FrontierObserved { tp, frontier } => (tp, *frontier, true),
            _ => continue,
        };
        report.checked += 1;
        if facts
            .metadata_damage
            .get(tp)
            .is_some_and(|d| d.iter().any(|d| *d < index))
            || (observed && facts.out_of_contract_before(tp, index).is_some())
        {
            // A flip in consumer.offset (8 bare bytes) cannot be detected: the recovered
            // frontier and every value derived from it are attributed to it. A recovered
            // value after an out-of-contract fault on the partition is too (a
            // misdirected write can land in the frontier file and change its length).
            continue;
        }
        let kind = if observed { "recovered" } else { "written" };
        // Retention may delete unacknowledged offsets (the spec's reaper does not wait
        // for consumers), and the log start is only sampled: offsets below any log start
        // seen in the run are retention's.
        let start = final_log_start
            .get(tp)
            .copied()
            .unwrap_or(0)
            .max(log_start.get(tp).copied().unwrap_or(0));
        let acks = acked.get(tp);
        // Walk acknowledged offsets up from the log start; the walk is bounded by the
        // number of acks, so a torn (huge) frontier costs nothing.
        let mut first_unacked = start;
        let skipped = |o: Offset| {
            damaged
                .get(tp)
                .is_some_and(|d| d.iter().any(|r| r.contains(o)))
        };
        while acks.is_some_and(|a| a.contains_key(&first_unacked)) || skipped(first_unacked) {
            first_unacked += 1;
        }
        if first_unacked < frontier {
            report.violations.push(Violation {
                message: format!(
                    "frontier of {tp} {kind} as {frontier} at t={}ms inc {} passes \
                     unacknowledged offset {first_unacked} (log start {start})",
                    event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(first_unacked), None)],
                events: vec![index],
            });
        }
        if observed {
            let values = written.get(tp);
            // The engine clamps a recovered frontier up to the log start when retention
            // deleted past it (or the file is missing): a value at or below a log start
            // of the run is such a clamp.
            if frontier != 0 && frontier > start && !values.is_some_and(|v| v.contains(&frontier)) {
                let values: Vec<Offset> = values
                    .map(|v| v.iter().copied().collect())
                    .unwrap_or_default();
                report.violations.push(Violation {
                    message: format!(
                        "frontier of {tp} recovered as {frontier} at t={}ms inc {} was never \
                         written (torn?); values written before: [{}]",
                        event.at_ms,
                        event.incarnation,
                        list(&values, 8)
                    ),
                    records: vec![RecordRef::new(tp, Some(frontier), None)],
                    events: vec![index],
                });
            }
        } else {
            written.entry(tp.clone()).or_default().insert(frontier);
        }
    }
    report
}
