//! `retention_safe`: the reaper deletes only sealed segments whose last write is older
//! than the topic's `retention_ms` by the clock the engine may read at the deletion, and
//! the log start moves only to segment boundaries.
//!
//! The world records every segment file the engine creates, every unlink it asks for
//! (before the call), and at each restart the segment files the crash left durable
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
//!    bound on its commit), `c`, has `c + retention_ms <= U(t)` at the move
//!    ([`super::engine_clock`]). A topic without retention deletes nothing.
//! 3. **Boundaries.** Every log start the engine reports (samples, its open's
//!    account, its moves) is 0 or the base of a segment created before (histories that
//!    record no segment file of the partition are not judged by this rule).
//! 4. **Announced.** The reaper unlinks only segments a move in the same incarnation
//!    took out of the log: otherwise readers served records whose file was gone.
//! 5. **Gone.** A receive asked after a move (in the same incarnation, at a later ms)
//!    returns no offset below its log start: the move says readers forgot them.
//!
//! [`Reaped`] segments are what `no_lost_ack`'s `retention` row excuses: an
//! acknowledged record is forgiven for vanishing only if a segment the reaper moved out
//! and deleted after its ack held a copy of it (at its acknowledged offset, or a WAL
//! re-commit elsewhere; the world's decode of the file at the unlink) below the HWM the
//! engine had shown in that incarnation, resting on that deletion. A move whose unlink
//! a crash prevented forgives nothing: the file is back at the next open. No excuse
//! applies here: retention is the engine's own act, and no fault makes it delete.

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

/// A segment the reaper took out of the log: offsets `[base, end)` of `tp`, forgotten
/// by readers at history `index` (the engine's `log_start_moved`), its file unlinked at
/// `unlinked` if that came in the same incarnation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reaped {
    pub tp: TopicPartition,
    pub base: Offset,
    /// `None`: no higher segment existed (the active one was deleted).
    pub end: Option<Offset>,
    pub index: usize,
    /// The incarnation whose engine moved it out.
    pub incarnation: Incarnation,
    /// The unlink of its file; `None` if a crash came first or the run ended.
    pub unlinked: Option<usize>,
    /// A crash came before the unlink: the file and its records are back at the next
    /// open, and the move took nothing for good.
    pub undone: bool,
    /// The move did not announce it: the engine unlinked a segment it never said it
    /// took out of the log (judged by rule 4).
    pub unannounced: bool,
    /// The records the file held when the engine asked to unlink it.
    pub held: Vec<HeldCopy>,
    /// The highest HWM the engine had shown on `tp` in this incarnation before the
    /// move (its open, its samples, and every offset it acknowledged or delivered lies
    /// below the HWM): the records below it were visible to consumers.
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

/// Every segment the reaper took out of the log, in the order of the moves.
pub fn reaped(history: &History) -> Vec<Reaped> {
    let mut out: Vec<Reaped> = Vec::new();
    let mut live: BTreeMap<TopicPartition, BTreeSet<Offset>> = BTreeMap::new();
    let mut opened: BTreeSet<(TopicPartition, Incarnation)> = BTreeSet::new();
    // Per partition and base: the entry of `out` moved out of the log in this
    // incarnation and not yet unlinked.
    let mut moved: BTreeMap<(TopicPartition, Offset), (Incarnation, usize)> = BTreeMap::new();
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
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogStartMoved { log_start, .. },
                raised_in,
            } => {
                let inc = raised_in.unwrap_or(inc);
                let bases = live.entry(tp.clone()).or_default();
                let shown_hwm = show(tp, inc, 0);
                for &base in bases.range(..*log_start) {
                    let key = (tp.clone(), base);
                    if moved.get(&key).is_some_and(|m| m.0 == inc) {
                        continue;
                    }
                    moved.insert(key, (inc, out.len()));
                    out.push(Reaped {
                        tp: tp.clone(),
                        base,
                        end: bases.range(base + 1..).next().copied(),
                        index,
                        incarnation: inc,
                        unlinked: None,
                        undone: false,
                        unannounced: false,
                        held: Vec::new(),
                        shown_hwm,
                    });
                }
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
                // A second unlink of a file (a dropped sweep's, finished by the next)
                // deletes nothing more.
                if !bases.remove(base) || !opened.contains(&(tp.clone(), inc)) {
                    continue;
                }
                match moved.remove(&(tp.clone(), *base)) {
                    Some((moved_in, i)) if moved_in == inc => {
                        out[i].unlinked = Some(index);
                        out[i].held = held.clone();
                    }
                    _ => out.push(Reaped {
                        tp: tp.clone(),
                        base: *base,
                        end: bases.range(base + 1..).next().copied(),
                        index,
                        incarnation: inc,
                        unlinked: Some(index),
                        undone: false,
                        unannounced: true,
                        held: held.clone(),
                        shown_hwm: show(tp, inc, 0),
                    }),
                }
            }
            _ => {}
        }
    }
    let last = history.events().last().map(|e| e.incarnation);
    for r in out.iter_mut().filter(|r| r.unlinked.is_none()) {
        r.undone = Some(r.incarnation) != last;
    }
    out
}

impl Reaped {
    /// The move took the records for good: its file was unlinked, or no crash undid
    /// it before the run ended.
    pub fn stands(&self) -> bool {
        self.unlinked.is_some() || !self.undone
    }
}

/// Rule 5: records a move took out of the log are not delivered to a later receive.
fn gone(
    report: &mut RetentionReport,
    moved: &mut BTreeMap<TopicPartition, (Incarnation, Offset, u64)>,
    index: usize,
    event: &crate::history::Event,
) {
    match &event.kind {
        EventKind::EngineAlarm {
            tp: Some(tp),
            alarm: Alarm::LogStartMoved { log_start, .. },
            raised_in,
        } => {
            let inc = raised_in.unwrap_or(event.incarnation);
            moved.insert(tp.clone(), (inc, *log_start, event.at_ms));
        }
        EventKind::Delivery {
            tp,
            offset,
            asked_at_ms: Some(asked),
            ..
        } => {
            let Some(&(inc, log_start, at_ms)) = moved.get(tp) else {
                return;
            };
            if inc == event.incarnation && *asked > at_ms && *offset < log_start {
                report.violations.push(Violation {
                    message: format!(
                        "{tp} offset {offset} delivered to a receive asked at t={asked}ms \
                         inc {inc}, after retention moved the log start to {log_start} at \
                         t={at_ms}ms"
                    ),
                    records: vec![RecordRef::new(tp, Some(*offset), None)],
                    events: vec![index],
                });
            }
        }
        _ => {}
    }
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
    // Per partition: the latest move of the log start (incarnation, log start, ms).
    let mut moved: BTreeMap<TopicPartition, (Incarnation, Offset, u64)> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        gone(&mut report, &mut moved, index, event);
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
