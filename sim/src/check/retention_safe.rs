//! `retention_safe`: the reaper deletes only sealed segments whose last write is older
//! than the topic's `retention_ms` by the clock the engine may read at the deletion, and
//! the log start moves only to segment boundaries.
//!
//! The world records every segment file the engine creates, every unlink when it took
//! effect, and at each restart the segment files the crash left durable
//! (`SegmentCreated`, `SegmentDeleted`, `SegmentsListed`): what happened to the disk,
//! not what the engine says. The engine says when a sweep takes segments out of the log
//! (`log_start_moved`): readers forget their records from then on, and the unlinks
//! follow, or, the sweep dropped or failed part-way, a later sweep's. Each live segment
//! below the new log start is reaped at that move. An unlink before the partition's
//! open in that incarnation finished (no `log_opened` yet) is recovery's (a cut
//! removing segments past a truncation); any other is the reaper's, and is judged:
//!
//! 1. **Sealed.** A segment with a higher base existed (was created and not unlinked)
//!    when it was moved out: the active segment is the highest. Its records are
//!    `[base, end)`, `end` the lowest such base.
//! 2. **Aged.** The commit time of the last record the file held at the unlink (its
//!    last write, decoded by the reference decoder), and every commit time observed for
//!    an offset in `[base, end)` since the segment was created (deliveries, and for an
//!    acknowledged record the wall clock at its attempt, less steps back since: a lower
//!    bound on its commit), and every copy damage at rest named in the file since
//!    (`DamageHeld`: the decode at the unlink stops at the damage), `c`, has
//!    `c + retention_ms <= U(t)` at the move
//!    ([`super::engine_clock`]). A topic without retention deletes nothing.
//! 3. **Boundaries.** Every log start the engine reports (samples, its open's
//!    account, its moves) is 0 or the base of a segment created before (histories that
//!    record no segment file of the partition are not judged by this rule).
//! 4. **Announced.** The reaper unlinks only segments a move in the same incarnation
//!    took out of the log: otherwise readers served records whose file was gone.
//!
//! Rules 5-7, on the engine's account of its log start, are in `retention_moves.rs`.
//!
//! 8. **A refusal changes nothing.** An open that refused a partition (R3: valid frames
//!    follow damage below the persisted HWM; the world's `PartitionRefused`, or the
//!    engine's `refused` alarm) only read it before deciding, and the store never
//!    touches it after, so no recovery and no reaper ran on it: a write, truncation,
//!    creation, unlink or rename under its directory by that incarnation destroyed what
//!    the refusal kept for the operator (helper-104 F3: an unlink counted as recovery's,
//!    and its records' WAL re-commits passed as excused duplicates; helper-112: a
//!    truncation, or an unlinked `hwm`, passed). The world records the first such
//!    change (`RefusedPartitionChanged`), and so in an incarnation whose open had to
//!    refuse (R3 in the restart's view, no fault since) and was killed or failed
//!    before it did (helper-114 H1); and likewise under a topic refused whole (its
//!    `topic.conf` unreadable: `RefusedTopicChanged` for the topic's own files,
//!    helper-114 M1).
//!
//! Reaps ([`super::reaped::Reaped`]) are what `no_lost_ack`'s `retention` row
//! excuses: an acknowledged record is forgiven for vanishing only if a segment the
//! reaper moved out after its ack held a copy of it (at its acknowledged offset, or a
//! WAL re-commit elsewhere; the world's decode of the file at the unlink) below the HWM
//! the engine had shown in that incarnation, and no restart found the file again. No
//! excuse applies here: retention is the engine's own act, and no fault makes it
//! delete.

use std::collections::BTreeMap;

use serde::Serialize;

use super::engine_clock::{ClockBound, SLACK_MS};
use super::facts::Facts;
use super::retention_moves::MoveRules;
use super::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetentionReport {
    /// Segments the reaper deleted, each judged.
    pub reaped: u64,
    /// Of those, the ones with a commit time seen to age.
    pub aged_checked: u64,
    /// Log starts checked against segment bases.
    pub log_starts: u64,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> RetentionReport {
    let mut report = RetentionReport::default();
    let events = facts.history.events();
    let mut retention: BTreeMap<String, Option<u64>> = BTreeMap::new();
    let mut bound: Option<ClockBound> = None;
    let mut reaped = facts.reaped.iter().peekable();
    // Per partition: offset -> latest commit time seen, and each base's latest creation.
    let mut commits: BTreeMap<TopicPartition, BTreeMap<Offset, (u64, usize)>> = BTreeMap::new();
    let mut created: BTreeMap<TopicPartition, BTreeMap<Offset, usize>> = BTreeMap::new();
    // Per (partition, segment base): the copies damage at rest named in that file (its
    // `DamageHeld`), as (offset, commit time, index): the decode at the unlink may not
    // reach them, and the reaper ages the file by its last record all the same.
    let mut damaged: BTreeMap<(&TopicPartition, Offset), Vec<NamedCopy>> = BTreeMap::new();
    let mut moves = MoveRules::default();
    for (index, event) in events.iter().enumerate() {
        moves.observe(&mut report, index, event);
        if let EventKind::RunStarted {
            wall_base_ms,
            topics,
            ..
        } = &event.kind
        {
            retention = topics
                .iter()
                .map(|t| (t.name.clone(), t.retention_ms))
                .collect();
            bound = Some(ClockBound::new(*wall_base_ms));
            continue;
        }
        if let Some(b) = bound.as_mut() {
            b.observe(event);
        }
        match &event.kind {
            // An acknowledged record the consumers never read: its commit came after
            // its attempt, by a clock never below the wall clock.
            EventKind::ProduceAck {
                id,
                tp,
                offset: Some(offset),
                committed_at_ms: None,
            } => {
                if let Some(least) = bound.as_ref().and_then(|b| b.least_commit(*id)) {
                    commits
                        .entry(tp.clone())
                        .or_default()
                        .insert(*offset, (least, index));
                }
            }
            EventKind::SegmentCreated { tp, base } => {
                created.entry(tp.clone()).or_default().insert(*base, index);
            }
            EventKind::DamageHeld {
                fault_index,
                tp,
                held,
            } => {
                if let Some(base) = segment_of(&events[*fault_index]) {
                    damaged
                        .entry((tp, base))
                        .or_default()
                        .extend(held.iter().map(|c| (c.offset, c.committed_at_ms, index)));
                }
            }
            // What a crash left is what exists; a listed segment keeps its creation.
            EventKind::SegmentsListed { tp, bases } => {
                let c = created.entry(tp.clone()).or_default();
                for base in bases {
                    c.entry(*base).or_insert(index);
                }
            }
            EventKind::Delivery {
                tp,
                offset,
                committed_at_ms,
                ..
            }
            | EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                committed_at_ms: Some(committed_at_ms),
                ..
            } => {
                commits
                    .entry(tp.clone())
                    .or_default()
                    .insert(*offset, (*committed_at_ms, index));
            }
            EventKind::LogStartObserved { tp, log_start }
            | EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogOpened { log_start, .. } | Alarm::LogStartMoved { log_start, .. },
                ..
            } => {
                // A history without the segment files of `tp` (recorded before they
                // were) has no bases to compare with.
                let Some(bases) = created.get(tp) else {
                    continue;
                };
                report.log_starts += 1;
                if *log_start > 0 && !bases.contains_key(log_start) {
                    report.violations.push(Violation {
                        message: format!(
                            "log start of {tp} reported as {log_start} at t={}ms inc {}, \
                             which is no segment's base",
                            event.at_ms, event.incarnation
                        ),
                        records: vec![RecordRef::new(tp, Some(*log_start), None)],
                        events: vec![index],
                    });
                }
            }
            _ => {}
        }
        while let Some(r) = reaped.next_if(|r| r.index == index) {
            report.reaped += 1;
            let retention_ms = retention.get(&r.tp.topic).copied().flatten();
            let born = created
                .get(&r.tp)
                .and_then(|c| c.get(&r.base))
                .copied()
                .unwrap_or(0);
            let violation = |what: String| Violation {
                message: format!(
                    "segment {} of {} deleted by retention at t={}ms inc {} {what}",
                    r.base, r.tp, event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(&r.tp, Some(r.base), None)],
                events: vec![index],
            };
            if r.unannounced {
                report.violations.push(violation(
                    "although no move of the log start took it out of the log".into(),
                ));
            }
            let (Some(end), Some(retention_ms)) = (r.end, retention_ms) else {
                report.violations.push(violation(match retention_ms {
                    None => "although its topic keeps every segment".into(),
                    Some(_) => "while it was the active segment (none above it)".into(),
                }));
                continue;
            };
            // The latest commit seen in the segment since it was created, and the last
            // record the file held: its last write, which the reaper ages by.
            let seen = commits.get(&r.tp).and_then(|c| {
                c.range(r.base..end)
                    .filter(|(_, (_, i))| *i > born)
                    .max_by_key(|(_, (at, _))| *at)
                    .map(|(o, (at, i))| (*o, *at, *i))
            });
            let last_held = r.held.last().map(|c| (c.offset, c.committed_at_ms, index));
            // A copy a cut or clamp at or below it took before the reap no longer ages
            // the file (as the excuse row that names it asks).
            let moved = |o: Offset, since: usize| {
                let between = |i: usize| since < i && i < index;
                facts
                    .alarms
                    .cuts(&r.tp)
                    .any(|c| between(c.index) && c.offset <= o)
                    || facts
                        .alarms
                        .clamps(&r.tp)
                        .any(|c| between(c.index) && c.hwm <= o)
            };
            let named = damaged
                .get(&(&r.tp, r.base))
                .into_iter()
                .flatten()
                .filter(|(o, _, i)| *i > born && (r.base..end).contains(o) && !moved(*o, *i))
                .copied();
            let latest = seen
                .into_iter()
                .chain(last_held)
                .chain(named)
                .max_by_key(|l| l.1);
            let Some((offset, committed, seen)) = latest else {
                continue;
            };
            report.aged_checked += 1;
            let now = bound
                .as_ref()
                .map_or(u64::MAX, |b| b.now_at_most(event.at_ms))
                .saturating_add(SLACK_MS);
            if committed.saturating_add(retention_ms) > now {
                report.violations.push(Violation {
                    events: vec![index, seen],
                    ..violation(format!(
                        "before its record at offset {offset}, committed at {committed}, \
                         was {retention_ms} ms old: the engine's clock reads at most {now}"
                    ))
                });
            }
        }
    }
    refused_changes(facts, &mut report);
    report
}

/// Rule 8: each change the engine made under the directory of a partition or topic its
/// incarnation refused (the world's `RefusedPartitionChanged`, `RefusedTopicChanged`).
fn refused_changes(facts: &Facts<'_>, report: &mut RetentionReport) {
    for (index, event) in facts.history.events().iter().enumerate() {
        let (refused, path, change, changed_ms, records) = match &event.kind {
            EventKind::RefusedPartitionChanged {
                tp,
                path,
                change,
                changed_ms,
            } => {
                let base = crate::reference::partition::segment_base_of_path(path);
                (
                    tp.to_string(),
                    path,
                    change,
                    changed_ms,
                    vec![RecordRef::new(tp, base, None)],
                )
            }
            EventKind::RefusedTopicChanged {
                topic,
                path,
                change,
                changed_ms,
            } => (
                format!("topic {topic}"),
                path,
                change,
                changed_ms,
                Vec::new(),
            ),
            _ => continue,
        };
        report.violations.push(Violation {
            message: format!(
                "{change} of {path} at t={changed_ms}ms inc {}, whose open refused (or had to \
                 refuse) {refused}: a refusal changes nothing on disk (R3)",
                event.incarnation
            ),
            records,
            events: vec![index],
        });
    }
}

/// A copy damage named in a segment file: offset, commit time, the `DamageHeld`'s index.
type NamedCopy = (Offset, u64, usize);

/// The base of the segment file a fault event names, if it names one.
fn segment_of(event: &crate::history::Event) -> Option<Offset> {
    let EventKind::Fault {
        path: Some(path), ..
    } = &event.kind
    else {
        return None;
    };
    crate::reference::partition::segment_base_of_path(path)
}
