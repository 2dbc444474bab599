//! `no_corrupt_delivery`: wrong bytes are never returned, and damage at rest that the
//! engine read is detected.
//!
//! 1. Every delivery is intact: its payload carries a produce id, that id was produced,
//!    and key and payload equal what was produced under it.
//! 2. Every segment damage (bit flip, misdirected write) that a later restart's
//!    recovery scan read (every partition is opened, hence scanned, at restart) shows
//!    up as detection on that partition: a refusal, or a rise of the recorded-loss or
//!    skip counter. Provably unread damage needs nothing: deleted by retention first
//!    (log start passed it), never scanned (no restart after it), or wholly above the
//!    persisted HWM (R1/R2 truncate it by design). Consume-time reads of damage are
//!    judged by rule 1 and by `no_lost_ack` (a silent skip loses the record).

use serde::Serialize;

use super::accounting::CorruptReason;
use super::facts::{Facts, fault_name};
use super::{Accounting, RecordRef, Violation};
use crate::history::{EventKind, TopicPartition};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DamageOutcome {
    /// Detected by the event at this history index.
    Detected { evidence_index: usize },
    /// No restart scanned it.
    NeverScanned,
    /// Retention deleted it before a restart scanned it.
    DeletedBeforeScan { log_start_index: usize },
    /// Above the persisted HWM: truncation at recovery is the designed outcome.
    AboveHwm,
    /// A flip in the partition's `hwm` file (undetectable: 8 bare bytes) between the
    /// crash before the scan and the scan: the scan may have read a lower HWM than the
    /// crash recorded, under which this damage sits above it and R2 truncates it as
    /// designed. (A flip before that crash shows in the crash's persisted HWM, and is
    /// judged as `AboveHwm`.)
    HwmDamaged { hwm_fault_index: usize },
    /// Scanned and not detected (a violation).
    Undetected { restart_index: usize },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Damage {
    pub fault_index: usize,
    pub tp: Option<TopicPartition>,
    pub outcome: DamageOutcome,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CorruptionReport {
    pub damages: Vec<Damage>,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> CorruptionReport {
    let events = facts.history.events();
    let mut report = CorruptionReport::default();
    for c in &accounting.corrupt {
        let EventKind::Delivery {
            attempt,
            committed_at_ms,
            ..
        } = &events[c.index].kind
        else {
            unreachable!("corrupt deliveries index Delivery events");
        };
        let what = match (&c.reason, c.id) {
            (CorruptReason::NoId(e), _) => format!("payload carries no produce id ({e})"),
            (CorruptReason::PayloadDiffers, Some(id)) => {
                format!("payload differs from the one produced as id {id}")
            }
            (CorruptReason::KeyDiffers, Some(id)) => {
                format!("key differs from the one produced as id {id}")
            }
            (_, None) => unreachable!("only NoId lacks an id"),
        };
        report.violations.push(Violation {
            message: format!(
                "corrupt delivery of {} offset {} (attempt {attempt}, committed_at_ms \
                 {committed_at_ms}) at t={}ms inc {}: {what}",
                c.tp,
                c.offset,
                facts.at_ms(c.index),
                facts.incarnation_at(c.index),
            ),
            records: vec![RecordRef::new(&c.tp, Some(c.offset), c.id)],
            events: vec![c.index],
        });
    }
    for (id, deliveries) in &accounting.unexpected {
        let first = deliveries[0];
        let EventKind::Delivery { tp, offset, .. } = &events[first].kind else {
            unreachable!("unexpected deliveries index Delivery events");
        };
        report.violations.push(Violation {
            message: format!(
                "delivered produce id {id} was never produced: {tp} offset {offset} at t={}ms \
                 inc {} ({} delivery(ies))",
                facts.at_ms(first),
                facts.incarnation_at(first),
                deliveries.len()
            ),
            records: vec![RecordRef::new(tp, Some(*offset), Some(*id))],
            events: deliveries.clone(),
        });
    }
    for (fault_index, event) in events.iter().enumerate() {
        let EventKind::Fault { kind, tp, .. } = &event.kind else {
            continue;
        };
        let Some((offsets, below_hwm)) = kind.segment_damage() else {
            continue;
        };
        if kind.is_out_of_contract() && offsets.is_none() {
            // A misdirected write lands where the disk chose, maybe past the valid extent
            // (garbage recovery truncates as a torn tail): with no known target there is
            // no detection to demand; the byte checks above still apply.
            continue;
        }
        let outcome = judge(facts, fault_index, tp.as_ref(), offsets, below_hwm);
        if let DamageOutcome::Undetected { restart_index } = outcome {
            let place = tp
                .as_ref()
                .map_or_else(|| "an unnamed partition".to_owned(), ToString::to_string);
            let range =
                offsets.map_or_else(|| "unknown offsets".to_owned(), |r| format!("offsets {r}"));
            report.violations.push(Violation {
                message: format!(
                    "{} injected at t={}ms into a segment of {place} ({range}, {}) was scanned \
                     by the restart at t={}ms but never detected: no refusal of {place} and no \
                     rise of its recorded-loss or skip counters",
                    fault_name(kind),
                    event.at_ms,
                    match below_hwm {
                        Some(true) => "below the persisted HWM",
                        _ => "position relative to the persisted HWM unknown",
                    },
                    facts.at_ms(restart_index),
                ),
                records: tp
                    .iter()
                    .map(|tp| RecordRef::new(tp, offsets.map(|r| r.start), None))
                    .collect(),
                events: vec![fault_index, restart_index],
            });
        }
        report.damages.push(Damage {
            fault_index,
            tp: tp.clone(),
            outcome,
        });
    }
    report
}

fn judge(
    facts: &Facts<'_>,
    fault_index: usize,
    tp: Option<&TopicPartition>,
    offsets: Option<crate::history::OffsetRange>,
    below_hwm: Option<bool>,
) -> DamageOutcome {
    if below_hwm == Some(false) {
        return DamageOutcome::AboveHwm;
    }
    let events = facts.history.events();
    // The first restart that opened the partition scans it. A restart whose store open
    // failed (a fatal error: the world restarts the node again) scanned nothing. At an
    // open the world records, per partition, its log start and counters (or its
    // refusal): `scan` is the index of that counters or refusal event.
    let scanned = |restart: usize| -> Option<usize> {
        let incarnation = events[restart].incarnation;
        events
            .iter()
            .enumerate()
            .skip(restart + 1)
            .take_while(|(_, e)| e.incarnation == incarnation)
            .find(|(_, e)| match &e.kind {
                EventKind::EngineCounters { tp: t, .. }
                | EventKind::PartitionRefused { tp: t, .. } => tp.is_none_or(|tp| tp == t),
                _ => false,
            })
            .map(|(index, _)| index)
    };
    let Some((restart_index, scan_index)) = facts
        .restarts
        .values()
        .filter(|index| **index > fault_index)
        .find_map(|index| scanned(*index).map(|scan| (*index, scan)))
    else {
        return DamageOutcome::NeverScanned;
    };
    if let (Some(tp), Some(range)) = (tp, offsets) {
        // Deleted before the scan, as the log start that open found shows. Only that
        // one: a sample taken before the crash may show a deletion the disk had not
        // made durable yet, which the crash undid.
        let deleted = (restart_index + 1..=scan_index).find(|index| {
            matches!(&events[*index].kind, EventKind::LogStartObserved { tp: t, log_start }
                    if t == tp && *log_start >= range.end)
        });
        if let Some(log_start_index) = deleted {
            return DamageOutcome::DeletedBeforeScan { log_start_index };
        }
    }
    // Damage the world could not place: any partition's detection will do.
    let evidence = match tp {
        Some(tp) => facts.detection_after(tp, fault_index),
        None => facts
            .counters
            .keys()
            .chain(facts.refusals.keys())
            .filter_map(|tp| facts.detection_after(tp, fault_index))
            .min(),
    };
    if let Some(evidence_index) = evidence {
        return DamageOutcome::Detected { evidence_index };
    }
    if let (Some(tp), Some(range)) = (tp, offsets) {
        // Judged against the HWM the scan read: the durable `hwm` at the crash before it
        // (lower than at injection only if a flip lowered it; a persist in between
        // rewrote any older flip), unless a flip after that crash changed it again.
        let crash = facts.crash_before(restart_index);
        if crash
            .and_then(|c| c.partitions.get(tp))
            .is_some_and(|p| range.start >= p.persisted_hwm)
        {
            return DamageOutcome::AboveHwm;
        }
        let after = crash.map_or(0, |c| c.index);
        if let Some(hwm_fault_index) = facts.hwm_flip_between(tp, after, scan_index) {
            return DamageOutcome::HwmDamaged { hwm_fault_index };
        }
    }
    DamageOutcome::Undetected { restart_index }
}
