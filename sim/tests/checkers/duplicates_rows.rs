//! `bounded_duplicates`'s excuse rows as an adversary read them (helper-45, on
//! 4a1e003): each history is one an engine bug could make, and each was accepted by
//! 4a1e003 (all but one by 40c3fd7 too).

use super::*;

fn dup_violations(r: &Run) -> usize {
    r.report().bounded_duplicates.violations.len()
}

fn skip_at(base: u64) -> Alarm {
    Alarm::FrameSkipped { base, records: 1 }
}

/// x (id 1 at 0) delivered, a power loss hides [0, 1) (bound 1). With `skip`, a
/// flip takes x's frame and is skipped. The one replay commits id 1 at 1 AND at 2 (bug).
fn crash_and_skip_share_one_replay(skip: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 1, 1)]);
    if skip {
        r.fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        );
    }
    r.restart().disk(0, OpenRule::Clean, 0, 1, None);
    if skip {
        r.alarm(Some(0), skip_at(0)).counters(0, 0, 1);
    }
    r.opened(0, 0, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .hwm(0, 3, 3, 3)
        .deliver(1, 0, 1, 1_000)
        .consume(0, 1)
        .deliver(1, 0, 2, 1_000)
        .consume(0, 2);
    r
}

#[test]
fn a_skip_and_a_crash_budget_share_one_replay() {
    assert_eq!(dup_violations(&crash_and_skip_share_one_replay(false)), 1);
    assert_eq!(
        dup_violations(&crash_and_skip_share_one_replay(true)),
        1,
        "one replay committed id 1 twice; the skip and the crash each took one"
    );
}

/// x (id 1 at 0) and y (id 1 at 1: the engine wrote it twice, no crash
/// between), HWM 2 persisted; y not yet delivered. A power loss hides nothing. With
/// `skip`, a flip takes x's frame and the open skips it. After the restart y is
/// delivered from 1: a copy older than the skip, below where any replay commits.
fn older_copy_delivered_after_a_skip(skip: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 2, 2, 2)]);
    if skip {
        r.fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        );
    }
    r.restart().disk(0, OpenRule::Clean, 2, 2, None);
    if skip {
        r.alarm(Some(0), skip_at(0)).counters(0, 0, 1);
    }
    r.opened(0, 2, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_000)
        .consume(0, 1);
    r
}

#[test]
fn a_skip_excuses_no_copy_below_where_its_replay_commits() {
    assert_eq!(dup_violations(&older_copy_delivered_after_a_skip(false)), 1);
    assert_eq!(
        dup_violations(&older_copy_delivered_after_a_skip(true)),
        1,
        "y was written before any crash; the skip's replay commits at the tail (2), not at 1"
    );
}

/// Same as `written_twice_then_hidden(true)` but y (the bug's copy) is first delivered
/// after the restart (it was hidden).
fn written_twice_hidden_delivered_late(skip: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 2, 0, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 2, 2)]);
    if skip {
        r.fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        );
    }
    r.restart().disk(0, OpenRule::Clean, 0, 2, None);
    if skip {
        r.alarm(Some(0), skip_at(0)).counters(0, 0, 1);
    }
    r.opened(0, 0, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .hwm(0, 3, 3, 3)
        .deliver(1, 0, 1, 1_000)
        .consume(0, 1)
        .deliver(1, 0, 2, 1_000)
        .consume(0, 2);
    r
}

#[test]
fn a_copy_written_twice_and_delivered_late_is_no_skips_repeat() {
    assert_eq!(
        dup_violations(&written_twice_hidden_delivered_late(false)),
        1
    );
    assert_eq!(
        dup_violations(&written_twice_hidden_delivered_late(true)),
        1
    );
}

/// x (id 2 at 1) consumed; flips take [0, 2); the open cuts at 0 and clamps the
/// HWM 2 to 0 (recorded). With `ckpt`, the same open also found the WAL checkpoint
/// unreadable. Its one replay commits id 2 at 0 (y) and again at 2 (z: the bug).
fn clamp_and_checkpoint_in_one_open(ckpt: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 1)
        .crash(&[(0, 2, 2, 2)])
        .fault(
            segment_flip(OffsetRange { start: 0, end: 2 }, Some(true)),
            Some(0),
        );
    if ckpt {
        r.checkpoint_flipped();
    }
    r.restart()
        .disk(0, OpenRule::TornTail, 2, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(2, 0))
        .counters(0, 2, 0);
    if ckpt {
        r.alarm(None, Alarm::WalCheckpointUnreadable);
    }
    r.opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(2, 0, 0, 1_001)
        .consume(0, 0)
        .deliver(2, 0, 2, 1_001)
        .consume(0, 2);
    r
}

#[test]
fn a_clamp_and_a_lost_checkpoint_of_one_open_share_one_replay() {
    assert_eq!(dup_violations(&clamp_and_checkpoint_in_one_open(false)), 1);
    assert_eq!(
        dup_violations(&clamp_and_checkpoint_in_one_open(true)),
        1,
        "one replay committed id 2 twice"
    );
}

/// x (id 1 at 0) delivered; crash A hides [0, 1); its replay commits w at 1
/// (delivered). Crash B hides [0, 2) (bound 2). With `ckpt`, B's open also lost the
/// checkpoint. That one replay commits id 1 at 2, 3 and 4 (two too many).
fn lost_checkpoint_replay_commits_three(ckpt: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .open_clean(0, 0, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .hwm(0, 2, 0, 2)
        .deliver(1, 0, 1, 1_000)
        .consume(0, 1)
        .crash(&[(0, 0, 2, 2)]);
    if ckpt {
        r.checkpoint_flipped();
    }
    r.restart().disk(0, OpenRule::Clean, 0, 2, None);
    if ckpt {
        r.alarm(None, Alarm::WalCheckpointUnreadable);
    }
    r.opened(0, 0, 2).with(|t, h| {
        h.frontier_observed(t, &tp(0), 2);
    });
    for offset in 2..5 {
        r.deliver(1, 0, offset, 1_000).consume(0, offset);
    }
    r.hwm(0, 5, 5, 5);
    r
}

#[test]
fn one_lost_checkpoint_repeats_an_id_once() {
    assert_eq!(
        dup_violations(&lost_checkpoint_replay_commits_three(false)),
        2
    );
    assert_eq!(
        dup_violations(&lost_checkpoint_replay_commits_three(true)),
        2,
        "one replay committed id 1 three times"
    );
}

fn misdirected(start: u64, end: u64) -> FaultKind {
    FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: Some(true),
    }
}

/// crash-free; id 1 delivered from 0 and 1 (the engine wrote it twice). With
/// `fault`, a misdirected segment write reaching offset 0 comes AFTER both deliveries.
#[test]
fn an_out_of_contract_fault_after_the_duplicate_excuses_nothing() {
    let base = || {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .hwm(0, 2, 2, 2)
            .deliver(1, 0, 0, 1_000)
            .deliver(1, 0, 1, 1_001);
        r
    };
    assert_eq!(dup_violations(&base()), 1);
    let mut r = base();
    r.fault(misdirected(0, 1), Some(0));
    assert_eq!(dup_violations(&r), 1, "the fault came after both copies");
}

/// one misdirected write reaching orders/0@0, then id 1 delivered from 0, from
/// 5, 6, 7 of orders/0 and from orders/1@3, with no crash.
#[test]
fn one_out_of_contract_fault_excuses_only_what_it_reached() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 8, 8, 8)
        .fault(misdirected(0, 1), Some(0))
        .deliver(1, 0, 0, 1_000);
    for offset in 5..8 {
        r.deliver(1, 0, offset, 1_000);
    }
    r.deliver(1, 1, 3, 1_000);
    assert!(
        dup_violations(&r) >= 3,
        "a frame-sized fault on orders/0@0 made 4 copies, one on another partition"
    );
}

/// Sanity for `reopened`: x (id 2 at 1) hidden by power loss A and not delivered; A's
/// replay commits id 2 at 3 (y, delivered); crash B (process or power loss) leaves the
/// log through 4; only then is x delivered. x existed at A: no false alarm.
#[test]
fn reopened_keeps_a_hidden_copy_first_delivered_after_a_later_crash() {
    for process in [false, true] {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .produce(2, 0, 1, 1_001)
            .hwm(0, 2, 0, 2)
            .deliver(1, 0, 0, 1_000)
            .consume(0, 0)
            .crash(&[(0, 0, 2, 2)])
            .restart()
            .open_clean(0, 0, 2)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 1);
            })
            .hwm(0, 4, 2, 4)
            .deliver(2, 0, 3, 1_001)
            .consume(0, 3);
        if process {
            r.process_crash(&[(0, 2, 4, 4)]);
        } else {
            r.crash(&[(0, 2, 4, 4)]);
        }
        r.restart()
            .open_clean(0, 2, 4)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 1);
            })
            .hwm(0, 4, 4, 4)
            .deliver(2, 0, 1, 1_001)
            .consume(0, 1);
        assert_eq!(dup_violations(&r), 0, "process={process}");
    }
}
