//! `bounded_duplicates`: hidden-tail budgets.

use super::*;

#[test]
fn bounded_duplicates_fires_on_any_duplicate_in_a_crash_free_run() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .deliver(1, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@1",
            "a crash-free run has no duplicates",
        ],
    );
}

#[test]
fn redelivery_of_one_offset_is_not_a_duplicate() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .with(|t, h| {
            h.nack(t, &tp(0), 0);
        })
        .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2)
        .consume(0, 0);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.accounting.counts().duplicated, 0);
}

#[test]
fn hidden_tail_allows_exactly_its_size_in_duplicates_and_one_more_fails() {
    // clean_run has a hidden tail [1, 3) and both of its records duplicated.
    let mut r = clean_run();
    assert_clean(&r.report());
    // A third duplicate: id 1 (offset 0, below the persisted HWM) shows up again.
    r.deliver(1, 0, 6, 1_020).consume(0, 6);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@6",
            "orders/0 hidden tail [1, 3) does not hold offset 0, 2 of bound 2 used",
        ],
    );
    assert_eq!(report.bounded_duplicates.duplicates, 3);
}

/// Ids 1-2 at offsets 0-1, delivered and consumed, persisted HWM 2; flips at rest hit
/// both frames, so the open cuts the log at 0 (R1: nothing valid follows) and clamps
/// the HWM to 0 (`clamp`); the WAL replay re-commits id 2 at offset `again`.
fn clamped_then_replayed(clamp: bool, again: u64) -> Run {
    clamped_then_replayed_after(clamp, false, false, again)
}

/// [`clamped_then_replayed`], the clamping open killed before it completed if
/// `killed`, with a crash before the second copy if `crash_first`.
fn clamped_then_replayed_after(clamp: bool, killed: bool, crash_first: bool, again: u64) -> Run {
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
        )
        .restart()
        .disk(0, OpenRule::TornTail, 2, 0, Some(0))
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 0,
                offset: 0,
                bytes: 200,
            },
        );
    if clamp {
        r.alarm(Some(0), super::clamp(2, 0)).counters(0, 2, 0);
    }
    if killed {
        // The clamping open dies before it completes; the next one replays.
        r.crash(&[(0, 0, 0, 0)])
            .restart()
            .disk(0, OpenRule::Clean, 0, 0, None);
    }
    r.opened(0, 0, 0).with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    });
    if crash_first {
        r.crash(&[(0, 0, 0, 0)]).restart().open_clean(0, 0, 0);
    }
    r.deliver(2, 0, again, 1_001).consume(0, again);
    r
}

#[test]
fn a_copy_a_recorded_clamp_gave_up_may_come_back_from_the_wal() {
    // Quick seed 9703883: the clamp gave up both consumed records; id 2's WAL entry
    // was still there, and the replay committed it again at 0. The engine cannot know
    // it was consumed: the frontier's offsets no longer exist.
    let report = clamped_then_replayed(true, 0).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    assert!(
        report
            .bounded_duplicates
            .excused
            .iter()
            .any(|(id, e)| *id == 2 && e.covers.contains("clamped away")),
        "{:?}",
        report.bounded_duplicates.excused
    );
    // A copy first seen after a later crash is that incarnation's replay's, not the
    // clamping open's.
    assert_mentions(
        &messages_of(
            &clamped_then_replayed_after(true, false, true, 0).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 2 delivered from orders/0@0"],
    );
    // Fresh quick seed 206014447 (a latent sector): the clamping open was killed before
    // it completed, so the replay of the next open, the first that completed,
    // re-committed what the clamp gave up.
    let report = clamped_then_replayed_after(true, true, false, 0).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    // But not one crash later than that open.
    assert_mentions(
        &messages_of(
            &clamped_then_replayed_after(true, true, true, 0).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 2 delivered from orders/0@0"],
    );
    // Without the clamp the engine gave nothing up: the second copy is a duplicate.
    assert_mentions(
        &messages_of(
            &clamped_then_replayed(false, 0).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 2 delivered from orders/0@0"],
    );
}

/// Ids 1-3 at offsets 0-2, delivered, persisted HWM 1: a crash hides [1, 3). The next
/// open refuses the partition; with `cut`, the crash ending it finds the tail at 1 and
/// the open after comes up and cuts at 1 (R2); without, the tail stays at 3 and nothing
/// is cut. Either way id 3 is delivered again at offset 1.
fn recommitted_after_a_refusal(cut: bool) -> Run {
    recommitted_after_a_refusal_seen(cut, false)
}

/// [`recommitted_after_a_refusal`], the world recording the refusal (the store open
/// completed with the partition refused) when `seen`.
fn recommitted_after_a_refusal_seen(cut: bool, seen: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .crash(&[(0, 1, 3, 3)])
        .restart()
        .alarm(Some(0), refused_alarm(100));
    if seen {
        r.with(|t, h| {
            h.partition_refused(t, &tp(0), "bad frame below the HWM");
        });
    }
    r.crash(&[(0, 1, if cut { 1 } else { 3 }, 1)]).restart();
    if cut {
        r.alarm(
            Some(0),
            Alarm::Hole {
                segment: "00000000000000000000.log".into(),
                position: 100,
                offset: 1,
                bytes: 200,
            },
        );
    }
    r.opened(0, 1, if cut { 1 } else { 3 })
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .deliver(3, 0, 1, 1_002)
        .consume(0, 1);
    r
}

#[test]
fn a_hidden_copy_recommitted_by_the_first_open_that_came_up_is_its_crashs() {
    // Quick seed 10110213: the partition was refused for several opens; the one that
    // came up cut the log and re-committed the copy hidden at the first crash from the
    // cut on, below that crash's durable tail. That crash's hidden tail explains it,
    // not the partition-wide budget.
    let report = recommitted_after_a_refusal(true).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(d.crashes[0].count, 1, "{d:?}");
    // Fresh quick seed 206008421 (a latent sector): the store open that refused the
    // partition completed; it kept the partition's WAL entries for a later replay, so
    // the replay that re-commits is still the first open that came up with it.
    let report = recommitted_after_a_refusal_seen(true, true).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    // Without a cut, re-commits land past the durable tail, never at 1.
    assert_mentions(
        &messages_of(
            &recommitted_after_a_refusal(false).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 3 delivered from orders/0@1"],
    );
}

/// Ids 1-2 at offsets 0-1, delivered, nothing persisted: crash A hides [0, 2) and its
/// replay commits them again at 2-3. Crash B hides [0, 4); its open cuts at 1 (R2) and
/// the replay commits ids 1-2 once more at 1-2, below the copies A's replay made.
fn recommitted_on_both_sides_of_a_cut() -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .open_clean(0, 0, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 4, 0, 4)
        .deliver(1, 0, 2, 1_100)
        .deliver(2, 0, 3, 1_100)
        .crash(&[(0, 0, 4, 4)])
        .restart()
        .alarm(
            Some(0),
            Alarm::Hole {
                segment: "00000000000000000000.log".into(),
                position: 100,
                offset: 1,
                bytes: 200,
            },
        )
        .opened(0, 0, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(1, 0, 1, 1_200)
        .deliver(2, 0, 2, 1_200);
    r
}

#[test]
fn each_crash_is_charged_the_copies_its_own_replay_made() {
    // Quick seed 380407512004629: paired by offset, id 2's copies at 2 (B's) and 3
    // (A's) both went to B, whose budget then ran out for a copy only B explains.
    // Placed together, A and B each explain the two copies they made.
    let report = recommitted_on_both_sides_of_a_cut().report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    let counts: Vec<(u64, u64)> = d.crashes.iter().map(|c| (c.count, c.bound)).collect();
    assert_eq!(counts, [(2, 2), (2, 4)], "{d:?}");
}

#[test]
fn one_crash_commits_an_id_again_once() {
    // A replay commits each WAL entry once: two fresh copies of id 1 after one crash
    // are one more than it explains, whatever its budget.
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .open_clean(0, 0, 2)
        .deliver(1, 0, 2, 1_100)
        .deliver(1, 0, 3, 1_100);
    let messages = fires_only(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &["produce id 1 delivered from orders/0@", "of bound 2 used"],
    );
    assert_eq!(r.report().bounded_duplicates.crashes[0].count, 1);
}

fn hole_at(offset: u64) -> Alarm {
    Alarm::Hole {
        segment: "00000000000000000000.log".into(),
        position: offset * 100,
        offset,
        bytes: 100,
    }
}

#[test]
fn a_copy_the_replay_wrote_at_a_reused_offset_is_not_what_it_repeats() {
    // Nothing delivered before the crash; the open cuts at 0 and the replay commits id 1
    // at 0 and again at 1. Offset 0 lies in the hidden tail, but its copy was written
    // after the crash: both copies are the replay's, one too many.
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 0, 0, 3)
        .crash(&[(0, 0, 3, 0)])
        .restart()
        .alarm(Some(0), hole_at(0))
        .opened(0, 0, 0)
        .hwm(0, 4, 4, 4)
        .deliver(1, 0, 0, 1_100)
        .deliver(1, 0, 1, 1_100)
        .deliver(2, 0, 2, 1_100)
        .deliver(3, 0, 3, 1_100);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::BoundedDuplicates),
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@1",
        ],
    );
}

#[test]
fn an_earlier_cut_on_the_partition_excuses_no_later_double_commit() {
    // A routine torn tail at the first open; the second crash hides ids 3-4 and its
    // replay commits id 3 twice. The per-partition total once let a cut anywhere
    // before excuse this; the one-copy-per-crash rule holds on every partition.
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 2, 2)
        .delivered(2)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 200,
                offset: 2,
                bytes: 50,
            },
        )
        .opened(0, 2, 2)
        .produce(3, 0, 2, 1_002)
        .produce(4, 0, 3, 1_003)
        .hwm(0, 3, 2, 4)
        .deliver(3, 0, 2, 1_002)
        .crash(&[(0, 2, 4, 3)])
        .restart()
        .open_clean(0, 2, 4)
        .hwm(0, 7, 7, 7)
        .deliver(4, 0, 3, 1_003)
        .deliver(3, 0, 4, 1_100)
        .deliver(3, 0, 5, 1_100)
        .deliver(4, 0, 6, 1_100);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::BoundedDuplicates),
        &["produce id 3 delivered from orders/0@"],
    );
}

#[test]
fn a_copy_on_another_partition_is_never_a_recommit() {
    // A WAL entry names its partition: the replay cannot put id 1 on orders/1.
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .crash(&[(0, 0, 2, 2), (1, 0, 0, 0)])
        .restart()
        .open_clean(0, 0, 2)
        .open_clean(1, 0, 0)
        .hwm(0, 3, 3, 3)
        .deliver(1, 1, 0, 1_100)
        .deliver(2, 0, 2, 1_100);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::BoundedDuplicates),
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/1@0",
        ],
    );
}

#[test]
fn the_replay_of_a_crash_is_the_first_store_open_that_completed() {
    // Quick seed 190001563: the open after the crash opened the partition's log, then
    // the store open failed (ENOSPC) before its replay; the open after that cut at 1
    // and its replay re-committed id 3 there. That replay is the crash's.
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .crash(&[(0, 1, 3, 3)])
        .restart()
        .open_clean(0, 1, 3)
        .process_crash(&[(0, 1, 3, 3)])
        .restart()
        .alarm(Some(0), hole_at(1))
        .opened(0, 1, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .deliver(3, 0, 1, 1_002)
        .consume(0, 1);
    let report = r.report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(d.crashes[0].count, 1, "{d:?}");
}

#[test]
fn a_skip_excuses_no_copy_that_no_replay_made_nor_one_on_another_partition() {
    // Adversarial read of damaged_copy's skip branch: with no crash there is no replay
    // to commit the skipped record again, and a WAL entry names its partition.
    for other_partition in [0, 1] {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .hwm(0, 1, 1, 1)
            .deliver(1, 0, 0, 1_000)
            .consume(0, 0);
        r.fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        )
        .alarm(
            Some(0),
            Alarm::FrameSkipped {
                base: 0,
                records: 1,
            },
        )
        .counters(0, 0, 1);
        r.deliver(1, other_partition, 5, 1_000)
            .consume(other_partition, 5);
        let report = r.report();
        let d = &report.bounded_duplicates;
        assert!(
            !d.violations.is_empty(),
            "partition {other_partition}: excused {:?}",
            d.excused
        );
    }
}

/// Ids 1-4 committed at offsets 0-3 and delivered while the persisted HWM stays at 0;
/// damage at rest over `damage` (when given), then a power loss whose decode stops at
/// offset 1 and at which the world could not ask the engine its HWM (the partition was
/// refused). The open after cuts at 1 (R2) and its replay commits id 5's entry at 1 and
/// ids 2-4 again at 2-4.
fn cut_past_damage_at_the_tail(damage: Option<OffsetRange>) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 0, 4).delivered(4);
    for offset in 0..4 {
        r.consume(0, offset);
    }
    if let Some(offsets) = damage {
        r.fault(segment_flip(offsets, Some(false)), Some(0));
    }
    r.with(|t, h| {
        h.crash(
            t,
            vec![CrashPartition {
                tp: tp(0),
                persisted_hwm: 0,
                durable_tail: 1,
                memory_hwm: None,
            }],
        );
    })
    .restart()
    .disk(0, OpenRule::Hole, 0, 1, Some(1))
    .alarm(Some(0), hole_at(1))
    .opened(0, 0, 1)
    .attempt(5, 0)
    .hwm(0, 5, 5, 5)
    .deliver(5, 0, 1, 1_010);
    for id in 2..=4 {
        r.deliver(id, 0, id, 1_010).consume(0, id);
    }
    r
}

#[test]
fn damage_where_the_decode_stops_hides_the_committed_frames_past_it() {
    // Fresh quick seed 3790008479: a flip at rest above the persisted HWM ended the
    // decoded log at 9, below 30 frames the engine had committed and shown; the R2 cut
    // at 9 hid them all and the replay committed them again.
    let report = cut_past_damage_at_the_tail(Some(OffsetRange { start: 1, end: 2 })).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    // Without damage at the decoded tail nothing hid the frames past it.
    for damage in [None, Some(OffsetRange { start: 3, end: 4 })] {
        assert_mentions(
            &messages_of(
                &cut_past_damage_at_the_tail(damage).report(),
                CheckerName::BoundedDuplicates,
            ),
            &["produce id"],
        );
    }
}

/// [`clamped_then_replayed`] with the replay's copy of id 2 committed at 0 but not yet
/// delivered when a crash ends the clamping incarnation, leaving the log's tail at
/// `tail`; the next open cuts at 0 when `cut`. Id 2 is then delivered at 0.
fn clamped_copy_found_after_a_crash(tail: u64, cut: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 1)
        .flipped_and_clamped(2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 1, 1, 1)
        .crash(&[(0, 1, tail, 1)])
        .restart();
    if cut {
        r.disk(0, OpenRule::TornTail, 1, 0, Some(0)).alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 0,
                offset: 0,
                bytes: 100,
            },
        );
    } else {
        r.disk(0, OpenRule::Clean, 1, tail, None);
    }
    r.opened(0, 1, 1).deliver(2, 0, 0, 1_001).consume(0, 0);
    r
}

#[test]
fn a_clamped_copys_recommit_found_in_the_log_after_the_replays_crash_is_excused() {
    // Fresh quick seed 212003714 (latent sectors on): the clamping open's replay put id
    // 24 back at 9, and the consumer first read it only after the next crash.
    let report = clamped_copy_found_after_a_crash(1, false).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    // Not in the log that crash left: a later replay's copy. (Cut since, the next
    // replay commits it again, and the window goes on: see
    // `a_replay_whose_copy_a_later_cut_wiped_hands_the_clamp_on_to_the_next`.)
    assert_mentions(
        &messages_of(
            &clamped_copy_found_after_a_crash(0, false).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 2 delivered from orders/0@0"],
    );
    assert!(
        clamped_copy_found_after_a_crash(1, true)
            .report()
            .bounded_duplicates
            .violations
            .is_empty()
    );
}

/// Ids 1-4 at offsets 0-3, delivered, persisted HWM 4; a latent sector over [2, 4) makes
/// the open of incarnation 1 cut at 2 and clamp to 2, and it is killed before its
/// replay. When `lower`, a latent sector over [0, 2) makes the open of incarnation 2 cut
/// at 0 and clamp to 0 as well; either way that open completes, and id 4 is delivered
/// again at 0.
fn clamped_twice_then_replayed(lower: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 4, 4).delivered(4);
    for offset in 0..4 {
        r.consume(0, offset);
    }
    r.crash(&[(0, 4, 4, 4)])
        .fault(latent_below_hwm(2, 4), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 4, 2, Some(2))
        .alarm(Some(0), torn_tail(2))
        .alarm(Some(0), clamp(4, 2))
        .opened(0, 2, 2)
        .crash(&[(0, 2, 2, 2)]);
    if lower {
        r.fault(latent_below_hwm(0, 2), Some(0))
            .restart()
            .disk(0, OpenRule::TornTail, 2, 0, Some(0))
            .alarm(Some(0), torn_tail(0))
            .alarm(Some(0), clamp(2, 0))
            .opened(0, 0, 0);
    } else {
        r.restart().open_clean(0, 2, 2);
    }
    r.with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    })
    .deliver(4, 0, 0, 1_020)
    .consume(0, 0);
    r
}

#[test]
fn a_clamped_copy_comes_back_at_the_lowest_cut_before_the_replay() {
    // Fresh quick seed 3793010324 (latent sectors on): a clamp gave up id 31 at 3 in
    // an open killed before its replay; a second latent sector made a later open
    // clamp to 0, and the replay that ran put id 31 back at 0, below the first
    // clamp's HWM.
    let report = clamped_twice_then_replayed(true).report();
    assert!(
        report
            .bounded_duplicates
            .excused
            .iter()
            .any(|(id, e)| *id == 4 && e.covers.contains("re-committed at 0")),
        "{:?} {:?}",
        report.bounded_duplicates.excused,
        report.bounded_duplicates.violations
    );
    // With no lower cut, a replay after the clamp commits from 2: a copy at 0 is not
    // its.
    assert_mentions(
        &messages_of(
            &clamped_twice_then_replayed(false).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 4 delivered from orders/0@0"],
    );
}

/// Ids 1-2 at offsets 0-1, delivered, persisted HWM 2; a latent sector over [0, 2)
/// makes the open of incarnation 1 cut at 0 and clamp to 0 (its replay commits id 2 at
/// 0), and that open completes.
fn clamped_and_replayed() -> Run {
    let mut r = Run::new();
    r.produced(2).hwm(0, 2, 2, 2).delivered(2);
    r.consume(0, 0).consume(0, 1);
    r.crash(&[(0, 2, 2, 2)])
        .fault(latent_below_hwm(0, 2), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 2, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(2, 0))
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    r
}

/// Ids 1-2 at offsets 0-1, delivered, persisted HWM 2; a latent sector over [0, 2)
/// makes the open of incarnation 1 cut at 0 and clamp to 0, and its replay commits id
/// 2 at 0. A second latent sector takes that frame; the open of incarnation 2 cuts at
/// `cut` and completes, and id 2 is delivered at `again`.
fn clamp_replayed_twice(cut: u64, again: u64) -> Run {
    let mut r = clamped_and_replayed();
    r.crash(&[(0, 0, 1, 1)])
        .fault(latent_below_hwm(0, 1), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 0, cut, Some(cut))
        .alarm(Some(0), torn_tail(cut))
        .opened(0, 0, cut)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, again, 1_020)
        .consume(0, again);
    r
}

#[test]
fn a_replay_whose_copy_a_later_cut_wiped_hands_the_clamp_on_to_the_next() {
    // Fresh quick seed 3795015435 (latent sectors on): the clamping open's replay put
    // id 10 back at 0; a second latent sector took that frame, the next open cut at 0,
    // and its replay committed id 10 at 0 again.
    let report = clamp_replayed_twice(0, 0).report();
    assert!(
        report
            .bounded_duplicates
            .excused
            .iter()
            .any(|(id, e)| *id == 2 && e.covers.contains("re-committed at 0")),
        "{:?} {:?}",
        report.bounded_duplicates.excused,
        report.bounded_duplicates.violations
    );
    // A cut above the first replay's copy left it in place: a copy past the cut is a
    // second one no replay of the clamp made.
    assert_mentions(
        &messages_of(
            &clamp_replayed_twice(1, 2).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 2 delivered from orders/0@"],
    );
}

/// Ids 1, 2 at 0, 1 (persisted HWM 2), delivered and consumed; a flip at rest takes
/// both frames, the open of incarnation 1 cuts at 0 (R1) and clamps [0, 2), and its
/// replay re-commits id 2 at 0 (delivered: one legitimate duplicate). Ids 3-5 follow at
/// 1-3 (HWM persisted 4); ids 6, 7 are flushed at 4, 5 but not synced when a process
/// crash ends incarnation 1 (the page cache shows a tail of `visible_tail`). The open
/// of incarnation 2 is killed; a power loss takes the log back to 4. The open of
/// incarnation 3 finds a clean log ending at 4 and its replay commits id 6 at 4, id 2
/// AGAIN at 5, and id 7 at 6: the engine bug.
fn clamp_then_a_second_recommit(visible_tail: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 1)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 2);
        })
        .flipped_and_clamped(2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        // The clamp's replay: id 2 again at 0.
        .hwm(0, 1, 1, 1)
        .deliver(2, 0, 0, 1_001)
        .consume(0, 0)
        .produce(3, 0, 1, 1_003)
        .produce(4, 0, 2, 1_004)
        .produce(5, 0, 3, 1_005)
        .hwm(0, 4, 4, 4)
        .deliver(3, 0, 1, 1_003)
        .deliver(4, 0, 2, 1_004)
        .deliver(5, 0, 3, 1_005);
    for o in 1..4 {
        r.consume(0, o);
    }
    r.with(|t, h| {
        h.frontier_written(t, &tp(0), 4);
    })
    // Flushed, not synced, not acknowledged.
    .attempt(6, 0)
    .attempt(7, 0)
    .process_crash(&[(0, 4, visible_tail, 4)])
    // Incarnation 2: the open reads the page cache and is killed.
    .restart()
    .disk(0, OpenRule::Clean, 4, visible_tail, None)
    .crash(&[(0, 4, 4, 4)])
    // Incarnation 3: clean at 4; the replay commits id 2 a second time.
    .restart()
    .open_clean(0, 4, 4)
    .with(|t, h| {
        h.frontier_observed(t, &tp(0), 4);
    })
    .hwm(0, 7, 7, 7)
    .deliver(6, 0, 4, 1_020)
    .deliver(2, 0, 5, 1_021)
    .deliver(7, 0, 6, 1_022);
    r
}

#[test]
fn a_copy_in_a_page_cache_tail_a_power_loss_dropped_is_no_clamp_recommit() {
    // An adversarial read of a933d04: id 2 has three copies (1, 0, 5) from one clamp;
    // offset 5 lay below the page cache's tail at the process crash, but the power
    // loss after dropped that frame, so the third copy is a later replay's.
    for tail in [6, 5] {
        assert_mentions(
            &messages_of(
                &clamp_then_a_second_recommit(tail).report(),
                CheckerName::BoundedDuplicates,
            ),
            &["produce id 2"],
        );
    }
}

/// Ids 1-4 at 0-3, shown (HWM 4) and delivered while the persisted HWM stays 0; a
/// flip at rest hits offset 1. A power loss; the open of incarnation 1 reads the disk
/// (R2 hole at 1) and, when `killed_open`, is killed before the store comes up (the
/// world cannot ask its HWM) and a second power loss follows. The next open cuts at 1;
/// its replay commits id 5 at 1 and ids 2-4 at 2-4, and then (the bug) ids 2-4 AGAIN
/// at 5-7.
fn replay_twice_after_a_killed_open(killed_open: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 0, 4).delivered(4);
    for o in 0..4 {
        r.consume(0, o);
    }
    r.with(|t, h| {
        h.frontier_written(t, &tp(0), 4);
    })
    .fault(
        segment_flip(OffsetRange { start: 1, end: 2 }, Some(false)),
        Some(0),
    )
    // Damaged partition: the world's durable tail is max(decoded, P, memory) = 4.
    .crash(&[(0, 0, 4, 4)]);
    if killed_open {
        r.restart()
            .disk(0, OpenRule::Hole, 0, 1, Some(1))
            .with(|t, h| {
                h.crash(
                    t,
                    vec![CrashPartition {
                        tp: tp(0),
                        persisted_hwm: 0,
                        durable_tail: 1,
                        memory_hwm: None,
                    }],
                );
            });
    }
    r.restart()
        .disk(0, OpenRule::Hole, 0, 1, Some(1))
        .alarm(Some(0), super::loss::hole_at(1))
        .opened(0, 0, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 4);
        })
        .attempt(5, 0)
        .hwm(0, 8, 8, 8)
        .deliver(5, 0, 1, 1_010);
    for id in 2..=4 {
        r.deliver(id, 0, id, 1_010 + id);
    }
    for id in 2..=4 {
        r.deliver(id, 0, id + 3, 1_020 + id);
    }
    r
}

#[test]
fn a_killed_open_between_two_crashes_gives_the_replay_no_second_slot_per_id() {
    // An adversarial read of a933d04: the second crash's tail ran to the last shown
    // HWM, over the records the first crash already hid, so one replay that committed
    // three ids twice passed.
    for killed_open in [true, false] {
        assert_mentions(
            &messages_of(
                &replay_twice_after_a_killed_open(killed_open).report(),
                CheckerName::BoundedDuplicates,
            ),
            &["produce id"],
        );
    }
}

#[test]
fn a_replays_copy_wiped_after_a_clean_open_hands_the_clamp_on_to_the_next() {
    // Fresh quick 3805018633 (latent sectors on): as in `clamp_replayed_twice`, but an
    // open that found the replay's copy intact completed between, and the HWM was
    // persisted over it; only the open after that cut it (and clamped), and its replay
    // committed id 2 again.
    let run = |cut: u64, again: u64| {
        let mut r = clamped_and_replayed();
        r.crash(&[(0, 1, 1, 1)])
            .restart()
            .open_clean(0, 1, 1)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            })
            .crash(&[(0, 1, 1, 1)])
            .fault(latent_below_hwm(0, 1), Some(0))
            .restart()
            .disk(0, OpenRule::TornTail, 1, cut, Some(cut))
            .alarm(Some(0), torn_tail(cut))
            .alarm(Some(0), clamp(1, cut))
            .opened(0, cut, cut)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            })
            .hwm(0, 2, 2, 2)
            .deliver(2, 0, again, 1_020)
            .consume(0, again);
        r
    };
    let report = run(0, 0).report();
    assert!(
        report
            .bounded_duplicates
            .excused
            .iter()
            .any(|(id, e)| *id == 2 && e.covers.contains("re-committed at 0")),
        "{:?} {:?}",
        report.bounded_duplicates.excused,
        report.bounded_duplicates.violations
    );
    // A cut above the replay's copy left it in place: a copy past the cut is a second
    // one no replay of the clamp made.
    assert_mentions(
        &messages_of(&run(1, 2).report(), CheckerName::BoundedDuplicates),
        &["produce id 2 delivered from orders/0@"],
    );
}

/// What came before the last power loss in [`shown_hwm_lost`].
#[derive(Clone, Copy, PartialEq)]
enum Before {
    Nothing,
    /// A process crash: the page cache keeps the word at 8.
    ProcessCrash,
    /// A process crash before any sample: only the crash's reading of the engine's
    /// HWM (8) says what it showed.
    ProcessCrashUnsampled,
    /// A power loss that found the word at 8 on the platter.
    PowerLoss,
}

/// Ids 1-8 committed at offsets 0-7 and shown (HWM 8), id 6 delivered at 5. Unless
/// `before` is a power loss, the `hwm` word's fsync fails, so the 8 stays in the page
/// cache. A flip at rest takes the frame at 5; `before` (with a refusing open after
/// it); then a power loss, after which the word reads 0 and the log ends at the bad
/// frame. The open cuts at 5 (R2) and its replay commits id 6 again at 9 (and at 10,
/// when `twice`).
fn shown_hwm_lost(before: Before, twice: bool) -> Run {
    let part = |persisted_hwm, durable_tail| CrashPartition {
        tp: tp(0),
        persisted_hwm,
        durable_tail,
        memory_hwm: None,
    };
    let on_platter = before == Before::PowerLoss;
    let sampled = before != Before::ProcessCrashUnsampled;
    let mut r = Run::new();
    r.produced(8);
    if sampled {
        r.hwm(0, 8, if on_platter { 8 } else { 0 }, 8);
    }
    r.deliver(6, 0, 5, 1_005).fault(
        segment_flip(OffsetRange { start: 5, end: 6 }, Some(on_platter)),
        Some(0),
    );
    if before != Before::Nothing {
        r.with(|t, h| {
            if on_platter {
                h.crash(t, vec![part(8, 5)]);
            } else {
                let memory_hwm = (!sampled).then_some(8);
                h.process_crash(
                    t,
                    vec![CrashPartition {
                        memory_hwm,
                        ..part(8, 8)
                    }],
                );
            }
        })
        .restart()
        .disk(0, OpenRule::Refuse, 8, 5, Some(5))
        .alarm(Some(0), refused_alarm(500));
    }
    r.with(|t, h| {
        h.crash(t, vec![part(0, 5)]);
    })
    .restart()
    .disk(0, OpenRule::Hole, 0, 5, Some(5))
    .alarm(Some(0), hole_at(5))
    .opened(0, 0, 5)
    .with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    })
    .deliver(6, 0, 9, 1_009);
    if twice {
        r.deliver(6, 0, 10, 1_010);
    }
    r
}

#[test]
fn a_power_loss_hides_from_below_where_the_process_crash_before_it_did() {
    // Fresh quick seed 3814013003: the process crash before the power loss hid nothing
    // (the page cache held the word at 8); the power loss hid [0, 8), the flipped frame
    // at 5 included, and the replay after it committed id 6 again.
    for (name, before) in [
        ("nothing", Before::Nothing),
        ("a process crash", Before::ProcessCrash),
        ("an unsampled process crash", Before::ProcessCrashUnsampled),
    ] {
        let report = shown_hwm_lost(before, false).report();
        assert!(
            report.bounded_duplicates.violations.is_empty(),
            "after {name}: {:#?}",
            report.bounded_duplicates.violations
        );
        // One replay commits an entry once: a third copy stays a violation.
        let report = shown_hwm_lost(before, true).report();
        assert!(
            !report.bounded_duplicates.violations.is_empty(),
            "after {name}: a third copy excused"
        );
    }
}

#[test]
fn only_a_power_loss_after_a_process_crash_hides_below_the_crash_before() {
    // An adversarial review of the widening above: a power loss left the word at 8 on
    // the platter and nothing wrote it since, so the next power loss reading 0 is no
    // page-cache word lost; the widening must not excuse the copy at 9.
    let report = shown_hwm_lost(Before::PowerLoss, false).report();
    assert!(
        !report.bounded_duplicates.violations.is_empty(),
        "the copy at 9 excused"
    );
}

/// Ids 1-3 at offsets 0-2, delivered; a power loss hides [2, 3) and a latent sector
/// takes [1, 3); the open cuts at 1, and its replay commits id 3 again at 1, never
/// delivered. A second power loss hides [1, 2), a latent sector takes [0, 2) and, when
/// `named`, the world lists what it took (`DamageHeld`); the open cuts at 0 and its
/// replay commits id 3 once more at 0, delivered. Both opens come up.
fn recommit_of_a_copy_damage_took(named: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .delivered(3)
        .crash(&[(0, 2, 3, 3)])
        .fault(latent_below_hwm(1, 3), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(1, 2), held(2, 3)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 2, 1, Some(1))
        .alarm(Some(0), torn_tail(1))
        .alarm(Some(0), clamp(2, 1))
        .opened(0, 1, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .crash(&[(0, 1, 2, 2)])
        .fault(latent_below_hwm(0, 2), Some(0));
    if named {
        r.with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(0, 1), held(1, 3)]);
        });
    }
    r.restart()
        .disk(0, OpenRule::TornTail, 1, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(1, 0))
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(3, 0, 0, 1_050);
    r
}

#[test]
fn a_recommit_of_a_copy_damage_took_before_anyone_read_it_is_its_crashs() {
    // Fresh quick seed 495396267004918: the copy the second crash hid was the first
    // replay's and never delivered, so only the world's listing of what the damage took
    // shows it was there to be committed again.
    let report = recommit_of_a_copy_damage_took(true).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(d.crashes[1].count, 1, "{d:?}");
    // Unlisted, nothing says the second crash hid a copy of id 3.
    let report = recommit_of_a_copy_damage_took(false).report();
    assert_mentions(
        &messages_of(&report, CheckerName::BoundedDuplicates),
        &["produce id 3 delivered from orders/0@0"],
    );
}

/// Ids 1-6 acknowledged at offsets 0-5, none delivered; a power loss (persisted HWM 4,
/// tail 6) with a latent sector the world lists as taking id 6's copy at 5; the open
/// cuts at 5, and its replay commits id 6 twice, at 5 and 6, both delivered.
fn listed_copy_then_a_double_commit() -> Run {
    let mut r = Run::new();
    r.produced(6)
        .crash(&[(0, 4, 6, 6)])
        .fault(
            FaultKind::LatentSector {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 5, end: 6 }),
                below_hwm: Some(false),
            },
            Some(0),
        )
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(5, 6)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 4, 5, Some(5))
        .alarm(Some(0), torn_tail(5))
        .opened(0, 4, 5)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(6, 0, 5, 1_005)
        .deliver(6, 0, 6, 1_006);
    r
}

#[test]
fn a_listed_copy_never_lets_one_crash_explain_two_delivered_copies() {
    // helper-27's review of the rule above: the copy damage took was never delivered;
    // without a copy delivered before the crash to stand as the original, the later
    // copy at 5 would take that place and one replay would explain two commits.
    let report = listed_copy_then_a_double_commit().report();
    assert_mentions(
        &messages_of(&report, CheckerName::BoundedDuplicates),
        &["produce id 6 delivered from orders/0@5"],
    );
}

/// Ids 1-3 at offsets 0-2; id 3 delivered. A power loss hides [0, 3); the open cuts at
/// 1 (R2) and comes up, its replay committing id 3 again at 1, never delivered. A second
/// power loss hides [0, 2); the open cuts at 0 (R2) and, when `listed`, the world lists
/// id 3's copy at 1 past that hole; its replay commits id 3 at 0, delivered.
fn recommit_of_a_copy_past_a_hole(listed: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .deliver(3, 0, 2, 1_002)
        .crash(&[(0, 0, 3, 3)])
        .restart()
        .disk(0, OpenRule::Hole, 0, 1, Some(1))
        .alarm(Some(0), hole_at(1))
        .opened(0, 0, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .disk(0, OpenRule::Hole, 0, 0, Some(0));
    if listed {
        r.with(|t, h| {
            h.past_hole_at_open(t, &tp(0), vec![held(1, 3)]);
        });
    }
    r.alarm(Some(0), hole_at(0))
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(3, 0, 0, 1_010);
    r
}

#[test]
fn a_recommit_of_a_copy_an_r2_cut_took_is_its_crashs() {
    // Fresh quick seed 3832006891: the copy the second crash hid lay past the hole its
    // open cut at; the salvage wrote it into the WAL and the replay committed it again.
    // Only the world's listing past the hole says it was there.
    let report = recommit_of_a_copy_past_a_hole(true).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(d.crashes[1].count, 1, "{d:?}");
    assert_mentions(
        &messages_of(
            &recommit_of_a_copy_past_a_hole(false).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 3 delivered from orders/0@0"],
    );
}

/// Id 1 delivered at 0 and hidden with id 2 by a power loss; the next open is killed
/// before the store comes up, and a second power loss follows. With `partial`, that
/// killed open's replay had begun committing on orders/0 (its account), and re-committed
/// ids 1-2 at 2-3 before the second loss hid them again; the open after it commits them
/// at 4-5, and id 1 is delivered from 2 and from 4. Without, the killed open committed
/// nothing, and the one replay there was (the last open's) delivers id 1 from 2 and
/// from 3: one WAL entry committed twice.
fn recommitted_across_two_crashes(partial: bool) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .crash(&[(0, 0, 2, 2)])
        .restart();
    let (tail, again) = if partial {
        r.alarm(Some(0), Alarm::ReplayCommitting { records: 2 });
        (4, 4)
    } else {
        (2, 3)
    };
    r.crash(&[(0, 0, tail, 0)])
        .restart()
        .open_clean(0, 0, tail)
        .deliver(1, 0, 2, 1_100)
        .deliver(1, 0, again, 1_100);
    r
}

#[test]
fn two_crashes_before_one_replay_share_its_one_commit_of_each_entry() {
    // helper-30's hole: one copy of an id per crash let a killed open between two crashes
    // hide a double commit by the replay both crashes share.
    assert_mentions(
        &messages_of(
            &recommitted_across_two_crashes(false).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 1 delivered from orders/0@"],
    );
    // A killed open whose replay had begun committing is a replay of its own: two
    // replays, one copy of id 1 each.
    // (Which of the two crashes each copy charges is the placement's choice.)
    let report = recommitted_across_two_crashes(true).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(d.crashes.iter().map(|c| c.count).sum::<u64>(), 2, "{d:?}");
}

/// Id 1 delivered at 0 and hidden with id 2 by a power loss. The next open
/// raises `replay_committing` (when `alarm`) and is killed before its commit is on the
/// disk: the crash ending it (a power loss, or the process crash a failed commit asks
/// for) finds the tail still at 2, so that open committed nothing there. The last open
/// (completed when `seen`) is the one replay, and it commits id 1 twice, at 2 and 3.
fn accounted_but_nothing_written(alarm: bool, process: bool, seen: bool) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .crash(&[(0, 0, 2, 2)])
        .restart();
    if alarm {
        r.alarm(Some(0), Alarm::ReplayCommitting { records: 2 });
    }
    if process {
        r.process_crash(&[(0, 0, 2, 0)]);
    } else {
        r.crash(&[(0, 0, 2, 0)]);
    }
    r.restart().open_clean(0, 0, 2);
    if seen {
        r.with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    }
    r.deliver(1, 0, 2, 1_100).deliver(1, 0, 3, 1_100);
    r
}

#[test]
fn an_account_with_nothing_written_is_no_replay_of_its_own() {
    // helper-32: the account comes before the commit's fsync; a crash then leaves the
    // tail where it was, and the last open's replay is the only one that wrote.
    let mut passed = Vec::new();
    for alarm in [false, true] {
        for process in [false, true] {
            for seen in [false, true] {
                let report = accounted_but_nothing_written(alarm, process, seen).report();
                if messages_of(&report, CheckerName::BoundedDuplicates).is_empty() {
                    passed.push((alarm, process, seen));
                }
            }
        }
    }
    assert!(
        passed.is_empty(),
        "double commit passed for (alarm, process, seen) {passed:?}"
    );
}

/// Crash A, an open that came up refusing the partition (it replays nothing there),
/// crash B, and an open whose replay commits id 1 twice.
#[test]
fn a_refusal_between_two_crashes_leaves_them_one_replay() {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .alarm(Some(0), refused_alarm(100))
        .with(|t, h| {
            h.partition_refused(t, &tp(0), "bad frame below the HWM");
        })
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .open_clean(0, 0, 2)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 2 })
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(1, 0, 2, 1_100)
        .deliver(1, 0, 3, 1_100);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::BoundedDuplicates),
        &["produce id 1 delivered from orders/0@"],
    );
}

/// Legitimate: the killed open's replay committed ids 1-2 at 2-3 (durable),
/// process crash B, the last open (completed, with its account) commits them at 4-5.
/// Id 1 at 0, 2 and 4: two replays, two copies. Also with the middle open completed.
#[test]
fn two_replays_that_each_wrote_commit_an_id_again_once_each() {
    for middle_seen in [false, true] {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 2, 0, 2)
            .delivered(2)
            .crash(&[(0, 0, 2, 2)])
            .restart()
            .open_clean(0, 0, 2)
            .alarm(Some(0), Alarm::ReplayCommitting { records: 2 });
        if middle_seen {
            r.with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            });
        }
        r.process_crash(&[(0, 0, 4, 4)])
            .restart()
            .open_clean(0, 0, 4)
            .alarm(Some(0), Alarm::ReplayCommitting { records: 2 })
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            })
            .deliver(1, 0, 2, 1_100)
            .deliver(1, 0, 4, 1_100);
        let report = r.report();
        let d = &report.bounded_duplicates;
        assert!(
            d.violations.is_empty(),
            "middle_seen={middle_seen}: {:?}",
            d.violations
        );
    }
}

/// Fresh quick seed 3888003292, cut down to one partition. A crash hides [1, 2) (id 3
/// at 1; bound 1) and its replay commits id 3 again at 2; id 2 is first written at 3.
/// Damage at rest then makes an open cut at 0 and, with `clamp`, give up the HWM 4
/// (a recorded clamp); the WAL commits id 2 again at 1, an offset the first crash's
/// tail held. Read alone, id 2's copy at 3 looks like that crash's re-commit of the one
/// at 1, and the budget's one copy went to it while id 3's went without.
fn clamp_reuses_a_hidden_offset(clamp: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(3, 0, 1, 1_001)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 2, 2)])
        .restart()
        .open_clean(0, 1, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .produce(2, 0, 3, 1_003)
        .hwm(0, 4, 4, 4)
        .deliver(3, 0, 1, 1_001)
        .deliver(3, 0, 2, 1_002)
        .deliver(2, 0, 3, 1_003)
        .consume(0, 1)
        .consume(0, 2)
        .consume(0, 3)
        .crash(&[(0, 4, 4, 4)])
        .fault(
            segment_flip(OffsetRange { start: 0, end: 4 }, Some(true)),
            Some(0),
        )
        .restart()
        .disk(0, OpenRule::TornTail, 4, 0, Some(0))
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 0,
                offset: 0,
                bytes: 400,
            },
        );
    if clamp {
        r.alarm(Some(0), super::clamp(4, 0)).counters(0, 4, 0);
    }
    r.opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(2, 0, 1, 1_004)
        .consume(0, 1);
    r
}

#[test]
fn a_copy_an_excuse_explains_leaves_the_crash_budget_to_one_only_it_explains() {
    let report = clamp_reuses_a_hidden_offset(true).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    assert!(
        report
            .bounded_duplicates
            .excused
            .iter()
            .any(|(id, e)| *id == 2 && e.covers.contains("clamped away")),
        "{:?}",
        report.bounded_duplicates.excused
    );
    assert_eq!(report.bounded_duplicates.crashes[0].count, 1);
    // Without the clamp nothing explains id 2's copy at 1, and one crash's budget of 1
    // cannot explain both ids.
    let report = clamp_reuses_a_hidden_offset(false).report();
    assert_eq!(
        report.bounded_duplicates.violations.len(),
        1,
        "{:?}",
        report.bounded_duplicates.violations
    );
}

/// A crash hides [1, 2) (id 5 at 1, never delivered), and id 2 is first written at 3
/// after it. A second crash hides [1, 4); the next open cuts at 1 (R1) and its replay
/// commits id 2 at 1 and, with `twice` (the bug), again at 2.
fn written_again_after_a_cut(twice: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(5, 0, 1, 1_001)
        .hwm(0, 1, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 2, 2)])
        .restart()
        .open_clean(0, 1, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .produce(2, 0, 3, 1_003)
        .hwm(0, 4, 1, 4)
        .deliver(2, 0, 3, 1_003)
        .crash(&[(0, 1, 4, 4)])
        .restart()
        .disk(0, OpenRule::TornTail, 1, 1, Some(1))
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 100,
                offset: 1,
                bytes: 300,
            },
        )
        .opened(0, 1, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .deliver(2, 0, 1, 1_004);
    if twice {
        r.deliver(2, 0, 2, 1_004);
    }
    r
}

#[test]
fn a_copy_written_after_a_later_cut_is_no_sign_a_crash_hid_it() {
    // The second crash's replay commits id 2 once.
    let report = written_again_after_a_cut(false).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    // Twice is one too many: the copy at 1 came after the cut reopened offset 1, so it
    // is no copy the first crash's tail held, and that crash's unused budget explains
    // nothing of id 2.
    assert_mentions(
        &messages_of(
            &written_again_after_a_cut(true).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 2", "crash t="],
    );
}

/// Id 1 at 0 (x) and again at 1 (y: the engine's bug, with no crash between), both
/// delivered; a power loss hides [0, 2). With `skip`, the open skips x's frame; the
/// replay commits id 1 at 2 (z).
#[test]
fn a_skip_explains_the_repeat_not_the_copy_it_repeats() {
    // helper-44's read of ab06c66: the joint placement let the skip excuse x itself
    // and the crash charge z as x's re-commit, two events for one repeat, while y,
    // the bug's copy, took the original's place.
    for skip in [false, true] {
        assert_eq!(
            super::duplicates_rows::copies_around_a_skip(&[1], 0, 2, skip.then_some(0), &[2])
                .report()
                .bounded_duplicates
                .violations
                .len(),
            1,
            "skip {skip}"
        );
    }
}

/// Id 1 at 0 (x) and at 1 (a: the engine's bug), persisted; a power loss hides
/// nothing; the open skips a's frame, and the replay commits id 1 at 2 (b).
#[test]
fn one_skip_explains_one_repeat_never_both_copies_of_its_pair() {
    // helper-44: before, the rows were asked copy by copy, and the skip of a excused
    // both a (as if it repeated b) and b; x is the original, so a is unexplained.
    let report = super::duplicates_rows::copies_around_a_skip(&[1], 2, 2, Some(1), &[2]).report();
    assert_eq!(
        report.bounded_duplicates.violations.len(),
        1,
        "{:?}",
        report.bounded_duplicates.excused
    );
}
