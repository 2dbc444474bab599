//! Rule 3 of `frontier_durable`: **a running engine never writes its frontier back.**
//! Once an open has come up (its `FrontierObserved` without `loaded`: the word it left
//! in `consumer.offset`), every replace the same incarnation begins writes at least
//! that word and at least every value the incarnation began to write before. The
//! persister writes the loaded frontier, which only rises, capped by the persisted
//! HWM, which only rises and which the open's own clamp put the word under; so a lower
//! value gives back consumption the engine had made durable, and every acknowledged
//! record above it is delivered again after the next crash.
//!
//! Rules 1 and 2 cannot see this: they bound a load by the replaces the engine reported,
//! and a lowered replace is one of them. The open's own clamp (begun before the open's
//! observation) is not judged here, and only its `frontier_clamped` account speaks for it.
//!
//! Excused (row `out_of_contract`) only by an out-of-contract fault on the word's files
//! live when the open or the incarnation's load read the word, whose reach holds the
//! lowered value: the engine then loads what the fault left (a flip can make the word
//! anything) and writes from there. A fault after the load changes nothing the running
//! engine holds. A word the open left that is not a word (recorded as `u64::MAX`; the
//! load resets it) sets no floor, and an absent or empty one reads as 0; the
//! incarnation's replaces are still held to each other.

use std::collections::BTreeMap;

use super::{FrontierDurableReport, WORD_FILES};
use crate::check::excuse::{Excuse, ExcuseKind};
use crate::check::facts::Facts;
use crate::check::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, Incarnation, Offset, TopicPartition};

/// What an incarnation of a partition has promised about its word so far.
struct Floor {
    incarnation: Incarnation,
    /// The index of the open's observation.
    opened: usize,
    /// The index of the incarnation's load (its observation), once there was one.
    loaded_at: Option<usize>,
    /// The lowest value a replace may write, and the event that set it.
    value: Option<(Offset, usize)>,
}

pub(super) fn check(facts: &Facts<'_>, report: &mut FrontierDurableReport) {
    let mut floors: BTreeMap<&TopicPartition, Floor> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        match &event.kind {
            EventKind::FrontierObserved {
                tp,
                frontier,
                loaded: None,
                ..
            } => {
                let value = (*frontier != u64::MAX).then_some((*frontier, index));
                floors.insert(
                    tp,
                    Floor {
                        incarnation: event.incarnation,
                        opened: index,
                        loaded_at: None,
                        value,
                    },
                );
            }
            EventKind::FrontierObserved {
                tp,
                loaded: Some(_),
                ..
            } => {
                if let Some(floor) = floors.get_mut(tp)
                    && floor.incarnation == event.incarnation
                {
                    floor.loaded_at.get_or_insert(index);
                }
            }
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::FrontierPersisting { value },
                raised_in,
            } => {
                let raised = raised_in.unwrap_or(event.incarnation);
                let Some(floor) = floors.get_mut(tp).filter(|f| f.incarnation == raised) else {
                    continue;
                };
                report.replaces_held += 1;
                match floor.value {
                    Some((lowest, set_at)) if *value < lowest => {
                        judge(facts, tp, index, *value, (lowest, set_at), floor, report)
                    }
                    _ => floor.value = Some((*value, index)),
                }
            }
            _ => {}
        }
    }
}

fn judge(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    index: usize,
    value: Offset,
    (lowest, set_at): (Offset, usize),
    floor: &Floor,
    report: &mut FrontierDurableReport,
) {
    let cause = facts
        .reaches_before(tp, index)
        .filter(|r| {
            r.on(WORD_FILES)
                && r.offsets.is_none_or(|o| o.start <= value && value <= o.end)
                && (r.live_at(facts, floor.opened, None)
                    || floor.loaded_at.is_some_and(|j| r.live_at(facts, j, None)))
        })
        .map(|r| r.fault_index)
        .next();
    if let Some(fault) = cause {
        report.excused.push(Excuse::new(
            ExcuseKind::OutOfContract,
            vec![fault],
            format!("{tp} frontier replace {value} below {lowest}"),
        ));
        return;
    }
    let event = &facts.history.events()[index];
    let what = if set_at == floor.opened {
        "the word its open left in consumer.offset"
    } else {
        "a value it began to write earlier in that incarnation"
    };
    report.violations.push(Violation {
        message: format!(
            "{tp}: the engine began to write frontier {value} at t={}ms inc {}, below \
             {lowest}, {what}: it gives back consumption it had made durable",
            event.at_ms, event.incarnation
        ),
        records: vec![RecordRef::new(tp, Some(value), None)],
        events: vec![set_at, index],
    });
}
