//! Excuses sweeps showed the checkers need, each narrowed to what its cause reaches and
//! each with the history one step wider that it must not excuse.

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

/// Asserts that `bounded_duplicates` explained every duplicate in `report`.
fn assert_duplicates_explained(report: &CheckReport) {
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
}

fn retention_run(log_start: u64) -> Run {
    // Segments at 0, at `log_start` and at 2; the reaper deletes the first.
    let mut r = Run::with_retention(10);
    r.segment(0, true).opened(0, 0, 0);
    if log_start != 2 {
        r.segment(log_start, true);
    } else {
        r.wait(10);
    }
    r.committed(1, 0)
        .committed(2, 1)
        .segment(2, true)
        .committed(3, 2)
        .deliver(3, 0, 2, 95)
        .consume(0, 2)
        .wait(100)
        .reap(0)
        .with(|t, h| {
            h.log_start_observed(t, &tp(0), log_start);
        });
    r
}

/// Ids 1-3 at offsets 0-2, id 1 consumed and the frontier 1 written; a crash, and
/// (`flip`) a flip in `consumer.offset` from 1 to 3 while the node is down. The frontier
/// comes back as 3: offsets 1 and 2 are never delivered.
fn consumer_offset_flip_run(flip: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .produce(3, 0, 2, 1_002)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 1);
        })
        .crash(&[(0, 3, 3, 3)]);
    if flip {
        r.fault(
            FaultKind::BitFlip {
                file: FileKind::ConsumerOffset,
                offsets: Some(OffsetRange { start: 1, end: 3 }),
                below_hwm: None,
            },
            Some(0),
        );
    }
    r.restart().with(|t, h| {
        h.frontier_observed(t, &tp(0), 3);
    });
    r
}

/// Offsets 1 and 2 are read (commit times 2000 and 2001), then a crash hides them (the
/// persisted HWM is 1) and, when `damaged`, a bit flip in offset 1's frame makes the
/// open cut the hidden tail there (R2, its alarm); the WAL re-commits id 2 at offset 1
/// with a later commit time, 2500, while offset 2's old observation (2001) is never
/// seen again: along offsets, 2500 > 2001. `flip_while_open`: the flip lands after the
/// restart, while the open runs (default seed 196).
fn truncated_hidden_tail_run(damaged: bool, flip_while_open: bool) -> Run {
    let flip = segment_flip(OffsetRange { start: 1, end: 2 }, Some(false));
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 2_000)
        .produce(3, 0, 2, 2_001)
        .hwm(0, 3, 1, 3)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 2_000)
        .deliver(3, 0, 2, 2_001)
        .crash(&[(0, 1, 3, 3)]);
    if damaged && !flip_while_open {
        r.fault(flip.clone(), Some(0));
    }
    r.restart();
    if damaged {
        if flip_while_open {
            r.disk(0, OpenRule::Clean, 1, 3, None).fault(flip, Some(0));
        }
        r.disk(0, OpenRule::Hole, 1, 1, Some(1))
            .alarm(
                Some(0),
                Alarm::Hole {
                    segment: "00000000000000000000.log".into(),
                    position: 100,
                    offset: 1,
                    bytes: 200,
                },
            )
            .opened(0, 1, 1);
    }
    r.hwm(0, 2, 2, 2).deliver(2, 0, 1, 2_500);
    r
}

/// Id 1 is committed at offset 0 and delivered; a crash with no hidden tail (so it
/// explains no duplicate) follows, then `damage` (when given), then the restart with
/// the alarms it raised, and the WAL commits id 1 again at offset 1.
fn recommitted_after_crash_run(
    damage: Option<(FaultKind, Option<u32>)>,
    alarms: &[(Option<u32>, Alarm)],
) -> Run {
    let mut r = delivered_then_crashed();
    match damage {
        // A WAL flip here is one in its checkpoint.
        Some((
            FaultKind::BitFlip {
                file: FileKind::Wal,
                ..
            },
            _,
        )) => {
            r.checkpoint_flipped();
        }
        Some((kind, partition)) => {
            r.fault(kind, partition);
        }
        None => {}
    }
    r.restart().disk(0, OpenRule::Clean, 1, 1, None);
    for (p, alarm) in alarms {
        r.alarm(*p, alarm.clone());
    }
    r.opened(0, 1, 1)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1);
    r
}

fn checkpoint_flip() -> (FaultKind, Option<u32>) {
    let (kind, p) = wal_flip();
    (kind, p)
}

/// A bit flip at rest in the copy at offset 0: the restart's replay finds no readable
/// copy of id 1 (it skips the frame, with its alarm) and commits it again.
fn visible_copy_flip() -> (FaultKind, Option<u32>) {
    (
        segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
        Some(0),
    )
}

/// Id 1 committed at offset 0 and delivered, a crash with no hidden tail, the restart,
/// then a flip in `hwm` of orders/`flipped` from 1 to 0 while the open runs (it may read
/// either value: the world records both views), and the WAL commits id 1 again at 1.
fn hwm_flipped_while_opening_run(flipped: u32) -> Run {
    let mut r = delivered_then_crashed();
    r.restart()
        .disk(0, OpenRule::Clean, 1, 1, None)
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Hwm,
                offsets: Some(OffsetRange { start: 0, end: 1 }),
                below_hwm: None,
            },
            Some(flipped),
        )
        .with(|t, h| {
            h.disk_at_open(
                t,
                &tp(flipped),
                disk_view(OpenRule::Clean, 0, 1, None),
                true,
            );
        })
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1);
    r
}

#[test]
fn retention_excuses_acked_records_it_deleted_before_delivery_and_nothing_above_the_log_start() {
    // The reaper deleted offsets 0 and 1 by age before any consumer read them.
    let report = retention_run(2).report();
    assert_clean(&report);
    assert_eq!(
        report.no_lost_ack.excuse_of(1).map(|e| e.kind),
        Some(ExcuseKind::Retention)
    );
    // With the log start at 1, offset 1 was not retention's to delete.
    let report = retention_run(1).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 2 at offset 1"]);
}

#[test]
fn a_flip_in_consumer_offset_excuses_the_offsets_it_jumped_and_without_it_the_jump_fails() {
    let report = consumer_offset_flip_run(true).report();
    assert_clean(&report);
    for id in [2, 3] {
        assert_eq!(
            report.no_lost_ack.excuse_of(id).map(|e| e.kind),
            Some(ExcuseKind::OutOfContract)
        );
    }
    let report = consumer_offset_flip_run(false).report();
    assert!(
        report
            .frontier_safe
            .violations
            .iter()
            .any(|v| v.message.contains("recovered as 3")),
        "{:?}",
        report.frontier_safe.violations
    );
    assert!(!report.no_lost_ack.violations.is_empty());
}

#[test]
fn an_r2_cut_above_the_hwm_lets_the_offsets_it_cut_change_and_nothing_else() {
    for flip_while_open in [false, true] {
        let report = truncated_hidden_tail_run(true, flip_while_open).report();
        assert_clean(&report);
        assert!(
            report
                .monotonic_commit_time
                .superseded
                .contains_key(&ExcuseKind::CutAboveHwm)
        );
    }
    // Without the cut (and its cause), the changed records are violations.
    let report = truncated_hidden_tail_run(false, false).report();
    assert!(
        !report.stable_offsets.violations.is_empty(),
        "without a cut the changed records are violations"
    );
    assert!(
        !report.monotonic_commit_time.violations.is_empty(),
        "without a cut 2500 at offset 1 before 2001 at offset 2 is a violation"
    );
}

#[test]
fn an_unreadable_checkpoint_explains_no_copy_its_replay_could_see_and_a_wal_flip_nothing() {
    // The engine found the WAL checkpoint unreadable, but its replay reads the log from
    // the log start to the HWM and re-commits no entry whose copy it sees there: id 1
    // at offset 0 was in plain view, so a second copy is the engine's (the open that
    // could not see it is `each_open_that_finds_the_checkpoint_unreadable_...`).
    let messages = fires_only(
        &recommitted_after_crash_run(
            Some(checkpoint_flip()),
            &[(None, Alarm::WalCheckpointUnreadable)],
        )
        .report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
    // The flip without the engine's alarm explains nothing (one WAL flip no longer
    // unbinds every partition's duplicates).
    let messages = fires_only(
        &recommitted_after_crash_run(Some(checkpoint_flip()), &[]).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
    // And without anything, the same copy is an unexplained duplicate.
    let messages = fires_only(
        &recommitted_after_crash_run(None, &[]).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}

#[test]
fn a_duplicate_of_a_copy_the_engine_skipped_as_damaged_is_explained_and_not_otherwise() {
    let skipped = [(
        Some(0),
        Alarm::FrameSkipped {
            base: 0,
            records: 1,
        },
    )];
    let report = recommitted_after_crash_run(Some(visible_copy_flip()), &skipped).report();
    assert_clean(&report);
    assert_eq!(
        report.bounded_duplicates.excused[0].1.kind,
        ExcuseKind::DamagedCopyRecommitted
    );
    // The flip without the engine's skip: the replay read the copy, so the duplicate is
    // unexplained (and the damage undetected).
    let report = recommitted_after_crash_run(Some(visible_copy_flip()), &[]).report();
    assert_mentions(
        &messages_of(&report, CheckerName::BoundedDuplicates),
        &["produce id 1 delivered from orders/0@0"],
    );
    // A skip of another frame explains nothing.
    let other = [(
        Some(0),
        Alarm::FrameSkipped {
            base: 1,
            records: 1,
        },
    )];
    let report = recommitted_after_crash_run(Some(visible_copy_flip()), &other).report();
    assert_mentions(
        &messages_of(&report, CheckerName::BoundedDuplicates),
        &["produce id 1 delivered from orders/0@0"],
    );
}

#[test]
fn an_hwm_flip_the_open_may_have_read_widens_the_hidden_tail_and_nothing_else_does() {
    // The open read a lower HWM and replayed from further back than the crash's (empty)
    // hidden tail.
    let report = hwm_flipped_while_opening_run(0).report();
    assert_duplicates_explained(&report);
    assert_eq!(report.bounded_duplicates.duplicates, 1);
    // The same flip on another partition explains nothing here.
    let messages = messages_of(
        &hwm_flipped_while_opening_run(1).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
    // A flip after the open read the file (no second view) explains nothing either.
    let mut r = delivered_then_crashed();
    r.restart()
        .disk(0, OpenRule::Clean, 1, 1, None)
        .opened(0, 1, 1)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1)
        .fault(hwm_flip(), Some(0));
    let messages = messages_of(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}

/// Ids 1-3 at offsets 0-2, delivered; a checkpoint flip and a crash. The open after it
/// finds the checkpoint unreadable (its replay sees id 1 at 0 and commits nothing); a
/// crash, and a latent sector at offset 2. The next open finds the log start moved to 1
/// (`log_start`: retention) and cuts at 2 (R1), finds the checkpoint unreadable again
/// (`second_alarm`), and (`completed`) its replay, which no longer sees id 1, commits it
/// at 2.
fn checkpoint_lost_at_two_opens(second_alarm: bool, log_start: u64, completed: bool) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3).consume(0, 2);
    r.checkpoint_flipped()
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .disk(0, OpenRule::Clean, 3, 3, None)
        .alarm(None, Alarm::WalCheckpointUnreadable)
        .opened(0, 3, 3)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 3);
        })
        .crash(&[(0, 3, 3, 3)])
        .fault(
            FaultKind::LatentSector {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 2, end: 3 }),
                below_hwm: Some(true),
            },
            Some(0),
        )
        .restart()
        .with(|t, h| {
            let mut view = disk_view(OpenRule::TornTail, 3, 2, Some(2));
            view.log_start = log_start;
            h.disk_at_open(t, &tp(0), view, false);
        })
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 200,
                offset: 2,
                bytes: 100,
            },
        );
    if second_alarm {
        r.alarm(None, Alarm::WalCheckpointUnreadable);
    }
    r.alarm(
        Some(0),
        Alarm::LogOpened {
            log_start,
            hwm: 2,
            tail: 2,
            hidden: 0,
        },
    );
    if completed {
        r.with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        });
    }
    r.hwm(0, 3, 3, 3).deliver(1, 0, 2, 1_200);
    r
}

#[test]
fn each_open_that_finds_the_checkpoint_unreadable_explains_its_own_replay() {
    let report = checkpoint_lost_at_two_opens(true, 1, true).report();
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
    let kinds: Vec<_> = report
        .bounded_duplicates
        .excused
        .iter()
        .map(|(_, e)| e.kind)
        .collect();
    assert_eq!(kinds, [ExcuseKind::CheckpointLost]);
    // The first open's alarm covers only what its replay committed, from its tail (3);
    // a replay that still saw id 1 at 0 commits nothing; an open that never completed
    // replayed nothing.
    for (second_alarm, log_start, completed) in
        [(false, 1, true), (true, 0, true), (true, 1, false)]
    {
        let report = checkpoint_lost_at_two_opens(second_alarm, log_start, completed).report();
        assert_mentions(
            &messages_of(&report, CheckerName::BoundedDuplicates),
            &["produce id 1 delivered from orders/0@0"],
        );
    }
}

/// Ids 1-3 at offsets 0-2, delivered; a checkpoint flip and a crash. The open after it
/// finds the checkpoint unreadable, trusts HWM 3, and its replay commits id 1 again at
/// 3. The world's listing of what that open could see (`listed`, ids by offset from 0)
/// says whether id 1 was still there: a cut and a clamp since its delivery may have put
/// another record at offset 0 (fresh quick seed 4027941194005154).
fn checkpoint_lost_with_listing(listed: Option<&[u64]>) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3).consume(0, 2);
    r.checkpoint_flipped()
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .disk(0, OpenRule::Clean, 3, 3, None);
    if let Some(ids) = listed {
        let held: Vec<HeldCopy> = ids
            .iter()
            .enumerate()
            .map(|(offset, &id)| HeldCopy {
                offset: offset as u64,
                id,
                committed_at_ms: 1_000 + offset as u64,
            })
            .collect();
        r.with(|t, h| {
            h.visible_at_open(t, &tp(0), 0, 3, held);
        });
    }
    r.alarm(None, Alarm::WalCheckpointUnreadable)
        .opened(0, 3, 3)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 3);
        })
        .hwm(0, 4, 4, 4)
        .deliver(1, 0, 3, 1_300);
    r
}

#[test]
fn a_full_replay_is_judged_by_what_the_open_could_see() {
    // Offset 0 now holds id 7: the replay could not see id 1 and committed it again.
    let report = checkpoint_lost_with_listing(Some(&[7, 2, 3])).report();
    assert_duplicates_explained(&report);
    let kinds: Vec<_> = report
        .bounded_duplicates
        .excused
        .iter()
        .map(|(id, e)| (*id, e.kind))
        .collect();
    assert_eq!(kinds, [(1, ExcuseKind::CheckpointLost)]);
    // Id 1 was there to see: committing it again is the engine's duplicate. Without a
    // listing, its offset below the HWM counts as seen.
    for listed in [Some(&[1u64, 2, 3][..]), Some(&[7, 1, 3][..]), None] {
        let report = checkpoint_lost_with_listing(listed).report();
        assert_mentions(
            &messages_of(&report, CheckerName::BoundedDuplicates),
            &["id 1"],
        );
    }
}

/// Fresh default seed 3844101424: ids 1-3 at 0-2, delivered; retention moved the log
/// start to 1; a checkpoint flip and a crash. The open after it finds the checkpoint
/// unreadable and, no longer seeing id 1, its replay begins committing it (`accounted`:
/// its `replay_committing` account) at 3, and is killed by a power loss that leaves the
/// tail at 4 above a persisted HWM of 3. The next open completes, and once the HWM
/// passes 3 id 1 is delivered from there.
fn checkpoint_lost_in_a_killed_open(accounted: bool) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3).consume(0, 2);
    r.checkpoint_flipped()
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .with(|t, h| {
            let mut view = disk_view(OpenRule::Clean, 3, 3, None);
            view.log_start = 1;
            h.disk_at_open(t, &tp(0), view, false);
        })
        .alarm(None, Alarm::WalCheckpointUnreadable)
        .alarm(
            Some(0),
            Alarm::LogOpened {
                log_start: 1,
                hwm: 3,
                tail: 3,
                hidden: 0,
            },
        );
    if accounted {
        r.alarm(Some(0), Alarm::ReplayCommitting { records: 1 });
    }
    r.crash(&[(0, 3, 4, 0)])
        .restart()
        .with(|t, h| {
            let mut view = disk_view(OpenRule::Clean, 3, 4, None);
            view.log_start = 1;
            h.disk_at_open(t, &tp(0), view, false);
        })
        .alarm(
            Some(0),
            Alarm::LogOpened {
                log_start: 1,
                hwm: 3,
                tail: 4,
                hidden: 1,
            },
        )
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 3);
        })
        .hwm(0, 5, 5, 5)
        .deliver(1, 0, 3, 1_200);
    r
}

#[test]
fn a_killed_open_whose_replay_began_explains_the_copy_its_lost_checkpoint_made() {
    let report = checkpoint_lost_in_a_killed_open(true).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    let kinds: Vec<_> = d.excused.iter().map(|(_, e)| e.kind).collect();
    assert_eq!(kinds, [ExcuseKind::CheckpointLost], "{d:?}");
    // Without its account, the killed open replayed nothing there.
    assert_mentions(
        &messages_of(
            &checkpoint_lost_in_a_killed_open(false).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 1 delivered from orders/0@0"],
    );
}

/// Fresh quick seed 3844006100: orders/0's hwm word is 1 (reported); the engine writes
/// 2 and, when `lost_first`, that fsync is lost (the platter keeps 1). A flip of bit 2
/// then hits the platter (1 -> 5) and the page cache, which held 2 (-> 6), and only
/// after it does the engine report the word 2 it wrote before. A process crash keeps
/// the cache: the open reads 6 over a tail of 2 and clamps (R4).
fn clamp_of_a_flip_after_a_lost_hwm_fsync(lost_first: bool) -> Run {
    let mut r = Run::new();
    r.produced(2).hwm(0, 1, 1, 2);
    if lost_first {
        r.fault(
            FaultKind::LostFsync {
                file: FileKind::Hwm,
                offsets: Some(OffsetRange { start: 1, end: 2 }),
            },
            Some(0),
        );
    }
    r.fault(
        FaultKind::BitFlip {
            file: FileKind::Hwm,
            offsets: Some(OffsetRange { start: 1, end: 5 }),
            below_hwm: None,
        },
        Some(0),
    )
    .hwm(0, 2, 2, 2)
    .process_crash(&[(0, 6, 2, 2)])
    .restart()
    .disk(0, OpenRule::Clean, 6, 2, None)
    .alarm(
        Some(0),
        Alarm::Clamp {
            persisted_hwm: 6,
            hwm: 2,
            lost: 4,
        },
    )
    .opened(0, 2, 2);
    r
}

#[test]
fn a_word_reported_after_a_flip_is_no_rewrite_when_a_lost_fsync_wrote_it_before() {
    let report = clamp_of_a_flip_after_a_lost_hwm_fsync(true).report();
    assert_alarms_explained(&report);
    // Without the lost fsync, the word 2 reported after the flip was written after it:
    // the flip was gone, and the clamp has no cause.
    assert_mentions(
        &messages_of(
            &clamp_of_a_flip_after_a_lost_hwm_fsync(false).report(),
            CheckerName::AlarmsExplained,
        ),
        &["r4_clamp", "the missing tail has no cause"],
    );
}

/// helper-33: as `checkpoint_lost_in_a_killed_open(true)`, but the killed
/// open's frame at 3 lay only in the page cache (a process crash ended it, reporting
/// durable tail 4) and a power loss killed the next incarnation before it opened
/// (durable tail 3: that frame is gone, and so is a cache-only checkpoint flip: that
/// incarnation's restart still read it unreadable). The open after finds the checkpoint
/// readable (no alarm; the world reads its floor 3 for orders/0), so its replay may not commit id 1 again; a defective replay (e.g. one
/// that ignores the checkpoint's seq) commits it at 3 anyway. That copy cannot be the
/// killed open's: it must not be excused.
fn killed_open_copy_lost_then_recommitted() -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3).consume(0, 2);
    let view = |t: u64, h: &mut History| {
        let mut view = disk_view(OpenRule::Clean, 3, 3, None);
        view.log_start = 1;
        h.disk_at_open(t, &tp(0), view, false);
    };
    let opened = Alarm::LogOpened {
        log_start: 1,
        hwm: 3,
        tail: 3,
        hidden: 0,
    };
    r.checkpoint_flipped()
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .with(view)
        .alarm(None, Alarm::WalCheckpointUnreadable)
        .alarm(Some(0), opened.clone())
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .process_crash(&[(0, 3, 4, 0)])
        .restart()
        .checkpoint_read(None)
        .crash(&[(0, 3, 3, 0)])
        .restart()
        .checkpoint_read(Some((3, 3)))
        .with(view)
        .alarm(Some(0), opened)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 3);
        })
        .hwm(0, 4, 4, 4)
        .deliver(1, 0, 3, 1_200);
    r
}

#[test]
fn a_killed_replays_copy_a_power_loss_dropped_explains_nothing() {
    assert_mentions(
        &messages_of(
            &killed_open_copy_lost_then_recommitted().report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 1 delivered from orders/0@0"],
    );
}

/// helper-33: inc 0 reported its word 2, then wrote 3 and that fsync was
/// lost (the platter keeps 2); a power loss. Inc 1's open reads 2; before its first
/// report a flip takes the word 2 -> 1026 (platter and cache). Inc 1 then reports a
/// move of its persisted HWM to 3: its own write, after the flip (it cannot be a late
/// report of inc 0's write). A defective persister that reports without the write
/// reaching the platter leaves 1026 there; the power loss after, the open clamps.
/// The report of 3 ended the flip's effect: the clamp must have no cause.
fn clamp_after_a_rewrite_to_a_value_an_earlier_incarnation_lost() -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 2, 2, 3)
        .fault(
            FaultKind::LostFsync {
                file: FileKind::Hwm,
                offsets: Some(OffsetRange { start: 2, end: 3 }),
            },
            Some(0),
        )
        .crash(&[(0, 2, 3, 3)])
        .restart()
        .disk(0, OpenRule::Clean, 2, 3, None)
        .opened(0, 2, 3)
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Hwm,
                offsets: Some(OffsetRange {
                    start: 2,
                    end: 1026,
                }),
                below_hwm: None,
            },
            Some(0),
        )
        .hwm(0, 4, 2, 4)
        .hwm(0, 4, 3, 4)
        .crash(&[(0, 1026, 4, 4)])
        .restart()
        .disk(0, OpenRule::Clean, 1026, 4, None)
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 1026,
                hwm: 4,
                lost: 1022,
            },
        )
        .opened(0, 4, 4);
    r
}

#[test]
fn a_rewrite_to_a_word_an_earlier_incarnation_lost_ends_the_flip() {
    let report = clamp_after_a_rewrite_to_a_value_an_earlier_incarnation_lost().report();
    assert_mentions(
        &messages_of(&report, CheckerName::AlarmsExplained),
        &["r4_clamp", "the missing tail has no cause"],
    );
}

/// Fresh quick seed 3851001784: orders/0's hwm word reported 14; the engine writes 15,
/// 16 and 17, the last landing on the platter while its report still trails; a flip of
/// bit 10 takes the word 17 -> 1041 (platter and cache). After the flip the engine
/// reports `reported` (15: its write of 15, late; 18: a write after the flip). A
/// process crash keeps the word 1041, and the open clamps it to the tail 17 (R4).
fn clamp_of_a_flip_reported_behind(reported: u64) -> Run {
    let mut r = Run::new();
    r.produced(2).hwm(0, 14, 14, 17);
    r.fault(
        FaultKind::BitFlip {
            file: FileKind::Hwm,
            offsets: Some(OffsetRange {
                start: 17,
                end: 1041,
            }),
            below_hwm: None,
        },
        Some(0),
    )
    .hwm(0, 17, reported, 17)
    .process_crash(&[(0, 1041, 17, 17)])
    .restart()
    .disk(0, OpenRule::Clean, 1041, 17, None)
    .alarm(
        Some(0),
        Alarm::Clamp {
            persisted_hwm: 1041,
            hwm: 17,
            lost: 1024,
        },
    )
    .opened(0, 17, 17);
    r
}

#[test]
fn a_report_below_a_flipped_word_is_a_write_from_before_the_flip() {
    let report = clamp_of_a_flip_reported_behind(15).report();
    assert_alarms_explained(&report);
    // A report above the word the flip found is a write after it: the flip was gone.
    assert_mentions(
        &messages_of(
            &clamp_of_a_flip_reported_behind(18).report(),
            CheckerName::AlarmsExplained,
        ),
        &["r4_clamp", "the missing tail has no cause"],
    );
}

/// Seed 3943016794 (quick): id 1 at offset 0 above a missing `hwm` file, a power loss
/// that hides it (`[0, 1)`), the open (its view: no word), its log opened at HWM 0;
/// then, while the store's open still runs, a flip raises the word the engine just
/// wrote from 0 to 2^49 (a second view), and the replay commits id 1 again at 1.
fn hwm_flipped_after_log_opened_run(opened_first: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000).crash(&[(0, 0, 1, 1)]).restart();
    r.with(|t, h| {
        let mut view = disk_view(OpenRule::Clean, 0, 1, None);
        view.persisted_hwm = None;
        view.hwm = 0;
        h.disk_at_open(t, &tp(0), view, false);
    });
    if opened_first {
        r.opened(0, 0, 1);
    }
    r.fault(hwm_flip_between(0, 1 << 49), Some(0)).with(|t, h| {
        h.disk_at_open(
            t,
            &tp(0),
            disk_view(OpenRule::Clean, 1 << 49, 1, None),
            true,
        );
    });
    if !opened_first {
        r.opened(0, 0, 1);
    }
    r.hwm(0, 2, 0, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 0)
        .consume(0, 1);
    r
}

#[test]
fn an_hwm_flip_after_the_log_opened_is_no_view_the_open_read() {
    let report = hwm_flipped_after_log_opened_run(true).report();
    assert_duplicates_explained(&report);
    assert_eq!(report.bounded_duplicates.duplicates, 1);
    // Before the log opened the open may have read the raised word: it then showed
    // offset 0, and the crash's tail explains no copy of it.
    let messages = messages_of(
        &hwm_flipped_after_log_opened_run(false).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}
