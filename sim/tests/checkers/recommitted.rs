//! `both_copies_damaged` from a killed open's replay copy (`Excuses::recommitted`): the
//! row follows a record into the copy a replay wrote from its readable WAL entry, and
//! excuses the loss only when damage after that replay took that copy and the entry.

use super::loss::{expect_both_copies, refuses_and_reports_loss, wal_damaged_open_cut_at_0};
use super::*;

/// How [`replay_copy_then_both_damaged`] varies the run.
#[derive(Clone, Copy, Default)]
struct Recommit {
    /// No flip reaches the replay's copy: only the flip before the replay did damage.
    no_second_flip: bool,
    /// The replay's crash leaves two hidden copies of the record (at 0 and 1).
    two_copies: bool,
    /// The second flip lands at the power loss that kills the replay's open, so the
    /// next open lists no copy (the world read the copy there, just before).
    flip_at_replay_crash: bool,
}

/// Id 1 acknowledged at offset 0 above the persisted HWM 0; a power loss hides it and
/// a flip at rest takes its frame. The open of incarnation 1 cuts at 0 (R1), its replay
/// commits id 1 at 0 again from the readable entry, and a power loss kills it. The open
/// of incarnation 2 lists that copy hidden and is killed; a flip at rest takes the copy.
/// The open of incarnation 3 is killed too; a WAL flip at the power loss that ends it
/// destroys id 1's entry, and the open of incarnation 4 cuts at 0 (R1) and completes
/// with nothing. Fresh default seed 3908319240 in small.
fn replay_copy_then_both_damaged(v: Recommit) -> Run {
    let copy = |offset, id| HeldCopy {
        offset,
        id,
        committed_at_ms: 1_000 + offset,
    };
    let held_copies = if v.two_copies {
        vec![copy(0, 1), copy(1, 1)]
    } else {
        vec![copy(0, 1)]
    };
    let replay_tail = held_copies.len() as u64;
    let second_flip = |r: &mut Run| {
        r.fault(flip_above_hwm(0), Some(0)).with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(0, 1)]);
        });
    };
    let mut r = Run::new();
    r.produced(1)
        .hwm(0, 1, 0, 1)
        .crash(&[(0, 0, 1, 1)])
        .fault(flip_above_hwm(0), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(0, 1)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 0, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .opened(0, 0, 0)
        .alarm(
            Some(0),
            Alarm::ReplayCommitting {
                records: replay_tail,
            },
        )
        .crash(&[(0, 0, replay_tail, replay_tail)]);
    if v.flip_at_replay_crash {
        second_flip(&mut r);
        r.restart().disk(0, OpenRule::TornTail, 0, 0, Some(0));
    } else {
        r.restart()
            .disk(0, OpenRule::Clean, 0, replay_tail, None)
            .with(|t, h| {
                h.hidden_at_open(t, &tp(0), 0, replay_tail, held_copies);
            });
    }
    r.crash(&[(0, 0, replay_tail, replay_tail)]);
    if !v.no_second_flip && !v.flip_at_replay_crash {
        second_flip(&mut r);
    }
    r.restart();
    if v.no_second_flip {
        r.disk(0, OpenRule::Clean, 0, replay_tail, None);
    } else {
        r.disk(0, OpenRule::TornTail, 0, 0, Some(0));
    }
    r.crash(&[(0, 0, replay_tail, replay_tail)])
        .wal_entry_flipped(0, 1, 4)
        .restart();
    wal_damaged_open_cut_at_0(&mut r);
    r
}

#[test]
fn a_killed_replays_copy_destroyed_with_its_entry_is_excused() {
    // The excuse names the flip that took the replay's copy (t=170ms), not the one
    // that took the frame the replay replaced (t=50ms).
    let report = replay_copy_then_both_damaged(Recommit::default()).report();
    expect_both_copies(&report, 1, "in the frame the bit flip at t=170ms hit");
    // The replay's crash itself brought the flip: the next open lists nothing, and the
    // copy followed is the one the world read the damage take at that crash.
    let report = replay_copy_then_both_damaged(Recommit {
        flip_at_replay_crash: true,
        ..Recommit::default()
    })
    .report();
    expect_both_copies(&report, 1, "in the frame the bit flip at t=130ms hit");
}

#[test]
fn the_flip_before_the_replay_does_not_excuse_losing_its_copy() {
    // Only the frame the replay replaced was damaged; the replay's copy was whole
    // when the engine cut it.
    let report = replay_copy_then_both_damaged(Recommit {
        no_second_flip: true,
        ..Recommit::default()
    })
    .report();
    refuses_and_reports_loss(&report, 1, 0, "old flip alone");
}

#[test]
fn two_hidden_replay_copies_are_not_followed_as_one() {
    // The flip took the copy at 0; the one at 1 may outlive it.
    let report = replay_copy_then_both_damaged(Recommit {
        two_copies: true,
        ..Recommit::default()
    })
    .report();
    refuses_and_reports_loss(&report, 1, 0, "two hidden copies");
}
