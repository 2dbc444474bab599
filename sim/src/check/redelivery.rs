//! `redelivered_after_expiry` (liveness, after the heal): a delivery that no consumer
//! settles comes back, and every delivered record is in the end acked.
//!
//! 1. **Expiry.** A delivery at `t`, at or after the heal, neither acked nor nacked
//!    before it is delivered again in the same incarnation, is delivered again by
//!    `t + lease_ms + redelivery_bound_ms`: the engine leased it no later than `t`, so
//!    the lease ended by `t + lease_ms`, and an expired lease makes it deliverable.
//! 2. **Nack.** A nack the engine accepted at `n` makes the offset deliverable at
//!    once: it is delivered again by `n + redelivery_bound_ms`.
//! 3. **Acked.** Every acknowledged record delivered at all is acked (one copy of it,
//!    by any consumer): one whose last delivery, at `t`, was never acked is delivered
//!    again by `max(heal, t) + delivery_bound_ms` (unless rules 1 and 2 still held
//!    that delivery at the end: they judged it).
//!
//! A delivery the engine made to a consumer that had already given up (the world
//! records it as `DeliveriesUnclaimed`, with the ids it carried) is a lease like any
//! other: rule 1 holds it, and an ack of its offset (a consumer's late ack of a
//! delivery from before a crash, say) settles the record it carried for rule 3.
//!
//! A crash ends every lease (leases live in memory) and with it the obligation; the
//! frontier then brings the record back, which `delivered_after_heal` judges. What
//! else ends one, each by the event that does it: the reaper deleting the segment that
//! holds the offset since the delivery's receive began (retention removes a leased
//! record like any other, and may race the receive that delivers it), a
//! consume-time skip of the frame holding it. Rule 3 also takes the rows that excuse
//! a lost record, for the copy it delivered last (`Excuses::delivered_copy_gone`: all
//! but `retention`'s any-copy row), from that delivery on and only with causes by its
//! deadline: `refused` (an open refused the partition or its topic), `clamped`,
//! `both_copies_damaged`, `out_of_contract` (a fault whose reach covers the record: a
//! flipped `consumer.offset` moving the frontier past it, say), and the rest. Every end
//! and excuse must come by the obligation's deadline: one after it came too late. A
//! deadline past the end of the history is inconclusive, never a failure.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::excuse::{Excuse, Excuses};
use super::facts::Facts;
use super::{CheckConfig, RecordRef, Violation};
use crate::history::{EventKind, Offset, ProduceId, TopicPartition, parse_payload_id};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RedeliveryReport {
    pub redelivery_bound_ms: u64,
    /// Unsettled deliveries after the heal whose redelivery was judged.
    pub after_expiry: u64,
    /// Nacks after the heal whose redelivery was judged.
    pub after_nack: u64,
    /// Obligations ended by a reap or a skip of their offset.
    pub ended_by_engine: u64,
    /// Deadlines past the end of the history.
    pub inconclusive: u64,
    /// Records never acked whose delivered copy an excuse row explains gone (rule 3).
    pub excused: Vec<Excuse>,
    pub violations: Vec<Violation>,
}

/// Why an offset is owed a redelivery, and by when.
#[derive(Clone, Copy)]
struct Owed {
    delivery: usize,
    /// The nack's index when a nack made it owed.
    nack: Option<usize>,
    due_ms: u64,
}

pub fn check(facts: &Facts<'_>, config: &CheckConfig) -> RedeliveryReport {
    let mut report = RedeliveryReport {
        redelivery_bound_ms: config.redelivery_bound_ms,
        ..RedeliveryReport::default()
    };
    let Some((heal_index, heal_ms)) = facts.heal else {
        return report;
    };
    let events = facts.history.events();
    let end_ms = facts.history.end_ms();
    let bound = config.redelivery_bound_ms;
    let mut leases: BTreeMap<String, u64> = BTreeMap::new();
    // Keyed by the history's own partition names: no key is cloned per event.
    let mut owed: BTreeMap<Key<'_>, Owed> = BTreeMap::new();
    // The id each offset's last lease in this incarnation carried (a delivery, or one
    // no consumer claimed: an ack the engine accepts settles the lease, whoever sent it).
    let mut carries: BTreeMap<Key<'_>, ProduceId> = BTreeMap::new();
    let mut acked: BTreeSet<ProduceId> = BTreeSet::new();
    // Per delivered id: its last delivery.
    let mut last: BTreeMap<ProduceId, usize> = BTreeMap::new();
    let mut incarnation = 0;
    let late = |report: &mut RedeliveryReport, key: &Key<'_>, o: Owed, what| {
        let (tp, offset) = key;
        let since = match o.nack {
            Some(n) => format!("nacked at t={}ms", facts.at_ms(n)),
            None => format!(
                "delivered at t={}ms and never settled",
                facts.at_ms(o.delivery)
            ),
        };
        report.violations.push(Violation {
            message: format!(
                "{tp} offset {offset} {since}, {what}: due by t={}ms (lease plus {bound} ms)",
                o.due_ms
            ),
            records: vec![RecordRef::new(tp, Some(*offset), None)],
            events: [Some(o.delivery), o.nack].into_iter().flatten().collect(),
        });
    };
    for (index, event) in events.iter().enumerate() {
        if event.incarnation != incarnation {
            // Leases live in memory: the engine accepts no ack of one from before.
            incarnation = event.incarnation;
            carries.clear();
            owed.clear();
        }
        let after_heal = index >= heal_index;
        match &event.kind {
            EventKind::RunStarted { topics, .. } => {
                leases = topics
                    .iter()
                    .map(|t| (t.name.clone(), t.lease_ms))
                    .collect();
            }
            EventKind::Delivery {
                tp,
                offset,
                payload,
                asked_at_ms,
                ..
            } => {
                let key = (tp, *offset);
                let asked = asked_at_ms.unwrap_or(event.at_ms);
                if let Ok(id) = parse_payload_id(payload) {
                    carries.insert(key, id);
                    last.insert(id, index);
                }
                // The reaper raced this receive: the offset is gone.
                let raced = reaped_since(facts, tp, *offset, asked, index);
                let lease_ms = leases.get(&tp.topic).copied().filter(|_| after_heal);
                leased(
                    &mut report,
                    &mut owed,
                    key,
                    index,
                    event.at_ms,
                    lease_ms,
                    raced,
                    &late,
                );
            }
            // Leased to a consumer that had given up: back after the lease, like a drop.
            EventKind::DeliveriesUnclaimed {
                tp,
                offsets,
                ids,
                asked_at_ms,
            } => {
                let lease_ms = leases.get(&tp.topic).copied().filter(|_| after_heal);
                let asked = asked_at_ms.unwrap_or(event.at_ms);
                for (i, offset) in offsets.iter().enumerate() {
                    let key = (tp, *offset);
                    // A late ack of the lease settles the record it carried.
                    match ids.get(i).copied().flatten() {
                        Some(id) => carries.insert(key, id),
                        None => carries.remove(&key),
                    };
                    let raced = reaped_since(facts, tp, *offset, asked, index);
                    leased(
                        &mut report,
                        &mut owed,
                        key,
                        index,
                        event.at_ms,
                        lease_ms,
                        raced,
                        &late,
                    );
                }
            }
            EventKind::Ack { tp, offset } => {
                let key = (tp, *offset);
                owed.remove(&key);
                if let Some(id) = carries.get(&key) {
                    acked.insert(*id);
                }
            }
            // Every nack the engine accepted after the heal, whichever delivery it
            // settles (one before the heal is untracked by rule 1).
            EventKind::Nack { tp, offset } if after_heal => {
                let key = (tp, *offset);
                report.after_nack += 1;
                let delivery = match owed.remove(&key) {
                    Some(o) => {
                        report.after_expiry = report.after_expiry.saturating_sub(1);
                        o.delivery
                    }
                    None => index,
                };
                owed.insert(
                    key,
                    Owed {
                        delivery,
                        nack: Some(index),
                        due_ms: event.at_ms + bound,
                    },
                );
            }
            // A crash ends every lease; an obligation already past due was late.
            EventKind::Crash { .. } => {
                for (key, o) in std::mem::take(&mut owed) {
                    if o.due_ms < event.at_ms {
                        late(
                            &mut report,
                            &key,
                            o,
                            "not delivered again before the crash".to_owned(),
                        );
                    }
                }
            }
            _ => {}
        }
        // The engine's own ends: a reap of the segment holding the offset, a skip of the
        // frame holding it.
        let ends = |tp: &TopicPartition, offset: Offset| {
            facts
                .reaped
                .iter()
                .any(|r| r.index == index && &r.tp == tp && r.contains(offset))
                || facts
                    .alarms
                    .skips(tp)
                    .any(|s| s.index == index && s.contains(offset))
        };
        let ended: Vec<_> = owed
            .keys()
            .filter(|(tp, offset)| ends(tp, *offset))
            .cloned()
            .collect();
        for key in ended {
            let Some(o) = owed.remove(&key) else { continue };
            if o.due_ms < event.at_ms {
                // Already late when the engine took the offset away.
                let what = format!("taken away by the engine only at t={}ms", event.at_ms);
                late(&mut report, &key, o, what);
            } else {
                report.ended_by_engine += 1;
            }
        }
    }
    // Deliveries rules 1 and 2 still held at the end: judged here, not by rule 3.
    let mut judged = BTreeSet::new();
    for (key, o) in std::mem::take(&mut owed) {
        judged.insert(o.delivery);
        if o.due_ms > end_ms {
            report.inconclusive += 1;
        } else {
            late(&mut report, &key, o, "never delivered again".to_owned());
        }
    }
    // Rule 3: an acknowledged record delivered and never acked.
    let excuses = Excuses::new(facts);
    let mut unacked: BTreeMap<TopicPartition, Vec<(ProduceId, usize)>> = BTreeMap::new();
    for (id, &d) in &last {
        if acked.contains(id) || !facts.acks.contains_key(id) {
            continue;
        }
        let EventKind::Delivery { tp, offset, .. } = &events[d].kind else {
            unreachable!("last indexes deliveries");
        };
        if judged.contains(&d) {
            continue;
        }
        let due = heal_ms.max(facts.at_ms(d)) + config.delivery_bound_ms;
        let EventKind::Delivery { asked_at_ms, .. } = &events[d].kind else {
            unreachable!("last indexes deliveries");
        };
        let asked = asked_at_ms.unwrap_or(facts.at_ms(d));
        // The engine took the delivered copy away by the deadline: a reap of the file
        // that held it (in the delivery's incarnation, or the world's decode at the
        // unlink names it there) that no restart undid by then, or a skip of its frame
        // while the offset still held it (no crash since left it at or past the durable
        // tail, where the next open commits another record; a hidden tail keeps its
        // records where they are).
        let kept_since = |i: usize| {
            facts
                .crashes
                .iter()
                .filter(|c| d < c.index && c.index < i)
                .all(|c| {
                    c.partitions
                        .get(tp)
                        .is_some_and(|p| *offset < p.durable_tail)
                })
        };
        // Still the delivered record at `i`: every crash since kept the offset below its
        // durable tail, every open since kept a tail above it, and none cut or
        // clamped at or below it (damage below it can hide it from the world's decode
        // at an unlink, not move it).
        let still_held_at = |i: usize| {
            kept_since(i)
                && facts.alarms.of(tp).iter().all(|a| match a.alarm {
                    crate::history::Alarm::LogOpened { tail, .. } => {
                        !(d < a.index && a.index < i) || *offset < tail
                    }
                    _ => true,
                })
                && !facts
                    .alarms
                    .cuts(tp)
                    .any(|c| d < c.index && c.index < i && c.offset <= *offset)
                && !facts
                    .alarms
                    .clamps(tp)
                    .any(|c| d < c.index && c.index < i && c.hwm <= *offset)
        };
        let ended = facts.reaped.iter().any(|r| {
            &r.tp == tp
                && r.contains(*offset)
                && (events[r.index].incarnation == events[d].incarnation
                    || r.held.iter().any(|c| c.offset == *offset && c.id == *id)
                    || still_held_at(r.index))
                // The world's decode of the file at the unlink names another record at
                // the offset: whatever the engine said, the delivered one was not there.
                && !r.held.iter().any(|c| c.offset == *offset && c.id != *id)
                && (asked..=due).contains(&facts.at_ms(r.index))
                && r.back_at.is_none_or(|b| facts.at_ms(b) > due)
        }) || facts.alarms.skips(tp).any(|s| {
            s.index > d
                && s.contains(*offset)
                && facts.at_ms(s.index) <= due
                && still_held_at(s.index)
        });
        if due > end_ms || ended {
            continue;
        }
        // Whatever would excuse the loss of the delivered copy since, if it came by the
        // deadline: an open that refused the partition or its topic (its records stay on
        // disk, unavailable), a recorded clamp, both copies destroyed at rest, a fault
        // out of contract that reaches the record (a flipped `consumer.offset` moving
        // the frontier past it, say).
        if let Some(e) = excuses
            .delivered_copy_gone(tp, *id, *offset, d)
            .filter(|e| e.causes.iter().all(|&c| facts.at_ms(c) <= due))
        {
            report.excused.push(e);
            continue;
        }
        unacked.entry(tp.clone()).or_default().push((*id, d));
    }
    for (tp, ids) in unacked {
        report.violations.push(Violation {
            message: format!(
                "{} acknowledged record(s) on {tp} delivered but never acked by any consumer: {}",
                ids.len(),
                super::list(
                    &ids.iter()
                        .map(|(id, d)| format!("id {id} (last delivered t={}ms)", facts.at_ms(*d)))
                        .collect::<Vec<_>>(),
                    6
                )
            ),
            records: ids
                .iter()
                .map(|(id, _)| RecordRef::new(&tp, None, Some(*id)))
                .collect(),
            events: ids.iter().map(|(_, d)| *d).collect(),
        });
    }
    report
}

/// Whether the reaper took the segment holding `offset` of `tp` out of the log at or
/// after `from_ms` (the receive's ask: a receive that read before the move can deliver
/// the offset after it) and before history index `before`.
fn reaped_since(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    offset: Offset,
    from_ms: u64,
    before: usize,
) -> bool {
    facts.reaped.iter().any(|r| {
        &r.tp == tp && r.contains(offset) && r.index < before && facts.at_ms(r.index) >= from_ms
    })
}

/// An offset of a partition, the partition borrowed from the history.
type Key<'h> = (&'h TopicPartition, Offset);

/// A lease of `key` began at history `index` (time `at_ms`): the redelivery it owed is
/// judged (late if past due), and, when `lease_ms` is known and `raced` is not, a new
/// one is owed by `at_ms + lease_ms + redelivery_bound_ms`.
#[allow(clippy::too_many_arguments)]
fn leased<'h>(
    report: &mut RedeliveryReport,
    owed: &mut BTreeMap<Key<'h>, Owed>,
    key: Key<'h>,
    index: usize,
    at_ms: u64,
    lease_ms: Option<u64>,
    raced: bool,
    late: &impl Fn(&mut RedeliveryReport, &Key<'h>, Owed, String),
) {
    if let Some(o) = owed.remove(&key)
        && at_ms > o.due_ms
    {
        late(
            report,
            &key,
            o,
            format!("delivered again only at t={at_ms}ms"),
        );
    }
    if raced {
        report.ended_by_engine += 1;
    } else if let Some(lease_ms) = lease_ms {
        report.after_expiry += 1;
        let due_ms = at_ms + lease_ms + report.redelivery_bound_ms;
        owed.insert(
            key,
            Owed {
                delivery: index,
                nack: None,
                due_ms,
            },
        );
    }
}
