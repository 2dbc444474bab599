//! `lease_exclusive`: while a delivery's lease is live, its offset is not delivered
//! again. Leases live in memory, so a crash ends every one: only deliveries of one
//! offset within one incarnation are compared. Between two such deliveries, at `t1`
//! (asked for at `a1`) and `t2`, something must have ended the first lease:
//!
//! - a nack of the offset the engine accepted in between, or
//! - its expiry: the engine leased it no earlier than `a1`, until `a1 + lease_ms` at
//!   the earliest, so a redelivery at `t2 < a1 + lease_ms` came while it was live.
//!
//! An ack the engine accepted in between settles the offset: nothing may deliver it
//! again in that incarnation. Each violation names the first delivery and, when one
//! came in between, the settle that should have ended or kept the lease. A delivery no
//! consumer claimed (`DeliveriesUnclaimed`) is a lease like any other.
//!
//! The engine accepts a settle only of a lease: an ack of an offset leased in this
//! incarnation (live, or back after a nack or its expiry) and not acked since, a nack
//! only of a lease neither acked nor nacked since. An accepted ack or nack of any
//! other offset is a violation: the engine settled a record no receive of this
//! incarnation handed out (a stale ack from before a crash, a double ack). No excuse
//! applies: no fault reaches the engine's memory but a crash. Deliveries without the
//! time they were asked for (histories recorded before it was), or of a topic the run's
//! setup does not name, are judged by the ack rule only.
//!
//! The window starts at the ask, not at the lease: a receive that parked (up to the
//! world's 200 ms) leased later than it asked, so a lease that ends early by less than
//! the park is not seen here.

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{Event, EventKind, Incarnation, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LeaseReport {
    /// Redeliveries of one offset within one incarnation, each checked.
    pub redeliveries: u64,
    /// Of those, the ones a nack explained.
    pub after_nack: u64,
    /// Acks and nacks the engine accepted with no lease to settle.
    pub settles_without_lease: u64,
    pub violations: Vec<Violation>,
}

/// The last delivery of an offset in an incarnation, and what settled it since.
struct Last {
    index: usize,
    asked_at_ms: Option<u64>,
    nacked: bool,
    acked: Option<usize>,
}

impl Last {
    fn leased(index: usize, asked_at_ms: Option<u64>) -> Self {
        Last {
            index,
            asked_at_ms,
            nacked: false,
            acked: None,
        }
    }
}

pub fn check(facts: &Facts<'_>) -> LeaseReport {
    let mut report = LeaseReport::default();
    let mut leases: BTreeMap<String, u64> = BTreeMap::new();
    // Keyed by the history's own partition names: no key is cloned per event.
    let mut last: BTreeMap<(&TopicPartition, Offset), Last> = BTreeMap::new();
    let mut incarnation: Incarnation = 0;
    for (index, event) in facts.history.events().iter().enumerate() {
        if event.incarnation != incarnation {
            incarnation = event.incarnation;
            last.clear();
        }
        match &event.kind {
            EventKind::RunStarted { topics, .. } => {
                leases = topics
                    .iter()
                    .map(|t| (t.name.clone(), t.lease_ms))
                    .collect();
            }
            EventKind::Nack { tp, offset } => {
                let l = last.get_mut(&(tp, *offset));
                let why = match &l {
                    None => Some(String::new()),
                    Some(l) => l
                        .acked
                        .map(|a| format!(" since its ack at t={}ms", facts.at_ms(a)))
                        .or_else(|| l.nacked.then(|| " since its last nack".to_owned())),
                };
                match (l, why) {
                    (Some(l), None) => l.nacked = true,
                    (l, Some(why)) => {
                        let lease = l.as_ref().map(|l| l.index);
                        not_leased(&mut report, facts, index, event, "a nack", lease, &why);
                    }
                    (None, None) => unreachable!("no lease has a reason"),
                }
            }
            EventKind::Ack { tp, offset } => match last.get_mut(&(tp, *offset)) {
                Some(l) if l.acked.is_none() => l.acked = Some(index),
                l => {
                    let lease = l.as_ref().map(|l| l.index);
                    let why = l
                        .and_then(|l| l.acked)
                        .map(|a| format!(" since its ack at t={}ms", facts.at_ms(a)))
                        .unwrap_or_default();
                    not_leased(&mut report, facts, index, event, "an ack", lease, &why);
                }
            },
            EventKind::DeliveriesUnclaimed {
                tp,
                offsets,
                asked_at_ms,
                ..
            } => {
                for &offset in offsets {
                    let lease = Lease::new(tp, offset, index, *asked_at_ms);
                    leased(&mut report, facts, &leases, &mut last, lease, event);
                }
            }
            EventKind::Delivery {
                tp,
                offset,
                asked_at_ms,
                ..
            } => {
                let lease = Lease::new(tp, *offset, index, *asked_at_ms);
                leased(&mut report, facts, &leases, &mut last, lease, event);
            }
            _ => {}
        }
    }
    report
}

/// A lease the engine made: a delivery, or one no consumer claimed.
struct Lease<'h> {
    tp: &'h TopicPartition,
    offset: Offset,
    index: usize,
    asked_at_ms: Option<u64>,
}

impl<'h> Lease<'h> {
    fn new(tp: &'h TopicPartition, offset: Offset, index: usize, asked_at_ms: Option<u64>) -> Self {
        Lease {
            tp,
            offset,
            index,
            asked_at_ms,
        }
    }
}

/// Judges a lease against the offset's last one in the incarnation (ended by a nack or
/// its expiry, never by an ack), then makes it the last.
fn leased<'h>(
    report: &mut LeaseReport,
    facts: &Facts<'_>,
    leases: &BTreeMap<String, u64>,
    last: &mut BTreeMap<(&'h TopicPartition, Offset), Last>,
    lease: Lease<'h>,
    event: &Event,
) {
    let Lease {
        tp,
        offset,
        index,
        asked_at_ms,
    } = lease;
    if let Some(previous) = last.get(&(tp, offset)) {
        report.redeliveries += 1;
        // The expiry rule needs the topic's lease and the ask; the ack rule needs
        // neither.
        let lease_ms = leases.get(&tp.topic).copied();
        let live_until = previous.asked_at_ms.zip(lease_ms).map(|(a, l)| a + l);
        let why = if let Some(ack) = previous.acked {
            Some(format!(
                "after the engine accepted its ack at t={}ms",
                facts.at_ms(ack)
            ))
        } else if previous.nacked {
            report.after_nack += 1;
            None
        } else {
            live_until
                .filter(|&until| event.at_ms < until)
                .map(|until| {
                    format!(
                        "while its lease was live (asked for at t={}ms, leased for {} ms: \
                         until t={until}ms at the earliest), with no nack in between",
                        previous.asked_at_ms.unwrap_or_default(),
                        lease_ms.unwrap_or_default()
                    )
                })
        };
        if let Some(why) = why {
            let what = match event.kind {
                EventKind::DeliveriesUnclaimed { .. } => "leased again (unclaimed)",
                _ => "delivered again",
            };
            report.violations.push(Violation {
                message: format!(
                    "{tp} offset {offset} {what} at t={}ms inc {} {why}; first delivered at \
                     t={}ms",
                    event.at_ms,
                    event.incarnation,
                    facts.at_ms(previous.index)
                ),
                records: vec![RecordRef::new(tp, Some(offset), None)],
                events: vec![previous.index, index],
            });
        }
    }
    last.insert((tp, offset), Last::leased(index, asked_at_ms));
}

/// A settle the engine accepted of an offset with no lease to settle: none in this
/// incarnation (`lease` is `None`), or one `why` says was settled already.
fn not_leased(
    report: &mut LeaseReport,
    facts: &Facts<'_>,
    index: usize,
    event: &Event,
    what: &str,
    lease: Option<usize>,
    why: &str,
) {
    let (EventKind::Ack { tp, offset } | EventKind::Nack { tp, offset }) = &event.kind else {
        unreachable!("only settles are judged here");
    };
    let leased = match lease {
        None => format!("no receive of incarnation {} leased it", event.incarnation),
        Some(l) => format!("its lease from t={}ms was settled{why}", facts.at_ms(l)),
    };
    report.settles_without_lease += 1;
    report.violations.push(Violation {
        message: format!(
            "{tp} offset {offset}: the engine accepted {what} at t={}ms inc {}, but {leased}",
            event.at_ms, event.incarnation
        ),
        records: vec![RecordRef::new(tp, Some(*offset), None)],
        events: lease.into_iter().chain([index]).collect(),
    });
}
