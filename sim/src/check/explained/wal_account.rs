//! `alarms_explained`, rule 4: the open's account of the WAL's damage
//! (`wal_damaged {corrupt_entries, skipped_bytes}`) agrees with the reference decoder's
//! read of the same files at the restart (`WalAtOpen`): the same two counts, and no
//! alarm when the WAL held no damage. And `wal_checkpoint_unreadable` exactly when the
//! reference decoder could not read the checkpoint (`CheckpointAtOpen`): a replay of
//! every entry is excused by that alarm (`checkpoint_lost`), so the engine may not
//! claim it of a checkpoint that reads. Rule 1 asks whether a fault caused the alarm;
//! this asks whether the engine counted what the fault did.
//!
//! Judged for each incarnation whose store open completed (its WAL open comes first)
//! with no fault on a WAL file between the restart and then: damage that lands while
//! the open reads would make either count right.

use super::AlarmsReport;
use crate::check::Violation;
use crate::check::facts::Facts;
use crate::history::{Alarm, EventKind};
use crate::world::node::wal_dir;
use std::path::Path;

pub fn check(facts: &Facts<'_>, report: &mut AlarmsReport) {
    let events = facts.history.events();
    let wal_dir = wal_dir();
    for (index, event) in events.iter().enumerate() {
        let EventKind::WalAtOpen {
            skipped_bytes,
            corrupt_entries,
        } = event.kind
        else {
            continue;
        };
        let inc = event.incarnation;
        let Some(&opened) = facts.opened_at.get(&inc) else {
            continue;
        };
        let damaged_meanwhile = events[index..opened].iter().any(|e| {
            matches!(&e.kind, EventKind::Fault { path: Some(p), .. }
                if Path::new(p).starts_with(&wal_dir))
        });
        if damaged_meanwhile {
            continue;
        }
        report.wal_opens_checked += 1;
        check_checkpoint_read(facts, report, index, opened);
        let reported: Vec<(u64, u64, usize)> = facts
            .alarms
            .store
            .iter()
            .filter(|a| a.incarnation == inc && a.index < opened)
            .filter_map(|a| match a.alarm {
                Alarm::WalDamaged {
                    corrupt_entries,
                    skipped_bytes,
                } => Some((skipped_bytes, corrupt_entries, a.index)),
                _ => None,
            })
            .collect();
        let expected = (skipped_bytes, corrupt_entries);
        let agrees = match reported.as_slice() {
            [] => expected == (0, 0),
            [(s, c, _)] => (*s, *c) == expected,
            _ => false,
        };
        if !agrees {
            let said: Vec<String> = reported
                .iter()
                .map(|(s, c, _)| format!("skipped_bytes={s} corrupt_entries={c}"))
                .collect();
            report.violations.push(Violation {
                message: format!(
                    "the WAL open of inc {inc} at t={}ms reported {} but its files held \
                     skipped_bytes={skipped_bytes} corrupt_entries={corrupt_entries} \
                     (reference decoder)",
                    event.at_ms,
                    if said.is_empty() {
                        "no damage".to_owned()
                    } else {
                        said.join(", ")
                    },
                ),
                records: Vec::new(),
                events: std::iter::once(index)
                    .chain(reported.iter().map(|r| r.2))
                    .collect(),
            });
        }
    }
}

/// The open of the incarnation whose `WalAtOpen` is at `index` (completed at `opened`)
/// said `wal_checkpoint_unreadable` exactly when the world's read found it so.
fn check_checkpoint_read(
    facts: &Facts<'_>,
    report: &mut AlarmsReport,
    index: usize,
    opened: usize,
) {
    let event = &facts.history.events()[index];
    let inc = event.incarnation;
    let Some(read) = facts.checkpoint_at_open(inc) else {
        return;
    };
    let said: Vec<usize> = facts
        .alarms
        .store
        .iter()
        .filter(|a| {
            a.incarnation == inc
                && a.index < opened
                && matches!(a.alarm, Alarm::WalCheckpointUnreadable)
        })
        .map(|a| a.index)
        .collect();
    let unreadable = read.is_none();
    if said.is_empty() == unreadable {
        report.violations.push(Violation {
            message: format!(
                "the WAL open of inc {inc} at t={}ms {} but the reference decoder {} the \
                 checkpoint",
                event.at_ms,
                if said.is_empty() {
                    "replayed from the checkpoint"
                } else {
                    "said wal_checkpoint_unreadable"
                },
                if unreadable { "could not read" } else { "read" },
            ),
            records: Vec::new(),
            events: std::iter::once(index).chain(said).collect(),
        });
    }
}
