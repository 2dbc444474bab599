//! `alarms_explained`, rule 5: an open's R2 salvage was offered what the reference
//! decoder reads past the hole (`PastHoleAtOpen`). An open that cut at a hole and
//! finished the partition's open (`log_opened`) raised `r2_salvaged` with `offered`
//! equal to the readable records past the hole, and none when there were none. The
//! checkers trust that alarm (and the `salvage_wrote` the world reads from the seqs it
//! names) to know what a salvage kept: a salvage the alarm does not account for would
//! make an excuse of a loss it could have prevented.
//!
//! Judged for each such open with no fault on the partition between its restart and
//! its `log_opened`: damage that lands while the open reads changes what it was
//! offered. Such a salvage also wrote an entry (plain, a copy or a revival) of every
//! produce id listed past the hole, unless a fault on the WAL came while that open ran:
//! it plans one per distinct record content, and a payload carries its produce id, so
//! an id it was offered and did not write is a record it dropped. And every
//! `r2_salvaged` names as many WAL seqs as it says it wrote, and the entries the world
//! found at them (`salvage_wrote`) are that many plain entries or revivals and that
//! many copies: no more, and fewer only after a fault on the WAL while that open ran
//! (it may have damaged them before the world read them back).

use super::AlarmsReport;
use crate::check::facts::Facts;
use crate::check::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, FileKind};

pub fn check(facts: &Facts<'_>, report: &mut AlarmsReport) {
    offered(facts, report);
    written(facts, report);
}

/// Each `r2_salvaged` against the seqs it names and what the world found there.
fn written(facts: &Facts<'_>, report: &mut AlarmsReport) {
    let events = facts.history.events();
    for (index, event) in events.iter().enumerate() {
        let EventKind::EngineAlarm {
            tp: Some(tp),
            alarm:
                Alarm::Salvaged {
                    kept,
                    copied,
                    first_seq,
                    end_seq,
                    ..
                },
            ..
        } = &event.kind
        else {
            continue;
        };
        let found = events.get(index + 1).and_then(|e| match &e.kind {
            EventKind::SalvageWrote {
                tp: t,
                kept,
                copied,
            } if t == tp => Some((kept.len() as u64, copied.len() as u64)),
            _ => None,
        });
        let named = end_seq.saturating_sub(*first_seq);
        // A fault on the WAL while the open ran may have damaged what the salvage had
        // written before the world read it back: then fewer, never more, may be found.
        let restart = facts.restarts.get(&event.incarnation).copied().unwrap_or(0);
        let wal_hit = events[restart..index].iter().any(|e| {
            matches!(&e.kind, EventKind::Fault { kind, .. } if kind.file() == Some(FileKind::Wal))
        });
        let (found_kept, found_copied) = found.unwrap_or((0, 0));
        let found_agrees = (found_kept, found_copied) == (*kept, *copied)
            || (wal_hit && found_kept <= *kept && found_copied <= *copied);
        let agrees = named == kept + copied && found_agrees && (named == 0) == found.is_none();
        if !agrees {
            report.violations.push(Violation {
                message: format!(
                    "the R2 salvage of {tp} in inc {} said it kept {kept} and copied \
                     {copied} at WAL seqs [{first_seq}, {end_seq}), where the WAL held {}",
                    event.incarnation,
                    found.map_or("nothing it wrote".to_owned(), |(k, c)| format!(
                        "{k} plain entries or revivals and {c} copies"
                    ))
                ),
                records: Vec::new(),
                events: vec![index],
            });
        }
    }
}

/// Each open that cut at a hole against what lay past it.
fn offered(facts: &Facts<'_>, report: &mut AlarmsReport) {
    let events = facts.history.events();
    for (index, event) in events.iter().enumerate() {
        let EventKind::PastHoleAtOpen { tp, held } = &event.kind else {
            continue;
        };
        let inc = event.incarnation;
        let alarms = facts.alarms.of(tp);
        let Some(opened) = alarms
            .iter()
            .find(|a| a.incarnation == inc && matches!(a.alarm, Alarm::LogOpened { .. }))
        else {
            continue;
        };
        // A corrupt write is the open's own write-back, after the salvage read.
        let damaged_meanwhile = events[index..opened.index].iter().any(|e| {
            matches!(&e.kind, EventKind::Fault { tp: Some(t), kind, .. }
                if t == tp && !matches!(kind, crate::history::FaultKind::CorruptWrite { .. }))
        });
        if damaged_meanwhile {
            continue;
        }
        let offered: Vec<(u64, usize)> = alarms
            .iter()
            .filter(|a| a.incarnation == inc && a.index < opened.index)
            .filter_map(|a| match a.alarm {
                Alarm::Salvaged { offered, .. } => Some((offered, a.index)),
                _ => None,
            })
            .collect();
        let expected = held.len() as u64;
        let agrees = match offered.as_slice() {
            [] => expected == 0,
            [(n, _)] => *n == expected,
            _ => false,
        };
        if let [(_, salvaged)] = offered.as_slice() {
            dropped(facts, report, (index, *salvaged), tp, held);
        }
        if !agrees {
            report.violations.push(Violation {
                message: format!(
                    "the open of {tp} in inc {inc} cut at a hole with {expected} readable \
                     record(s) past it (reference decoder) but its salvage {}",
                    match offered.as_slice() {
                        [] => "raised no r2_salvaged".to_owned(),
                        [(n, _)] => format!("was offered {n}"),
                        _ => "raised r2_salvaged more than once".to_owned(),
                    }
                ),
                records: held
                    .iter()
                    .take(1)
                    .map(|c| RecordRef::new(tp, Some(c.offset), Some(c.id)))
                    .collect(),
                events: std::iter::once(index)
                    .chain(std::iter::once(opened.index))
                    .chain(offered.iter().map(|o| o.1))
                    .collect(),
            });
        }
    }
}

/// The ids listed past the hole (`listing`, the history index of `PastHoleAtOpen`) that
/// the salvage reported at `salvaged` wrote no entry of, as violations; none when a
/// fault on the WAL came between the open's restart and the alarm.
fn dropped(
    facts: &Facts<'_>,
    report: &mut AlarmsReport,
    (listing, salvaged): (usize, usize),
    tp: &crate::history::TopicPartition,
    held: &[crate::history::HeldCopy],
) {
    let events = facts.history.events();
    let inc = events[listing].incarnation;
    let restart = facts.restarts.get(&inc).copied().unwrap_or(0);
    let wal_hit = events[restart..salvaged].iter().any(
        |e| matches!(&e.kind, EventKind::Fault { kind, .. } if kind.file() == Some(FileKind::Wal)),
    );
    if wal_hit {
        return;
    }
    let wrote = |id| {
        facts
            .salvage_wrote
            .get(&(tp.clone(), id))
            .is_some_and(|at| at.iter().any(|&w| w == salvaged + 1))
    };
    let mut seen = std::collections::BTreeSet::new();
    for copy in held {
        if !seen.insert(copy.id) || wrote(copy.id) {
            continue;
        }
        report.violations.push(Violation {
            message: format!(
                "the R2 salvage of {tp} in inc {inc} was offered id {} (offset {}) past \
                 the hole and wrote no WAL entry of it",
                copy.id, copy.offset
            ),
            records: vec![RecordRef::new(tp, Some(copy.offset), Some(copy.id))],
            events: vec![listing, salvaged],
        });
    }
}
