//! `no_corrupt_delivery`: wrong bytes are never returned, and damage at rest that the
//! engine read is detected.
//!
//! 1. Every delivery is intact: its payload carries a produce id, that id was produced,
//!    and key and payload equal what was produced under it.
//! 2. Every placed segment damage (a bit flip or misdirected write whose frame the
//!    world located) shows up in the engine's own account after it: an alarm that cuts
//!    the log at or below the damaged frame (R1/R2, or the clamp that follows R1), a
//!    refusal at a bad region at or below it, or a consume-time skip of its frame. A
//!    cut or refusal inside the damage counts when every view its open read (after the
//!    damage, and after a power loss for damage on the platter only) holds valid frames
//!    up to it: a later write covered the damage below, the cut took the rest.
//!    Silent truncation is not detection: since the engine reports every cut, an
//!    above-HWM cut counts only through its alarm. Needing nothing (excuse rows
//!    `damage_never_scanned`, `damage_deleted_before_scan`): no open scanned the
//!    partition after the damage, or the open that did found the log start past it.
//!    Unplaced damage (no frame held the byte) is left to rule 1 and `no_lost_ack`.
//!    A misdirected write lands on the platter while the page cache keeps the right
//!    bytes, and a flip the page cache did not take (`flip_missed_cache`: a pending
//!    write or truncation decides the byte) changes only the platter too, so only an
//!    open after a power loss (which rebuilds the cache from the platter) reads either;
//!    an open after a process crash does not. Damage that a later
//!    write covered before the first open that reads it is owed nothing either
//!    (`damage_repaired_before_scan`): every view of the disk the world took for that
//!    open, before it gave its account of the partition, holds valid frames through the
//!    damaged offsets.

use serde::Serialize;

use super::accounting::CorruptReason;
use super::facts::{Facts, fault_name};
use super::{Accounting, RecordRef, Violation};
use crate::history::{Alarm, EventKind, Incarnation, TopicPartition};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DamageOutcome {
    /// Detected by the alarm at this history index.
    Detected { evidence_index: usize },
    /// No open scanned the partition after it (`damage_never_scanned`).
    NeverScanned,
    /// Retention deleted it before an open scanned it (`damage_deleted_before_scan`).
    DeletedBeforeScan { log_start_index: usize },
    /// A later write covered it before an open read it (`damage_repaired_before_scan`):
    /// the disk the open of this restart read holds intact frames there.
    RepairedBeforeScan { restart_index: usize },
    /// The world could not place it in a frame.
    Unplaced,
    /// Scanned and not detected (a violation).
    Undetected { restart_index: usize },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Damage {
    pub fault_index: usize,
    pub tp: Option<TopicPartition>,
    pub outcome: DamageOutcome,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CorruptionReport {
    pub damages: Vec<Damage>,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> CorruptionReport {
    let events = facts.history.events();
    let mut report = CorruptionReport::default();
    for c in &accounting.corrupt {
        let EventKind::Delivery {
            attempt,
            committed_at_ms,
            ..
        } = &events[c.index].kind
        else {
            unreachable!("corrupt deliveries index Delivery events");
        };
        let what = match (&c.reason, c.id) {
            (CorruptReason::NoId(e), _) => format!("payload carries no produce id ({e})"),
            (CorruptReason::PayloadDiffers, Some(id)) => {
                format!("payload differs from the one produced as id {id}")
            }
            (CorruptReason::KeyDiffers, Some(id)) => {
                format!("key differs from the one produced as id {id}")
            }
            (_, None) => unreachable!("only NoId lacks an id"),
        };
        report.violations.push(Violation {
            message: format!(
                "corrupt delivery of {} offset {} (attempt {attempt}, committed_at_ms \
                 {committed_at_ms}) at t={}ms inc {}: {what}",
                c.tp,
                c.offset,
                facts.at_ms(c.index),
                facts.incarnation_at(c.index),
            ),
            records: vec![RecordRef::new(&c.tp, Some(c.offset), c.id)],
            events: vec![c.index],
        });
    }
    for (id, deliveries) in &accounting.unexpected {
        let first = deliveries[0];
        let EventKind::Delivery { tp, offset, .. } = &events[first].kind else {
            unreachable!("unexpected deliveries index Delivery events");
        };
        report.violations.push(Violation {
            message: format!(
                "delivered produce id {id} was never produced: {tp} offset {offset} at t={}ms \
                 inc {} ({} delivery(ies))",
                facts.at_ms(first),
                facts.incarnation_at(first),
                deliveries.len()
            ),
            records: vec![RecordRef::new(tp, Some(*offset), Some(*id))],
            events: deliveries.clone(),
        });
    }
    for (fault_index, event) in events.iter().enumerate() {
        let EventKind::Fault { kind, tp, .. } = &event.kind else {
            continue;
        };
        let Some((offsets, below_hwm)) = kind.segment_damage() else {
            continue;
        };
        let platter_only = matches!(kind, crate::history::FaultKind::Misdirected { .. })
            || facts.flip_missed_cache(fault_index);
        let outcome = judge(facts, fault_index, tp.as_ref(), offsets, platter_only);
        if let DamageOutcome::Undetected { restart_index } = outcome {
            let place = tp
                .as_ref()
                .map_or_else(|| "an unnamed partition".to_owned(), ToString::to_string);
            let range =
                offsets.map_or_else(|| "unknown offsets".to_owned(), |r| format!("offsets {r}"));
            report.violations.push(Violation {
                message: format!(
                    "{} injected at t={}ms into a segment of {place} ({range}, {}) was scanned \
                     by the restart at t={}ms but never detected: no alarm of {place} cut the \
                     log at or below it, refused there or skipped its frame",
                    fault_name(kind),
                    event.at_ms,
                    match below_hwm {
                        Some(true) => "below the persisted HWM",
                        _ => "position relative to the persisted HWM unknown",
                    },
                    facts.at_ms(restart_index),
                ),
                records: tp
                    .iter()
                    .map(|tp| RecordRef::new(tp, offsets.map(|r| r.start), None))
                    .collect(),
                events: vec![fault_index, restart_index],
            });
        }
        report.damages.push(Damage {
            fault_index,
            tp: tp.clone(),
            outcome,
        });
    }
    report
}

fn judge(
    facts: &Facts<'_>,
    fault_index: usize,
    tp: Option<&TopicPartition>,
    offsets: Option<crate::history::OffsetRange>,
    platter_only: bool,
) -> DamageOutcome {
    let (Some(tp), Some(range)) = (tp, offsets) else {
        // Unplaced damage (no frame held the byte): nothing to demand detection of; the
        // byte checks above still apply.
        return DamageOutcome::Unplaced;
    };
    // Detected: an alarm after the damage that names its frame or cuts below it.
    let alarms = &facts.alarms;
    // Or that cuts inside it at `x`, where every view the open began after the damage
    // (after a power loss, for damage on the platter only) read holds valid frames up
    // to `x`: a later write covered the damage below the cut, the cut took the rest.
    let repaired_up_to = |a: &super::alarms::AlarmFact, x: u64| {
        let views = alarms.views_before(tp, a.incarnation, a.index);
        range.start < x
            && x < range.end
            && facts.restarts.get(&a.incarnation).is_some_and(|&restart| {
                restart > fault_index
                    && (!platter_only || facts.power_loss_between(fault_index, restart))
            })
            && !views.is_empty()
            && views.iter().all(|d| d.tail >= x)
    };
    let evidence = alarms.of(tp).iter().find(|a| {
        a.index > fault_index
            && match &a.alarm {
                Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. } => {
                    *offset <= range.start || repaired_up_to(a, *offset)
                }
                Alarm::FrameSkipped { base, records } | Alarm::RecordsSkipped { base, records } => {
                    *base < range.end && range.start < base + records
                }
                // The open refused at a bad region at or below the damaged frame.
                Alarm::Refused { .. } => alarms
                    .disk_at(tp, a.incarnation)
                    .and_then(|d| d.bad.as_ref())
                    .is_some_and(|bad| bad.offset <= range.start || repaired_up_to(a, bad.offset)),
                Alarm::Clamp { hwm, .. } => *hwm <= range.start,
                _ => false,
            }
    });
    // Or cut away: damage that lands while an open runs, above a cut that open already
    // announced (the engine raises the alarm, then truncates), is in bytes the truncation
    // removes; the world placed it in frames that still existed. The truncation took
    // effect if that open finished, or, when it never did, if the disk the next restart
    // found ends the log at or below the damage with nothing bad (an open that failed
    // after its truncation).
    let evidence = evidence.or_else(|| {
        let incarnation = facts.incarnation_at(fault_index);
        let opened = |after: bool| {
            alarms.of(tp).iter().any(|a| {
                (a.index > fault_index) == after
                    && a.incarnation == incarnation
                    && matches!(a.alarm, Alarm::LogOpened { .. })
            })
        };
        let opened_after = opened(true);
        // The restart's own view: later ones may show what the next open wrote since.
        let truncated_before_next = !opened(false)
            && alarms
                .disk_at(tp, incarnation + 1)
                .is_some_and(|d| d.tail <= range.start && d.bad.is_none());
        alarms.of(tp).iter().find(|a| {
            (opened_after || truncated_before_next)
                && a.index < fault_index
                && a.incarnation == incarnation
                && matches!(&a.alarm, Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. }
                    if *offset <= range.start)
        })
    });
    if let Some(a) = evidence {
        return DamageOutcome::Detected {
            evidence_index: a.index,
        };
    }
    // The first open after the damage that scanned `tp` (the engine's account says it
    // opened or refused it) through a page cache that shows the damage: for damage on
    // the platter only, an open after a power loss.
    let scan = alarms.of(tp).iter().find(|a| {
        a.index > fault_index
            && facts.restarts.contains_key(&a.incarnation)
            && facts.restarts[&a.incarnation] > fault_index
            && (!platter_only
                || facts.power_loss_between(fault_index, facts.restarts[&a.incarnation]))
            && matches!(a.alarm, Alarm::LogOpened { .. } | Alarm::Refused { .. })
    });
    let Some(scan) = scan else {
        return DamageOutcome::NeverScanned;
    };
    let restart_index = facts.restarts[&scan.incarnation];
    // Deleted before the scan, as the log start that open found shows (its account, or
    // for a refusal the disk it read).
    let log_start = match scan.alarm {
        Alarm::LogOpened { log_start, .. } => Some(log_start),
        _ => alarms.disk_at(tp, scan.incarnation).map(|d| d.log_start),
    };
    if log_start.is_some_and(|s| s >= range.end) {
        return DamageOutcome::DeletedBeforeScan {
            log_start_index: scan.index,
        };
    }
    // Covered by a later write: every view of the disk this open read holds valid
    // frames through the damage. Settled only by an open after a power loss; a flip the
    // page cache did not take (a pending write over it) may still show at one. Only the
    // views taken before the open's account of `tp` (its `LogOpened` or refusal at
    // history index `by`) count: damage landing after the log's scan finished (while
    // the store's open replays the WAL, say) was not read by it.
    // A view taken while the open ran (every view after its first: damage landed
    // meanwhile) whose valid log ends at a bad region below this damage says nothing of
    // it: an open that read it there would have cut or refused at that region, which
    // is detection above (fresh quick 3900018188: a flip at offset 3 while the open
    // ran, over a misdirected write at 64 that the write-back after a process crash
    // had repaired).
    // Only when the open's own account (its `LogOpened` at `by`) runs past that bad
    // region, so it did not cut there: an account that ends at or below it says the
    // open read that view, and a silent cut there is then undetected damage.
    let intact = |incarnation: Incarnation, by: usize| {
        let views = alarms.views_before(tp, incarnation, by);
        let account_tail = facts.history.events().get(by).and_then(|e| match &e.kind {
            EventKind::EngineAlarm {
                alarm: Alarm::LogOpened { tail, .. },
                ..
            } => Some(*tail),
            _ => None,
        });
        let views: Vec<_> = views
            .iter()
            .enumerate()
            .filter(|(i, d)| {
                *i == 0
                    || d.bad.as_ref().is_none_or(|b| {
                        b.offset >= range.start || account_tail.is_none_or(|t| t <= b.offset)
                    })
            })
            .map(|(_, d)| d)
            .collect();
        !views.is_empty()
            && views.iter().all(|d| {
                d.tail >= range.end && d.bad.as_ref().is_none_or(|bad| bad.offset >= range.end)
            })
    };
    if intact(scan.incarnation, scan.index) {
        let settled = alarms.of(tp).iter().find(|a| {
            a.index >= scan.index
                && facts.restarts.get(&a.incarnation).is_some_and(|&restart| {
                    restart > fault_index && facts.power_loss_between(fault_index, restart)
                })
                && matches!(a.alarm, Alarm::LogOpened { .. } | Alarm::Refused { .. })
        });
        return match settled {
            Some(a) if intact(a.incarnation, a.index) => DamageOutcome::RepairedBeforeScan {
                restart_index: facts.restarts[&a.incarnation],
            },
            Some(a) => DamageOutcome::Undetected {
                restart_index: facts.restarts[&a.incarnation],
            },
            None => DamageOutcome::NeverScanned,
        };
    }
    DamageOutcome::Undetected { restart_index }
}
