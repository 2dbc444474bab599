//! `alarms_explained`: every alarm the engine raises has a cause, agrees with the
//! oracle's own decode of the disk, and its counters add up. An alarm without a cause is
//! a bug: it costs availability, and as an excuse it would hide loss.
//!
//! 1. **The open's account agrees with the disk it read.** At every restart the world
//!    decoded each partition as the open reads it (the page cache: after a power loss,
//!    the durable image) with the reference decoder (`DiskAtOpen`). An open's cut (R1/R2 at an offset), refusal (R3), clamp (R4:
//!    persisted HWM, new HWM, records lost) and final account (`log_opened`: log start,
//!    HWM, tail) must be what that decode says, and an open that finished must have
//!    raised every alarm the decode demands. A store open that reported WAL damage and
//!    finished must have exposed every hidden tail its log opens found (`[hwm, tail)`
//!    of each `log_opened`): those copies may be the only ones its replay cannot
//!    restore.
//! 2. **Every alarm has an injected cause that can reach it**, injected before the open
//!    (or, at consume time, before the alarm):
//!    - a refusal: damage at rest to the frame where the bad region starts, or an
//!      out-of-contract fault reaching that offset (a lost or misdirected write there,
//!      or an `hwm` word moved past it, now or when an open read it that wrote nothing
//!      back and left the frame there only in the page cache after an fsync EIO, with
//!      the power loss since the only one and no open completed after it);
//!    - a clamp: damage to the frame at the new HWM, or an out-of-contract fault whose
//!      reach holds the new HWM;
//!    - a cut of durable data (at an offset below the durable tail the crash before
//!      left): damage to the frame at that offset, or an out-of-contract fault reaching
//!      it (cuts of what was never durable are ordinary crash outcomes);
//!    - a consume-time frame skip: damage to that frame, or an out-of-contract fault
//!      reaching it; a skip of unparseable records in a valid frame: an
//!      out-of-contract fault reaching it (no in-contract fault writes a CRC-valid
//!      frame the engine did not);
//!    - trimmed junk after a sealed segment: a fault on that partition's segments;
//!    - poison: an fsync error or ENOSPC on that partition's log files (never its
//!      `consumer.offset`, which the store persists; the WAL's, for the WAL) in the
//!      same incarnation, or damage to its segments in that incarnation
//!      (the verification re-read after an fsync found a bad frame); a poison by dropped
//!      in-flight records: the kill of the incarnation that raised it;
//!    - WAL damage at open: a fault on a WAL file; an unreadable checkpoint: a fault on
//!      the checkpoint; a hidden tail exposed: WAL damage reported by the same open;
//!    - a refused topic: an out-of-contract fault on its `topic.conf` (in contract the
//!      file is written whole, fsynced and renamed into place);
//!    - a frontier reset: a fault on that partition's `consumer.offset` after the last
//!      replace of it that returned began (a replace rewrites the file whole); a frontier
//!      clamped down to the HWM: an earlier clamp below it or an out-of-contract fault
//!      on the partition (clamped up to the log start is retention's).
//! 3. **The counters add up.** Every `engine_counters` sample equals the sum of the
//!    clamp and skip alarms the engine raised on that partition in that incarnation
//!    before it.
//! 4. **The WAL's damage is counted right**: `wal_damaged` reports what the reference
//!    decoder reads in the WAL's files at the restart (`wal_account.rs`).
//! 5. **An R2 salvage is offered what lies past the hole**: `r2_salvaged`'s `offered`
//!    is what the reference decoder reads past the hole at the restart, and an open
//!    that had readable records there raised it (`salvage_account.rs`).

use serde::Serialize;

use super::alarms::AlarmFact;
use super::contract::{Contract, HWM_FILE, LOG_FILES};
use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{
    Alarm, DiskView, EventKind, FaultKind, FileKind, Incarnation, Offset, OffsetRange, OpenRule,
    TopicPartition,
};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AlarmsReport {
    /// Alarms judged.
    pub alarms: usize,
    /// Opens whose account was compared with the disk they read.
    pub opens_checked: usize,
    /// WAL opens whose damage account was compared with the files they read (rule 4).
    pub wal_opens_checked: usize,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> AlarmsReport {
    let mut report = AlarmsReport::default();
    for (tp, alarms) in &facts.alarms.by_tp {
        for alarm in alarms {
            report.alarms += 1;
            if let Some(why) = against_disk(facts, tp, alarm) {
                report.violations.push(violation(facts, tp, alarm, why));
            }
            if let Some(why) = uncaused(facts, tp, alarm) {
                report.violations.push(violation(facts, tp, alarm, why));
            }
        }
        missing_alarms(facts, tp, &mut report);
        missing_exposures(facts, tp, &mut report);
    }
    for alarm in &facts.alarms.store {
        report.alarms += 1;
        if let Some(why) = store_uncaused(facts, alarm) {
            let event = &facts.history.events()[alarm.index];
            report.violations.push(Violation {
                message: format!(
                    "engine alarm {} at t={}ms inc {} has no cause: {why}",
                    alarm.alarm, event.at_ms, alarm.incarnation
                ),
                records: Vec::new(),
                events: vec![alarm.index],
            });
        }
    }
    counters(facts, &mut report);
    super::wal_account::check(facts, &mut report);
    super::salvage_account::check(facts, &mut report);
    report
}

fn violation(facts: &Facts<'_>, tp: &TopicPartition, alarm: &AlarmFact, why: String) -> Violation {
    Violation {
        message: format!(
            "engine alarm on {tp} at t={}ms inc {}: {} {why}",
            facts.at_ms(alarm.index),
            alarm.incarnation,
            alarm.alarm
        ),
        records: vec![RecordRef::new(tp, offset_of(&alarm.alarm), None)],
        events: vec![alarm.index],
    }
}

fn offset_of(alarm: &Alarm) -> Option<Offset> {
    match alarm {
        Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. } => Some(*offset),
        Alarm::Clamp { hwm, .. } => Some(*hwm),
        Alarm::FrameSkipped { base, .. } | Alarm::RecordsSkipped { base, .. } => Some(*base),
        _ => None,
    }
}

/// Rule 1, one alarm: what the disk the open read says instead.
fn against_disk(facts: &Facts<'_>, tp: &TopicPartition, alarm: &AlarmFact) -> Option<String> {
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
    match &alarm.alarm {
        Alarm::TornTail { offset, .. } => (disk.rule != OpenRule::TornTail
            || disk.bad.as_ref().map(|b| b.offset) != Some(*offset))
        .then(says),
        Alarm::Hole { offset, .. } => (disk.rule != OpenRule::Hole
            || disk.bad.as_ref().map(|b| b.offset) != Some(*offset))
        .then(says),
        Alarm::Refused { .. } => (disk.rule != OpenRule::Refuse).then(says),
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
fn missing_alarms(facts: &Facts<'_>, tp: &TopicPartition, report: &mut AlarmsReport) {
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
                OpenRule::TornTail if !has(&|a| matches!(a, Alarm::TornTail { .. })) => {
                    missing.push("an R1 cut")
                }
                OpenRule::Hole if !has(&|a| matches!(a, Alarm::Hole { .. })) => {
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
        if views.iter().any(|(_, disk)| demands(disk).is_empty()) {
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
fn missing_exposures(facts: &Facts<'_>, tp: &TopicPartition, report: &mut AlarmsReport) {
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

/// The fault events of the run with their index, kind and partition.
fn faults<'a>(
    facts: &'a Facts<'_>,
) -> impl Iterator<
    Item = (
        usize,
        &'a FaultKind,
        Option<&'a TopicPartition>,
        Option<&'a str>,
    ),
> + 'a {
    facts
        .history
        .events()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::Fault { kind, tp, path } => Some((i, kind, tp.as_ref(), path.as_deref())),
            _ => None,
        })
}

/// In-contract damage at rest on `tp`'s segments before `before`, to the frame holding
/// `offset`.
fn damage_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    offset: Offset,
    before: usize,
) -> Option<usize> {
    let events = facts.history.events();
    facts.segment_damage.get(tp)?.iter().copied().find(|d| {
        *d < before
            && matches!(&events[*d].kind, EventKind::Fault { kind, .. }
                if kind.segment_damage().and_then(|(o, _)| o).is_some_and(|r| r.contains(offset)))
    })
}

/// An out-of-contract fault on a file of `files` of `tp` before `before` reaching
/// `offset` (or of unknown reach). A frame-level alarm (a bad frame, a cut, a skip) is
/// explained only by a fault on the log's own files; a clamp also by one on `hwm`.
fn reach_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    files: &[FileKind],
    offset: Offset,
    before: usize,
) -> Option<usize> {
    facts
        .reaches_before(tp, before)
        .find(|r| {
            r.on(files)
                && r.offsets.is_none_or(|o| o.contains(offset))
                && r.live_at(facts, before, Some(offset))
        })
        .map(|r| r.fault_index)
}

/// A fault on `tp`'s `hwm` that an earlier open read while it held the word past
/// `offset`, when that open left the frame at `offset` only in the page cache and the
/// power loss before the refusing open showed it. Recovery writes back only what lies
/// above the HWM (or everything, after a clamp), so an open that read a raised word,
/// found nothing above it and clamped nothing wrote nothing back; a frame that a
/// segment fsync EIO since the last power loss but one had left in the cache alone
/// stayed so after the word was rewritten. Asked besides: no acknowledgement at
/// `offset` before that open (its fsync succeeded), no open between the EIO and it that
/// wrote the frame back, no clamp in any open up to the power loss, and no open
/// completed since the power loss (it would have found the frame whole or not).
fn hwm_raised_at_an_open(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    offset: Offset,
    alarm: &AlarmFact,
) -> Option<usize> {
    let restart = restart_of(facts, alarm.incarnation);
    let power_loss_before = |index: usize| {
        facts
            .crashes
            .iter()
            .rev()
            .find(|c| !c.process && c.index < index)
            .map(|c| c.index)
    };
    let shown = power_loss_before(restart)?;
    let since = power_loss_before(shown).unwrap_or(0);
    let alarms = facts.alarms.of(tp);
    let clamped = |inc: Incarnation| {
        alarms
            .iter()
            .any(|a| a.incarnation == inc && matches!(a.alarm, Alarm::Clamp { .. }))
    };
    let opens: Vec<(&AlarmFact, Offset, Offset)> = alarms
        .iter()
        .filter(|a| since < a.index && a.index < restart)
        .filter_map(|a| match a.alarm {
            Alarm::LogOpened { hwm, tail, .. } => Some((a, hwm, tail)),
            _ => None,
        })
        .collect();
    if opens.iter().any(|(a, ..)| a.index > shown)
        || opens.iter().any(|(a, ..)| clamped(a.incarnation))
    {
        return None;
    }
    // The first segment fsync EIO on the partition since that power loss.
    let eio = faults(facts).find_map(|(i, kind, t, _)| {
        (since < i
            && t == Some(tp)
            && matches!(
                kind,
                FaultKind::FsyncEio {
                    file: FileKind::Segment
                }
            ))
        .then_some(i)
    })?;
    // An acknowledgement at the offset means an fsync of that frame succeeded: no
    // in-contract EIO leaves it in the cache alone.
    let acked_before = |index: usize| {
        facts.history.events()[..index].iter().any(|e| {
            matches!(&e.kind, EventKind::ProduceAck { tp: t, offset: Some(o), .. }
                if t == tp && *o == offset)
        })
    };
    // An open that wrote nothing back at or below the hole: its HWM is above it and no
    // frame lies above its HWM.
    let kept_cached = |hwm: Offset, tail: Offset| hwm > offset && tail <= hwm;
    opens.iter().find_map(|&(a, hwm, tail)| {
        // The fault must come before the open read the word, at its restart (rule 1
        // holds the open's HWM to that word); every open between the EIO and this one
        // must have written nothing back there either.
        let opened = restart_of(facts, a.incarnation);
        if eio >= opened
            || !kept_cached(hwm, tail)
            || acked_before(opened)
            || opens
                .iter()
                .any(|&(b, h, t)| eio < b.index && b.index < a.index && !kept_cached(h, t))
        {
            return None;
        }
        facts
            .reaches_before(tp, opened)
            .find(|r| {
                r.on(HWM_FILE)
                    && r.offsets.is_some_and(|o| o.contains(offset))
                    && r.live_at(facts, opened, None)
            })
            .map(|r| r.fault_index)
    })
}

/// Whether an out-of-contract fault on `tp`'s `hwm` before `before` can have left it
/// of the wrong length. No window: a refused partition rewrites nothing, and a word
/// left too long stays so under every rewrite; but only a power loss since the fault
/// shows it (the page cache keeps the engine's 8 bytes).
fn hwm_malformed_by_fault(facts: &Facts<'_>, tp: &TopicPartition, before: usize) -> bool {
    facts.reaches_before(tp, before).any(|r| {
        r.on(HWM_FILE) && r.can_malform() && facts.power_loss_between(r.fault_index, before)
    })
}

/// The restart that began `incarnation` (the open's alarms must have a cause before it).
fn restart_of(facts: &Facts<'_>, incarnation: Incarnation) -> usize {
    facts.restarts.get(&incarnation).copied().unwrap_or(0)
}

/// Rule 2, per-partition alarms: why the alarm has no cause, if it has none.
fn uncaused(facts: &Facts<'_>, tp: &TopicPartition, alarm: &AlarmFact) -> Option<String> {
    // Causes come before the alarm: the open raises it right after reading the file,
    // and damage may land while an open runs (before it reads that file).
    let open = restart_of(facts, alarm.incarnation);
    let before = alarm.index;
    let disk: Option<&DiskView> = facts.alarms.view_before(tp, alarm.incarnation, before);
    let caused_at = |offset: Offset, before: usize| {
        damage_at(facts, tp, offset, before)
            .or_else(|| reach_at(facts, tp, LOG_FILES, offset, before))
    };
    match &alarm.alarm {
        // A refusal naming the `hwm` file (malformed) is that word's fault's to explain.
        Alarm::Refused { segment, .. } if segment == cafelog_engine::format::layout::HWM_FILE => {
            (!hwm_malformed_by_fault(facts, tp, before))
                .then(|| "of a malformed hwm file with no fault on it that could make one".into())
        }
        Alarm::Refused { .. } => {
            let disk = disk?;
            match &disk.bad {
                // Damage where the bad region starts, or a fault on `hwm` that moved the
                // word past it (a hole above the true HWM is R2's to cut, not refuse).
                Some(bad) => (caused_at(bad.offset, before).is_none()
                    && reach_at(facts, tp, HWM_FILE, bad.offset, before).is_none()
                    && hwm_raised_at_an_open(facts, tp, bad.offset, alarm).is_none())
                .then(|| {
                    format!(
                        "with no damage at rest or out-of-contract fault reaching offset {} \
                         (where the bad region starts) before the open",
                        bad.offset
                    )
                }),
                // A malformed `hwm` file: only an out-of-contract fault makes one.
                None => (!hwm_malformed_by_fault(facts, tp, before)).then(|| {
                    "with a malformed hwm file and no fault on it that could make one".into()
                }),
            }
        }
        Alarm::Clamp { hwm, .. } => (caused_at(*hwm, before).is_none()
            && reach_at(facts, tp, HWM_FILE, *hwm, before).is_none())
        .then(|| {
            format!(
                "with no damage at rest to the frame at offset {hwm} and no out-of-contract \
                 fault reaching it before the open: the missing tail has no cause"
            )
        }),
        Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. } => {
            let crash = facts.crash_before(open).and_then(|c| c.partitions.get(tp));
            let durable_tail = crash.map_or(0, |p| p.durable_tail);
            // On a damaged partition the crash's durable tail is a lower bound that rests
            // on the persisted HWM; a fault on `hwm` reaching the cut makes that bound,
            // not the cut, wrong.
            let bound_on_word = crash.is_some_and(|p| {
                p.durable_tail == p.persisted_hwm && p.durable_tail > p.memory_hwm.unwrap_or(0)
            }) && reach_at(facts, tp, HWM_FILE, *offset, before).is_some();
            (*offset < durable_tail && !bound_on_word && caused_at(*offset, before).is_none()).then(
                || {
                    format!(
                        "cuts durable data (the crash before left the durable tail at \
                     {durable_tail}) with no damage at rest or out-of-contract fault reaching \
                     offset {offset} before the open"
                    )
                },
            )
        }
        Alarm::FrameSkipped { base, records } => {
            let end = base + records;
            let hit = (*base..end).any(|o| caused_at(o, alarm.index).is_some());
            (!hit).then(|| {
                format!("with no damage at rest or out-of-contract fault reaching [{base}, {end})")
            })
        }
        Alarm::RecordsSkipped { base, records } => {
            let end = base + records;
            let hit =
                (*base..end).any(|o| reach_at(facts, tp, LOG_FILES, o, alarm.index).is_some());
            (!hit).then(|| {
                format!(
                    "in a CRC-valid frame with no out-of-contract fault reaching [{base}, {end}) \
                     (no in-contract fault writes such a frame)"
                )
            })
        }
        Alarm::JunkTrimmed { .. } => {
            let caused = faults(facts).any(|(i, kind, t, _)| {
                i < before
                    && t == Some(tp)
                    && matches!(
                        kind,
                        FaultKind::BitFlip {
                            file: FileKind::Segment,
                            ..
                        } | FaultKind::Misdirected {
                            file: FileKind::Segment,
                            ..
                        } | FaultKind::LatentSector {
                            file: FileKind::Segment,
                            ..
                        } | FaultKind::TornWrite {
                            file: FileKind::Segment
                        } | FaultKind::LostWrite {
                            file: FileKind::Segment
                        } | FaultKind::LostFsync {
                            file: FileKind::Segment,
                            ..
                        }
                    )
            });
            (!caused).then(|| "with no fault on its segments before the open".into())
        }
        // Dropped in-flight records: the kill of the incarnation that raised it dropped
        // the futures carrying them (its tasks go, and raise, after the restart).
        Alarm::Poisoned { cancelled: true } => {
            let killed = facts
                .crash_ending(alarm.incarnation)
                .is_some_and(|c| c.index < alarm.index);
            (!killed).then(|| {
                "with records in flight dropped and no kill of the incarnation that raised it"
                    .into()
            })
        }
        // An I/O error on the log's files in this incarnation, or damage its
        // verification re-read found (a frame fsynced, then read back bad). Not one on
        // `consumer.offset`: the store persists the frontier, and its failure is the
        // store's error, never the log's poison.
        Alarm::Poisoned { cancelled: false } => {
            let since = restart_of(facts, alarm.incarnation);
            let caused = faults(facts).any(|(i, kind, t, _)| {
                since <= i
                    && i < alarm.index
                    && t == Some(tp)
                    && (matches!(
                        kind,
                        FaultKind::FsyncEio { file } | FaultKind::Enospc { file }
                            if *file != FileKind::ConsumerOffset
                    ) || kind.segment_damage().is_some())
            });
            (!caused).then(|| {
                "with no fsync error or ENOSPC on the log's files, nor damage to its segments, \
                 in this incarnation"
                    .into()
            })
        }
        Alarm::FrontierReset { .. } => {
            // A replace that returned rewrote the file whole: only a fault after the last
            // such one began can have made it unreadable.
            let rewritten = last_replace_begun(facts, tp, alarm.index);
            let caused = faults(facts).any(|(i, kind, t, _)| {
                rewritten < i
                    && i < alarm.index
                    && t == Some(tp)
                    && matches!(
                        kind,
                        FaultKind::BitFlip {
                            file: FileKind::ConsumerOffset,
                            ..
                        } | FaultKind::LostFsync {
                            file: FileKind::ConsumerOffset,
                            ..
                        } | FaultKind::Misdirected { .. }
                            | FaultKind::TornWrite {
                                file: FileKind::ConsumerOffset
                            }
                    )
            });
            (!caused).then(|| {
                "with no fault on its consumer.offset since the last replace of it that \
                 returned began"
                    .into()
            })
        }
        Alarm::FrontierClamped { value, clamped } if value > clamped => {
            // The HWM fell under the frontier: a clamp below it, in this open or an
            // earlier one killed before it loaded the frontier.
            let clamp = facts
                .alarms
                .clamps(tp)
                .any(|c| c.index < alarm.index && c.hwm < *value);
            // Or a fault that moved one of the two apart: lost frames or the `hwm` word
            // (the HWM fell), or `consumer.offset` (the frontier word rose).
            let reach = facts.reaches_before(tp, alarm.index).any(|r| {
                (r.on(LOG_FILES) || r.on(HWM_FILE) || r.file == FileKind::ConsumerOffset)
                    && r.live_at(facts, alarm.index, None)
                    && r.meets(OffsetRange {
                        start: *clamped,
                        end: *value,
                    })
            });
            (!clamp && !reach).then(|| {
                "above the HWM with no clamp below it and no out-of-contract fault on the \
                 partition's log, hwm or consumer.offset reaching the gap"
                    .into()
            })
        }
        Alarm::HiddenExposed { .. } => {
            let wal_damaged = facts.alarms.store.iter().any(|a| {
                a.incarnation == alarm.incarnation
                    && a.index < alarm.index
                    && matches!(a.alarm, Alarm::WalDamaged { .. })
            });
            (!wal_damaged).then(|| "with no WAL damage reported by the same open".into())
        }
        _ => None,
    }
}

/// Rule 2, store-wide alarms.
fn store_uncaused(facts: &Facts<'_>, alarm: &AlarmFact) -> Option<String> {
    let open = restart_of(facts, alarm.incarnation);
    let wal_fault = |i: usize, kind: &FaultKind| {
        i < alarm.index
            && matches!(
                kind,
                FaultKind::TornWrite {
                    file: FileKind::Wal
                } | FaultKind::LostWrite {
                    file: FileKind::Wal
                } | FaultKind::BitFlip {
                    file: FileKind::Wal,
                    ..
                } | FaultKind::Misdirected {
                    file: FileKind::Wal,
                    ..
                } | FaultKind::LostFsync {
                    file: FileKind::Wal,
                    ..
                } | FaultKind::FsyncEio {
                    file: FileKind::Wal
                }
            )
    };
    match &alarm.alarm {
        Alarm::TopicRefused { topic } => facts
            .reaches
            .iter()
            .all(|r| r.fault_index > alarm.index || r.topic.as_deref() != Some(topic.as_str()))
            .then(|| format!("no out-of-contract fault hit the topic.conf of {topic} before it")),
        Alarm::WalDamaged { .. } => faults(facts)
            .all(|(i, kind, _, _)| !wal_fault(i, kind))
            .then(|| "no fault hit a WAL file before it".into()),
        Alarm::WalCheckpointUnreadable => {
            let caused = faults(facts).any(|(i, kind, _, path)| {
                i < alarm.index
                    && path.is_some_and(|p| p.contains("checkpoint"))
                    && (wal_fault(i, kind) || contract_out(kind))
            });
            (!caused).then(|| "no fault hit the WAL checkpoint before it".into())
        }
        Alarm::WalPoisoned => {
            let caused = faults(facts).any(|(i, kind, _, _)| {
                open <= i
                    && i < alarm.index
                    && matches!(
                        kind,
                        FaultKind::FsyncEio {
                            file: FileKind::Wal
                        } | FaultKind::Enospc {
                            file: FileKind::Wal
                        }
                    )
            });
            (!caused).then(|| "no fsync error or ENOSPC on a WAL file in this incarnation".into())
        }
        _ => None,
    }
}

/// The history index where the last `consumer.offset` replace of `tp` that returned
/// before `before` began (0 when none did).
fn last_replace_begun(facts: &Facts<'_>, tp: &TopicPartition, before: usize) -> usize {
    let mut begun = 0;
    let mut last = 0;
    for a in facts.alarms.of(tp).iter().take_while(|a| a.index < before) {
        match a.alarm {
            Alarm::FrontierPersisting { .. } => begun = a.index,
            Alarm::FrontierPersisted { .. } => last = begun,
            _ => {}
        }
    }
    last
}

fn contract_out(kind: &FaultKind) -> bool {
    super::contract::contract(kind) == Contract::Out
}

/// Rule 3.
fn counters(facts: &Facts<'_>, report: &mut AlarmsReport) {
    for (index, event) in facts.history.events().iter().enumerate() {
        let EventKind::EngineCounters {
            tp,
            recorded_loss_records,
            skipped_records,
        } = &event.kind
        else {
            continue;
        };
        let so_far = |a: &&AlarmFact| a.incarnation == event.incarnation && a.index < index;
        let alarms = facts.alarms.of(tp);
        let clamped: u64 = alarms
            .iter()
            .filter(so_far)
            .filter_map(|a| match a.alarm {
                Alarm::Clamp { lost, .. } => Some(lost),
                _ => None,
            })
            .fold(0, u64::saturating_add);
        let skipped: u64 = alarms
            .iter()
            .filter(so_far)
            .filter_map(|a| match a.alarm {
                Alarm::FrameSkipped { records, .. } | Alarm::RecordsSkipped { records, .. } => {
                    Some(records)
                }
                _ => None,
            })
            .fold(0, u64::saturating_add);
        if clamped != *recorded_loss_records || skipped != *skipped_records {
            report.violations.push(Violation {
                message: format!(
                    "the engine's counters of {tp} at t={}ms inc {} (recorded loss \
                     {recorded_loss_records}, skipped {skipped_records}) disagree with its \
                     alarms in that incarnation (clamps {clamped}, skips {skipped})",
                    event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(tp, None, None)],
                events: vec![index],
            });
        }
    }
}
