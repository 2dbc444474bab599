//! `both_copies_damaged` and a salvage's WAL entry: an R2 salvage that wrote the record
//! into the WAL again before the WAL fault gave it a second entry, which the fault must
//! destroy too (helper-85 1.3).

use super::loss::{
    expect_both_copies, hole_at, refuses_and_reports_loss, wal_damaged_open_cut_at_0,
};
use super::*;

/// Id 1 acknowledged at offset 0 above the persisted HWM; a power loss hides it. The
/// open of incarnation 1 lists it hidden, its replay appends id 1 again at 1, and a
/// power loss ends it; a flip at rest takes the frame at 0. The open of incarnation 2
/// finds an R2 hole at 0 and salvages the readable copy at 1 into the WAL (a second
/// entry of id 1, seq 9), and is killed; so is the next. A WAL flip at the power loss
/// ending it destroys the entry of seq 0 (and, with `both_entries`, seq 9 too); the
/// open of incarnation 4 cuts at 0 and completes with nothing.
fn salvaged_then_entry_destroyed(both_entries: bool) -> Run {
    let copy = |offset, id, at| HeldCopy {
        offset,
        id,
        committed_at_ms: at,
    };
    let mut r = Run::new();
    r.produced(1)
        .hwm(0, 1, 0, 1)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 1, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![copy(0, 1, 1_000)]);
        })
        .opened(0, 0, 1)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .crash(&[(0, 0, 2, 2)])
        .fault(flip_above_hwm(0), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(0, 1, 1_000)]);
        })
        .restart()
        .disk(0, OpenRule::Hole, 0, 0, Some(0))
        .alarm(Some(0), hole_at(0))
        .salvaged(0, vec![], vec![1])
        .crash(&[(0, 0, 0, 0)])
        .restart()
        .disk(0, OpenRule::TornTail, 0, 0, Some(0))
        .crash(&[(0, 0, 0, 0)]);
    let (kind, partition) = wal_flip();
    let seqs: &[u64] = if both_entries { &[0, 9] } else { &[0] };
    r.fault(kind, partition).with(|t, h| {
        let fault_index = h.len() - 1;
        let entries = seqs
            .iter()
            .map(|&seq| DamagedWalEntry {
                seq,
                tp: tp(0),
                id: 1,
            })
            .collect();
        h.wal_entries_damaged(t, fault_index, 4, entries);
    });
    r.restart();
    wal_damaged_open_cut_at_0(&mut r);
    r
}

/// [`salvaged_then_entry_destroyed`] with only seq 0 destroyed, then, after the open
/// that should have replayed the salvage's entry, a second WAL flip destroying it.
fn salvage_entry_destroyed_too_late() -> Run {
    let mut r = salvaged_then_entry_destroyed(false);
    r.crash(&[(0, 0, 0, 0)]);
    let (kind, partition) = wal_flip();
    r.fault(kind, partition).with(|t, h| {
        let fault_index = h.len() - 1;
        let entries = vec![DamagedWalEntry {
            seq: 9,
            tp: tp(0),
            id: 1,
        }];
        h.wal_entries_damaged(t, fault_index, 5, entries);
    });
    r.restart().open_clean(0, 0, 0).with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    });
    r
}

#[test]
fn a_salvage_entry_destroyed_after_the_open_that_needed_it_excuses_nothing() {
    // helper-86: the open of incarnation 4 completed with the salvage's entry readable.
    let report = salvage_entry_destroyed_too_late().report();
    refuses_and_reports_loss(&report, 1, 0, "salvage entry destroyed too late");
}

#[test]
fn a_salvage_entry_the_wal_fault_missed_voids_the_excuse() {
    // The salvage's entry (seq 9) survived: the engine must replay the record from it.
    let report = salvaged_then_entry_destroyed(false).report();
    refuses_and_reports_loss(&report, 1, 0, "salvage entry survived");
    // Both entries destroyed: nothing could bring the record back.
    let report = salvaged_then_entry_destroyed(true).report();
    expect_both_copies(&report, 1, "its WAL entry destroyed");
}
