//! Rule 1 of `alarms_explained`: an open's account (its cuts, refusals, clamps and
//! `log_opened`) agrees with the reference decoder's view of the disk it read, an open
//! raised every alarm that view demands, and the `hwm` word it writes is not below the
//! HWM that view gives.

use super::*;

/// Rule 1, one alarm: what the disk the open read says instead.
pub(super) fn against_disk(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    alarm: &AlarmFact,
) -> Option<String> {
    // Damage landing while the open ran gives it a second view; the alarm must agree
    // with one of the views taken before it.
    let views = facts
        .alarms
        .views_before(tp, alarm.incarnation, alarm.index);
    let last = views.last()?;
    views
        .iter()
        .all(|disk| disagrees(disk, alarm).is_some())
        .then(|| disagrees(last, alarm))
        .flatten()
}

/// How `alarm` disagrees with the disk view `disk`, if it does.
fn disagrees(disk: &DiskView, alarm: &AlarmFact) -> Option<String> {
    let says = || format!("but the disk that open read says {disk}");
    // The cut or refusal names where the bad region starts, as an operator reads it:
    // the segment file and the byte in it, and (a cut) the offset.
    let names = |segment: &str, position: u64| {
        disk.bad
            .as_ref()
            .is_some_and(|b| b.segment == segment && b.position == position)
    };
    match &alarm.alarm {
        Alarm::TornTail {
            segment,
            position,
            offset,
            ..
        }
        | Alarm::Hole {
            segment,
            position,
            offset,
            ..
        } => {
            let rule = if matches!(alarm.alarm, Alarm::TornTail { .. }) {
                OpenRule::TornTail
            } else {
                OpenRule::Hole
            };
            (disk.rule != rule
                || disk.bad.as_ref().map(|b| b.offset) != Some(*offset)
                || !names(segment, *position))
            .then(says)
        }
        // A malformed `hwm` word refuses too (the view cannot tell it from an absent
        // one), and the engine reads the word first: it may name that file instead.
        Alarm::Refused { segment, position } => {
            let word = disk.persisted_hwm.is_none()
                && segment == cafelog_engine::format::layout::HWM_FILE
                && *position == 0;
            (disk.rule != OpenRule::Refuse || !(names(segment, *position) || word)).then(|| {
                format!(
                    "{} (an R3 refusal names the bad frame's file and byte)",
                    says()
                )
            })
        }
        Alarm::Clamp {
            persisted_hwm,
            hwm,
            lost,
        } => (disk.persisted_hwm != Some(*persisted_hwm)
            || disk.hwm != *hwm
            || disk.recorded_loss() != *lost)
            .then(|| {
                format!(
                    "{}, which records a loss of {}",
                    says(),
                    disk.recorded_loss()
                )
            }),
        Alarm::LogOpened {
            log_start,
            hwm,
            tail,
            hidden,
        } => (disk.log_start != *log_start
            || disk.hwm != *hwm
            || disk.tail != *tail
            || disk.hidden() != *hidden
            || disk.rule == OpenRule::Refuse)
            .then(says),
        _ => None,
    }
}

/// Rule 1, the other way: an open that finished raised every alarm its disk demands.
pub(super) fn missing_alarms(facts: &Facts<'_>, tp: &TopicPartition, report: &mut AlarmsReport) {
    let alarms = facts.alarms.of(tp);
    for ((t, incarnation), views) in &facts.alarms.disks {
        if t != tp {
            continue;
        }
        let of_open: Vec<&AlarmFact> = alarms
            .iter()
            .filter(|a| a.incarnation == *incarnation)
            .collect();
        let Some(finished) = of_open
            .iter()
            .find(|a| matches!(a.alarm, Alarm::LogOpened { .. } | Alarm::Refused { .. }))
        else {
            continue;
        };
        // Only the views taken before the open finished can have been what it read.
        let views: Vec<&(usize, DiskView)> =
            views.iter().filter(|(i, _)| *i < finished.index).collect();
        if views.is_empty() {
            continue;
        }
        report.opens_checked += 1;
        let has = |f: &dyn Fn(&Alarm) -> bool| of_open.iter().any(|a| f(&a.alarm));
        let demands = |disk: &DiskView| {
            let mut missing = Vec::new();
            match disk.rule {
                // The cut at this view's bad region, not one at another view's: an
                // open that read this view never reached a bad region past it.
                OpenRule::TornTail
                    if !has(&|a| {
                        matches!(a, Alarm::TornTail { offset, .. }
                            if disk.bad.as_ref().is_none_or(|b| b.offset == *offset))
                    }) =>
                {
                    missing.push("an R1 cut")
                }
                OpenRule::Hole
                    if !has(&|a| {
                        matches!(a, Alarm::Hole { offset, .. }
                            if disk.bad.as_ref().is_none_or(|b| b.offset == *offset))
                    }) =>
                {
                    missing.push("an R2 cut")
                }
                OpenRule::Refuse if !has(&|a| matches!(a, Alarm::Refused { .. })) => {
                    missing.push("a refusal")
                }
                _ => {}
            }
            if disk.rule != OpenRule::Refuse
                && disk.recorded_loss() > 0
                && !has(&|a| matches!(a, Alarm::Clamp { .. }))
            {
                missing.push("a clamp recording the loss");
            }
            missing
        };
        // Satisfied when one of the views (damage may land while the open runs) is.
        // Of those the open's own account agrees with, when one does: a silent cut at
        // a flip that landed while it ran agrees with that view alone.
        let agreeing: Vec<&&(usize, DiskView)> = views
            .iter()
            .filter(|(_, disk)| disagrees(disk, finished).is_none())
            .collect();
        let candidates: Vec<&&(usize, DiskView)> = if agreeing.is_empty() {
            views.iter().collect()
        } else {
            agreeing
        };
        if candidates.iter().any(|(_, disk)| demands(disk).is_empty()) {
            continue;
        }
        let (disk_index, disk) = *views.last().expect("a view per entry");
        let missing = demands(disk);
        report.violations.push(Violation {
            message: format!(
                "the open of {tp} in incarnation {incarnation} finished without {}: the disk \
                 it read says {disk}",
                missing.join(" and ")
            ),
            records: vec![RecordRef::new(
                tp,
                disk.bad.as_ref().map(|b| b.offset),
                None,
            )],
            events: vec![*disk_index],
        });
    }
}

/// Rule 1's exposure: an open of `tp` whose store reported WAL damage in the same
/// incarnation, and whose store open finished, exposed the hidden tail its log open
/// found, exactly.
pub(super) fn missing_exposures(facts: &Facts<'_>, tp: &TopicPartition, report: &mut AlarmsReport) {
    let alarms = facts.alarms.of(tp);
    for a in alarms {
        let Alarm::LogOpened { hwm, tail, .. } = a.alarm else {
            continue;
        };
        let inc = a.incarnation;
        if tail <= hwm || !facts.alarms.wal_damaged_in(inc) || !facts.opened.contains(&inc) {
            continue;
        }
        let exposed = alarms.iter().any(|e| {
            e.incarnation == inc
                && matches!(e.alarm, Alarm::HiddenExposed { from, to } if from == hwm && to == tail)
        });
        if !exposed {
            report.violations.push(Violation {
                message: format!(
                    "the open of {tp} in incarnation {inc} reported WAL damage and finished \
                     without exposing its hidden tail [{hwm}, {tail}): the replay cannot \
                     restore what the damage took, and those copies may be the only ones"
                ),
                records: vec![RecordRef::new(tp, Some(hwm), None)],
                events: vec![a.index],
            });
        }
    }
}

/// Rule 1's word: every `hwm` word an open issues is at or above the HWM the disk it
/// read gives (`DiskView::hwm`: the persisted word, or a clamp's lower HWM), the lowest
/// of its views before the write. A word the engine lowers itself makes every later
/// crash's hidden tail start lower, and the duplicates it then replays look like that
/// crash's (HARNESS.md, "A word the engine lowers itself").
///
/// Nor does any write, at any time, fall below a word the engine issued earlier in the
/// same incarnation (`HwmWriteLowered`, recorded only then): the HWM never falls while
/// the engine runs, and `hwm_persisted` does not judge a partition after an
/// out-of-contract fault on its word.
pub(super) fn lowered_words(facts: &Facts<'_>, report: &mut AlarmsReport) {
    for (index, event) in facts.history.events().iter().enumerate() {
        if let EventKind::HwmWriteLowered { tp, word, highest } = &event.kind {
            report.violations.push(Violation {
                message: format!(
                    "the engine of {tp} in incarnation {} wrote the hwm word {word} after it \
                     had written {highest}: the word only rises",
                    event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(*word), None)],
                events: vec![index],
            });
            continue;
        }
        let EventKind::HwmWriteIssued { tp, word } = &event.kind else {
            continue;
        };
        let views = facts.alarms.views_before(tp, event.incarnation, index);
        let Some(disk) = views.iter().min_by_key(|d| d.hwm) else {
            continue;
        };
        let floor = disk.hwm;
        report.words_checked += 1;
        if *word < floor {
            report.violations.push(Violation {
                message: format!(
                    "the open of {tp} in incarnation {} wrote the hwm word {word}, below the \
                     HWM {floor} the disk it read gives ({disk}): the word only rises, and a \
                     clamp writes the HWM its view gives",
                    event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(*word), None)],
                events: vec![index],
            });
        }
    }
}
