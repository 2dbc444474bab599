//! `poison_acks_nothing`: once a partition is poisoned (fsync failed) it acknowledges
//! nothing and its HWM does not advance for the rest of that incarnation. Linux marks
//! pages clean after a failed fsync, so nothing written before it can be trusted; only
//! a restart (a fresh open and recovery) may clear the poison.
//!
//! The world reports a poisoning (`PartitionPoisoned`) when its watchdog sees it, up to a
//! period after the engine's alarm, and only until it asks for the restart; a partition
//! poisoned while that restart waits (the supervisor may be aiming a crash) is known by
//! the engine's alarm alone. Such a partition is held from the alarm plus a watchdog
//! period, the same leeway a reported one gets at worst, with the first HWM sampled
//! from then on as its baseline.

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, Incarnation, Offset, TopicPartition};

/// How long the world's watchdog may take to notice a poison (its polling period).
const WATCHDOG_MS: u64 = 100;

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
    let mut unreported = unreported(facts).into_iter().peekable();
    for (index, event) in facts.history.events().iter().enumerate() {
        let inc = event.incarnation;
        while let Some((alarm, tp)) = unreported.next_if(|(alarm, _)| {
            let raised = &facts.history.events()[*alarm];
            raised.incarnation < inc
                || raised.incarnation == inc && raised.at_ms + WATCHDOG_MS <= event.at_ms
        }) {
            if facts.history.events()[alarm].incarnation == inc {
                report.poisonings.push((tp.clone(), alarm));
                poisoned.entry(tp).or_insert(Poisoned {
                    index: alarm,
                    incarnation: inc,
                    hwm: None,
                });
            }
        }
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

/// The engine's poison alarms the world never reported in the same incarnation, in
/// history order: (index of the alarm, partition).
fn unreported(facts: &Facts<'_>) -> Vec<(usize, TopicPartition)> {
    let events = facts.history.events();
    events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match &event.kind {
            // Only the live incarnation's own: a killed one's task can raise after the
            // restart, and holding the new incarnation to it would be wrong.
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::Poisoned { .. },
                raised_in,
            } if raised_in.is_none_or(|i| i == event.incarnation) => Some((index, tp.clone())),
            _ => None,
        })
        .filter(|(index, tp)| {
            let incarnation = events[*index].incarnation;
            !events.iter().any(|e| {
                e.incarnation == incarnation
                    && matches!(&e.kind, EventKind::PartitionPoisoned { tp: t } if t == tp)
            })
        })
        .collect()
}
