//! F4 of `layout`: a drain takes every buffered record the frame caps allow
//! (storage-engine.md: "all records drained in one flush become one frame"; "one frame
//! per drain"). The bytes on disk cannot show what was buffered when a frame was cut, so
//! the engine gives its account of every drain that left records behind
//! ([`Alarm::DrainPartial`]), and each must show the frame full: `flush_records`
//! records, or the next record past `flush_bytes`.
//!
//! The account is the engine's word for what it had buffered; a drain that took
//! everything raises none. What the frames hold is held to the caps from above by F1
//! and F2, on disk.
//!
//! Judged with the knobs the partition's `LayoutObserved` carries (a topic's knobs do
//! not change during a run); a partition the world did not list at the end is not
//! judged, and counted.
//!
//! The rule pins the engine's design, which is stricter than the spec's words: a drain
//! that split a buffer evenly, or a commit that drained only up to its own records,
//! would be flagged.

use std::collections::BTreeMap;

use super::super::facts::Facts;
use super::super::{RecordRef, Violation};
use super::LayoutReport;
use crate::history::{Alarm, EventKind, LayoutKnobs, TopicPartition};

/// F4 over every partial drain of the run.
pub(super) fn check(facts: &Facts<'_>, report: &mut LayoutReport) {
    let events = facts.history.events();
    let mut knobs: BTreeMap<&TopicPartition, &LayoutKnobs> = BTreeMap::new();
    for event in events {
        if let EventKind::LayoutObserved { tp, knobs: k, .. } = &event.kind {
            knobs.entry(tp).or_insert(k);
        }
    }
    for (index, event) in events.iter().enumerate() {
        let EventKind::EngineAlarm {
            tp,
            alarm:
                Alarm::DrainPartial {
                    base,
                    records,
                    bytes,
                    next_bytes,
                },
            ..
        } = &event.kind
        else {
            continue;
        };
        // An account from a directory the world names no partition for, or for a
        // partition it did not list at the end, has no knobs to judge it by.
        let Some((tp, k)) = tp.as_ref().and_then(|tp| Some((tp, *knobs.get(tp)?))) else {
            report.drains_unjudged += 1;
            continue;
        };
        report.drains_judged += 1;
        let full = *records >= k.flush_records || bytes + next_bytes > k.flush_bytes;
        if *records >= 1 && full {
            continue;
        }
        report.violations.push(Violation {
            message: format!(
                "{tp} F4: the drain into the frame at {base} took {records} record(s) of \
                 {bytes} bytes and left the next, of {next_bytes} bytes, though the frame \
                 had room (flush_records {}, flush_bytes {})",
                k.flush_records, k.flush_bytes
            ),
            records: vec![RecordRef::new(tp, Some(*base), None)],
            events: vec![index],
        });
    }
}
