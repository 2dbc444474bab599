//! `stable_offsets`: offsets are a stable, contiguous address space.
//!
//! 1. Once an offset is read (delivered, or assigned by an ack), the record there never
//!    changes: same produce id, key, payload and commit time.
//! 2. A delivered offset does not vanish: at the end of the run it is below the HWM,
//!    below the log start (retention), or in the hidden tail of the last crash, or in
//!    the hidden tail of a crash after the read with damage at rest before its restart
//!    (R2 cut that tail, and the WAL replay, which skips records already visible
//!    below the HWM, may refill fewer offsets than were cut).
//! 3. The in-memory HWM never moves backwards within an incarnation; the first HWM
//!    after a restart is not below the persisted HWM at the crash; the persisted HWM
//!    never decreases; no HWM (in-memory or persisted) exceeds the durable tail.
//! 4. The log start never moves backwards.
//!
//! Excuse rows ([`super::excuse`]): `clamped` (a recorded clamp after the read lets
//! offsets it gave up change or vanish, and the HWM drop by at most the recorded
//! amount), `cut_above_hwm` (an open cut the offset while it lay at or above the
//! persisted HWM it read), `out_of_contract` (a fault whose reach names the offset; for
//! the word rules a fault on a file that can move that word, whose offsets meet the
//! gap the word moved across, in its window: segment or directory faults for an HWM
//! beyond the tail, the `hwm` file for an HWM that fell, the directory for a log start
//! that fell), `refused`, `retention` (below the log start),
//! `last_hidden_tail`. Corrupt deliveries are left to `no_corrupt_delivery`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::contract::{HWM_FILE, LOG_FILES};
use super::excuse::{Excuse, Excuses, GapLasts};
use super::facts::Facts;
use super::{Accounting, RecordRef, Violation, list};
use crate::history::{
    Alarm, EventKind, FileKind, Incarnation, Offset, OffsetRange, ProduceId, TopicPartition,
    parse_payload_id,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExcusedChange {
    pub tp: TopicPartition,
    pub offset: Offset,
    pub index: usize,
    pub excuse: Excuse,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OffsetsReport {
    /// Distinct (partition, offset) pairs delivered.
    pub read_offsets: usize,
    pub excused: Vec<ExcusedChange>,
    pub violations: Vec<Violation>,
}

/// What is known about the record at one offset (key and payload borrowed from the
/// history: a run delivers thousands of records).
#[derive(Clone, Debug)]
struct Known<'h> {
    index: usize,
    id: Option<ProduceId>,
    key: Option<&'h [u8]>,
    payload: Option<&'h [u8]>,
    committed_at_ms: Option<u64>,
}

impl<'h> Known<'h> {
    /// The fields both observations carry that differ.
    fn differences(&self, new: &Known<'h>) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(a), Some(b)) = (self.id, new.id)
            && a != b
        {
            out.push(format!("produce id {a} -> {b}"));
        }
        if let (Some(a), Some(b)) = (self.committed_at_ms, new.committed_at_ms)
            && a != b
        {
            out.push(format!("committed_at_ms {a} -> {b}"));
        }
        if let (Some(a), Some(b)) = (&self.key, &new.key)
            && a != b
        {
            out.push("key differs".to_owned());
        }
        if let (Some(a), Some(b)) = (&self.payload, &new.payload)
            && a != b
            && self.id == new.id
        {
            out.push("payload differs".to_owned());
        }
        out
    }

    fn merge(&mut self, new: Known<'h>) {
        self.id = self.id.or(new.id);
        self.committed_at_ms = self.committed_at_ms.or(new.committed_at_ms);
        if self.key.is_none() {
            self.key = new.key;
        }
        if self.payload.is_none() {
            self.payload = new.payload;
        }
    }
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> OffsetsReport {
    let mut report = OffsetsReport::default();
    let corrupt: BTreeSet<usize> = accounting.corrupt.iter().map(|c| c.index).collect();
    let reads = check_content(facts, &corrupt, &mut report);
    report.read_offsets = reads.values().map(BTreeMap::len).sum();
    check_vanished(facts, &reads, &mut report);
    check_hwm(facts, &mut report);
    check_log_start(facts, &mut report);
    report
}

/// Rule 1. Returns the last delivery index of every read offset.
fn check_content(
    facts: &Facts<'_>,
    corrupt: &BTreeSet<usize>,
    report: &mut OffsetsReport,
) -> BTreeMap<TopicPartition, BTreeMap<Offset, usize>> {
    let mut known: BTreeMap<(&TopicPartition, Offset), Known> = BTreeMap::new();
    let mut reads: BTreeMap<TopicPartition, BTreeMap<Offset, usize>> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let (tp, offset, new, source) = match &event.kind {
            EventKind::Delivery {
                tp,
                offset,
                key,
                payload,
                committed_at_ms,
                ..
            } => {
                if corrupt.contains(&index) {
                    continue;
                }
                match reads.get_mut(tp) {
                    Some(offsets) => offsets.insert(*offset, index),
                    None => reads.entry(tp.clone()).or_default().insert(*offset, index),
                };
                let new = Known {
                    index,
                    id: parse_payload_id(payload).ok(),
                    key: Some(key),
                    payload: Some(payload),
                    committed_at_ms: Some(*committed_at_ms),
                };
                (tp, *offset, new, "delivery")
            }
            EventKind::ProduceAck {
                id,
                tp,
                offset: Some(offset),
                committed_at_ms,
            } => {
                let new = Known {
                    index,
                    id: Some(*id),
                    key: None,
                    payload: None,
                    committed_at_ms: *committed_at_ms,
                };
                (tp, *offset, new, "produce ack")
            }
            _ => continue,
        };
        let slot = (tp, offset);
        let Some(old) = known.get_mut(&slot) else {
            known.insert(slot, new);
            continue;
        };
        let differences = old.differences(&new);
        if differences.is_empty() {
            old.merge(new);
            continue;
        }
        let excuses = Excuses::new(facts);
        let excuse = excuses
            .clamped(tp, offset, old.index, index)
            .or_else(|| excuses.cut_above_hwm(tp, offset, old.index, index))
            .or_else(|| excuses.out_of_contract(tp, Some(offset), None, Some(old.index), index));
        match excuse {
            Some(excuse) => report.excused.push(ExcusedChange {
                tp: tp.clone(),
                offset,
                index,
                excuse,
            }),
            None => report.violations.push(Violation {
                message: format!(
                    "record at {tp} offset {offset} changed: first seen t={}ms inc {}, {source} \
                     at t={}ms inc {} shows {}; no recorded clamp, cut above the HWM or \
                     out-of-contract fault reaching it in between",
                    facts.at_ms(old.index),
                    facts.incarnation_at(old.index),
                    event.at_ms,
                    event.incarnation,
                    differences.join(", ")
                ),
                records: vec![RecordRef::new(tp, Some(offset), new.id.or(old.id))],
                events: vec![old.index, index],
            }),
        }
        *old = new;
    }
    reads
}

/// Rule 2.
fn check_vanished(
    facts: &Facts<'_>,
    reads: &BTreeMap<TopicPartition, BTreeMap<Offset, usize>>,
    report: &mut OffsetsReport,
) {
    let events = facts.history.events();
    let last_incarnation = facts.history.incarnation();
    for (tp, offsets) in reads {
        let mut final_hwm = None;
        let mut log_start = 0;
        for (index, event) in events.iter().enumerate() {
            match &event.kind {
                EventKind::HwmObserved { tp: t, hwm, .. } if t == tp => {
                    final_hwm = Some((*hwm, index, event.incarnation));
                }
                EventKind::LogStartObserved {
                    tp: t,
                    log_start: s,
                } if t == tp => {
                    log_start = log_start.max(*s);
                }
                _ => {}
            }
        }
        let Some((hwm, final_index, incarnation)) = final_hwm else {
            continue;
        };
        // An HWM from an earlier incarnation says nothing about the final state.
        if incarnation != last_incarnation {
            continue;
        }
        let excuses = Excuses::new(facts);
        let mut vanished: Vec<Offset> = Vec::new();
        for (offset, read_index) in offsets.range(hwm.max(log_start)..) {
            let (offset, read_index) = (*offset, *read_index);
            if read_index >= final_index {
                continue;
            }
            let excuse = excuses
                .refused(tp, read_index)
                .or_else(|| excuses.clamped(tp, offset, read_index, final_index))
                .or_else(|| excuses.cut_above_hwm(tp, offset, read_index, final_index))
                .or_else(|| {
                    excuses.out_of_contract(tp, Some(offset), None, Some(read_index), final_index)
                })
                .or_else(|| excuses.last_hidden_tail(tp, offset, read_index, final_index));
            match excuse {
                Some(excuse) => report.excused.push(ExcusedChange {
                    tp: tp.clone(),
                    offset,
                    index: final_index,
                    excuse,
                }),
                None => vanished.push(offset),
            }
        }
        if vanished.is_empty() {
            continue;
        }
        report.violations.push(Violation {
            message: format!(
                "{} read offset(s) of {tp} vanished: offsets {} were delivered but the final \
                 HWM is {hwm} (t={}ms inc {incarnation}), log start {log_start}, and no \
                 refusal, recorded clamp, cut above the HWM, out-of-contract fault or \
                 hidden tail covers them",
                vanished.len(),
                list(&vanished, 8),
                facts.at_ms(final_index),
            ),
            records: vanished
                .iter()
                .map(|o| RecordRef::new(tp, Some(*o), None))
                .collect(),
            events: vanished
                .iter()
                .take(2)
                .map(|o| offsets[o])
                .chain([final_index])
                .collect(),
        });
    }
}

#[derive(Default)]
struct HwmState {
    /// In-memory HWM last seen: (incarnation, value, index).
    memory: Option<(Incarnation, Offset, usize)>,
    /// Persisted HWM last seen: (value, index).
    persisted: Option<(Offset, usize)>,
    /// Persisted HWM at the last crash, until the first HWM after the restart.
    after_crash: Option<(Offset, usize)>,
}

/// Rule 3.
fn check_hwm(facts: &Facts<'_>, report: &mut OffsetsReport) {
    let mut state: BTreeMap<TopicPartition, HwmState> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let inc = event.incarnation;
        let at = event.at_ms;
        match &event.kind {
            EventKind::Crash {
                partitions,
                process,
            } => {
                for p in partitions {
                    let what = format!("at the crash t={at}ms");
                    beyond_tail(
                        facts,
                        report,
                        &p.tp,
                        index,
                        "persisted HWM",
                        (p.persisted_hwm, p.durable_tail),
                        &what,
                        *process,
                    );
                    if let Some(memory) = p.memory_hwm {
                        beyond_tail(
                            facts,
                            report,
                            &p.tp,
                            index,
                            "in-memory HWM",
                            (memory, p.durable_tail),
                            &what,
                            *process,
                        );
                    }
                    let s = state.entry(p.tp.clone()).or_default();
                    persisted_backwards(
                        facts,
                        report,
                        &p.tp,
                        index,
                        s.persisted,
                        p.persisted_hwm,
                        *process,
                    );
                    // After a process crash the word is the page cache's: what the next
                    // open reads, but no claim that the platter holds it.
                    if !process {
                        s.persisted = Some((p.persisted_hwm, index));
                    }
                    s.after_crash = Some((p.persisted_hwm, index));
                }
            }
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm,
                durable_tail,
            } => {
                let what = format!("observed t={at}ms inc {inc}");
                if let Some(tail) = durable_tail {
                    beyond_tail(
                        facts,
                        report,
                        tp,
                        index,
                        "in-memory HWM",
                        (*hwm, *tail),
                        &what,
                        false,
                    );
                    if let Some(persisted) = persisted_hwm {
                        beyond_tail(
                            facts,
                            report,
                            tp,
                            index,
                            "persisted HWM",
                            (*persisted, *tail),
                            &what,
                            false,
                        );
                    }
                }
                let s = state.entry(tp.clone()).or_default();
                match s.memory {
                    Some((seen_inc, seen, seen_index)) if seen_inc == inc && *hwm < seen => {
                        report.violations.push(Violation {
                            message: format!(
                                "HWM of {tp} moved backwards within incarnation {inc}: {seen} at \
                                 t={}ms, then {hwm} at t={at}ms",
                                facts.at_ms(seen_index)
                            ),
                            records: vec![RecordRef::new(tp, Some(*hwm), None)],
                            events: vec![seen_index, index],
                        });
                    }
                    Some((seen_inc, _, _)) if seen_inc == inc => {}
                    _ => {
                        if let Some((persisted, crash_index)) = s.after_crash.take() {
                            below_persisted_after_restart(
                                facts,
                                report,
                                tp,
                                index,
                                *hwm,
                                persisted,
                                crash_index,
                            );
                        }
                    }
                }
                s.memory = Some((inc, *hwm, index));
                if let Some(persisted) = persisted_hwm {
                    persisted_backwards(facts, report, tp, index, s.persisted, *persisted, false);
                    s.persisted = Some((*persisted, index));
                }
            }
            // A recorded clamp is the engine's own account of moving the word back (its
            // cause is judged by `alarms_explained`); the open persists the clamped value.
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::Clamp { hwm, .. },
                ..
            } => {
                state.entry(tp.clone()).or_default().persisted = Some((*hwm, index));
            }
            _ => {}
        }
    }
}

#[expect(clippy::too_many_arguments, reason = "one message, many facts")]
fn beyond_tail(
    facts: &Facts<'_>,
    report: &mut OffsetsReport,
    tp: &TopicPartition,
    index: usize,
    which: &str,
    (hwm, tail): (Offset, Offset),
    when: &str,
    cache: bool,
) {
    if hwm <= tail {
        return;
    }
    // A lost or misdirected frame lowers the tail under an HWM the engine believed, and
    // under the persisted word until a clamp rewrites it; a fault on the `hwm` file
    // also moves the persisted word past the log.
    let (files, lasts): (&[FileKind], GapLasts) = if which.starts_with("persisted") {
        (
            &[
                FileKind::Segment,
                FileKind::Directory,
                FileKind::Other,
                FileKind::Hwm,
            ],
            GapLasts::UntilHwmRewritten,
        )
    } else {
        (LOG_FILES, GapLasts::UntilCrash)
    };
    let gap = OffsetRange {
        start: tail,
        end: hwm,
    };
    if let Some(excuse) = Excuses::new(facts)
        .reading_cache(cache)
        .out_of_contract_gap(tp, files, gap, index, lasts)
    {
        report.excused.push(ExcusedChange {
            tp: tp.clone(),
            offset: hwm,
            index,
            excuse,
        });
        return;
    }
    report.violations.push(Violation {
        message: format!(
            "{which} of {tp} is {hwm}, beyond the durable tail {tail} ({when}): offsets {tail}..{hwm} \
             are visible or promised but not durable"
        ),
        records: vec![RecordRef::new(tp, Some(tail), None)],
        events: vec![index],
    });
}

fn persisted_backwards(
    facts: &Facts<'_>,
    report: &mut OffsetsReport,
    tp: &TopicPartition,
    index: usize,
    previous: Option<(Offset, usize)>,
    now: Offset,
    cache: bool,
) {
    let Some((before, before_index)) = previous else {
        return;
    };
    if now >= before {
        return;
    }
    let drop = before - now;
    let excuses = Excuses::new(facts).reading_cache(cache);
    if let Some(excuse) = excuses
        .clamped_by(tp, drop, before_index, index)
        .or_else(|| {
            excuses.out_of_contract_gap(
                tp,
                HWM_FILE,
                range(now, before),
                index,
                GapLasts::UntilCrash,
            )
        })
    {
        report.excused.push(ExcusedChange {
            tp: tp.clone(),
            offset: now,
            index,
            excuse,
        });
        return;
    }
    report.violations.push(Violation {
        message: format!(
            "persisted HWM of {tp} moved backwards from {before} (t={}ms) to {now} (t={}ms) \
             without a recorded clamp of at least {drop} records",
            facts.at_ms(before_index),
            facts.at_ms(index)
        ),
        records: vec![RecordRef::new(tp, Some(now), None)],
        events: vec![before_index, index],
    });
}

fn below_persisted_after_restart(
    facts: &Facts<'_>,
    report: &mut OffsetsReport,
    tp: &TopicPartition,
    index: usize,
    hwm: Offset,
    persisted: Offset,
    crash_index: usize,
) {
    if hwm >= persisted {
        return;
    }
    let inc = facts.incarnation_at(index);
    let drop = persisted - hwm;
    let excuses = Excuses::new(facts);
    let recorded: u64 = facts
        .alarms
        .clamps(tp)
        .filter(|c| c.incarnation == inc)
        .map(|c| c.lost)
        .fold(0, u64::saturating_add);
    if let Some(excuse) = excuses
        .clamped_by(tp, drop, crash_index, index)
        .or_else(|| excuses.refused(tp, crash_index))
        .or_else(|| {
            excuses.out_of_contract_gap(
                tp,
                HWM_FILE,
                range(hwm, persisted),
                index,
                GapLasts::UntilCrash,
            )
        })
    {
        report.excused.push(ExcusedChange {
            tp: tp.clone(),
            offset: hwm,
            index,
            excuse,
        });
        return;
    }
    report.violations.push(Violation {
        message: format!(
            "HWM of {tp} after the restart into incarnation {inc} is {hwm} (t={}ms), below the \
             persisted HWM {persisted} at the crash (t={}ms); the engine recorded a loss of \
             {recorded} record(s), {drop} needed",
            facts.at_ms(index),
            facts.at_ms(crash_index)
        ),
        records: vec![RecordRef::new(tp, Some(hwm), None)],
        events: vec![crash_index, index],
    });
}

/// Rule 4.
fn check_log_start(facts: &Facts<'_>, report: &mut OffsetsReport) {
    let mut last: BTreeMap<TopicPartition, (Offset, usize)> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let EventKind::LogStartObserved { tp, log_start } = &event.kind else {
            continue;
        };
        if let Some((before, before_index)) = last.get(tp)
            && log_start < before
            && Excuses::new(facts)
                .out_of_contract_gap(
                    tp,
                    DIRECTORY,
                    range(*log_start, *before),
                    index,
                    GapLasts::ThroughNextIncarnation,
                )
                .is_none()
        {
            report.violations.push(Violation {
                message: format!(
                    "log start of {tp} moved backwards from {before} (t={}ms) to {log_start} \
                     (t={}ms): retention only deletes",
                    facts.at_ms(*before_index),
                    event.at_ms
                ),
                records: vec![RecordRef::new(tp, Some(*log_start), None)],
                events: vec![*before_index, index],
            });
        }
        let entry = last.entry(tp.clone()).or_insert((*log_start, index));
        if *log_start >= entry.0 {
            *entry = (*log_start, index);
        }
    }
}

/// A deleted segment comes back only if its unlink was lost: a fault on the directory.
const DIRECTORY: &[FileKind] = &[FileKind::Directory, FileKind::Other];

fn range(start: Offset, end: Offset) -> OffsetRange {
    OffsetRange { start, end }
}
