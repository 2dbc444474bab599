//! `retention_safe`: the reaper deletes only sealed segments whose last write is older
//! than the topic's `retention_ms` by the clock the engine may read at the deletion, and
//! the log start moves only to segment boundaries.
//!
//! The world records every segment file the engine creates, every unlink it asks for
//! (before the call), and at each restart the segment files the crash left durable
//! (`SegmentCreated`, `SegmentDeleted`, `SegmentsListed`): what happened to the disk,
//! not what the engine says. An unlink before the partition's open in that incarnation finished
//! (no `log_opened` yet) is recovery's (a cut removing segments past a truncation); any
//! other is the reaper's, and is judged:
//!
//! 1. **Sealed.** A segment with a higher base existed (was created and not unlinked)
//!    when it was deleted: the active segment is the highest. Its records are
//!    `[base, end)`, `end` the lowest such base.
//! 2. **Aged.** The commit time of the last record the file held at the unlink (its
//!    last write, decoded by the reference decoder), and every commit time observed for
//!    an offset in `[base, end)` since the segment was created (deliveries, and for an
//!    acknowledged record the wall clock at its attempt, less steps back since: a lower
//!    bound on its commit), `c`, has `c + retention_ms <= U(t)` at the deletion
//!    ([`super::engine_clock`]). A topic without retention deletes nothing.
//! 3. **Boundaries.** Every log start the engine reports (samples, its open's
//!    account) is 0 or the base of a segment created before (histories that record no
//!    segment file of the partition are not judged by this rule).
//!
//! [`Reaped`] segments are what `no_lost_ack`'s `retention` row excuses: an
//! acknowledged record is forgiven for vanishing only if a segment the reaper deleted
//! after its ack held a copy of it (at its acknowledged offset, or a WAL re-commit
//! elsewhere; the world's decode of the file at the unlink) below the HWM the engine
//! had shown in that incarnation, resting on that deletion. No excuse applies here:
//! retention is the engine's own act, and no fault makes it delete.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::engine_clock::{ClockBound, SLACK_MS};
use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{
    Alarm, EventKind, HeldCopy, History, Incarnation, Offset, ProduceId, TopicPartition,
};

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

/// A segment the reaper deleted: offsets `[base, end)` of `tp`, at history `index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reaped {
    pub tp: TopicPartition,
    pub base: Offset,
    /// `None`: no higher segment existed (the active one was deleted).
    pub end: Option<Offset>,
    pub index: usize,
    /// The records the file held when the engine asked to unlink it.
    pub held: Vec<HeldCopy>,
    /// The highest HWM the engine had shown on `tp` in this incarnation before the
    /// deletion (its open, its samples, and every offset it acknowledged or delivered
    /// lies below the HWM): the records below it were visible to consumers.
    pub shown_hwm: Offset,
}

impl Reaped {
    pub fn contains(&self, offset: Offset) -> bool {
        self.base <= offset && self.end.is_some_and(|e| offset < e)
    }

    /// The offset of a copy of `id` the file held that consumers could have read.
    pub fn visible_copy(&self, id: ProduceId) -> Option<Offset> {
        self.held
            .iter()
            .find(|c| c.id == id && c.offset < self.shown_hwm)
            .map(|c| c.offset)
    }
}

/// Every segment the reaper deleted, in history order.
pub fn reaped(history: &History) -> Vec<Reaped> {
    let mut out = Vec::new();
    let mut live: BTreeMap<TopicPartition, BTreeSet<Offset>> = BTreeMap::new();
    let mut opened: BTreeSet<(TopicPartition, Incarnation)> = BTreeSet::new();
    // Per partition: the incarnation and the highest HWM the engine showed in it.
    let mut shown: BTreeMap<TopicPartition, (Incarnation, Offset)> = BTreeMap::new();
    let mut show = |tp: &TopicPartition, incarnation: Incarnation, hwm: Offset| {
        let s = shown.entry(tp.clone()).or_insert((incarnation, hwm));
        if s.0 != incarnation {
            *s = (incarnation, hwm);
        }
        s.1 = s.1.max(hwm);
        s.1
    };
    for (index, event) in history.events().iter().enumerate() {
        let inc = event.incarnation;
        match &event.kind {
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogOpened { hwm, .. },
                raised_in,
            } => {
                let inc = raised_in.unwrap_or(inc);
                opened.insert((tp.clone(), inc));
                show(tp, inc, *hwm);
            }
            EventKind::HwmObserved { tp, hwm, .. } => {
                show(tp, inc, *hwm);
            }
            EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                ..
            }
            | EventKind::Delivery { tp, offset, .. } => {
                show(tp, inc, offset + 1);
            }
            EventKind::SegmentCreated { tp, base } => {
                live.entry(tp.clone()).or_default().insert(*base);
            }
            EventKind::SegmentsListed { tp, bases } => {
                live.insert(tp.clone(), bases.iter().copied().collect());
            }
            EventKind::SegmentDeleted { tp, base, held } => {
                let bases = live.entry(tp.clone()).or_default();
                bases.remove(base);
                if opened.contains(&(tp.clone(), inc)) {
                    let end = bases.range(base + 1..).next().copied();
                    out.push(Reaped {
                        tp: tp.clone(),
                        base: *base,
                        end,
                        index,
                        held: held.clone(),
                        shown_hwm: show(tp, inc, 0),
                    });
                }
            }
            _ => {}
        }
    }
    out
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
    for (index, event) in events.iter().enumerate() {
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
                alarm: Alarm::LogOpened { log_start, .. },
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
            let latest = seen.into_iter().chain(last_held).max_by_key(|l| l.1);
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
    report
}
