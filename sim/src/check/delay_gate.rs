//! `delay_gate`: no record of a topic with `delay_ms > 0` is delivered before its gate
//! opens, `committed_at_ms + delay_ms`, by the clock the engine may read then; and no
//! commit time runs ahead of that clock.
//!
//! The clock the engine may read is bounded by `U(t)` ([`super::engine_clock`]), from
//! the run's timeline alone.
//!
//! 1. Every delivery of a record of a delayed topic, committed at `c`, at `t`:
//!    `c + delay_ms <= U(t)`.
//! 2. Every commit time observed at `t` (a delivery, an ack that reports one):
//!    `c <= U(t)`, the highest clock the engine can have read by then.
//! 3. Every delivered record of produce `id` was committed no earlier than the wall
//!    clock at `id`'s attempt, less the clock's steps back since: the engine's clock
//!    never reads below the wall clock, and the commit came after the attempt.
//!
//! One millisecond of slack on each side (`SLACK_MS`) covers the history's
//! whole-millisecond timestamps. No excuse applies: clock steps are in contract, and no
//! fault reaches the clock.

use std::collections::BTreeMap;

use serde::Serialize;

use super::engine_clock::{ClockBound, SLACK_MS};
use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{EventKind, Offset, TopicPartition, parse_payload_id};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DelayGateReport {
    /// Deliveries of records of delayed topics checked against rule 1.
    pub gated_deliveries: u64,
    /// Commit times checked against rule 2.
    pub commit_times: u64,
    /// Deliveries checked against rule 3.
    pub commit_floors: u64,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> DelayGateReport {
    let mut report = DelayGateReport::default();
    let mut delays: BTreeMap<String, u64> = BTreeMap::new();
    let mut bound: Option<ClockBound> = None;
    for (index, event) in facts.history.events().iter().enumerate() {
        let t = event.at_ms;
        if let EventKind::RunStarted {
            wall_base_ms,
            topics,
            ..
        } = &event.kind
        {
            delays = topics
                .iter()
                .map(|topic| (topic.name.clone(), topic.delay_ms))
                .collect();
            bound = Some(ClockBound::new(*wall_base_ms));
            continue;
        }
        let Some(b) = bound.as_mut() else {
            continue;
        };
        b.observe(event);
        match &event.kind {
            EventKind::Delivery {
                tp,
                offset,
                committed_at_ms,
                payload,
                ..
            } => {
                if let Some(least) = parse_payload_id(payload)
                    .ok()
                    .and_then(|id| b.least_commit(id))
                {
                    report.commit_floors += 1;
                    if committed_at_ms + SLACK_MS < least {
                        report.violations.push(violation(
                            tp,
                            Some(*offset),
                            index,
                            format!(
                                "committed at {committed_at_ms}, behind the wall clock since its \
                                 produce attempt ({least} at least, {} ms less): the engine's \
                                 clock never reads below the wall clock",
                                least - committed_at_ms
                            ),
                        ));
                    }
                }
                let delay = delays.get(&tp.topic).copied().unwrap_or(0);
                if delay > 0 {
                    report.gated_deliveries += 1;
                    let opens = committed_at_ms.saturating_add(delay);
                    let now = b.now_at_most(t) + SLACK_MS;
                    if opens > now {
                        report.violations.push(violation(
                            tp,
                            Some(*offset),
                            index,
                            format!(
                                "delivered at t={t}ms inc {} before its delay gate opened: \
                                 committed at {committed_at_ms} + delay {delay} ms = {opens}, \
                                 but the engine's clock can read at most {now} then ({} ms early)",
                                event.incarnation,
                                opens - now
                            ),
                        ));
                    }
                }
                commit_time(
                    facts,
                    b,
                    &mut report,
                    tp,
                    Some(*offset),
                    *committed_at_ms,
                    index,
                );
            }
            EventKind::ProduceAck {
                tp,
                offset,
                committed_at_ms: Some(c),
                ..
            } => {
                commit_time(facts, b, &mut report, tp, *offset, *c, index);
            }
            _ => {}
        }
    }
    report
}

/// Rule 2 for one observed commit time.
fn commit_time(
    facts: &Facts<'_>,
    b: &ClockBound,
    report: &mut DelayGateReport,
    tp: &TopicPartition,
    offset: Option<Offset>,
    committed_at_ms: u64,
    index: usize,
) {
    report.commit_times += 1;
    let t = facts.at_ms(index);
    let most = b.now_at_most(t) + SLACK_MS;
    if committed_at_ms > most {
        report.violations.push(violation(
            tp,
            offset,
            index,
            format!(
                "committed at {committed_at_ms}, seen at t={t}ms inc {}, ahead of any clock \
                 the engine can have read by then (at most {most}, {} ms less)",
                facts.incarnation_at(index),
                committed_at_ms - most
            ),
        ));
    }
}

fn violation(tp: &TopicPartition, offset: Option<Offset>, index: usize, what: String) -> Violation {
    let at = offset.map_or_else(String::new, |o| format!(" offset {o}"));
    Violation {
        message: format!("{tp}{at}: {what}"),
        records: vec![RecordRef::new(tp, offset, None)],
        events: vec![index],
    }
}
