//! `wal_progress` (liveness): once faults stop and the WAL stops growing, the WAL
//! checkpoint deletes every segment it covers. The store checkpoints every
//! `checkpoint_interval`, over the entries below each partition's persisted HWM, and
//! deletes every sealed segment all of whose entries it covers; the HWM
//! persister follows the HWM within its interval. So once the last write to the WAL
//! (a produce, or the open's replay) is a persister interval, two checkpoint periods
//! and the slack behind, the page cache lists only the segment the engine writes to
//! (its one word the checker takes: which segment that is).
//!
//! Why it matters though no record is lost without it: a checkpoint that stops moving
//! grows the WAL without bound, replays more at every open, and holds the log's
//! retention floor, so retention stops too (every other checker budgets for what the
//! checkpoint says; none sees it stop).
//!
//! Judged at the end of the history, from the world's listing of the WAL (`WalAtEnd`,
//! the reference decoder's, never the engine's account), when the run has a heal and
//! the running incarnation's store open returned, and from `quiet` on: the latest of
//! the heal, that open's return, and the last produce event of the incarnation.
//! Not judged: an incarnation whose WAL or log was poisoned (a log append fails on a
//! poisoned or closing log, and leaves its entry pending until a replay; also on a
//! full buffer, which the world's 64 MiB `buffer_bytes_max` never reaches), or a
//! run whose quiet end is shorter than the bound (the world's drain waits for it, up
//! to the profile's end). A segment holding an entry of a partition the incarnation's
//! open refused, past that partition's seq in the checkpoint file, is excused: the
//! store keeps such entries for a later replay. So is a segment a fault reached in the
//! last incarnation when that incarnation refused a partition: the open read entries
//! from it, maybe the refused partition's, that the damage may have hidden from the
//! listing. And one empty file past the active segment while a produce was
//! cancelled in the last incarnation: a roll dropped after its create, which the next
//! roll reuses (it is named by the next seq, so there is never a second).
//!
//! The listing is also held to the WAL's size, heal or no heal: the WAL writes a frame
//! only while its active segment is shorter than `wal_segment_bytes`, and rolls
//! otherwise, so no listed segment has a frame starting at or past that size. Excused:
//! a segment a misdirected write hit (its frames may sit where the write was not
//! aimed).

use std::collections::BTreeSet;

use serde::Serialize;

use super::facts::Facts;
use super::hwm_persisted::SLACK_MS;
use super::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, FaultKind, RequestKind, TopicPartition, WalSegmentAtEnd};
use crate::reference::wal::segment_base;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalProgressReport {
    /// Whether the end of the run was judged, and if not, why.
    pub judged: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<&'static str>,
    /// The quiet end of the run, and the bound it had to exceed.
    pub quiet_ms: u64,
    pub bound_ms: u64,
    /// Segments listed at the end, and those kept for a refused partition's entries.
    pub segments: usize,
    pub kept_for_refused: Vec<u64>,
    /// Segments a fault reached in the last incarnation (its open may have read
    /// entries the listing, made after it, cannot).
    pub kept_for_damage: Vec<u64>,
    /// Empty segments past the engine's active one while a produce was cancelled in
    /// the last incarnation (a roll abandoned after its create); at most one.
    pub kept_abandoned_roll: Vec<u64>,
    /// Segments with a frame past the segment size that a misdirected write hit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oversized_misdirected: Vec<u64>,
    pub violations: Vec<Violation>,
}

/// How long the WAL must be quiet before its listing is judged: the longest HWM
/// persister interval `persist_ms` and its slack, two of the store's checkpoint periods
/// and ticks (as the world runs the store), and twice the disk's longest sleep
/// `latency_ms` (an operation begun before the heal may sleep that long twice).
pub fn bound_ms(persist_ms: u64, latency_ms: u64) -> u64 {
    let config = cafelog_engine::store::StoreConfig::default();
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let periods = ms(config.checkpoint_interval).saturating_add(ms(config.tick_interval));
    persist_ms
        .saturating_add(SLACK_MS)
        .saturating_add(periods.saturating_mul(2))
        .saturating_add(latency_ms.saturating_mul(2))
}

pub fn check(facts: &Facts<'_>) -> WalProgressReport {
    let mut report = WalProgressReport::default();
    let not_judged = |mut report: WalProgressReport, why| {
        report.not_judged = Some(why);
        report
    };
    let events = facts.history.events();
    let Some((end, opened_ms, segments, checkpoint, active, segment_bytes)) =
        events.iter().rev().find_map(|e| match &e.kind {
            EventKind::WalAtEnd {
                opened_ms,
                segments,
                checkpoint,
                active,
                segment_bytes,
                ..
            } => Some((e, *opened_ms, segments, checkpoint, *active, *segment_bytes)),
            _ => None,
        })
    else {
        return not_judged(report, "no listing at the end (the store was not open)");
    };
    sizes(events, segments, segment_bytes, &mut report);
    let Some((_, heal_ms)) = facts.heal else {
        return not_judged(report, "no heal");
    };
    let mut persist_ms = 0;
    let mut latency_ms = 0;
    let mut last_write_ms = 0;
    let mut refused: BTreeSet<TopicPartition> = BTreeSet::new();
    let mut refused_topics: BTreeSet<&str> = BTreeSet::new();
    let mut damaged: BTreeSet<u64> = BTreeSet::new();
    let mut produce_cancelled = false;
    for event in events {
        if let EventKind::RunStarted {
            topics,
            io_latency_max_ms,
            ..
        } = &event.kind
        {
            persist_ms = topics
                .iter()
                .map(|t| t.hwm_persist_ms.unwrap_or(u64::MAX))
                .max()
                .unwrap_or(0);
            latency_ms = *io_latency_max_ms;
        }
        if event.incarnation != end.incarnation {
            continue;
        }
        match &event.kind {
            EventKind::ProduceAttempt { .. } | EventKind::ProduceAck { .. } => {
                last_write_ms = event.at_ms;
            }
            EventKind::PartitionPoisoned { .. } => {
                return not_judged(report, "a partition was poisoned in the last incarnation");
            }
            EventKind::EngineAlarm {
                alarm, raised_in, ..
            } if raised_in.is_none() => match alarm {
                Alarm::Poisoned { .. } | Alarm::WalPoisoned => {
                    return not_judged(report, "poisoned in the last incarnation");
                }
                Alarm::TopicRefused { topic } => {
                    refused_topics.insert(topic.as_str());
                }
                _ => {}
            },
            EventKind::Fault {
                kind:
                    FaultKind::Cancel {
                        request: RequestKind::Produce,
                    },
                ..
            } => produce_cancelled = true,
            EventKind::PartitionRefused { tp, .. } => {
                refused.insert(tp.clone());
            }
            // Damage after the open read the segment hides from the listing entries
            // the store still counts.
            EventKind::Fault {
                path: Some(path), ..
            } => {
                if let Some(base) = wal_segment_of(path) {
                    damaged.insert(base);
                }
            }
            _ => {}
        }
    }
    report.bound_ms = bound_ms(persist_ms, latency_ms);
    let quiet_from = heal_ms.max(opened_ms).max(last_write_ms);
    report.quiet_ms = end.at_ms.saturating_sub(quiet_from);
    report.segments = segments.len();
    if report.quiet_ms < report.bound_ms {
        return not_judged(report, "the quiet end of the run is shorter than the bound");
    }
    report.judged = true;
    // The checkpoint's seq for `tp` (0 without a readable checkpoint file).
    let passed = |tp: &TopicPartition| {
        checkpoint
            .iter()
            .flatten()
            .find(|(t, _)| t == tp)
            .map_or(0, |(_, seq)| *seq)
    };
    // An entry of a refused partition the checkpoint has not passed.
    let holds_refused = |s: &WalSegmentAtEnd| {
        s.ends.iter().any(|(tp, end)| {
            (refused.contains(tp) || refused_topics.contains(tp.topic.as_str()))
                && *end > passed(tp)
        })
    };
    for segment in segments {
        // The engine's active segment is never deleted. Past it, an empty file is a
        // roll a cancelled produce abandoned after the create (the next roll reuses it).
        if segment.base == active {
            continue;
        }
        if segment.base > active
            && segment.entries == 0
            && produce_cancelled
            && report.kept_abandoned_roll.is_empty()
        {
            report.kept_abandoned_roll.push(segment.base);
            continue;
        }
        if holds_refused(segment) {
            report.kept_for_refused.push(segment.base);
            continue;
        }
        // Damage hides entries only the refused excuse reads: an open partition's
        // checkpoint passes everything the damage left.
        let any_refused = !refused.is_empty() || !refused_topics.is_empty();
        if any_refused && damaged.contains(&segment.base) {
            report.kept_for_damage.push(segment.base);
            continue;
        }
        report.violations.push(segment_violation(
            events,
            segment,
            format!(
                "WAL segment {} ({} entries) still listed at the end, {} ms after the \
                 last write to the WAL (the heal, the open's return or a produce), past \
                 the bound of {} ms",
                segment.base, segment.entries, report.quiet_ms, report.bound_ms
            ),
        ));
    }
    report
}

/// The size rule: no listed segment has a frame starting at or past `segment_bytes`,
/// unless a misdirected write hit that segment's file.
fn sizes(
    events: &[crate::history::Event],
    segments: &[WalSegmentAtEnd],
    segment_bytes: u64,
    report: &mut WalProgressReport,
) {
    let misdirected: BTreeSet<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault {
                kind: FaultKind::Misdirected { .. },
                path: Some(path),
                ..
            } => wal_segment_of(path),
            _ => None,
        })
        .collect();
    for segment in segments {
        let Some(at) = segment.last_frame_at.filter(|&at| at >= segment_bytes) else {
            continue;
        };
        if misdirected.contains(&segment.base) {
            report.oversized_misdirected.push(segment.base);
            continue;
        }
        report.violations.push(segment_violation(
            events,
            segment,
            format!(
                "WAL segment {} has a frame at byte {at}, at or past the segment size of \
                 {segment_bytes} bytes: the WAL wrote to a full segment instead of rolling",
                segment.base
            ),
        ));
    }
}

/// A violation naming `segment`'s partitions, at the end of the history.
fn segment_violation(
    events: &[crate::history::Event],
    segment: &WalSegmentAtEnd,
    message: String,
) -> Violation {
    Violation {
        records: segment
            .ends
            .iter()
            .map(|(tp, _)| RecordRef::new(tp, None, None))
            .collect(),
        events: vec![events.len() - 1],
        message,
    }
}

/// The base of the WAL segment file at `path` (`None`: not a WAL segment).
fn wal_segment_of(path: &str) -> Option<u64> {
    let path = std::path::Path::new(path);
    let in_wal = path.parent().is_some_and(|d| d.ends_with("wal"));
    let name = path.file_name()?.to_string_lossy();
    in_wal.then(|| segment_base(&name)).flatten()
}
