//! `bounded_duplicates`: duplicates (one produce id at two offsets) happen only
//! around crashes, and each crash causes at most as many as its hidden tails held.
//!
//! Why a hidden tail explains a duplicate (row `hidden_tail`): records in
//! `[persisted_hwm, durable_tail)` at a crash are hidden by recovery and re-committed by
//! the ingress WAL at fresh offsets, at or past the durable tail; once the HWM passes the
//! hidden copies both are visible. So of the copies of one id, all but one (the
//! original) must each be a re-commit by some crash: one that came before the copy was
//! first delivered and whose hidden tail held another copy of the id, one copy of an id
//! per replay (a replay commits each WAL entry once; crashes with no replay between
//! them, by the engine's `replay_committing` account, share one), below the first
//! offset a produce was acknowledged at in the replay's incarnation (the store takes
//! produces only once its open, replay included, returned). The copies of every
//! id are placed at once, as a maximum flow ([`super::flow`]), so no crash's budget goes
//! to a copy another crash could explain while a copy only it explains goes without. A
//! crash explains at most its bound `sum over partitions of (durable_tail -
//! persisted_hwm)`, with the persisted HWM the next open read where it read one (a
//! flipped `hwm` file hides more or less), and up to the engine's HWM when an out-of-contract
//! fault left a hole below it. When that open cut the log (its R1/R2 alarm), the
//! re-commits land from the cut on, which may be below the hidden copy.
//!
//! Also explained, each by the event it names: `damaged_copy_recommitted` (the engine
//! skipped the earlier copy's frame as unreadable, or a recorded clamp gave its offset
//! up, before the later copy appeared: the replay's check for visible copies could not
//! see it), `checkpoint_lost` (the later
//! copy first appeared after an open found the WAL checkpoint unreadable and replayed
//! every entry, or after the first open to bring back a partition that open refused),
//! `out_of_contract` (a fault whose reach names either copy's offset, on
//! the pair's one partition; the repeat is first delivered after the crash that showed
//! the fault to an open, a power loss for a fault only the platter holds).
//! The budgets are placed first; when they leave a copy, the rows join the flow: a
//! copy a row names as the repeat of another costs no budget, but leaves by the node of
//! the replay that made it, which passes one copy of the id whatever explains it (see
//! `excused.rs`'s `Excusal`). So a crash's budget is not spent on a copy an event
//! explains while one only that crash explains goes without, and no row explains both
//! copies of its pair, or a repeat its replay did not make.
//!
//! The crash's geometry (hidden tails, where a replay commits) is `tail.rs`'s; the
//! placement, `place.rs`'s; the other excuse rows, `excused.rs`'s.

use serde::Serialize;
use std::collections::BTreeMap;

use super::accounting::Copy;
use super::excuse::{Excuse, ExcuseKind, Excuses};
use super::facts::{CrashFact, Facts};
use super::flow::Flow;
use super::{Accounting, RecordRef, Violation, list};
use crate::history::{
    Alarm, CrashPartition, EventKind, FileKind, Incarnation, Offset, ProduceId, TopicPartition,
};

mod excused;
mod place;
mod tail;

use excused::Excusal;
use place::{Role, place};
use tail::hidden_tail;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrashBudget {
    pub crash_index: usize,
    pub at_ms: u64,
    pub incarnation: Incarnation,
    /// Sum over partitions of the hidden tail's size (see [`hidden_tail`]).
    pub bound: u64,
    /// Duplicates attributed to this crash.
    pub count: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DuplicatesReport {
    /// Extra copies in the run.
    pub duplicates: u64,
    pub crashes: Vec<CrashBudget>,
    /// Duplicates explained by an excuse other than a single crash's hidden tail.
    pub excused: Vec<(ProduceId, Excuse)>,
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
                    .map(|p| {
                        let (start, end) = hidden_tail(facts, c, p);
                        end - start
                    })
                    .sum(),
                count: 0,
            })
            .collect(),
        ..DuplicatesReport::default()
    };
    let excuses = Excuses::new(facts);
    // The crashes' budgets alone first; when they leave a copy, the excuse rows join
    // the placement (an excuse may free a budget for a copy only it explains).
    let mut placed = place(facts, &report.crashes, &accounting.duplicated, None);
    let mut excusals: BTreeMap<ProduceId, Vec<Excusal>> = BTreeMap::new();
    if placed.values().flatten().any(|r| *r == Role::Unplaced) {
        excusals = accounting
            .duplicated
            .iter()
            .map(|(id, copies)| (*id, excused::excusals(facts, &excuses, *id, copies)))
            .collect();
        placed = place(
            facts,
            &report.crashes,
            &accounting.duplicated,
            Some(&excusals),
        );
    }
    let mut leftovers = Vec::new();
    for (id, copies) in &accounting.duplicated {
        for (k, role) in placed[id].iter().enumerate() {
            match *role {
                Role::Original => {}
                Role::Recommit(slot) => report.crashes[slot].count += 1,
                Role::Excused(i) => report.excused.push((*id, excusals[id][i].excuse.clone())),
                Role::Unplaced => {
                    let (earlier, later) = a_pair(copies, k);
                    leftovers.push((*id, earlier, later));
                }
            }
        }
    }
    for (id, earlier, later) in leftovers {
        let violation = unexplained(facts, &report.crashes, id, earlier, later);
        report.violations.push(violation);
    }
    report
}

/// `copies[k]` and another copy of its id, in the accounting's (partition, offset)
/// order: the pair a violation names.
fn a_pair(copies: &[Copy], k: usize) -> (&Copy, &Copy) {
    let j = usize::from(k == 0);
    if j < k {
        (&copies[j], &copies[k])
    } else {
        (&copies[k], &copies[j])
    }
}

fn unexplained(
    facts: &Facts<'_>,
    budgets: &[CrashBudget],
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
) -> Violation {
    // The crashes whose hidden tail holds the earlier copy first: those are the ones a
    // reader needs to see.
    let mut tails: Vec<(bool, String)> = facts
        .crashes
        .iter()
        .zip(budgets)
        .filter_map(|(crash, budget)| {
            crash.partitions.get(&earlier.tp).map(|state| {
                let (start, end) = hidden_tail(facts, crash, state);
                let holds = start <= earlier.offset && earlier.offset < end;
                (
                    !holds,
                    format!(
                        "crash t={}ms: {} hidden tail [{start}, {end}) {} offset {}, {} of bound \
                         {} used",
                        crash.at_ms,
                        earlier.tp,
                        if holds { "holds" } else { "does not hold" },
                        earlier.offset,
                        budget.count,
                        budget.bound
                    ),
                )
            })
        })
        .collect();
    tails.sort_by_key(|(not_holding, _)| *not_holding);
    let tails: Vec<String> = tails.into_iter().map(|(_, t)| t).collect();
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
