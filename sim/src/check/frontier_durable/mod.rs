//! `frontier_durable`: a recovered consumer frontier is one the engine made durable, or
//! one it began to write after that. The engine reports each `consumer.offset` replace
//! when it begins (`frontier_persisting`) and when it returned, the temp file fsynced,
//! renamed over and the directory fsynced (`frontier_persisted`). At every load of a
//! partition's frontier `l` (by the engine's account):
//!
//! 1. **At least the last durable value.** Let `P` be the last replace that returned
//!    before the load, unless the fsync of the partition's directory was lost while it
//!    ran (its rename may be undone: then the one before, and so on; the simulated disk
//!    does not lose directory fsyncs today, so this step is for when it does). Then
//!    `l >= P.value`, or the value of a replace begun after `P` (the open's clamp lowers
//!    the word; killed before it returned, its rename may still have landed). Below
//!    that, only a fault on `consumer.offset` injected after `P` began excuses `l` (row
//!    `out_of_contract`): a flip or misdirected write within its reach, or a lost fsync
//!    of the temp file whose empty file the engine reset to the log start.
//! 2. **At most a value it began to write.** `l` is at most the largest value of the
//!    replaces begun since `P` began (or of every replace when there is no `P`), or the
//!    log start the open found when that is higher (the engine clamps up to it, and
//!    starts there when there is no file); above that only an out-of-contract fault on
//!    the word whose reach holds `l` can have moved it.
//!
//! 3. **Never written back** ([`lowered`]): a running incarnation's replaces write at
//!    least the word its open left and every value it began to write before.
//! 4. **An open changes the word only by its clamp** ([`open_clamp`]): each replace
//!    it begins is its `frontier_clamped` account's, to the HWM; the word it left is
//!    the one the restart found, or the HWM when that was above it.
//!
//! A load is the engine's account (`frontier_loaded`): the queue loads on first touch,
//! whether the world asks right after the open or a client touches it later, so the log
//! start of rule 2 is where the incarnation's retention had left it by then.
//!
//! The engine's own account of its load must agree with `l`: a `frontier_reset` puts it
//! at the log start it names, a `frontier_clamped` at the clamped value. Neither
//! excuses anything here: either needs a fault on the word (`alarms_explained`), and
//! such a fault after the durable replace began already lowers the bound of rule 1; an
//! open-time clamp below the HWM is itself a replace, so it sets the bound.
//!
//! Leases and the in-memory frontier die with the process; only the file survives a
//! crash, so this is the whole of what a restart may claim about consumption. Loads
//! recorded without the engine's value (histories written before it was recorded) are
//! not judged.

mod lowered;
mod open_clamp;

use std::collections::BTreeMap;

use serde::Serialize;

use super::contract::Reach;
use super::excuse::{Excuse, ExcuseKind};
use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, FileKind, Offset, TopicPartition};

/// The files whose out-of-contract faults can take `consumer.offset` back or move it:
/// the word (and its temp file) and the partition's directory (the rename's entry).
const WORD_FILES: &[FileKind] = &[
    FileKind::ConsumerOffset,
    FileKind::Directory,
    FileKind::Other,
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrontierDurableReport {
    /// Loads judged.
    pub loads: usize,
    /// Of those, the loads with a durable value to be held to (a replace had returned).
    pub held_to_durable: u64,
    /// Replaces the engine reported returned.
    pub persists: usize,
    /// Replaces held to the floor of their incarnation (rule 3).
    pub replaces_held: usize,
    /// Opens whose word left is held to the word the restart found (rule 4).
    pub opens_held: usize,
    /// Replaces opens began, each held to its clamp account (rule 4).
    pub open_replaces_held: usize,
    pub excused: Vec<Excuse>,
    pub violations: Vec<Violation>,
}

/// One `consumer.offset` replace, by the engine's account.
#[derive(Clone, Copy, Debug)]
struct Replace {
    begun: usize,
    value: Offset,
    returned: Option<usize>,
}

pub fn check(facts: &Facts<'_>) -> FrontierDurableReport {
    let mut report = FrontierDurableReport::default();
    let mut replaces: BTreeMap<TopicPartition, Vec<Replace>> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        match &event.kind {
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::FrontierPersisting { value },
                ..
            } => replaces.entry(tp.clone()).or_default().push(Replace {
                begun: index,
                value: *value,
                returned: None,
            }),
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::FrontierPersisted { value },
                ..
            } => {
                // Replaces of one partition run one at a time: this is the last begun.
                let last = replaces.get_mut(tp).and_then(|r| r.last_mut());
                match last {
                    Some(r) if r.value == *value && r.returned.is_none() => {
                        r.returned = Some(index);
                        report.persists += 1;
                    }
                    _ => report.violations.push(Violation {
                        message: format!(
                            "engine reported frontier {value} of {tp} persisted at t={}ms \
                             without having begun that replace",
                            event.at_ms
                        ),
                        records: vec![RecordRef::new(tp, Some(*value), None)],
                        events: vec![index],
                    }),
                }
            }
            EventKind::FrontierObserved {
                tp,
                loaded: Some(loaded),
                ..
            } => {
                report.loads += 1;
                let none = Vec::new();
                let of_tp = replaces.get(tp).unwrap_or(&none);
                judge_load(facts, tp, index, *loaded, of_tp, &mut report);
            }
            _ => {}
        }
    }
    lowered::check(facts, &mut report);
    open_clamp::check(facts, &mut report);
    report
}

fn judge_load(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    index: usize,
    loaded: Offset,
    replaces: &[Replace],
    report: &mut FrontierDurableReport,
) {
    let event = &facts.history.events()[index];
    let faults: Vec<&Reach> = facts
        .reaches_before(tp, index)
        .filter(|r| r.on(WORD_FILES))
        .collect();
    let returned: Vec<&Replace> = replaces.iter().filter(|r| r.returned.is_some()).collect();
    if !returned.is_empty() {
        report.held_to_durable += 1;
    }
    let (floor, floor_causes) = durable_floor(&returned, &faults);
    // A replace begun after a durable one may have landed without returning (the
    // open's own clamp lowers the word): the bound is the lowest of them.
    let bound_from = |f: &Replace| {
        replaces
            .iter()
            .filter(|r| r.begun > f.begun)
            .map(|r| r.value)
            .fold(f.value, Offset::min)
    };
    let lower = floor.map_or(0, bound_from);
    let begun_since = replaces
        .iter()
        .filter(|r| floor.is_none_or(|f| r.begun >= f.begun))
        .map(|r| r.value)
        .max();
    let log_start = log_start_at_load(facts, tp, index);
    let upper = begun_since.unwrap_or(0).max(log_start);
    let account = load_account(facts, tp, index);
    let violation = |message: String| Violation {
        message: format!(
            "frontier of {tp} loaded as {loaded} at t={}ms inc {} {message}",
            event.at_ms, event.incarnation
        ),
        records: vec![RecordRef::new(tp, Some(loaded), None)],
        events: vec![index],
    };
    // The engine's account of the load must agree with what it loaded.
    match account {
        Some((_, Alarm::FrontierReset { log_start })) if loaded != log_start => {
            report.violations.push(violation(format!(
                "after the engine reset it to the log start {log_start}"
            )));
            return;
        }
        Some((_, Alarm::FrontierClamped { value, clamped })) if loaded != clamped => {
            report.violations.push(violation(format!(
                "after the engine clamped {value} to {clamped}"
            )));
            return;
        }
        _ => {}
    }
    // A fault on the word itself since the floor's replace began: a flip or misdirected
    // write moves the durable value within its reach, a lost fsync of a temp file
    // renamed into place leaves a file the engine cannot read (its reset).
    let since_floor = |f: &&&Reach| {
        f.file == FileKind::ConsumerOffset && floor.is_none_or(|r| f.fault_index > r.begun)
    };
    let word_reach = |value: Offset| {
        faults
            .iter()
            .filter(since_floor)
            .find(|f| f.offsets.is_none_or(|r| r.start <= value && value <= r.end))
    };
    let reset_cause = match account {
        Some((alarm, Alarm::FrontierReset { .. })) => faults
            .iter()
            .find(since_floor)
            .map(|f| (alarm, f.fault_index)),
        _ => None,
    };
    if loaded < lower {
        let excuse = reset_cause
            .map(|(alarm, fault)| vec![fault, alarm])
            .or_else(|| word_reach(loaded).map(|f| vec![f.fault_index]));
        match excuse {
            Some(causes) => report.excused.push(Excuse::new(
                ExcuseKind::OutOfContract,
                causes,
                format!("{tp} frontier {loaded} below the durable {lower}"),
            )),
            None => {
                let durable = floor.and_then(|r| r.returned).unwrap_or(index);
                report.violations.push(Violation {
                    events: vec![index, durable],
                    ..violation(format!(
                        "is below {lower}, which the engine persisted at t={}ms with no \
                         fault on consumer.offset since that could take it back",
                        facts.history.events()[durable].at_ms
                    ))
                });
            }
        }
        return;
    }
    // Below what the last returned replace alone bounds it to: only the faults that
    // moved the floor down can have put it there.
    let newest = returned.last().map_or(0, |r| bound_from(r));
    if loaded < newest {
        report.excused.push(Excuse::new(
            ExcuseKind::OutOfContract,
            floor_causes,
            format!("{tp} frontier {loaded} below the last persisted bound {newest}"),
        ));
    }
    if loaded > upper {
        match word_reach(loaded) {
            Some(f) => report.excused.push(Excuse::new(
                ExcuseKind::OutOfContract,
                vec![f.fault_index],
                format!("{tp} frontier {loaded} above any value begun ({upper})"),
            )),
            None => report.violations.push(violation(format!(
                "is above every value the engine began to write since its last durable \
                 one and the log start ({upper})"
            ))),
        }
    }
}

/// The replace whose value is durable: the last that returned, unless the fsync of the
/// partition's directory was lost while it ran (its rename may be undone), then the one
/// before, and so on; with the faults that moved it down.
fn durable_floor<'r>(
    returned: &[&'r Replace],
    faults: &[&Reach],
) -> (Option<&'r Replace>, Vec<usize>) {
    let mut causes = Vec::new();
    for r in returned.iter().rev() {
        let done = r.returned.unwrap_or(usize::MAX);
        let undone: Vec<usize> = faults
            .iter()
            .filter(|f| f.undoes_rename(r.begun, done))
            .map(|f| f.fault_index)
            .collect();
        if undone.is_empty() {
            return (Some(r), causes);
        }
        causes.extend(undone);
    }
    (None, causes)
}

/// The log start when this load ran, by the engine's account: the one its open found
/// (`log_opened`), or where a retention sweep of the incarnation moved it since
/// (`log_start_moved`: a load on first touch may come after one); 0 when neither.
fn log_start_at_load(facts: &Facts<'_>, tp: &TopicPartition, index: usize) -> Offset {
    let incarnation = facts.history.events()[index].incarnation;
    facts
        .alarms
        .of(tp)
        .iter()
        .rev()
        .filter(|a| a.incarnation == incarnation && a.index < index)
        .find_map(|a| match a.alarm {
            Alarm::LogOpened { log_start, .. } | Alarm::LogStartMoved { log_start, .. } => {
                Some(log_start)
            }
            _ => None,
        })
        .unwrap_or(0)
}

/// The engine's account of the load itself: a reset or clamp raised in this
/// incarnation after its last replace (an open-time clamp is followed by the replace
/// that lowers the file; the load's own come after it).
fn load_account(facts: &Facts<'_>, tp: &TopicPartition, index: usize) -> Option<(usize, Alarm)> {
    let incarnation = facts.history.events()[index].incarnation;
    let of_load: Vec<_> = facts
        .alarms
        .of(tp)
        .iter()
        .filter(|a| a.incarnation == incarnation && a.index < index)
        .collect();
    let after_replace = of_load
        .iter()
        .rposition(|a| {
            matches!(
                a.alarm,
                Alarm::FrontierPersisting { .. } | Alarm::FrontierPersisted { .. }
            )
        })
        .map_or(0, |p| p + 1);
    of_load[after_replace..]
        .iter()
        .rev()
        .find(|a| {
            matches!(
                a.alarm,
                Alarm::FrontierReset { .. } | Alarm::FrontierClamped { .. }
            )
        })
        .map(|a| (a.index, a.alarm.clone()))
}
