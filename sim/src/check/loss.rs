//! `no_lost_ack`: every acknowledged record is delivered intact at least once by the
//! end of the run, unless its loss is recorded by the engine, attributable to an
//! out-of-contract fault, or the damage at rest destroyed both of its durable copies
//! (WAL entry and log frame) before an open could use either. The report names the
//! excuse of every excused record.

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::{BothCopies, Facts, fault_name};
use super::{Accounting, RecordRef, Violation, list};
use crate::history::{EventKind, FaultKind, Offset, ProduceId, TopicPartition};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum LossExcuse {
    /// The partition was refused at open.
    Refused {
        refusal_index: usize,
        reason: String,
    },
    /// Counted against the loss the engine recorded on the partition.
    RecordedLoss,
    /// Below the partition's log start: retention deleted it by age before it was
    /// delivered (the spec's reaper does not wait for consumers).
    Retention { log_start: Offset },
    /// Attributable to an out-of-contract fault.
    OutOfContract {
        fault_index: usize,
        fault: FaultKind,
    },
    /// Damage at rest destroyed both durable copies before one open could use either:
    /// the WAL entry (`wal_damage_index`, a `WalEntriesDamaged` event) and the frame in
    /// the log, found gone by the recovery after the crash at `crash_index`. `detail`
    /// says which faults and how.
    BothCopiesDamaged {
        wal_damage_index: usize,
        crash_index: usize,
        detail: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExcusedLoss {
    pub id: ProduceId,
    pub tp: TopicPartition,
    pub offset: Option<Offset>,
    pub ack_index: usize,
    pub excuse: LossExcuse,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LossReport {
    pub acknowledged: usize,
    pub lost: usize,
    pub excused: Vec<ExcusedLoss>,
    /// Per partition: (recorded loss, of it spent on excusing records).
    pub recorded_loss_spent: BTreeMap<TopicPartition, (u64, u64)>,
    pub violations: Vec<Violation>,
}

impl LossReport {
    pub fn excuse_of(&self, id: ProduceId) -> Option<&LossExcuse> {
        self.excused.iter().find(|e| e.id == id).map(|e| &e.excuse)
    }
}

struct Lost {
    id: ProduceId,
    offset: Option<Offset>,
    ack_index: usize,
    fault: Option<usize>,
    both_copies: Option<BothCopies>,
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> LossReport {
    let events = facts.history.events();
    let mut report = LossReport {
        acknowledged: accounting.acknowledged.len(),
        lost: accounting.lost.len(),
        ..LossReport::default()
    };
    let mut per_tp: BTreeMap<TopicPartition, Vec<Lost>> = BTreeMap::new();
    for id in &accounting.lost {
        let ack_index = facts.acks[id];
        let EventKind::ProduceAck { tp, offset, .. } = &events[ack_index].kind else {
            unreachable!("acks index ProduceAck events");
        };
        if let Some((refusal_index, reason)) = facts.refusal(tp) {
            report.excused.push(ExcusedLoss {
                id: *id,
                tp: tp.clone(),
                offset: *offset,
                ack_index,
                excuse: LossExcuse::Refused {
                    refusal_index: *refusal_index,
                    reason: reason.clone(),
                },
            });
            continue;
        }
        per_tp.entry(tp.clone()).or_default().push(Lost {
            id: *id,
            offset: *offset,
            ack_index,
            both_copies: offset.and_then(|o| facts.both_copies_damaged(tp, *id, o, ack_index)),
            // A flip in `hwm` or `consumer.offset` is undetectable and its effect (a
            // frontier or HWM moved past records) lasts until the file is rewritten,
            // across crashes: it excuses loss on its partition wherever it falls.
            fault: facts
                .out_of_contract_window(tp, ack_index)
                .or_else(|| facts.metadata_damage_after(tp, ack_index))
                .or_else(|| {
                    facts
                        .metadata_damage
                        .get(tp)
                        .and_then(|d| d.first().copied())
                }),
        });
    }
    for (tp, mut lost) in per_tp {
        // Spend recorded loss first on records no fault explains, lowest offset first,
        // so that a record is blamed on a fault only when the engine's count runs out.
        lost.sort_by_key(|l| (l.fault.is_some() || l.both_copies.is_some(), l.offset, l.id));
        let budget = facts.recorded_loss_total(&tp);
        let mut spent = 0;
        let mut unexcused = Vec::new();
        let log_start = facts.final_log_start(&tp);
        for l in lost {
            let excuse = if l.offset.is_some_and(|o| o < log_start) {
                LossExcuse::Retention { log_start }
            } else if spent < budget {
                spent += 1;
                LossExcuse::RecordedLoss
            } else if let Some(fault_index) = l.fault {
                let EventKind::Fault { kind, .. } = &events[fault_index].kind else {
                    unreachable!("out_of_contract indexes Fault events");
                };
                LossExcuse::OutOfContract {
                    fault_index,
                    fault: kind.clone(),
                }
            } else if let Some(both) = l.both_copies {
                LossExcuse::BothCopiesDamaged {
                    wal_damage_index: both.wal_damage_index,
                    crash_index: both.crash_index,
                    detail: both.detail,
                }
            } else {
                unexcused.push(l);
                continue;
            };
            report.excused.push(ExcusedLoss {
                id: l.id,
                tp: tp.clone(),
                offset: l.offset,
                ack_index: l.ack_index,
                excuse,
            });
        }
        if budget > 0 {
            report
                .recorded_loss_spent
                .insert(tp.clone(), (budget, spent));
        }
        if unexcused.is_empty() {
            continue;
        }
        let described: Vec<String> = unexcused
            .iter()
            .map(|l| {
                let offset = l.offset.map_or_else(|| "?".to_owned(), |o| o.to_string());
                format!(
                    "id {} at offset {offset} (acked t={}ms inc {})",
                    l.id,
                    facts.at_ms(l.ack_index),
                    facts.incarnation_at(l.ack_index)
                )
            })
            .collect();
        let faults: Vec<String> = facts
            .out_of_contract_on(&tp)
            .into_iter()
            .map(|f| match &events[f].kind {
                EventKind::Fault { kind, .. } => {
                    format!("{} at t={}ms", fault_name(kind), events[f].at_ms)
                }
                _ => unreachable!("out_of_contract indexes Fault events"),
            })
            .collect();
        let message = format!(
            "{} acknowledged record(s) on {tp} never delivered and not excused: {}; \
             recorded loss on {tp} is {budget} (all spent), no refusal, out-of-contract \
             faults covering them: none{}",
            unexcused.len(),
            list(&described, 8),
            if faults.is_empty() {
                String::new()
            } else {
                format!(" (faults outside their window: {})", list(&faults, 4))
            }
        );
        report.violations.push(Violation {
            message,
            records: unexcused
                .iter()
                .map(|l| RecordRef::new(&tp, l.offset, Some(l.id)))
                .collect(),
            events: unexcused.iter().map(|l| l.ack_index).collect(),
        });
    }
    report
}
