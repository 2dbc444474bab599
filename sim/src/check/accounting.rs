//! Jepsen-style accounting of a run: what was acknowledged, delivered, lost,
//! duplicated, unexpected or corrupt. The checkers judge these numbers; this module
//! only counts.
//!
//! A delivery counts as delivering produce `id` only when its payload parses to `id`
//! and its key and payload equal, byte for byte, what the `ProduceAttempt` of `id`
//! sent. Anything else is corrupt (or unexpected, if the id was never produced) and
//! delivers nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::facts::Facts;
use crate::history::{
    EventKind, Offset, PayloadError, ProduceId, TopicPartition, parse_payload_id,
};

/// One copy of a produce in the log: a distinct (partition, offset) that delivered it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Copy {
    pub tp: TopicPartition,
    pub offset: Offset,
    /// History index of the first delivery of this copy.
    pub first_delivery: usize,
    /// History indices of every intact delivery of this copy, ascending (the first
    /// included): a copy delivered again later was in the log then.
    #[serde(skip)]
    pub deliveries: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum CorruptReason {
    /// The payload carries no produce id.
    NoId(PayloadError),
    /// The payload differs from the one produced under its id.
    PayloadDiffers,
    /// The key differs from the one produced under the payload's id.
    KeyDiffers,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CorruptDelivery {
    pub index: usize,
    pub tp: TopicPartition,
    pub offset: Offset,
    pub id: Option<ProduceId>,
    pub reason: CorruptReason,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    pub attempted: BTreeSet<ProduceId>,
    pub acknowledged: BTreeSet<ProduceId>,
    /// Distinct produce ids delivered intact at least once.
    pub delivered: BTreeSet<ProduceId>,
    /// History index of the first intact delivery of each delivered id.
    pub first_delivery: BTreeMap<ProduceId, usize>,
    /// Acknowledged but never delivered intact (excuses are the checker's business).
    pub lost: BTreeSet<ProduceId>,
    /// Produce ids delivered from more than one offset, with every copy.
    pub duplicated: BTreeMap<ProduceId, Vec<Copy>>,
    /// Well-formed ids that no ProduceAttempt ever used: history index of each delivery.
    pub unexpected: BTreeMap<ProduceId, Vec<usize>>,
    pub corrupt: Vec<CorruptDelivery>,
    /// Per partition: records the engine's clamp and skip alarms gave up.
    pub recorded_loss: BTreeMap<TopicPartition, u64>,
}

/// The headline numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AccountingCounts {
    pub acknowledged: u64,
    pub delivered: u64,
    pub lost: u64,
    /// Extra copies: for each duplicated id, copies minus one.
    pub duplicated: u64,
    pub unexpected: u64,
    pub corrupt: u64,
    pub recorded_loss: u64,
}

impl Accounting {
    pub fn compute(facts: &Facts<'_>) -> Self {
        let events = facts.history.events();
        let mut accounting = Accounting::default();
        // Per id and copy, its intact deliveries (a redelivery allocates, a first
        // delivery does not).
        let mut copies: BTreeMap<ProduceId, BTreeMap<(TopicPartition, Offset), Vec<usize>>> =
            BTreeMap::new();
        for (index, event) in events.iter().enumerate() {
            match &event.kind {
                EventKind::ProduceAttempt { id, .. } => {
                    accounting.attempted.insert(*id);
                }
                EventKind::ProduceAck { id, .. } => {
                    accounting.acknowledged.insert(*id);
                }
                EventKind::Delivery {
                    tp,
                    offset,
                    key,
                    payload,
                    ..
                } => {
                    let corrupt = |id, reason| CorruptDelivery {
                        index,
                        tp: tp.clone(),
                        offset: *offset,
                        id,
                        reason,
                    };
                    let id = match parse_payload_id(payload) {
                        Ok(id) => id,
                        Err(e) => {
                            accounting
                                .corrupt
                                .push(corrupt(None, CorruptReason::NoId(e)));
                            continue;
                        }
                    };
                    let Some(attempt) = facts.attempts.get(&id) else {
                        accounting.unexpected.entry(id).or_default().push(index);
                        continue;
                    };
                    let EventKind::ProduceAttempt {
                        key: sent_key,
                        payload: sent_payload,
                        ..
                    } = &events[*attempt].kind
                    else {
                        unreachable!("attempts index ProduceAttempt events");
                    };
                    if payload != sent_payload {
                        accounting
                            .corrupt
                            .push(corrupt(Some(id), CorruptReason::PayloadDiffers));
                    } else if key != sent_key {
                        accounting
                            .corrupt
                            .push(corrupt(Some(id), CorruptReason::KeyDiffers));
                    } else {
                        accounting.delivered.insert(id);
                        accounting.first_delivery.entry(id).or_insert(index);
                        copies
                            .entry(id)
                            .or_default()
                            .entry((tp.clone(), *offset))
                            .or_default()
                            .push(index);
                    }
                }
                _ => {}
            }
        }
        accounting.lost = accounting
            .acknowledged
            .difference(&accounting.delivered)
            .copied()
            .collect();
        for (id, per_copy) in copies {
            if per_copy.len() > 1 {
                let list = per_copy
                    .into_iter()
                    .map(|((tp, offset), deliveries)| Copy {
                        tp,
                        offset,
                        first_delivery: deliveries[0],
                        deliveries,
                    })
                    .collect();
                accounting.duplicated.insert(id, list);
            }
        }
        // What the engine recorded giving up: clamps and consume-time skips, by its
        // own alarms.
        for tp in facts.alarms.by_tp.keys() {
            let clamped = facts
                .alarms
                .clamps(tp)
                .map(|c| c.lost)
                .fold(0, u64::saturating_add);
            let skipped = facts
                .alarms
                .skips(tp)
                .map(|s| s.records)
                .fold(0, u64::saturating_add);
            if clamped.saturating_add(skipped) > 0 {
                accounting
                    .recorded_loss
                    .insert(tp.clone(), clamped.saturating_add(skipped));
            }
        }
        accounting
    }

    pub fn counts(&self) -> AccountingCounts {
        let len = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        AccountingCounts {
            acknowledged: len(self.acknowledged.len()),
            delivered: len(self.delivered.len()),
            lost: len(self.lost.len()),
            duplicated: self
                .duplicated
                .values()
                .map(|copies| len(copies.len() - 1))
                .sum(),
            unexpected: len(self.unexpected.len()),
            corrupt: len(self.corrupt.len()),
            recorded_loss: self
                .recorded_loss
                .values()
                .copied()
                .fold(0, u64::saturating_add),
        }
    }
}

impl std::fmt::Display for AccountingCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "acknowledged={} delivered={} lost={} duplicated={} unexpected={} corrupt={} \
             recorded_loss={}",
            self.acknowledged,
            self.delivered,
            self.lost,
            self.duplicated,
            self.unexpected,
            self.corrupt,
            self.recorded_loss
        )
    }
}
