//! `poison_acks_nothing`: once a partition is poisoned (fsync failed) it acknowledges
//! nothing and its HWM does not advance for the rest of that incarnation. Linux marks
//! pages clean after a failed fsync, so nothing written before it can be trusted; only
//! a restart (a fresh open and recovery) may clear the poison.

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{EventKind, Incarnation, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoisonReport {
    /// (partition, index of PartitionPoisoned) for each poisoning.
    pub poisonings: Vec<(TopicPartition, usize)>,
    pub violations: Vec<Violation>,
}

struct Poisoned {
    index: usize,
    incarnation: Incarnation,
    /// HWM last observed before the poison in that incarnation.
    hwm: Option<Offset>,
}

pub fn check(facts: &Facts<'_>) -> PoisonReport {
    let mut report = PoisonReport::default();
    let mut poisoned: BTreeMap<TopicPartition, Poisoned> = BTreeMap::new();
    let mut last_hwm: BTreeMap<TopicPartition, (Incarnation, Offset)> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let inc = event.incarnation;
        match &event.kind {
            EventKind::PartitionPoisoned { tp } => {
                report.poisonings.push((tp.clone(), index));
                let hwm = last_hwm
                    .get(tp)
                    .filter(|(i, _)| *i == inc)
                    .map(|(_, hwm)| *hwm);
                poisoned.entry(tp.clone()).or_insert(Poisoned {
                    index,
                    incarnation: inc,
                    hwm,
                });
            }
            EventKind::Restart => poisoned.clear(),
            EventKind::ProduceAck { id, tp, offset, .. } => {
                if let Some(p) = poisoned.get(tp).filter(|p| p.incarnation == inc) {
                    let at = offset.map_or_else(String::new, |o| format!(" at offset {o}"));
                    report.violations.push(Violation {
                        message: format!(
                            "{tp} acknowledged produce id {id}{at} at t={}ms after it was \
                             poisoned at t={}ms in incarnation {inc}",
                            event.at_ms,
                            facts.at_ms(p.index)
                        ),
                        records: vec![RecordRef::new(tp, *offset, Some(*id))],
                        events: vec![p.index, index],
                    });
                }
            }
            EventKind::HwmObserved { tp, hwm, .. } => {
                if let Some(p) = poisoned.get_mut(tp).filter(|p| p.incarnation == inc) {
                    match p.hwm {
                        Some(before) if *hwm > before => {
                            report.violations.push(Violation {
                                message: format!(
                                    "HWM of {tp} advanced from {before} to {hwm} at t={}ms \
                                     after it was poisoned at t={}ms in incarnation {inc}",
                                    event.at_ms,
                                    facts.at_ms(p.index)
                                ),
                                records: vec![RecordRef::new(tp, Some(before), None)],
                                events: vec![p.index, index],
                            });
                        }
                        Some(_) => {}
                        // No HWM seen before the poison: the first one after is the
                        // baseline.
                        None => p.hwm = Some(*hwm),
                    }
                }
                last_hwm.insert(tp.clone(), (inc, *hwm));
            }
            _ => {}
        }
    }
    report
}
