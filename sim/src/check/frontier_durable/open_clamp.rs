//! Rule 4 of `frontier_durable`: **an open changes the word only by its clamp.** The
//! one write an open makes to `consumer.offset` lowers a word above the partition's
//! HWM to that HWM (`clamp_frontiers_to_hwms`, so that the WAL replay's re-commits are
//! not taken as acknowledged), and it says so first (`frontier_clamped`). Rules 1-3
//! cannot see an open that lowers the word further: its replace becomes the durable
//! floor of rule 1, and rule 3 starts once the open is up.
//!
//! - **Every replace an open begins** (before its observation, or in an incarnation
//!   whose open never came up: a kill can land after the rename) follows a
//!   `frontier_clamped` of the same incarnation that wrote its value, and that value is
//!   the HWM the open had (its `log_opened` account, or the end of a `hidden_exposed`
//!   raised since).
//! - **The word the open left** is the word the restart found when that was at or
//!   below the HWM, and the HWM when it was above (the clamp's, as its account says).
//!   Judged where the restart found a word (not at the first open, nor after a restart
//!   that found the file absent, empty or torn).
//!
//! The second point is excused (row `out_of_contract`) only by an out-of-contract fault
//! on the word's files injected while the open ran, after the restart's read, still
//! live in the page cache when the open came up, that moved the word the open read or
//! wrote to the word it left: a flip whose two words are the word left and the one the
//! restart found; or, after the open's clamp, the word left and the one the clamp wrote
//! (its replace returned, so a flip before it explains nothing left; helper-106), the
//! clamp's word only when it clamped to the HWM a word a live flip during the open made
//! of the one found; another fault with the word left at one end of its reach. Flips
//! chain (helper-109): live flips during the open, in the order they landed, each
//! moving the word at one of its ends to the other, that take the word found (the open
//! did not clamp) to the word left, or the word found to the one the clamp read and the
//! clamp's word to the word left (it clamped to the HWM a word above it). A fault
//! before the restart is in the word both read. The first point has no excuse: it asks
//! only the engine's accounts.

use std::collections::BTreeMap;

use super::{FrontierDurableReport, WORD_FILES};
use crate::check::alarms::AlarmFact;
use crate::check::excuse::{Excuse, ExcuseKind};
use crate::check::facts::Facts;
use crate::check::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, Incarnation, Offset, TopicPartition};

pub(super) fn check(facts: &Facts<'_>, report: &mut FrontierDurableReport) {
    // Per partition and incarnation, where the open came up; histories that predate the
    // open's observation (the one of each open that came up) cannot tell an open's
    // replaces from the running engine's.
    let mut opened: BTreeMap<(&TopicPartition, Incarnation), usize> = BTreeMap::new();
    let mut observed = false;
    for (index, event) in facts.history.events().iter().enumerate() {
        match &event.kind {
            EventKind::RunStarted {
                frontier_loads_reported,
                ..
            } => observed = *frontier_loads_reported,
            EventKind::FrontierObserved {
                tp, loaded: None, ..
            } => {
                opened.entry((tp, event.incarnation)).or_insert(index);
            }
            _ => {}
        }
    }
    for (tp, alarms) in facts.alarms.by_tp.iter().filter(|_| observed) {
        for (k, a) in alarms.iter().enumerate() {
            let Alarm::FrontierPersisting { value } = a.alarm else {
                continue;
            };
            let up = opened.get(&(tp, a.incarnation)).copied();
            if up.is_some_and(|u| u < a.index) {
                continue; // the running incarnation's: rule 3's
            }
            report.open_replaces_held += 1;
            if let Some(wrong) = replace_wrong(&alarms[..k], a.incarnation, value) {
                report.violations.push(Violation {
                    message: format!(
                        "{tp}: the open of inc {} began to write frontier {value} at t={}ms: \
                         {wrong}",
                        a.incarnation,
                        facts.at_ms(a.index)
                    ),
                    records: vec![RecordRef::new(tp, Some(value), None)],
                    events: vec![a.index],
                });
            }
        }
    }
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
        let alarms = facts.alarms.of(tp);
        let before = alarms.partition_point(|a| a.index < index);
        let hwm = hwm_of_open(&alarms[..before], event.incarnation);
        let due = match hwm {
            Some(hwm) if *found > hwm => hwm,
            _ => *found,
        };
        if *left == due {
            continue;
        }
        let restart = facts.restarts.get(&event.incarnation).copied().unwrap_or(0);
        // A flip on the word during the open, after the restart read it.
        let flip_during_open = |r: &&crate::check::contract::Reach| {
            r.on(WORD_FILES)
                && r.fault_index > restart
                && matches!(r.kind, crate::history::FaultKind::BitFlip { .. })
        };
        // The open's clamp (its one per incarnation): where it was raised, the word it
        // read, the word it wrote. Its replace returned (else the open did not come up),
        // so the word was its value there: a flip before it explains nothing left.
        let clamp = alarms[..before]
            .iter()
            .rev()
            .filter(|a| a.incarnation == event.incarnation)
            .find_map(|a| match a.alarm {
                Alarm::FrontierClamped { value, clamped } => Some((a.index, value, clamped)),
                _ => None,
            });
        let clamped_at = clamp.map(|(at, _, _)| at);
        // What the clamp wrote, when it clamped as point 1 holds it (a word above the
        // HWM, to the HWM) a word a live flip during the open had made of the one the
        // restart found (the found word itself is `due`'s case).
        let clamp_wrote = clamp
            .filter(|&(at, read, clamped)| {
                hwm == Some(clamped)
                    && read > clamped
                    && facts
                        .reaches_before(tp, at)
                        .filter(flip_during_open)
                        .any(|r| {
                            r.live_at(facts, at, None)
                                && r.offsets.is_some_and(|o| {
                                    (o.start, o.end) == (read.min(*found), read.max(*found))
                                })
                        })
            })
            .map(|(at, _, clamped)| (at, clamped));
        // The fault moved the word from what the open read (before its clamp) or wrote
        // (after it) to what it left. A flip's reach is exactly its two words; another
        // fault's (a lost fsync, a misdirected write) has the word it left at one end.
        let moved = |o: &crate::history::OffsetRange, from: Offset| {
            (o.start, o.end) == ((*left).min(from), (*left).max(from))
        };
        let cause = facts.reaches_before(tp, index).find(|r| {
            r.on(WORD_FILES)
                && r.fault_index > restart
                && r.live_at(facts, index, None)
                && r.offsets.is_none_or(|o| match r.kind {
                    // After the open read the word (from what it found, or its clamp
                    // wrote), or before: then the open clamped the flip's word.
                    crate::history::FaultKind::BitFlip { .. } => {
                        let read = [(o.start, o.end), (o.end, o.start)]
                            .into_iter()
                            .find_map(|(a, b)| (a == *found).then_some(b));
                        (clamped_at.is_none_or(|at| r.fault_index > at)
                            && (moved(&o, *found) || moved(&o, due)))
                            || clamp_wrote
                                .is_some_and(|(at, wrote)| r.fault_index > at && moved(&o, wrote))
                            || read.is_some_and(|x| *left == hwm.map_or(x, |h| x.min(h)))
                    }
                    _ => o.start == *left || o.end == *left,
                })
        });
        // Flips chain: each flip's reach is the word it found and the word it made, so
        // several flips of the word during the open compose (helper-109: 21 flipped to
        // 21 + 2^23, that to 21 + 2^23 + 2^30, an open that read 21 and wrote nothing).
        // The live flips during the open, in history order, walked from a word: each
        // flip with the word at one end moves it to the other. From what the restart
        // found when the open did not clamp; else from what its clamp wrote, after it,
        // when the clamp read the word found or one the flips before it made of that.
        let flips: Vec<(usize, crate::history::OffsetRange)> = {
            let mut f: Vec<_> = facts
                .reaches_before(tp, index)
                .filter(flip_during_open)
                .filter(|r| r.live_at(facts, index, None))
                .filter_map(|r| Some((r.fault_index, r.offsets?)))
                .collect();
            f.sort_by_key(|&(i, _)| i);
            f
        };
        let walk = |from: Offset, after: usize, until: usize| {
            let mut word = from;
            let mut by = Vec::new();
            for &(i, o) in flips.iter().filter(|&&(i, _)| after < i && i < until) {
                word = match word {
                    w if w == o.start => o.end,
                    w if w == o.end => o.start,
                    _ => continue,
                };
                by.push(i);
            }
            (word, by)
        };
        let chain = match clamp {
            None => Some(walk(*found, restart, index)),
            Some((at, read, clamped)) if hwm == Some(clamped) && read > clamped => {
                let (made, before) = walk(*found, restart, at);
                (made == read).then(|| {
                    let (word, after) = walk(clamped, at, index);
                    (word, [before, after].concat())
                })
            }
            Some(_) => None,
        }
        .filter(|(word, by)| word == left && !by.is_empty())
        .map(|(_, by)| by);
        let cause = cause.map(|r| vec![r.fault_index]).or(chain);
        match cause {
            Some(faults) => report.excused.push(Excuse::new(
                ExcuseKind::OutOfContract,
                faults,
                format!("{tp} word {found} left as {left} by the open"),
            )),
            None => report.violations.push(Violation {
                message: format!(
                    "{tp}: the open at t={}ms inc {} found consumer.offset at {found} and \
                     left it at {left}, not {due} ({})",
                    event.at_ms,
                    event.incarnation,
                    match hwm {
                        Some(hwm) => format!("its HWM was {hwm}"),
                        None => "it reported no log_opened".into(),
                    }
                ),
                records: vec![RecordRef::new(tp, Some(*left), None)],
                events: vec![index],
            }),
        }
    }
}

/// The HWM an open had by the end of `alarms` (its `log_opened`, or a `hidden_exposed`
/// raised since), if it reported one.
fn hwm_of_open(alarms: &[AlarmFact], incarnation: Incarnation) -> Option<Offset> {
    alarms
        .iter()
        .rev()
        .filter(|a| a.incarnation == incarnation)
        .find_map(|a| match a.alarm {
            Alarm::LogOpened { hwm, .. } => Some(hwm),
            Alarm::HiddenExposed { to, .. } => Some(to),
            _ => None,
        })
}

/// What is wrong with a replace of `value` an open began after `before`, if anything.
fn replace_wrong(before: &[AlarmFact], incarnation: Incarnation, value: Offset) -> Option<String> {
    let clamp = before
        .iter()
        .rev()
        .filter(|a| a.incarnation == incarnation)
        .find_map(|a| match a.alarm {
            Alarm::FrontierClamped { value, clamped } => Some((value, clamped)),
            _ => None,
        });
    let Some((read, clamped)) = clamp else {
        return Some("no frontier_clamped account came before it".into());
    };
    if clamped != value {
        return Some(format!("its frontier_clamped account wrote {clamped}"));
    }
    match hwm_of_open(before, incarnation) {
        Some(hwm) if hwm == clamped && read > hwm => None,
        Some(hwm) => Some(format!(
            "it clamped {read} to {clamped}, where its HWM was {hwm} (a clamp lowers a word \
             above the HWM to the HWM)"
        )),
        None => Some("it clamped with no log_opened account before".into()),
    }
}
