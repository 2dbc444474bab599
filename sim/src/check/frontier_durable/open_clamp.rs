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
//! The second point is excused (row `out_of_contract`) only by out-of-contract faults
//! on the word's files injected while the open ran, after the restart's read and
//! before the world read the word left (it records that read with no await between):
//! - **flips**, as the page cache took them (the world's `word_flipped`: the word a read
//!   of a file found before and after; a flip only the platter holds, or of an inode no
//!   name shows, moved nothing the open read; helper-110). They chain (helper-109): in
//!   the order they landed, each that found the word moves it to the word it made. The
//!   open reads the word after its HWM account (`log_opened`, or a `hidden_exposed`
//!   since: the clamp runs once every log is open), so the words a chain passed through
//!   before that account are none it read (helper-111). With no clamp, the flips of
//!   `consumer.offset` take the word found to the word left, through a word at or below
//!   the HWM after the account (the one the open read and kept). With a clamp to the HWM
//!   of a word above it, the flips of `consumer.offset` before its alarm pass through the
//!   word it read after the account (flips between its read and its alarm it
//!   overwrote), and the flips of the file it wrote (the world's `written`: the inode
//!   its write went to, as its temp file or renamed over the word), after that write,
//!   take the HWM to the word left: not a temp file a crash left, nor the old file the
//!   rename discards. Its replace returned (else the open did not come up), so no flip
//!   before it explains the word left (helper-106).
//! - **another fault** (a lost fsync, a misdirected write) still live when the open came
//!   up, with the word left at one end of its reach.
//!
//! A fault before the restart is in the word both read. The first point has no excuse:
//! it asks only the engine's accounts.

use std::collections::BTreeMap;

use super::{FrontierDurableReport, WORD_FILES};
use crate::check::alarms::AlarmFact;
use crate::check::excuse::{Excuse, ExcuseKind};
use crate::check::facts::Facts;
use crate::check::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, FaultKind, Incarnation, Offset, TopicPartition};

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
        let account = hwm_account(&alarms[..before], event.incarnation);
        let hwm = account.map(|(_, hwm)| hwm);
        let due = match hwm {
            Some(hwm) if *found > hwm => hwm,
            _ => *found,
        };
        if *left == due {
            continue;
        }
        let restart = facts.restarts.get(&event.incarnation).copied().unwrap_or(0);
        // The open's clamp (its one per incarnation): where it was raised, the word it
        // read, the word it wrote.
        let clamp = alarms[..before]
            .iter()
            .rev()
            .filter(|a| a.incarnation == event.incarnation)
            .find_map(|a| match a.alarm {
                Alarm::FrontierClamped { value, clamped } => Some((a.index, value, clamped)),
                _ => None,
            });
        let moves = flips_during_open(facts, tp, restart, index);
        // The open reads the word after its HWM account (the clamp runs once every log
        // and the WAL are open): the words a walk passed through before that account
        // the open cannot have read (helper-111).
        let readable_from =
            |by: &[usize]| account.map_or(0, |(at, _)| by.iter().filter(|&&i| i < at).count());
        let chain = match clamp {
            // The open read a word the flips made of the one found and kept it: one at
            // or below its HWM, else it owed a clamp.
            None => {
                let (words, by) = walk(&moves, *found, |m| m.name == WORD);
                let read = &words[readable_from(&by)..];
                (words.last() == Some(left) && hwm.is_none_or(|h| read.iter().any(|&w| w <= h)))
                    .then_some(by)
            }
            // It clamped, as point 1 holds it, a word the flips before the clamp made of
            // the one found (the flips between its read and its alarm it overwrote); its
            // replace returned (else the open did not come up), so from there the word
            // was the one it wrote, which later flips moved, the temp file's before the
            // rename included.
            Some((at, read, clamped)) if hwm == Some(clamped) && read > clamped => {
                let (words, by) = walk(&moves, *found, |m| m.index < at && m.name == WORD);
                let from = readable_from(&by);
                let written = clamp_written(facts, tp, event.incarnation, (at, clamped), index);
                let k = words[from..]
                    .iter()
                    .position(|&w| w == read)
                    .map(|k| k + from);
                k.and_then(|k| {
                    let (after, by_after) =
                        walk(&moves, clamped, |m| m.index > at && from_clamp(m, written));
                    (after.last() == Some(left)).then(|| [&by[..k], &by_after[..]].concat())
                })
            }
            Some(_) => None,
        }
        .filter(|by| !by.is_empty());
        // Another fault after the restart's read, still live, with the word left at one
        // end of its reach (a flip's reach is its two words, held above).
        let cause = chain.or_else(|| {
            facts
                .reaches_before(tp, index)
                .find(|r| {
                    r.on(WORD_FILES)
                        && r.fault_index > restart
                        && !matches!(r.kind, FaultKind::BitFlip { .. })
                        && r.live_at(facts, index, None)
                        && r.offsets.is_none_or(|o| o.start == *left || o.end == *left)
                })
                .map(|r| vec![r.fault_index])
        });
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

/// The file an open reads the word from; its clamp writes the temp file and renames it.
const WORD: &str = cafelog_engine::format::layout::CONSUMER_OFFSET_FILE;

/// A live flip of the word during an open, after the restart read it: the move the page
/// cache made (the world's `word_flipped`), read through the file `name`; `written`,
/// it hit the file the engine last wrote the frontier to.
struct Move<'a> {
    index: usize,
    name: &'a str,
    written: bool,
    from: Offset,
    to: Offset,
}

/// The live flips of `tp`'s word between the restart at `restart` and the open's
/// observation at `index`, in the order they landed. A flip the page cache did not take,
/// or whose words did not decode, moved nothing the open read.
fn flips_during_open<'a>(
    facts: &'a Facts<'_>,
    tp: &TopicPartition,
    restart: usize,
    index: usize,
) -> Vec<Move<'a>> {
    let mut moves: Vec<Move<'a>> = facts
        .reaches_before(tp, index)
        .filter(|r| {
            r.on(WORD_FILES)
                && r.fault_index > restart
                && matches!(r.kind, FaultKind::BitFlip { .. })
                && r.live_at(facts, index, None)
        })
        .filter_map(|r| {
            let moved = facts.word_flipped(r.fault_index)?;
            Some(Move {
                index: r.fault_index,
                name: moved.read_as,
                written: moved.written,
                from: moved.from,
                to: moved.to,
            })
        })
        .collect();
    moves.sort_by_key(|m| m.index);
    moves
}

/// Walks the word from `from` through the `moves` that `keep` selects (helper-109): each
/// flip that found the word moves it to the word it made. The words it passed through,
/// `from` first, and the flips that moved it.
fn walk(
    moves: &[Move<'_>],
    from: Offset,
    keep: impl Fn(&Move<'_>) -> bool,
) -> (Vec<Offset>, Vec<usize>) {
    let mut words = vec![from];
    let mut by = Vec::new();
    for m in moves.iter().filter(|m| keep(m)) {
        if words.last() == Some(&m.from) {
            words.push(m.to);
            by.push(m.index);
        }
    }
    (words, by)
}

/// Whether the move `m`, after the open's clamp, moved the word the clamp wrote: a flip
/// of the file its write at `written` went to (its temp file, or that file renamed over
/// the word), after that write (helper-111, helper-112). Not a temp file a crash left,
/// nor the old word the rename discards, whatever names they had then.
fn from_clamp(m: &Move<'_>, written: Option<usize>) -> bool {
    m.written && written.is_some_and(|w| m.index > w)
}

/// Where the replace of `tp`'s word that the clamp to `clamped` at history index `at`
/// began (in incarnation `inc`, before `until`) wrote its temp file (`FrontierWritten`
/// of the clamp's value).
fn clamp_written(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    inc: Incarnation,
    (at, clamped): (usize, Offset),
    until: usize,
) -> Option<usize> {
    let events = facts.history.events();
    (at + 1..until).find(|&i| {
        events[i].incarnation == inc
            && matches!(&events[i].kind, EventKind::FrontierWritten { tp: t, frontier }
                if t == tp && *frontier == clamped)
    })
}

/// The HWM an open had by the end of `alarms` (its `log_opened`, or a `hidden_exposed`
/// raised since), if it reported one, and where it reported it.
fn hwm_account(alarms: &[AlarmFact], incarnation: Incarnation) -> Option<(usize, Offset)> {
    alarms
        .iter()
        .rev()
        .filter(|a| a.incarnation == incarnation)
        .find_map(|a| match a.alarm {
            Alarm::LogOpened { hwm, .. } => Some((a.index, hwm)),
            Alarm::HiddenExposed { to, .. } => Some((a.index, to)),
            _ => None,
        })
}

/// The HWM of [`hwm_account`].
fn hwm_of_open(alarms: &[AlarmFact], incarnation: Incarnation) -> Option<Offset> {
    hwm_account(alarms, incarnation).map(|(_, hwm)| hwm)
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
