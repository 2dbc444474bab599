//! `alarms_explained`: every alarm the engine raises has a cause, agrees with the
//! oracle's own decode of the disk, and its counters add up. An alarm without a cause is
//! a bug: it costs availability, and as an excuse it would hide loss.
//!
//! 1. **The open's account agrees with the disk it read.** At every restart the world
//!    decoded each partition as the open reads it (the page cache: after a power loss,
//!    the durable image) with the reference decoder (`DiskAtOpen`). An open's cut (R1/R2 at an offset), refusal (R3), clamp (R4:
//!    persisted HWM, new HWM, records lost) and final account (`log_opened`: log start,
//!    HWM, tail) must be what that decode says, and an open that finished must have
//!    raised every alarm the decode demands, and never wrote an `hwm` word below the
//!    HWM the decode gives (nor, at any time, below a word issued earlier in its
//!    incarnation). A store open that reported WAL damage and
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
//!    - WAL damage at open: a fault on a WAL file; an unreadable checkpoint: a flip of
//!      the file the open read (named at its restart, or marked while it ran) that it
//!      could meet, or an out-of-contract fault on the checkpoint's files (since the
//!      restart, when the world read the file whole then); a hidden tail exposed: WAL
//!      damage reported by the same open;
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
//!
//! Rule 1 lives in `disk.rs`, rule 2 in `causes.rs`, rule 3 here.

use serde::Serialize;

use super::alarms::AlarmFact;
use super::contract::{HWM_FILE, LOG_FILES};
use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{
    Alarm, DiskView, EventKind, FaultKind, FileKind, Incarnation, Offset, OffsetRange, OpenRule,
    TopicPartition,
};

mod causes;
mod disk;
mod salvage_account;
mod wal_account;

use causes::{store_uncaused, uncaused};
use disk::{against_disk, lowered_words, missing_alarms, missing_exposures};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AlarmsReport {
    /// Alarms judged.
    pub alarms: usize,
    /// Opens whose account was compared with the disk they read.
    pub opens_checked: usize,
    /// WAL opens whose damage account was compared with the files they read (rule 4).
    pub wal_opens_checked: usize,
    /// `hwm` words an open wrote, compared with the HWM its disk gives (rule 1).
    pub words_checked: usize,
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
    lowered_words(facts, &mut report);
    counters(facts, &mut report);
    wal_account::check(facts, &mut report);
    salvage_account::check(facts, &mut report);
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
