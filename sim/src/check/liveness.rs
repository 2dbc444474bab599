//! `delivered_after_heal`: once faults stop, every acknowledged record is delivered
//! within a bounded simulated time. The deadline of a record acked at `a` is
//! `max(heal, a) + delivery_bound_ms`; a delivery before the heal counts.
//!
//! Not a hang: a refused partition (reported as refused), loss that `no_lost_ack`
//! excused (reported as excused), and records whose deadline lies past the end of the
//! history (reported as inconclusive: the world stopped too early to judge).

use std::collections::BTreeMap;

use serde::Serialize;

use super::excuse::ExcuseKind;
use super::facts::Facts;
use super::loss::LossReport;
use super::{Accounting, CheckConfig, RecordRef, Violation, list};
use crate::history::{EventKind, Offset, ProduceId, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LivenessReport {
    pub heal_at_ms: Option<u64>,
    pub delivery_bound_ms: u64,
    /// Acknowledged records judged (0 without a heal).
    pub checked: usize,
    /// Refused partitions and the acknowledged ids stuck on them.
    pub refused: BTreeMap<TopicPartition, Vec<ProduceId>>,
    /// Ids never delivered whose loss `no_lost_ack` excused.
    pub excused: Vec<ProduceId>,
    /// Ids not delivered whose deadline is past the end of the history.
    pub inconclusive: Vec<ProduceId>,
    pub violations: Vec<Violation>,
}

struct Late {
    id: ProduceId,
    offset: Option<Offset>,
    ack_index: usize,
    deadline_ms: u64,
    delivered_ms: Option<u64>,
}

pub fn check(
    facts: &Facts<'_>,
    accounting: &Accounting,
    loss: &LossReport,
    config: &CheckConfig,
) -> LivenessReport {
    let mut report = LivenessReport {
        delivery_bound_ms: config.delivery_bound_ms,
        ..LivenessReport::default()
    };
    let Some((heal_index, heal_ms)) = facts.heal else {
        return report;
    };
    report.heal_at_ms = Some(heal_ms);
    let events = facts.history.events();
    let end_ms = facts.history.end_ms();
    let mut late: BTreeMap<TopicPartition, Vec<Late>> = BTreeMap::new();
    for (id, ack_index) in &facts.acks {
        report.checked += 1;
        let EventKind::ProduceAck { tp, offset, .. } = &events[*ack_index].kind else {
            unreachable!("acks index ProduceAck events");
        };
        let deadline_ms = heal_ms.max(facts.at_ms(*ack_index)) + config.delivery_bound_ms;
        let delivered = accounting.first_delivery.get(id).copied();
        if let Some(d) = delivered
            && (d < heal_index || facts.at_ms(d) <= deadline_ms)
        {
            continue;
        }
        // An excuse whose cause came after the deadline came too late: the record was
        // already overdue when whatever excuses its loss happened.
        let excuse = loss
            .excuse_of(*id)
            .filter(|e| e.causes.iter().all(|&c| facts.at_ms(c) <= deadline_ms));
        match excuse {
            Some(e) if e.kind == ExcuseKind::Refused => {
                report.refused.entry(tp.clone()).or_default().push(*id);
                continue;
            }
            Some(_) => {
                report.excused.push(*id);
                continue;
            }
            None => {}
        }
        if delivered.is_none() && end_ms < deadline_ms {
            report.inconclusive.push(*id);
            continue;
        }
        late.entry(tp.clone()).or_default().push(Late {
            id: *id,
            offset: *offset,
            ack_index: *ack_index,
            deadline_ms,
            delivered_ms: delivered.map(|d| facts.at_ms(d)),
        });
    }
    for (tp, records) in late {
        let described: Vec<String> = records
            .iter()
            .map(|l| {
                let offset = l.offset.map_or_else(|| "?".to_owned(), |o| o.to_string());
                let when = l.delivered_ms.map_or_else(
                    || "never delivered".to_owned(),
                    |d| format!("delivered t={d}ms"),
                );
                format!(
                    "id {} at offset {offset} (acked t={}ms, deadline t={}ms, {when})",
                    l.id,
                    facts.at_ms(l.ack_index),
                    l.deadline_ms
                )
            })
            .collect();
        report.violations.push(Violation {
            message: format!(
                "{} acknowledged record(s) on {tp} not delivered within {} ms of the heal at \
                 t={heal_ms}ms (history ends t={end_ms}ms): {}",
                records.len(),
                config.delivery_bound_ms,
                list(&described, 8)
            ),
            records: records
                .iter()
                .map(|l| RecordRef::new(&tp, l.offset, Some(l.id)))
                .collect(),
            events: records
                .iter()
                .map(|l| l.ack_index)
                .chain([heal_index])
                .collect(),
        });
    }
    report
}
