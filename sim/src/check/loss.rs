//! `no_lost_ack`: every acknowledged record is delivered intact at least once by the
//! end of the run. A record that never is must be covered by an excuse row
//! ([`super::excuse`]) by identity: its partition refused after its ack, its offset in
//! a range a recorded clamp gave up or in a frame the engine skipped, held by a segment
//! retention deleted (at its offset, or a visible copy of it), in the reach of an
//! out-of-contract fault (at its offset, or a last copy that a word fault stranded:
//! skipped by a moved frontier, or hidden by a moved HWM), or both of its durable
//! copies destroyed at rest. The report
//! names the excuse of every excused record and the events it rests on.

use serde::Serialize;

use super::excuse::{Excuse, Excuses};
use super::facts::{Facts, fault_name};
use super::{Accounting, RecordRef, Violation, list};
use crate::history::{EventKind, Offset, ProduceId, TopicPartition};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExcusedLoss {
    pub id: ProduceId,
    pub tp: TopicPartition,
    pub offset: Option<Offset>,
    pub ack_index: usize,
    pub excuse: Excuse,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LossReport {
    pub acknowledged: usize,
    pub lost: usize,
    pub excused: Vec<ExcusedLoss>,
    pub violations: Vec<Violation>,
}

impl LossReport {
    pub fn excuse_of(&self, id: ProduceId) -> Option<&Excuse> {
        self.excused.iter().find(|e| e.id == id).map(|e| &e.excuse)
    }
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> LossReport {
    let events = facts.history.events();
    let excuses = Excuses::new(facts);
    let mut report = LossReport {
        acknowledged: accounting.acknowledged.len(),
        lost: accounting.lost.len(),
        ..LossReport::default()
    };
    let mut unexcused: BTreeMap<TopicPartition, Vec<(ProduceId, Option<Offset>, usize)>> =
        BTreeMap::new();
    for id in &accounting.lost {
        let ack_index = facts.acks[id];
        let EventKind::ProduceAck { tp, offset, .. } = &events[ack_index].kind else {
            unreachable!("acks index ProduceAck events");
        };
        let excuse = excuses.record_gone(tp, *id, *offset, ack_index);
        match excuse {
            Some(excuse) => report.excused.push(ExcusedLoss {
                id: *id,
                tp: tp.clone(),
                offset: *offset,
                ack_index,
                excuse,
            }),
            None => unexcused
                .entry(tp.clone())
                .or_default()
                .push((*id, *offset, ack_index)),
        }
    }
    for (tp, lost) in unexcused {
        let described: Vec<String> = lost
            .iter()
            .map(|(id, offset, ack_index)| {
                let offset = offset.map_or_else(|| "?".to_owned(), |o| o.to_string());
                format!(
                    "id {id} at offset {offset} (acked t={}ms inc {})",
                    facts.at_ms(*ack_index),
                    facts.incarnation_at(*ack_index)
                )
            })
            .collect();
        // Context for a reader: the faults on this partition whose reach misses them.
        let faults: Vec<String> = facts
            .reaches
            .iter()
            .filter(|r| r.tp.as_ref() == Some(&tp))
            .map(|r| match &events[r.fault_index].kind {
                EventKind::Fault { kind, .. } => format!(
                    "{} at t={}ms{}",
                    fault_name(kind),
                    events[r.fault_index].at_ms,
                    r.offsets
                        .map_or_else(String::new, |o| format!(" reaching {o}"))
                ),
                _ => unreachable!("reaches index Fault events"),
            })
            .collect();
        let message = format!(
            "{} acknowledged record(s) on {tp} never delivered and not excused: {}; no \
             refusal, clamp or skip of the engine's covers them and no out-of-contract fault \
             reaches them{}",
            lost.len(),
            list(&described, 8),
            if faults.is_empty() {
                String::new()
            } else {
                format!(" (faults outside their reach: {})", list(&faults, 4))
            }
        );
        report.violations.push(Violation {
            message,
            records: lost
                .iter()
                .map(|(id, offset, _)| RecordRef::new(&tp, *offset, Some(*id)))
                .collect(),
            events: lost.iter().map(|(_, _, ack_index)| *ack_index).collect(),
        });
    }
    report
}
