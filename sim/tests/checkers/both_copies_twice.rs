//! `both_copies_damaged` when a killed replay wrote the record again beside its hidden
//! copy: the next open finds two copies hidden, and each must be destroyed in its own
//! right (fresh quick seed 2045469403007234).

use super::loss::{expect_both_copies, wal_damaged_open_cut_at_0};
use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

fn held(offset: u64) -> HeldCopy {
    HeldCopy {
        offset,
        id: 1,
        committed_at_ms: 1_000 + offset,
    }
}

/// After id 1's ack at 0: a power loss hides it (persisted HWM 0), the open after
/// replays its WAL entry at 1 and is killed, and the next open finds both copies hidden.
fn replayed_beside(r: &mut Run) {
    r.hwm(0, 1, 0, 1)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 1, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![held(0)]);
        })
        .opened(0, 0, 1)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .crash(&[(0, 0, 2, 0)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 2, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 2, vec![held(0), held(1)]);
        });
}

/// Id 1 acknowledged at 0 and hidden by a power loss (persisted HWM 0). The open after
/// replays its WAL entry at 1 and is killed, leaving both copies hidden. At the next
/// power loss a flip destroys the copy at 1 and, with `both_hit`, a latent sector the
/// copy at 0; the open after cuts the log at 0 (R1) and is killed. A flip then destroys
/// the WAL entry, and the open after it completes with the record gone. Without
/// `both_hit` that open cuts at 1 only, and the last finds the copy at 0 hidden.
fn replayed_beside_its_copy(both_hit: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000);
    replayed_beside(&mut r);
    r.crash(&[(0, 0, 2, 0)])
        .fault(flip_above_hwm(1), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(1)]);
        });
    if !both_hit {
        // The copy at 0 outlives the cut at 1: the last open finds it hidden, and with
        // the WAL damaged must expose it.
        r.restart()
            .disk(0, OpenRule::TornTail, 0, 1, Some(1))
            .alarm(Some(0), torn_tail(1))
            .opened(0, 0, 1)
            .crash(&[(0, 0, 1, 0)])
            .wal_entry_flipped(0, 1, 4)
            .restart()
            .disk(0, OpenRule::Clean, 0, 1, None)
            .with(|t, h| {
                h.hidden_at_open(t, &tp(0), 0, 1, vec![held(0)]);
            })
            .opened(0, 0, 1)
            .wal_damaged()
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            });
        return r;
    }
    let latent = FaultKind::LatentSector {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 0, end: 1 }),
        below_hwm: Some(false),
    };
    r.fault(latent, Some(0)).with(|t, h| {
        let fault_index = h.len() - 1;
        h.damage_held(t, fault_index, &tp(0), vec![held(0)]);
    });
    r.restart()
        .disk(0, OpenRule::TornTail, 0, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .opened(0, 0, 0)
        .crash(&[(0, 0, 0, 0)])
        .wal_entry_flipped(0, 1, 4)
        .restart();
    wal_damaged_open_cut_at_0(&mut r);
    r
}

#[test]
fn a_record_replayed_beside_its_hidden_copy_is_lost_only_with_both_frames() {
    expect_both_copies(
        &replayed_beside_its_copy(true).report(),
        1,
        "offset 1 (id 1)",
    );
    // The copy at 0 was not hit: the cut at 0 is the engine's, and the record's loss too.
    assert_mentions(
        &messages_of(
            &replayed_beside_its_copy(false).report(),
            CheckerName::NoLostAck,
        ),
        &["id 1 at offset 0"],
    );
}

/// Id 1 hidden at 0 and (`twice`) written again at 1 by a killed replay, or id 2 hidden
/// at 1 beside it. A flip takes the frame at 1 only. The next open announces the R1 cut
/// at 1, but truncates the log to 0 (an engine defect: helper-105), and a power loss
/// kills it before its replay. A flip destroys the WAL entries; the last open completes
/// with nothing. The copy at 0 was durable and undamaged: its loss is the engine's.
fn over_truncated(twice: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000);
    let second = if twice {
        replayed_beside(&mut r);
        held(1)
    } else {
        r.produce(2, 0, 1, 1_001).hwm(0, 2, 0, 2);
        HeldCopy {
            offset: 1,
            id: 2,
            committed_at_ms: 1_001,
        }
    };
    r.crash(&[(0, 0, 2, 0)])
        .fault(flip_above_hwm(1), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![second]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 0, 1, Some(1))
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![held(0)]);
        })
        .alarm(Some(0), torn_tail(1))
        .crash(&[(0, 0, 0, 0)]);
    let first_replay = if twice { 4 } else { 2 };
    r.wal_entry_flipped(0, 1, first_replay).restart();
    r.disk(0, OpenRule::Clean, 0, 0, None)
        .opened(0, 0, 0)
        .wal_damaged()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    r
}

#[test]
fn a_copy_truncated_under_no_cut_that_reached_it_is_the_engines_loss() {
    for twice in [true, false] {
        let report = over_truncated(twice).report();
        assert_eq!(
            report.no_lost_ack.excuse_of(1).map(|e| e.kind),
            None,
            "twice {twice}"
        );
        assert_mentions(
            &messages_of(&report, CheckerName::NoLostAck),
            &["id 1 at offset 0"],
        );
    }
}

/// `n` opens in a row, each killed after its replay wrote id 1 again beside the copies
/// it found hidden; a latent sector then takes every copy, an open cuts at 0 and is
/// killed, a flip destroys the WAL entry, and the last open completes with nothing.
fn replayed_again_and_again(n: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .crash(&[(0, 0, 1, 1)]);
    for tail in 1..=n {
        r.restart()
            .disk(0, OpenRule::Clean, 0, tail, None)
            .with(move |t, h| {
                h.hidden_at_open(t, &tp(0), 0, tail, (0..tail).map(held).collect());
            })
            .opened(0, 0, tail)
            .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
            .crash(&[(0, 0, tail + 1, 0)]);
    }
    let latent = FaultKind::LatentSector {
        file: FileKind::Segment,
        offsets: Some(OffsetRange {
            start: 0,
            end: n + 1,
        }),
        below_hwm: Some(false),
    };
    r.fault(latent, Some(0)).with(move |t, h| {
        let fault_index = h.len() - 1;
        h.damage_held(t, fault_index, &tp(0), (0..=n).map(held).collect());
    });
    r.restart()
        .disk(0, OpenRule::TornTail, 0, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .opened(0, 0, 0)
        .crash(&[(0, 0, 0, 0)])
        .wal_entry_flipped(0, 1, n as u32 + 2)
        .restart();
    wal_damaged_open_cut_at_0(&mut r);
    r
}

/// Every copy's row follows each later killed replay again: the rows of one replay are
/// reckoned once, and rows that met at a replay share its clauses (helper-105: eight
/// replays cost 0.77 s and 52 MB of excuse text before).
#[test]
fn a_run_of_killed_replays_is_reckoned_once_per_replay() {
    let report = replayed_again_and_again(8).report();
    let excuse = report.no_lost_ack.excuse_of(1).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::BothCopiesDamaged);
    assert!(excuse.covers.len() < 4_000, "{}", excuse.covers.len());
    for offset in 0..=8 {
        assert!(
            excuse.covers.contains(&format!("offset {offset} (id 1)")),
            "{offset}: {}",
            excuse.covers
        );
    }
}
