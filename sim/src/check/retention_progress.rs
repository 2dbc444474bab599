//! `retention_progress` (liveness): once the run is quiet, the reaper deletes the
//! sealed segments retention has aged. The spec's reaper sweeps every
//! `reaper_interval` and deletes, from the front, sealed segments whose last record is
//! older than `retention_ms`, below the HWM and below the WAL checkpoint's offset (the
//! retention floor). So the lowest segment the page cache lists at the end, when
//! another follows it, must be gone if, for a whole reaper interval and a sweep's
//! slack before the end, it was all of:
//!
//! - **aged**: its last record's commit time `c` (the reference decoder's, from the
//!   file) has `c + retention_ms <= L(t)`, `L` the wall clock less every step back the
//!   run made: a lower bound on the clock the engine reads, which never runs behind
//!   the wall clock;
//! - **below the HWM**: a sample in the running incarnation showed an HWM at or past
//!   its end (the HWM only grows within an incarnation);
//! - **below the floor**: the checkpoint file the page cache holds at the end names an
//!   offset at or past its end, and the WAL has been quiet for `wal_progress`'s bound
//!   (after which the checkpoint covers everything below the persisted HWM, so the
//!   floor no longer moves).
//!
//! And the floor itself moves: by then the checkpoint has passed every entry below the
//! persisted HWM, so its offset is at least the highest persisted HWM a sample of the
//! running incarnation read (a floor that never rises stops retention for good).
//!
//! Why it matters though no record is lost without it: a reaper that never ages a
//! segment (milliseconds read as seconds, a floor that never rises) fills the disk,
//! and every other checker only judges the deletions that happen.
//!
//! Judged at the end of the history, from the world's listing (`LayoutObserved`) and
//! the checkpoint's offsets (`WalAtEnd::floors`), when the run has a heal and the
//! running incarnation's store open returned, and not when its WAL was poisoned (no
//! checkpoint moves) or the run ended before the WAL's bound. Not judged: a partition
//! poisoned or refused in the last incarnation, one whose segment files a fault
//! reached in it (damage hides frames from the listing's decode), one whose lowest
//! segment the decoder found damaged or without frames, and topics without retention
//! or without a recorded reaper interval (the floor rule judges every partition).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::facts::Facts;
use super::hwm_persisted::SLACK_MS;
use super::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, FaultKind, Offset, SegmentLayout, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetentionProgressReport {
    /// Whether the end of the run was judged, and if not, why.
    pub judged: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<&'static str>,
    /// Partitions with retention whose listing at the end holds a sealed segment.
    pub sealed: u64,
    /// Of those, the ones whose lowest segment was not due (or not for long enough).
    pub not_due: u64,
    pub violations: Vec<Violation>,
}

/// How long after a segment became due the reaper may take to delete it: one reaper
/// interval `reaper_ms` (a sweep that just missed it sleeps that long), the slack, and
/// the disk's longest sleep `latency_ms` for each of the few operations a sweep makes
/// (the HWM's persist, the unlink, the directory's fsync), twice.
pub fn bound_ms(reaper_ms: u64, latency_ms: u64) -> u64 {
    reaper_ms
        .saturating_add(SLACK_MS)
        .saturating_add(latency_ms.saturating_mul(8))
}

/// A topic's retention and reaper interval.
#[derive(Clone, Copy)]
struct Retention {
    retention_ms: u64,
    reaper_ms: u64,
}

pub fn check(facts: &Facts<'_>) -> RetentionProgressReport {
    let mut report = RetentionProgressReport::default();
    let not_judged = |mut report: RetentionProgressReport, why| {
        report.not_judged = Some(why);
        report
    };
    let events = facts.history.events();
    let Some((end, opened_ms, floors)) = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::WalAtEnd {
            opened_ms, floors, ..
        } => Some((e, *opened_ms, floors)),
        _ => None,
    }) else {
        return not_judged(report, "no listing at the end (the store was not open)");
    };
    let Some((_, heal_ms)) = facts.heal else {
        return not_judged(report, "no heal");
    };
    let mut retention: BTreeMap<&str, Retention> = BTreeMap::new();
    let (mut wall_base_ms, mut stepped_back_ms) = (0, 0);
    let (mut persist_ms, mut latency_ms, mut last_write_ms) = (0, 0, 0);
    let mut excluded: BTreeSet<&TopicPartition> = BTreeSet::new();
    let mut refused_topics: BTreeSet<&str> = BTreeSet::new();
    let mut wal_poisoned = false;
    let mut layouts: BTreeMap<&TopicPartition, (usize, &[SegmentLayout])> = BTreeMap::new();
    // Per partition, the samples of the running incarnation: (at, HWM).
    let mut hwms: BTreeMap<&TopicPartition, Vec<(u64, Offset)>> = BTreeMap::new();
    // Per partition, the highest persisted HWM a sample of the running incarnation read.
    let mut persisted: BTreeMap<&TopicPartition, (usize, Offset)> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::RunStarted {
                wall_base_ms: base,
                topics,
                io_latency_max_ms,
                ..
            } => {
                wall_base_ms = *base;
                latency_ms = *io_latency_max_ms;
                persist_ms = topics
                    .iter()
                    .map(|t| t.hwm_persist_ms.unwrap_or(u64::MAX))
                    .max()
                    .unwrap_or(0);
                retention = topics
                    .iter()
                    .filter_map(|t| {
                        Some((
                            t.name.as_str(),
                            Retention {
                                retention_ms: t.retention_ms?,
                                reaper_ms: t.reaper_interval_ms?,
                            },
                        ))
                    })
                    .collect();
            }
            EventKind::Fault {
                kind: FaultKind::ClockStep { back_ms },
                ..
            } => stepped_back_ms += back_ms,
            EventKind::LayoutObserved { tp, segments, .. } => {
                layouts.insert(tp, (index, segments));
            }
            _ => {}
        }
        if event.incarnation != end.incarnation {
            continue;
        }
        match &event.kind {
            EventKind::ProduceAttempt { .. } | EventKind::ProduceAck { .. } => {
                last_write_ms = event.at_ms;
            }
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm,
                ..
            } => {
                hwms.entry(tp).or_default().push((event.at_ms, *hwm));
                if let Some(p) = *persisted_hwm {
                    let highest = persisted.entry(tp).or_insert((index, p));
                    if p > highest.1 {
                        *highest = (index, p);
                    }
                }
            }
            EventKind::PartitionPoisoned { tp } | EventKind::PartitionRefused { tp, .. } => {
                excluded.insert(tp);
            }
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::Poisoned { .. },
                ..
            } => {
                excluded.insert(tp);
            }
            EventKind::EngineAlarm {
                alarm: Alarm::TopicRefused { topic },
                ..
            } => {
                refused_topics.insert(topic.as_str());
            }
            // Damage can hide frames from the listing's decode that the engine read.
            EventKind::Fault {
                tp: Some(tp),
                path: Some(path),
                ..
            } if crate::reference::partition::segment_base_of_path(path).is_some() => {
                excluded.insert(tp);
            }
            EventKind::EngineAlarm {
                alarm: Alarm::WalPoisoned,
                raised_in: None,
                ..
            } => wal_poisoned = true,
            _ => {}
        }
    }
    let quiet_from = heal_ms.max(opened_ms).max(last_write_ms);
    let floor_from =
        quiet_from.saturating_add(super::wal_progress::bound_ms(persist_ms, latency_ms));
    if wal_poisoned {
        return not_judged(report, "the WAL was poisoned in the last incarnation");
    }
    if end.at_ms < floor_from {
        return not_judged(
            report,
            "the quiet end of the run is shorter than the WAL's bound",
        );
    }
    report.judged = true;
    // The floor: once quiet for the WAL's bound, the checkpoint has passed every entry
    // below the persisted HWM, which no longer moves, so its offset is at least the
    // highest persisted HWM any sample read.
    for (&tp, &(sample, p)) in &persisted {
        let Some(floor) = floors.iter().find(|(t, _)| t == tp).map(|(_, o)| *o) else {
            continue;
        };
        if excluded.contains(tp) || refused_topics.contains(tp.topic.as_str()) || floor >= p {
            continue;
        }
        report.violations.push(Violation {
            message: format!(
                "{tp}: the WAL checkpoint's offset (retention's floor) is {floor} at the end \
                 (t={}ms), below the persisted HWM {p} a sample read at t={}ms, though the \
                 WAL was quiet from t={quiet_from}ms for its bound",
                end.at_ms,
                facts.at_ms(sample)
            ),
            records: vec![RecordRef::new(tp, Some(floor), None)],
            events: vec![sample],
        });
    }
    for (tp, (listed, segments)) in layouts {
        let Some(&Retention {
            retention_ms,
            reaper_ms,
        }) = retention.get(tp.topic.as_str())
        else {
            continue;
        };
        if excluded.contains(tp) || refused_topics.contains(tp.topic.as_str()) {
            continue;
        }
        // The lowest segment, sealed by the next; the reaper deletes from the front.
        let [lowest, _, ..] = segments else {
            continue;
        };
        let Some(committed_ms) = lowest.last_committed_ms.filter(|_| !lowest.damaged) else {
            continue;
        };
        report.sealed += 1;
        let floor = floors.iter().find(|(t, _)| t == tp).map(|(_, o)| *o);
        let shown = hwms
            .get(tp)
            .and_then(|s| s.iter().find(|(_, hwm)| *hwm >= lowest.end));
        // `L(t) = wall_base + t - steps` reaches `committed + retention` at `aged_ms`.
        let aged_ms = committed_ms
            .saturating_add(retention_ms)
            .saturating_add(stepped_back_ms)
            .saturating_sub(wall_base_ms);
        let (Some(floor), Some(&(shown_ms, hwm))) = (floor.filter(|f| *f >= lowest.end), shown)
        else {
            report.not_due += 1;
            continue;
        };
        let due_ms = floor_from.max(aged_ms).max(shown_ms);
        let deadline_ms = due_ms.saturating_add(bound_ms(reaper_ms, latency_ms));
        if end.at_ms < deadline_ms {
            report.not_due += 1;
            continue;
        }
        report.violations.push(Violation {
            message: format!(
                "{tp}: sealed segment {} ([{}, {})) still listed at the end (t={}ms): its \
                 last record, committed at {committed_ms} ms, aged {retention_ms} ms by \
                 t={aged_ms}ms; it lies below the HWM {hwm} shown at t={shown_ms}ms and \
                 the WAL checkpoint's floor {floor}, settled by t={floor_from}ms (the \
                 WAL's quiet end and wal_progress's bound); the reaper, every \
                 {reaper_ms} ms, had until t={deadline_ms}ms",
                lowest.base, lowest.base, lowest.end, end.at_ms
            ),
            records: vec![RecordRef::new(tp, Some(lowest.base), None)],
            events: vec![listed],
        });
    }
    report
}
