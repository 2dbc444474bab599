//! `frontier_safe`: the consumer frontier (every offset below it is acknowledged)
//! never passes an unacknowledged offset, and after a crash it holds an old or the new
//! value, never a torn one.
//!
//! 1. Every `FrontierWritten` and `FrontierObserved` value `f`: each offset in
//!    `[log_start, f)` was acked before that event (offsets below the log start, or in
//!    a segment the reaper deleted before it, went by retention, not consumed; the
//!    log start is only sampled), or settled by the engine as a record it
//!    skipped with a counter (row `skipped`: its `frame_skipped`/`records_skipped`
//!    alarm came first), or lies in the reach of an out-of-contract fault of the
//!    partition's `consumer.offset` injected before and read by an open while it
//!    lasted (row `out_of_contract`: a flip or lost fsync moves the frontier the engine
//!    loads anywhere between two values; one overwritten before any open read it moved
//!    nothing).
//! 2. Every `FrontierObserved` value is 0 (no file yet), at or below a log start (the
//!    engine's clamp), or a value some `FrontierWritten` of that partition recorded
//!    earlier; else it must lie in (or be made unreadable by) the reach of such an
//!    out-of-contract `consumer.offset` fault.
//!
//! 3. Every delivery of an incarnation (an answer no consumer claimed, too: the engine
//!    leased its offsets all the same) comes after the engine reported loading the
//!    partition's frontier there (its `frontier_loaded` account, recorded as a
//!    `FrontierObserved` with `loaded`: the queue loads on first touch), and is of an
//!    offset at or above that frontier (after its clamps): every offset below it is
//!    settled, and a settled offset is never leased again (the frontier only rises in
//!    an incarnation). This asks the engine's own frontier, whatever the disk held, so
//!    no fault excuses it. Histories that predate the account are held only to the
//!    loads they record.
//!
//! A recovered value the engine itself reported unreadable (its `frontier_reset` alarm
//! in that incarnation, whose own cause `alarms_explained` demands) is not judged by 1
//! and 2: the engine restarted at the log start instead of using it. Nor is an
//! unreadable word an open left before anything loaded it: each load is observed again,
//! after its reset.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::alarms::SkipFact;
use super::facts::Facts;
use super::{RecordRef, Violation, list};
use crate::history::{EventKind, FileKind, Incarnation, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrontierReport {
    /// Frontier values checked (written and observed).
    pub checked: usize,
    /// Deliveries held to the frontier their incarnation's open loaded (rule 3).
    pub deliveries_above_loaded: usize,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> FrontierReport {
    let mut report = FrontierReport::default();
    // Per partition: offset -> index of its first ack.
    let mut acked: BTreeMap<TopicPartition, BTreeMap<Offset, usize>> = BTreeMap::new();
    let mut written: BTreeMap<TopicPartition, BTreeSet<Offset>> = BTreeMap::new();
    let mut log_start: BTreeMap<TopicPartition, Offset> = BTreeMap::new();
    let mut final_log_start: BTreeMap<TopicPartition, Offset> = BTreeMap::new();
    // Per partition: where an open read the word (a load, or a clamp of what it read).
    let mut loads: BTreeMap<TopicPartition, Vec<usize>> = BTreeMap::new();
    for event in facts.history.events() {
        if let EventKind::LogStartObserved { tp, log_start: s } = &event.kind {
            let entry = final_log_start.entry(tp.clone()).or_default();
            *entry = (*entry).max(*s);
        }
    }
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
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: crate::history::Alarm::FrontierClamped { .. },
                ..
            } => {
                loads.entry(tp.clone()).or_default().push(index);
                continue;
            }
            EventKind::FrontierWritten { tp, frontier } => (tp, *frontier, false),
            EventKind::FrontierObserved { tp, frontier, .. } => {
                loads.entry(tp.clone()).or_default().push(index);
                (tp, *frontier, true)
            }
            _ => continue,
        };
        report.checked += 1;
        // The out-of-contract faults of this partition's `consumer.offset` so far that an
        // open read while they lasted (the engine's frontier then carries what they did,
        // and only rises from there; one the engine overwrote before any open read it
        // moved nothing), and the records the engine skipped (settled) with a counter so
        // far.
        let read_at = loads.get(tp).map_or(&[][..], Vec::as_slice);
        let word_faults: Vec<&crate::check::contract::Reach> = facts
            .reaches_before(tp, index)
            .filter(|r| r.file == FileKind::ConsumerOffset)
            .filter(|r| {
                read_at
                    .iter()
                    .any(|&j| j > r.fault_index && r.live_at(facts, j, None))
            })
            .collect();
        let skips: Vec<SkipFact> = facts.alarms.skips(tp).filter(|s| s.index < index).collect();
        // A file the engine reported unreadable (`frontier_reset`, its cause judged by
        // `alarms_explained`) gave it no frontier: it restarted at the log start.
        let reset = observed
            && facts.alarms.of(tp).iter().any(|a| {
                a.incarnation == event.incarnation
                    && a.index < index
                    && matches!(a.alarm, crate::history::Alarm::FrontierReset { .. })
            });
        // Nor is a word an open found unreadable (`u64::MAX`) before anything loaded
        // it: the load that reads it resets first (above) or is judged by its own
        // observation.
        let unread = matches!(
            &event.kind,
            EventKind::FrontierObserved {
                frontier: u64::MAX,
                loaded: None,
                ..
            }
        );
        if reset || unread {
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
        // Segments the reaper took so far (judged by `retention_safe`): the engine
        // moves its frontier over them at once, before a sample shows the log start;
        // once a restart finds the file again, only as far as it wrote the frontier
        // while they were gone.
        let reaped: Vec<&crate::check::reaped::Reaped> =
            facts.reaped.iter().filter(|r| &r.tp == tp).collect();
        let settled = |o: Offset| {
            skips.iter().any(|s| s.contains(o))
                || reaped.iter().any(|r| r.settles(o, index))
                || word_faults
                    .iter()
                    .any(|r| r.offsets.is_some_and(|range| range.contains(o)))
        };
        // Walk acknowledged (or excused) offsets up from the log start; a range a fault
        // reaches is skipped whole, so a flipped (huge) frontier costs nothing.
        loop {
            if acks.is_some_and(|a| a.contains_key(&first_unacked)) {
                first_unacked += 1;
            } else if let Some(r) = word_faults
                .iter()
                .find_map(|r| r.offsets.filter(|range| range.contains(first_unacked)))
            {
                first_unacked = r.end;
            } else if settled(first_unacked) {
                first_unacked += 1;
            } else {
                break;
            }
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
            // A value a `consumer.offset` fault moved it to (or whose file it tore).
            let faulted = word_faults.iter().any(|r| {
                r.offsets
                    .is_none_or(|range| range.start <= frontier && frontier <= range.end)
            });
            if frontier != 0
                && frontier > start
                && !faulted
                && !values.is_some_and(|v| v.contains(&frontier))
            {
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
    deliveries_above_loaded(facts, &mut report);
    report
}

/// Rule 3: no delivery below the frontier its incarnation loaded, nor before it
/// reported loading one.
fn deliveries_above_loaded(facts: &Facts<'_>, report: &mut FrontierReport) {
    let mut loaded: BTreeMap<&TopicPartition, (Incarnation, Offset, usize)> = BTreeMap::new();
    let mut reported = false;
    for (index, event) in facts.history.events().iter().enumerate() {
        match &event.kind {
            EventKind::RunStarted {
                frontier_loads_reported,
                ..
            } => reported = *frontier_loads_reported,
            EventKind::FrontierObserved {
                tp,
                loaded: Some(frontier),
                ..
            } => {
                loaded.insert(tp, (event.incarnation, *frontier, index));
            }
            EventKind::Delivery { tp, offset, .. } => {
                judge_delivery(report, (index, event), tp, &[*offset], &loaded, reported);
            }
            // An answer whose consumer had given up leased its offsets all the same.
            EventKind::DeliveriesUnclaimed { tp, offsets, .. } => {
                judge_delivery(report, (index, event), tp, offsets, &loaded, reported);
            }
            _ => {}
        }
    }
}

/// Rule 3 for one answer of a receive: its offsets against the incarnation's load.
fn judge_delivery(
    report: &mut FrontierReport,
    (index, event): (usize, &crate::history::Event),
    tp: &TopicPartition,
    offsets: &[Offset],
    loaded: &BTreeMap<&TopicPartition, (Incarnation, Offset, usize)>,
    reported: bool,
) {
    let load = loaded.get(tp).filter(|l| l.0 == event.incarnation);
    let Some(&(_, frontier, at)) = load else {
        // The queue a delivery leases from is the loaded one: a delivery with no load
        // reported before it came from state the engine never accounted for.
        if let (true, Some(offset)) = (reported, offsets.first()) {
            report.violations.push(Violation {
                message: format!(
                    "{tp} delivered offset {offset} at t={}ms inc {} before the engine \
                     reported loading the partition's frontier in that incarnation",
                    event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(*offset), None)],
                events: vec![index],
            });
        }
        return;
    };
    for offset in offsets {
        report.deliveries_above_loaded += 1;
        if *offset < frontier {
            report.violations.push(Violation {
                message: format!(
                    "{tp} delivered offset {offset} at t={}ms inc {}, below the frontier \
                     {frontier} the engine loaded there (everything below it settled)",
                    event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(*offset), None)],
                events: vec![at, index],
            });
        }
    }
}
