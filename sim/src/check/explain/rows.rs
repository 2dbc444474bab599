//! The excuse rows the loss checker tries for a record acknowledged and never
//! delivered ([`crate::check::excuse::Excuses::record_gone`]), each asked again here:
//! the excuse when it applies, and when it does not, either the event it needs and the
//! history lacks, or the events it found with the rule they did not all satisfy. A
//! row that found its events and still said no is where "engine bug or checker bug"
//! is decided: read its rule in `sim/src/check/excuse`.

use super::Subject;
use crate::check::excuse::{Excuse, ExcuseKind, Excuses};
use crate::check::facts::Facts;
use crate::history::{EventKind, FileKind, Offset, ProduceId, TopicPartition};

/// One row, as asked for one record.
pub struct Row {
    pub name: &'static str,
    pub kind: ExcuseKind,
    pub answer: Answer,
}

pub enum Answer {
    Applies(Excuse),
    /// What the history lacks for the row to apply.
    Lacks(String),
    /// The events the row found, which did not meet all of its conditions.
    Rejected(Vec<usize>),
}

/// Every row for the record of `s` acknowledged at history index `ack`.
pub(super) fn rows(facts: &Facts<'_>, s: &Subject, id: ProduceId, ack: usize) -> Vec<Row> {
    let excuses = Excuses::new(facts);
    let tp = &s.tp;
    let o = s.offset;
    let after = |i: &usize| *i > ack;
    let mut rows = vec![
        row(
            "refused",
            ExcuseKind::Refused,
            excuses.refused_record(tp, id, o, ack),
            refusals(facts, tp).into_iter().filter(after).collect(),
            format!("no refusal of {tp} (R3) or of its topic after the ack"),
        ),
        row(
            "retention",
            ExcuseKind::Retention,
            excuses.retention(tp, id, o, ack),
            facts
                .reaped
                .iter()
                .filter(|r| r.tp == *tp && r.index > ack)
                .map(|r| r.index)
                .collect(),
            format!("no segment of {tp} reaped after the ack"),
        ),
        row(
            "out_of_contract",
            ExcuseKind::OutOfContract,
            excuses.out_of_contract(tp, o, Some(id), Some(ack), usize::MAX),
            facts
                .reaches
                .iter()
                .filter(|r| r.tp.as_ref() == Some(tp) || r.ids.contains(&id))
                .map(|r| r.fault_index)
                .collect(),
            format!("no out-of-contract fault on {tp} or on this record's WAL entry"),
        ),
        row(
            "stranded_copy",
            ExcuseKind::OutOfContract,
            excuses.stranded_copy(tp, id, ack),
            facts
                .reaches
                .iter()
                .filter(|r| {
                    r.tp.as_ref() == Some(tp)
                        && matches!(r.file, FileKind::Hwm | FileKind::ConsumerOffset)
                })
                .map(|r| r.fault_index)
                .collect(),
            format!("no out-of-contract fault on {tp}'s hwm or consumer.offset"),
        ),
        row(
            "clamped_copy",
            ExcuseKind::Clamped,
            excuses.clamped_copy(tp, id, o, ack),
            facts
                .alarms
                .clamps(tp)
                .map(|c| c.index)
                .filter(after)
                .collect(),
            format!("no clamp (R4) of {tp} after the ack"),
        ),
    ];
    if let Some(o) = o {
        rows.extend(offset_rows(facts, &excuses, tp, id, o, ack));
    }
    rows
}

/// The rows that need the record's offset.
fn offset_rows(
    facts: &Facts<'_>,
    excuses: &Excuses<'_, '_>,
    tp: &TopicPartition,
    id: ProduceId,
    o: Offset,
    ack: usize,
) -> Vec<Row> {
    let wal: Vec<usize> = facts.wal_damage.get(&id).cloned().unwrap_or_default();
    let held: Vec<usize> = facts
        .history
        .events()
        .iter()
        .enumerate()
        .skip(ack + 1)
        .filter(|(_, e)| match &e.kind {
            EventKind::DamageHeld { tp: t, held, .. } => t == tp && held.iter().any(|c| c.id == id),
            _ => false,
        })
        .map(|(i, _)| i)
        .collect();
    let damage: Vec<usize> = facts
        .segment_damage
        .get(tp)
        .into_iter()
        .flatten()
        .copied()
        .filter(|&d| match &facts.history.events()[d].kind {
            EventKind::Fault { kind, .. } => kind
                .segment_damage()
                .and_then(|(offsets, _)| offsets)
                .is_some_and(|r| r.contains(o)),
            _ => false,
        })
        .collect();
    let both = |log: &[usize], what: &str| {
        if wal.is_empty() {
            Err("no damage destroyed this record's WAL entry".to_owned())
        } else if log.is_empty() {
            Err(format!("its WAL entry was destroyed, but {what}"))
        } else {
            Ok([wal.as_slice(), log].concat())
        }
    };
    let skips: Vec<usize> = facts
        .alarms
        .skips(tp)
        .filter(|s| s.index > ack && s.contains(o))
        .map(|s| s.index)
        .collect();
    vec![
        row(
            "skipped",
            ExcuseKind::Skipped,
            excuses.skipped(
                tp,
                id,
                o,
                ack,
                facts.attempts.get(&id).map_or(ack, |&a| a.min(ack)),
            ),
            skips,
            format!("no frame skipped at consume time over offset {o} after the ack"),
        ),
        row_or(
            "both_copies_damaged",
            ExcuseKind::BothCopiesDamaged,
            excuses.both_copies_damaged(tp, id, o, ack),
            both(
                &damage,
                &format!("no in-contract damage at rest reached offset {o}"),
            ),
        ),
        row_or(
            "both_copies_damaged (a listed copy)",
            ExcuseKind::BothCopiesDamaged,
            excuses.both_copies_damaged_listed(tp, id, o, ack),
            both(&held, "no damage at rest hit a copy the world listed"),
        ),
    ]
}

fn row(
    name: &'static str,
    kind: ExcuseKind,
    applied: Option<Excuse>,
    found: Vec<usize>,
    lacks: String,
) -> Row {
    row_or(
        name,
        kind,
        applied,
        if found.is_empty() {
            Err(lacks)
        } else {
            Ok(found)
        },
    )
}

fn row_or(
    name: &'static str,
    kind: ExcuseKind,
    applied: Option<Excuse>,
    found: Result<Vec<usize>, String>,
) -> Row {
    let answer = match (applied, found) {
        (Some(e), _) => Answer::Applies(e),
        (None, Err(lacks)) => Answer::Lacks(lacks),
        (None, Ok(found)) => Answer::Rejected(found),
    };
    Row { name, kind, answer }
}

/// The history indices of `tp`'s refusals: its own (R3) and its topic's.
fn refusals(facts: &Facts<'_>, tp: &TopicPartition) -> Vec<usize> {
    facts
        .history
        .events()
        .iter()
        .enumerate()
        .filter(|(_, e)| match &e.kind {
            EventKind::PartitionRefused { tp: t, .. } => t == tp,
            EventKind::EngineAlarm {
                alarm: crate::history::Alarm::TopicRefused { topic },
                ..
            } => *topic == tp.topic,
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}
