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
//!
//! Rules 1 and 2 are here, rules 3 and 4 (the words) in `words.rs`.

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

mod words;

use words::{check_hwm, check_log_start};

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
    // By partition, then offset: one string comparison per partition, not per offset.
    let mut known: BTreeMap<&TopicPartition, BTreeMap<Offset, Known>> = BTreeMap::new();
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
        let offsets = known.entry(tp).or_default();
        let Some(old) = offsets.get_mut(&offset) else {
            offsets.insert(offset, new);
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

fn range(start: Offset, end: Offset) -> OffsetRange {
    OffsetRange { start, end }
}
