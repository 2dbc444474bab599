//! `bounded_duplicates`'s excuse rows as an adversary read them (helper-45, on
//! 4a1e003): each history is one an engine bug could make, and each was accepted by
//! 4a1e003 (all but one by 40c3fd7 too).

use super::*;

/// Id 1 at 0, delivered and consumed, and delivered again at each of `before` (the
/// engine wrote it again with no crash between); a power loss with persisted HWM
/// `persisted` and durable tail `tail`; with `skip`, a flip takes the frame at that
/// offset and the open skips it; the open comes up with HWM `persisted` and tail
/// `tail`, and id 1 is delivered at each of `after`.
pub(super) fn copies_around_a_skip(
    before: &[u64],
    persisted: u64,
    tail: u64,
    skip: Option<u64>,
    after: &[u64],
) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, tail, persisted, tail)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0);
    for &o in before {
        r.deliver(1, 0, o, 1_000).consume(0, o);
    }
    r.crash(&[(0, persisted, tail, tail)]);
    if let Some(o) = skip {
        r.fault(
            segment_flip(
                OffsetRange {
                    start: o,
                    end: o + 1,
                },
                Some(true),
            ),
            Some(0),
        );
    }
    r.restart().disk(0, OpenRule::Clean, persisted, tail, None);
    if let Some(o) = skip {
        r.alarm(Some(0), frame_skipped(o)).counters(0, 0, 1);
    }
    r.opened(0, persisted, tail).with(|t, h| {
        h.frontier_observed(t, &tp(0), 1);
    });
    let end = after.iter().max().map_or(tail, |m| m + 1);
    r.hwm(0, end, end, end);
    for &o in after {
        r.deliver(1, 0, o, 1_000).consume(0, o);
    }
    r
}

/// A power loss hides [0, 1) and the skip is of x's frame; the one replay commits id
/// 1 at 1 and again at 2 (the bug).
#[test]
fn a_skip_and_a_crash_budget_share_one_replay() {
    assert_eq!(
        duplicate_messages(&copies_around_a_skip(&[], 0, 1, None, &[1, 2])).len(),
        1
    );
    assert_eq!(
        duplicate_messages(&copies_around_a_skip(&[], 0, 1, Some(0), &[1, 2])).len(),
        1,
        "one replay committed id 1 twice; the skip and the crash each took one"
    );
}

/// The engine wrote id 1 at 1 before any crash, delivered only after the skip: below
/// where the skip's replay commits (the tail, 2).
#[test]
fn a_skip_excuses_no_copy_below_where_its_replay_commits() {
    assert_eq!(
        duplicate_messages(&copies_around_a_skip(&[], 2, 2, None, &[1])).len(),
        1
    );
    assert_eq!(
        duplicate_messages(&copies_around_a_skip(&[], 2, 2, Some(0), &[1])).len(),
        1,
        "y was written before any crash; the skip's replay commits at the tail (2), not at 1"
    );
}

/// The history of `a_skip_explains_the_repeat_not_the_copy_it_repeats`, with the
/// bug's copy at 1 first delivered after the restart (it was hidden).
#[test]
fn a_copy_written_twice_and_delivered_late_is_no_skips_repeat() {
    assert_eq!(
        duplicate_messages(&copies_around_a_skip(&[], 0, 2, None, &[1, 2])).len(),
        1
    );
    assert_eq!(
        duplicate_messages(&copies_around_a_skip(&[], 0, 2, Some(0), &[1, 2])).len(),
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
    assert_eq!(
        duplicate_messages(&clamp_and_checkpoint_in_one_open(false)).len(),
        1
    );
    assert_eq!(
        duplicate_messages(&clamp_and_checkpoint_in_one_open(true)).len(),
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
        duplicate_messages(&lost_checkpoint_replay_commits_three(false)).len(),
        2
    );
    assert_eq!(
        duplicate_messages(&lost_checkpoint_replay_commits_three(true)).len(),
        2,
        "one replay committed id 1 three times"
    );
}

fn misdirected(start: u64, end: u64) -> FaultKind {
    FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: Some(true),
        parts: None,
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
    assert_eq!(duplicate_messages(&base()).len(), 1);
    let mut r = base();
    r.fault(misdirected(0, 1), Some(0));
    assert_eq!(
        duplicate_messages(&r).len(),
        1,
        "the fault came after both copies"
    );
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
        duplicate_messages(&r).len() >= 3,
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
        assert_eq!(duplicate_messages(&r).len(), 0, "process={process}");
    }
}
