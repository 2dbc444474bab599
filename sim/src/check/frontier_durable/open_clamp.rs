//! Rule 4 of `frontier_durable`: **an open changes the word only by its clamp.** The
//! one write an open makes to `consumer.offset` lowers a word above the partition's
//! HWM to that HWM (`clamp_frontiers_to_hwms`, so that the WAL replay's re-commits are
//! not taken as acknowledged), and it says so first (`frontier_clamped`). So the word
//! an open left (its observation) is the word the restart found, or that word clamped:
//! the engine's account names the word it read and the value it wrote, and the value is
//! the HWM it had then (its `log_opened` account, or the end of a `hidden_exposed`
//! raised since). Rules 1-3 cannot see an open that lowers the word further: its
//! replace becomes the durable floor of rule 1, and rule 3 starts at the open.
//!
//! Judged where the world read the word at the restart (every open but the first).
//! Excused (row `out_of_contract`) only by an out-of-contract fault on the word's files
//! injected while the open ran, after the restart's read: the open may have read what
//! it left. A fault before the restart is in the word both read.

use super::{FrontierDurableReport, WORD_FILES};
use crate::check::excuse::{Excuse, ExcuseKind};
use crate::check::facts::Facts;
use crate::check::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, Offset, TopicPartition};

pub(super) fn check(facts: &Facts<'_>, report: &mut FrontierDurableReport) {
    for (index, event) in facts.history.events().iter().enumerate() {
        let EventKind::FrontierObserved {
            tp,
            frontier: left,
            loaded: None,
            found: Some(found),
        } = &event.kind
        else {
            continue;
        };
        report.opens_held += 1;
        let Some(wrong) = judge(facts, tp, index, *found, *left) else {
            continue;
        };
        // A fault the restart's read already saw changed nothing between the two reads.
        let restart = facts.restarts.get(&event.incarnation).copied().unwrap_or(0);
        let cause = facts
            .reaches_before(tp, index)
            .find(|r| r.on(WORD_FILES) && r.fault_index > restart);
        match cause {
            Some(fault) => report.excused.push(Excuse::new(
                ExcuseKind::OutOfContract,
                vec![fault.fault_index],
                format!("{tp} word {found} left as {left} by the open"),
            )),
            None => report.violations.push(Violation {
                message: format!(
                    "{tp}: the open at t={}ms inc {} found consumer.offset at {found} and \
                     left it at {left}: {wrong}",
                    event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(*left), None)],
                events: vec![index],
            }),
        }
    }
}

/// What is wrong with an open that found `found` and left `left`, if anything.
fn judge(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    index: usize,
    found: Offset,
    left: Offset,
) -> Option<String> {
    if left == found {
        return None;
    }
    if left > found {
        return Some("an open only ever lowers the word".into());
    }
    let incarnation = facts.history.events()[index].incarnation;
    let of_open: Vec<_> = facts
        .alarms
        .of(tp)
        .iter()
        .filter(|a| a.incarnation == incarnation && a.index < index)
        .collect();
    let clamp = of_open
        .iter()
        .rposition(|a| matches!(a.alarm, Alarm::FrontierClamped { .. }));
    let Some(at) = clamp else {
        return Some("it lowered the word with no frontier_clamped account".into());
    };
    let Alarm::FrontierClamped { value, clamped } = of_open[at].alarm else {
        unreachable!("found by its kind");
    };
    if value != found || clamped != left {
        return Some(format!(
            "its frontier_clamped account says it read {value} and wrote {clamped}"
        ));
    }
    let hwm = of_open[..at].iter().rev().find_map(|a| match a.alarm {
        Alarm::LogOpened { hwm, .. } => Some(hwm),
        Alarm::HiddenExposed { to, .. } => Some(to),
        _ => None,
    });
    match hwm {
        Some(hwm) if hwm == clamped && found > hwm => None,
        Some(hwm) => Some(format!(
            "it clamped {found} to {clamped}, where its HWM was {hwm} (a clamp lowers a \
             word above the HWM to the HWM)"
        )),
        None => Some("it clamped with no log_opened account before".into()),
    }
}
