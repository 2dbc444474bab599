//! Rules 3 and 4 of `stable_offsets`: the HWM (in memory and persisted) and the log
//! start move only as the engine's contract lets them, each exception resting on a
//! recorded clamp or an out-of-contract fault that can move that word.

use super::*;

#[derive(Default)]
struct HwmState {
    /// In-memory HWM last seen: (incarnation, value, index).
    memory: Option<(Incarnation, Offset, usize)>,
    /// Persisted HWM last seen: (value, index).
    persisted: Option<(Offset, usize)>,
    /// Persisted HWM at the last crash, until the first HWM after the restart.
    after_crash: Option<(Offset, usize)>,
}

/// Rule 3.
pub(super) fn check_hwm(facts: &Facts<'_>, report: &mut OffsetsReport) {
    let mut state: BTreeMap<TopicPartition, HwmState> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let inc = event.incarnation;
        let at = event.at_ms;
        match &event.kind {
            EventKind::Crash {
                partitions,
                process,
            } => {
                for p in partitions {
                    let what = format!("at the crash t={at}ms");
                    beyond_tail(
                        facts,
                        report,
                        &p.tp,
                        index,
                        "persisted HWM",
                        (p.persisted_hwm, p.durable_tail),
                        &what,
                        *process,
                    );
                    if let Some(memory) = p.memory_hwm {
                        beyond_tail(
                            facts,
                            report,
                            &p.tp,
                            index,
                            "in-memory HWM",
                            (memory, p.durable_tail),
                            &what,
                            *process,
                        );
                    }
                    let s = state.entry(p.tp.clone()).or_default();
                    persisted_backwards(
                        facts,
                        report,
                        &p.tp,
                        index,
                        s.persisted,
                        p.persisted_hwm,
                        *process,
                    );
                    // After a process crash the word is the page cache's: what the next
                    // open reads, but no claim that the platter holds it.
                    if !process {
                        s.persisted = Some((p.persisted_hwm, index));
                    }
                    s.after_crash = Some((p.persisted_hwm, index));
                }
            }
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm,
                durable_tail,
            } => {
                let what = format!("observed t={at}ms inc {inc}");
                if let Some(tail) = durable_tail {
                    beyond_tail(
                        facts,
                        report,
                        tp,
                        index,
                        "in-memory HWM",
                        (*hwm, *tail),
                        &what,
                        false,
                    );
                    if let Some(persisted) = persisted_hwm {
                        beyond_tail(
                            facts,
                            report,
                            tp,
                            index,
                            "persisted HWM",
                            (*persisted, *tail),
                            &what,
                            false,
                        );
                    }
                }
                let s = state.entry(tp.clone()).or_default();
                match s.memory {
                    Some((seen_inc, seen, seen_index)) if seen_inc == inc && *hwm < seen => {
                        report.violations.push(Violation {
                            message: format!(
                                "HWM of {tp} moved backwards within incarnation {inc}: {seen} at \
                                 t={}ms, then {hwm} at t={at}ms",
                                facts.at_ms(seen_index)
                            ),
                            records: vec![RecordRef::new(tp, Some(*hwm), None)],
                            events: vec![seen_index, index],
                        });
                    }
                    Some((seen_inc, _, _)) if seen_inc == inc => {}
                    _ => {
                        if let Some((persisted, crash_index)) = s.after_crash.take() {
                            below_persisted_after_restart(
                                facts,
                                report,
                                tp,
                                index,
                                *hwm,
                                persisted,
                                crash_index,
                            );
                        }
                    }
                }
                s.memory = Some((inc, *hwm, index));
                if let Some(persisted) = persisted_hwm {
                    persisted_backwards(facts, report, tp, index, s.persisted, *persisted, false);
                    s.persisted = Some((*persisted, index));
                }
            }
            // A recorded clamp is the engine's own account of moving the word back (its
            // cause is judged by `alarms_explained`); the open persists the clamped value.
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::Clamp { hwm, .. },
                ..
            } => {
                state.entry(tp.clone()).or_default().persisted = Some((*hwm, index));
            }
            _ => {}
        }
    }
}

#[expect(clippy::too_many_arguments, reason = "one message, many facts")]
fn beyond_tail(
    facts: &Facts<'_>,
    report: &mut OffsetsReport,
    tp: &TopicPartition,
    index: usize,
    which: &str,
    (hwm, tail): (Offset, Offset),
    when: &str,
    cache: bool,
) {
    if hwm <= tail {
        return;
    }
    // A lost or misdirected frame lowers the tail under an HWM the engine believed, and
    // under the persisted word until a clamp rewrites it; a fault on the `hwm` file
    // also moves the persisted word past the log.
    let (files, lasts): (&[FileKind], GapLasts) = if which.starts_with("persisted") {
        (
            &[
                FileKind::Segment,
                FileKind::Directory,
                FileKind::Other,
                FileKind::Hwm,
            ],
            GapLasts::UntilHwmRewritten,
        )
    } else {
        (LOG_FILES, GapLasts::UntilCrash)
    };
    let gap = OffsetRange {
        start: tail,
        end: hwm,
    };
    if let Some(excuse) = Excuses::new(facts)
        .reading_cache(cache)
        .out_of_contract_gap(tp, files, gap, index, lasts)
    {
        report.excused.push(ExcusedChange {
            tp: tp.clone(),
            offset: hwm,
            index,
            excuse,
        });
        return;
    }
    report.violations.push(Violation {
        message: format!(
            "{which} of {tp} is {hwm}, beyond the durable tail {tail} ({when}): offsets {tail}..{hwm} \
             are visible or promised but not durable"
        ),
        records: vec![RecordRef::new(tp, Some(tail), None)],
        events: vec![index],
    });
}

fn persisted_backwards(
    facts: &Facts<'_>,
    report: &mut OffsetsReport,
    tp: &TopicPartition,
    index: usize,
    previous: Option<(Offset, usize)>,
    now: Offset,
    cache: bool,
) {
    let Some((before, before_index)) = previous else {
        return;
    };
    if now >= before {
        return;
    }
    let drop = before - now;
    let excuses = Excuses::new(facts).reading_cache(cache);
    // The engine's account of its persisted word only rises within an incarnation (it
    // reads the word only at open): no fault explains a fall between two of its reports.
    let events = facts.history.events();
    let same_inc_reports = matches!(events[before_index].kind, EventKind::HwmObserved { .. })
        && matches!(events[index].kind, EventKind::HwmObserved { .. })
        && events[before_index].incarnation == events[index].incarnation;
    if let Some(excuse) = excuses
        .clamped_by(tp, drop, before_index, index)
        .or_else(|| {
            if same_inc_reports {
                return None;
            }
            excuses.out_of_contract_gap(
                tp,
                HWM_FILE,
                range(now, before),
                index,
                GapLasts::PersistedWord,
            )
        })
    {
        report.excused.push(ExcusedChange {
            tp: tp.clone(),
            offset: now,
            index,
            excuse,
        });
        return;
    }
    report.violations.push(Violation {
        message: format!(
            "persisted HWM of {tp} moved backwards from {before} (t={}ms) to {now} (t={}ms) \
             without a recorded clamp of at least {drop} records",
            facts.at_ms(before_index),
            facts.at_ms(index)
        ),
        records: vec![RecordRef::new(tp, Some(now), None)],
        events: vec![before_index, index],
    });
}

fn below_persisted_after_restart(
    facts: &Facts<'_>,
    report: &mut OffsetsReport,
    tp: &TopicPartition,
    index: usize,
    hwm: Offset,
    persisted: Offset,
    crash_index: usize,
) {
    if hwm >= persisted {
        return;
    }
    let inc = facts.incarnation_at(index);
    let drop = persisted - hwm;
    let excuses = Excuses::new(facts);
    let recorded: u64 = facts
        .alarms
        .clamps(tp)
        .filter(|c| c.incarnation == inc)
        .map(|c| c.lost)
        .fold(0, u64::saturating_add);
    if let Some(excuse) = excuses
        .clamped_by(tp, drop, crash_index, index)
        .or_else(|| excuses.refused(tp, crash_index))
        .or_else(|| {
            excuses.out_of_contract_gap(
                tp,
                HWM_FILE,
                range(hwm, persisted),
                index,
                GapLasts::UntilCrash,
            )
        })
    {
        report.excused.push(ExcusedChange {
            tp: tp.clone(),
            offset: hwm,
            index,
            excuse,
        });
        return;
    }
    report.violations.push(Violation {
        message: format!(
            "HWM of {tp} after the restart into incarnation {inc} is {hwm} (t={}ms), below the \
             persisted HWM {persisted} at the crash (t={}ms); the engine recorded a loss of \
             {recorded} record(s), {drop} needed",
            facts.at_ms(index),
            facts.at_ms(crash_index)
        ),
        records: vec![RecordRef::new(tp, Some(hwm), None)],
        events: vec![crash_index, index],
    });
}

/// Rule 4.
pub(super) fn check_log_start(facts: &Facts<'_>, report: &mut OffsetsReport) {
    let mut last: BTreeMap<TopicPartition, (Offset, usize)> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let EventKind::LogStartObserved { tp, log_start } = &event.kind else {
            continue;
        };
        if let Some((before, before_index)) = last.get(tp)
            && log_start < before
            && Excuses::new(facts)
                .out_of_contract_gap(
                    tp,
                    DIRECTORY,
                    range(*log_start, *before),
                    index,
                    GapLasts::ThroughNextIncarnation,
                )
                .is_none()
        {
            report.violations.push(Violation {
                message: format!(
                    "log start of {tp} moved backwards from {before} (t={}ms) to {log_start} \
                     (t={}ms): retention only deletes",
                    facts.at_ms(*before_index),
                    event.at_ms
                ),
                records: vec![RecordRef::new(tp, Some(*log_start), None)],
                events: vec![*before_index, index],
            });
        }
        let entry = last.entry(tp.clone()).or_insert((*log_start, index));
        if *log_start >= entry.0 {
            *entry = (*log_start, index);
        }
    }
}

/// A deleted segment comes back only if its unlink was lost: a fault on the directory.
const DIRECTORY: &[FileKind] = &[FileKind::Directory, FileKind::Other];
