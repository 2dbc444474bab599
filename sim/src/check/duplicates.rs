//! `bounded_duplicates`: duplicates (one produce id at two offsets) happen only
//! around crashes, and each crash causes at most as many as its hidden tails held.
//!
//! Why a hidden tail explains a duplicate: records in `[persisted_hwm, durable_tail)`
//! at a crash are hidden by recovery and re-committed by the ingress WAL at fresh
//! offsets, at or past the durable tail; once the HWM passes the hidden copies both are
//! visible. So for copies of one id sorted by (partition, offset), each copy after the
//! first must pair with the previous copy lying in some crash's hidden tail, that
//! crash coming before the later copy was first delivered. A crash explains at most
//! its bound `sum over partitions of (durable_tail - persisted_hwm)`.
//!
//! Also explained: a pair whose earlier copy was damaged at rest (a bit flip or
//! misdirected write covering its offset) after it was delivered and before the later
//! copy was: that copy is unreadable from then on, so the replay's check for visible
//! copies does not find it and the WAL commits the record again (default seed 196).

use serde::Serialize;
use std::collections::BTreeMap;

use super::accounting::Copy;
use super::facts::{CrashFact, Facts};
use super::{Accounting, RecordRef, Violation, list};
use crate::history::{EventKind, Incarnation, ProduceId, TopicPartition};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrashBudget {
    pub crash_index: usize,
    pub at_ms: u64,
    pub incarnation: Incarnation,
    /// Sum over partitions of `durable_tail - persisted_hwm`.
    pub bound: u64,
    /// Duplicates attributed to this crash.
    pub count: u64,
    /// Partitions without a bound: an out-of-contract fault hit them in the
    /// incarnation this crash ended (partition, fault index).
    pub unbounded: Vec<(TopicPartition, usize)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DuplicatesReport {
    /// Extra copies in the run.
    pub duplicates: u64,
    pub crashes: Vec<CrashBudget>,
    /// Duplicates accepted only by the per-partition total (hidden tails summed over
    /// the crashes before them), not by a single crash's hidden tail.
    pub aggregated: u64,
    /// Duplicates whose earlier copy was damaged at rest before the later copy was
    /// delivered: the earlier copy became unreadable (skipped, or not seen by the
    /// replay's check for visible copies), and the ingress WAL committed the record
    /// again rather than lose it.
    pub after_damage: u64,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> DuplicatesReport {
    let mut report = DuplicatesReport {
        duplicates: accounting.counts().duplicated,
        crashes: facts
            .crashes
            .iter()
            .map(|c| CrashBudget {
                crash_index: c.index,
                at_ms: c.at_ms,
                incarnation: c.incarnation,
                bound: c
                    .partitions
                    .values()
                    .map(|p| p.durable_tail.saturating_sub(p.persisted_hwm))
                    .sum(),
                count: 0,
                unbounded: c
                    .partitions
                    .keys()
                    .filter_map(|tp| {
                        facts
                            .out_of_contract_in_incarnation(tp, c.incarnation)
                            .map(|f| (tp.clone(), f))
                    })
                    .collect(),
            })
            .collect(),
        aggregated: 0,
        after_damage: 0,
        violations: Vec::new(),
    };
    let wal_damage = first_wal_damage(facts);
    // Attribute every pair first, then explain the leftovers with final budgets.
    let mut leftovers = Vec::new();
    for (id, copies) in &accounting.duplicated {
        for pair in copies.windows(2) {
            let [earlier, later] = pair else {
                unreachable!("windows(2)");
            };
            // After a truncation (R1, R2) a re-commit can land at a lower offset than
            // the hidden copy it repeats: try the pair both ways round.
            let slot = attribute(facts, &report.crashes, wal_damage, earlier, later)
                .or_else(|| attribute(facts, &report.crashes, wal_damage, later, earlier));
            match slot {
                Some(slot) => report.crashes[slot].count += 1,
                None if damaged_before(facts, earlier, later.first_delivery)
                    || damaged_before(facts, later, earlier.first_delivery) =>
                {
                    report.after_damage += 1;
                }
                None => leftovers.push((*id, earlier, later)),
            }
        }
    }
    // Pairs the per-crash attribution could not place (truncations after damage at
    // rest move copies between hidden tails) are judged per partition and in time: at
    // each duplicate's first delivery, the duplicates delivered so far on its partition
    // must fit in the sum of its hidden tails over the crashes before that moment.
    let mut extra: BTreeMap<TopicPartition, Vec<usize>> = BTreeMap::new();
    for copies in accounting.duplicated.values() {
        let mut firsts: Vec<usize> = copies.iter().map(|c| c.first_delivery).collect();
        firsts.sort_unstable();
        if let Some(tp) = copies.first().map(|c| c.tp.clone()) {
            extra
                .entry(tp)
                .or_default()
                .extend(firsts.into_iter().skip(1));
        }
    }
    for v in extra.values_mut() {
        v.sort_unstable();
    }
    for (id, earlier, later) in leftovers {
        let at = earlier.first_delivery.max(later.first_delivery);
        let bound: u64 = facts
            .crashes
            .iter()
            .filter(|c| c.index < at)
            .filter_map(|c| c.partitions.get(&later.tp))
            .map(|p| p.durable_tail.saturating_sub(p.persisted_hwm))
            .sum();
        let so_far = extra
            .get(&later.tp)
            .map_or(0, |v| v.partition_point(|i| *i <= at) as u64);
        if bound > 0 && so_far <= bound {
            report.aggregated += 1;
            continue;
        }
        let violation = unexplained(facts, &report.crashes, id, earlier, later);
        report.violations.push(violation);
    }
    report
}

/// Whether damage at rest to a segment hit `copy`'s offset after the copy was first
/// delivered and before `until` (a history index).
fn damaged_before(facts: &Facts<'_>, copy: &Copy, until: usize) -> bool {
    let Some(damage) = facts.segment_damage.get(&copy.tp) else {
        return false;
    };
    let events = facts.history.events();
    damage
        .iter()
        .filter(|d| **d > copy.first_delivery && **d < until)
        .any(|d| match &events[*d].kind {
            crate::history::EventKind::Fault { kind, .. } => kind
                .segment_damage()
                .and_then(|(offsets, _)| offsets)
                .is_some_and(|range| range.contains(copy.offset)),
            _ => false,
        })
}

/// Damage at rest in the WAL (its checkpoint or an entry) before `index`: the engine
/// detects it and replays more than the hidden tails (a lost checkpoint replays every
/// entry still in the WAL), trading duplicates for loss; the hidden-tail bound does not
/// apply after it.
fn first_wal_damage(facts: &Facts<'_>) -> Option<usize> {
    facts.history.events().iter().position(|e| {
        matches!(
            &e.kind,
            crate::history::EventKind::Fault {
                kind: crate::history::FaultKind::BitFlip {
                    file: crate::history::FileKind::Wal,
                    ..
                },
                ..
            }
        )
    })
}

/// A flip in `tp`'s `hwm` file after `crash` and before `until` that the open following
/// the crash read: injected before that open recorded its frontier or refusal for `tp`
/// (or the open never did).
fn hwm_flip_read_after(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    crash: &CrashFact,
    until: usize,
) -> Option<usize> {
    let events = facts.history.events();
    let opened = (crash.index..until.min(events.len())).find(|index| {
        let event = &events[*index];
        event.incarnation == crash.incarnation + 1
            && matches!(&event.kind,
                EventKind::FrontierObserved { tp: t, .. } | EventKind::PartitionRefused { tp: t, .. }
                    if t == tp)
    });
    facts.hwm_flip_between(tp, crash.index, opened.unwrap_or(until))
}

/// The crash (index into `budgets`) that explains `later` as a re-commit of `earlier`.
fn attribute(
    facts: &Facts<'_>,
    budgets: &[CrashBudget],
    wal_damage: Option<usize>,
    earlier: &Copy,
    later: &Copy,
) -> Option<usize> {
    facts.crashes.iter().enumerate().position(|(slot, crash)| {
        let budget = &budgets[slot];
        let Some(state) = crash.partitions.get(&earlier.tp) else {
            return false;
        };
        // Damage until the next crash can reach this crash's recovery.
        let until = facts.next_crash_after(crash.index);
        // An out-of-contract fault leaves the durable image wrong until something
        // rewrites it, so it unbinds every later crash on that partition, not only the
        // one that ended its incarnation. A flip in `hwm` after the crash unbinds it too
        // if the open read it (before the open recorded what it found on the partition),
        // for copies delivered after it: a lowered HWM replays from further back than the
        // hidden tail the crash left.
        let metadata_read = hwm_flip_read_after(facts, &earlier.tp, crash, until)
            .is_some_and(|flip| flip < later.first_delivery);
        let unbounded = budget.unbounded.iter().any(|(tp, _)| *tp == earlier.tp)
            || facts
                .out_of_contract_on(&earlier.tp)
                .into_iter()
                .any(|f| f < crash.index)
            || metadata_read
            || wal_damage.is_some_and(|d| d < later.first_delivery);
        // Re-commits land past the durable tail, unless damage at rest injected before
        // the restart made recovery truncate the hidden tail (R2): then they land
        // anywhere past the persisted HWM.
        let truncated = facts
            .segment_damage
            .get(&earlier.tp)
            .is_some_and(|d| d.iter().any(|d| *d < until));
        let fresh_from = if truncated {
            state.persisted_hwm
        } else {
            state.durable_tail
        };
        if unbounded {
            // An out-of-contract fault (lost fsync, misdirected write) in the incarnation
            // this crash ended: acknowledged data may have vanished and its offsets been
            // reused, so any copy after the crash is attributable to it.
            return crash.index < later.first_delivery;
        }
        crash.index < later.first_delivery
            && state.hidden_tail().contains(earlier.offset)
            && (later.tp != earlier.tp || later.offset >= fresh_from)
            && budget.count < budget.bound
    })
}

fn unexplained(
    facts: &Facts<'_>,
    budgets: &[CrashBudget],
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
) -> Violation {
    let tails: Vec<String> = facts
        .crashes
        .iter()
        .zip(budgets)
        .filter_map(|(crash, budget)| {
            crash.partitions.get(&earlier.tp).map(|state| {
                let tail = state.hidden_tail();
                format!(
                    "crash t={}ms: {} hidden tail {tail} {} offset {}, {} of bound {} used",
                    crash.at_ms,
                    earlier.tp,
                    if tail.contains(earlier.offset) {
                        "holds"
                    } else {
                        "does not hold"
                    },
                    earlier.offset,
                    budget.count,
                    budget.bound
                )
            })
        })
        .collect();
    let why = if facts.crashes.is_empty() {
        "a crash-free run has no duplicates".to_owned()
    } else if tails.is_empty() {
        format!("no crash reported the state of {}", earlier.tp)
    } else {
        format!(
            "no crash before it hid the earlier copy with budget left ({})",
            list(&tails, 4)
        )
    };
    Violation {
        message: format!(
            "produce id {id} delivered from {}@{} (first t={}ms) and again from {}@{} \
             (first t={}ms): {why}",
            earlier.tp,
            earlier.offset,
            facts.at_ms(earlier.first_delivery),
            later.tp,
            later.offset,
            facts.at_ms(later.first_delivery),
        ),
        records: vec![
            RecordRef::new(&earlier.tp, Some(earlier.offset), Some(id)),
            RecordRef::new(&later.tp, Some(later.offset), Some(id)),
        ],
        events: vec![earlier.first_delivery, later.first_delivery],
    }
}
