//! The excuse decision table, in the style of TigerBeetle's `recovery_cases`: one row per
//! excuse kind, each with a history that needs it (every checker passes and the row
//! fired) and the same history one step wider (one offset further, one partition more,
//! one frame over) that the row must not excuse (its checker fires). A row removed from
//! the checkers fails its first half; a row widened fails its second.

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

struct Row {
    kind: ExcuseKind,
    /// The checker that fires when the row does not apply.
    checker: CheckerName,
    needs: fn() -> Run,
    wider: fn() -> Run,
}

fn hole(offset: u64) -> Alarm {
    Alarm::Hole {
        segment: "00000000000000000000.log".into(),
        position: 100 * offset,
        offset,
        bytes: 100,
    }
}

/// Id 1 acknowledged at offset 0 of orders/0 and id 2 at offset 0 of orders/1; a flip
/// at offset 0 of orders/`p` and a restart whose open of it refuses. Id 1 is never
/// delivered.
fn refused_on(p: u32) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 1, 0, 1_000)
        .fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(p),
        )
        .crash(&[(0, 1, 1, 1), (1, 1, 1, 1)])
        .restart()
        .disk(p, OpenRule::Refuse, 1, 0, Some(0))
        .alarm(Some(p), refused_alarm(0));
    // orders/1 opened when orders/0 was refused: its record is delivered.
    if p == 0 {
        r.deliver(2, 1, 0, 1_000);
    }
    r
}

/// Id 2 at offset 1 lost after the engine skipped the frame at `base` (the flip at 1
/// is its cause when `base` is 1).
fn skipped_at(base: u64) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .fault(
            segment_flip(
                OffsetRange {
                    start: base,
                    end: base + 1,
                },
                Some(true),
            ),
            Some(0),
        )
        .alarm(Some(0), Alarm::FrameSkipped { base, records: 1 })
        .counters(0, 0, 1);
    r
}

fn retention_to(log_start: u64) -> Run {
    // Segments at 0 (id 1) and 1 (id 2); with a log start of 1 the reaper deleted the
    // first.
    let mut r = Run::with_retention(10);
    r.segment(0, true)
        .opened(0, 0, 0)
        .committed(1, 0)
        .segment(1, true)
        .committed(2, 1)
        .deliver(2, 0, 1, 65)
        .wait(100);
    if log_start == 1 {
        r.reap(0);
    } else {
        r.wait(10);
    }
    r.with(|t, h| {
        h.log_start_observed(t, &tp(0), log_start);
    });
    r
}

/// Id 2 at offset 1 acknowledged after a lost fsync of the frames `reach` on orders/0.
fn lost_fsync_reaching(reach: OffsetRange) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .fault(
            FaultKind::LostFsync {
                file: FileKind::Segment,
                offsets: Some(reach),
            },
            Some(0),
        )
        .produce(2, 0, 1, 1_001)
        .deliver(1, 0, 0, 1_000)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .hwm(0, 1, 1, 1);
    r
}

/// Id 1 consumed at offset 0 of orders/0 and id 2 acknowledged at offset 1; a flip in
/// its frame and a crash, and the next open cuts offset 1 above the persisted HWM (its
/// WAL replay re-commits id 2 further up, where the history cannot see it).
fn id_2_cut_and_recommitted() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .fault(flip_above_hwm(1), Some(0))
        .crash(&[(0, 1, 2, 2)])
        .restart()
        .disk(0, OpenRule::Hole, 1, 1, Some(1))
        .alarm(Some(0), hole(1))
        .opened(0, 1, 1);
    r
}

/// [`id_2_cut_and_recommitted`] (the replay put id 2 at offset 3); id 3
/// acknowledged at offset 1 and consumed, the frontier 2 written; an out-of-contract
/// `fault` on orders/0 reaching offsets [2, 1000); a crash, and the next open loading
/// the moved frontier, clamped to 5, skipping [2, 5), where the world found
/// `held_id`'s copy at 3. Id 2 is never delivered.
fn frontier_skipped_copy(fault: FaultKind, held_id: ProduceId) -> Run {
    let mut r = id_2_cut_and_recommitted();
    r.produce(3, 0, 1, 1_003)
        .deliver(3, 0, 1, 1_003)
        .consume(0, 1)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 2);
        })
        .fault(fault, Some(0))
        .crash(&[(0, 5, 5, 5)])
        .restart()
        .with(|t, h| {
            h.frontier_loaded(t, &tp(0), 1_000, 5);
            let held = vec![HeldCopy {
                offset: 3,
                id: held_id,
                committed_at_ms: 1_001,
            }];
            h.frontier_skipped(t, &tp(0), 2, 5, held);
        });
    r
}

/// [`id_2_cut_and_recommitted`] (the replay put id 2 at offset 3); ids 3 and 4
/// acknowledged at offsets 1 and 2 and consumed; the HWM 4
/// persisted, then an out-of-contract `fault` on orders/0 reaching offsets [2, 4); a
/// crash, and the next open trusting HWM 2 over the tail 4, whose hidden tail held id 4
/// at 2 and `held_id`'s copy at 3 (the WAL checkpoint had passed both). Id 2 is never
/// delivered.
fn hidden_copy(fault: FaultKind, held_id: ProduceId) -> Run {
    let mut r = id_2_cut_and_recommitted();
    r.produce(3, 0, 1, 1_003)
        .produce(4, 0, 2, 1_004)
        .deliver(3, 0, 1, 1_003)
        .deliver(4, 0, 2, 1_004)
        .consume(0, 1)
        .consume(0, 2)
        .hwm(0, 4, 4, 4)
        .fault(fault, Some(0))
        .crash(&[(0, 2, 4, 4)])
        .restart()
        .disk(0, OpenRule::Clean, 2, 4, None)
        .opened(0, 2, 4)
        .with(|t, h| {
            let held = vec![
                HeldCopy {
                    offset: 2,
                    id: 4,
                    committed_at_ms: 1_004,
                },
                HeldCopy {
                    offset: 3,
                    id: held_id,
                    committed_at_ms: 1_001,
                },
            ];
            h.hidden_at_open(t, &tp(0), 2, 4, held);
        });
    r
}

fn hwm_flip_over(offsets: OffsetRange) -> FaultKind {
    FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(offsets),
        below_hwm: None,
    }
}

fn consumer_offset_flip() -> FaultKind {
    FaultKind::BitFlip {
        file: FileKind::ConsumerOffset,
        offsets: Some(OffsetRange {
            start: 2,
            end: 1_000,
        }),
        below_hwm: None,
    }
}

/// Id 3 at offset 2: its WAL entry flipped while the node was down, and a flip at
/// `at` (above the persisted HWM 1) that the open cut at.
fn both_copies_with_flip_at(at: u64) -> Run {
    let mut r = Run::new();
    r.produced(4)
        .hwm(0, 4, 1, 4)
        .delivered(2)
        .fault(flip_above_hwm(at), Some(0))
        .crash(&[(0, 1, 4, 4)])
        .wal_entry_flipped(2, 3, 1)
        .restart()
        .disk(0, OpenRule::Hole, 1, at, Some(at))
        .alarm(Some(0), hole(at))
        .opened(0, 1, at)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .deliver(4, 0, at, 1_100);
    r
}

/// Offsets 1 and 2 read, hidden by a crash (persisted HWM 1), a flip at `cut` and the
/// open's cut there; the WAL then refills offset 1 with another commit time.
fn cut_at(cut: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 2_000)
        .produce(3, 0, 2, 2_001)
        .hwm(0, 3, 1, 3)
        .delivered(1)
        .deliver(2, 0, 1, 2_000)
        .deliver(3, 0, 2, 2_001)
        .fault(flip_above_hwm(cut), Some(0))
        .crash(&[(0, 1, 3, 3)])
        .restart()
        .disk(0, OpenRule::Hole, 1, cut, Some(cut))
        .alarm(Some(0), hole(cut))
        .opened(0, 1, cut)
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, 1, 2_500);
    r
}

/// Offset 2 read, then the last crash leaves the hidden tail `[1, end)` and the final
/// HWM is 1.
fn last_hidden_tail_to(end: u64) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .crash(&[(0, 1, end, end)])
        .restart()
        .hwm(0, 1, 1, end);
    r
}

/// A crash whose hidden tail `[1, 3)` held ids 2 and 3; the WAL re-commits them, and
/// (`extra`) id 1, below the persisted HWM, shows up again too.
fn hidden_tail_duplicates(extra: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .crash(&[(0, 1, 3, 3)])
        .restart()
        .hwm(0, 5, 5, 5)
        .deliver(2, 0, 3, 1_003)
        .deliver(3, 0, 4, 1_004);
    if extra {
        r.deliver(1, 0, 5, 1_005);
    }
    r
}

/// Id 1 at offset 0, a crash with no hidden tail, a flip of offset 0's frame, and the
/// restart's replay skipping the frame at `base` before the WAL re-commits id 1.
fn skipped_copy_at(base: u64) -> Run {
    let mut r = delivered_then_crashed();
    r.fault(
        segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
        Some(0),
    )
    .restart()
    .disk(0, OpenRule::Clean, 1, 1, None)
    .alarm(Some(0), Alarm::FrameSkipped { base, records: 1 })
    .opened(0, 1, 1)
    .hwm(0, 2, 2, 2)
    .deliver(1, 0, 1, 1_100)
    .consume(0, 1);
    r
}

/// Id 1 at offset 0, a crash with no hidden tail, a checkpoint flip; retention has
/// moved the log start past offset 0, so the open's replay cannot see id 1 there. The
/// open that found the checkpoint unreadable is `first` (the one whose replay
/// re-commits id 1) or a later one.
fn checkpoint_lost(first: bool) -> Run {
    checkpoint_lost_holding(first, None)
}

/// A checkpoint floor of orders: (partition, seq, offset).
type Floor = (u32, u64, u64);

/// [`checkpoint_lost`], with the world's reading of the floors the flipped checkpoint
/// held (`Some`; see `Run::checkpoint_flipped_holding`).
fn checkpoint_lost_holding(first: bool, held: Option<Option<&[Floor]>>) -> Run {
    let mut r = delivered_then_crashed();
    match held {
        Some(held) => r.checkpoint_flipped_holding(held),
        None => r.checkpoint_flipped(),
    };
    let opened = |r: &mut Run, at: u64| {
        r.alarm(
            Some(0),
            Alarm::LogOpened {
                log_start: 1,
                hwm: at,
                tail: at,
                hidden: 0,
            },
        )
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    };
    r.restart().with(|t, h| {
        let mut view = disk_view(OpenRule::Clean, 1, 1, None);
        view.log_start = 1;
        h.disk_at_open(t, &tp(0), view, false);
    });
    if first {
        r.alarm(None, Alarm::WalCheckpointUnreadable);
    }
    opened(&mut r, 1);
    r.hwm(0, 2, 2, 2).deliver(1, 0, 1, 1_100).consume(0, 1);
    if !first {
        r.crash(&[(0, 2, 2, 2)]).restart().with(|t, h| {
            let mut view = disk_view(OpenRule::Clean, 2, 2, None);
            view.log_start = 1;
            h.disk_at_open(t, &tp(0), view, false);
        });
        r.alarm(None, Alarm::WalCheckpointUnreadable);
        opened(&mut r, 2);
    }
    r
}

/// A flip at offset 0 of orders/0 and (`scanned`) a later open that reported the
/// partition without detecting it.
fn flip_scanned(scanned: bool) -> Run {
    let mut r = flipped(Some(true));
    if scanned {
        r.crash(&[(0, 2, 2, 2)]).restart().opened(0, 2, 2);
    }
    r
}

/// A flip at offset 0, a crash, and an open that read a disk whose frames are intact
/// through offset `intact_to` (exclusive) and did not detect anything.
fn flip_covered(intact_to: u64) -> Run {
    let mut r = flipped(Some(true));
    let bad = (intact_to < 2).then_some(intact_to);
    r.crash(&[(0, 2, 2, 2)])
        .restart()
        .disk(0, OpenRule::Clean, 2, intact_to, bad)
        .opened(0, 2, 2);
    r
}

/// A flip at offset 0, a crash, and the open finding the log start at `log_start`.
fn flip_before_log_start(log_start: u64) -> Run {
    let mut r = flipped(Some(true));
    r.crash(&[(0, 2, 2, 2)]).restart().alarm(
        Some(0),
        Alarm::LogOpened {
            log_start,
            hwm: 2,
            tail: 2,
            hidden: 0,
        },
    );
    r
}

const ROWS: &[Row] = &[
    Row {
        kind: ExcuseKind::Refused,
        checker: CheckerName::NoLostAck,
        needs: || refused_on(0),
        // One partition more: the refusal of orders/1 covers nothing on orders/0.
        wider: || refused_on(1),
    },
    Row {
        kind: ExcuseKind::Clamped,
        checker: CheckerName::NoLostAck,
        needs: || super::loss::clamped_run(1),
        // One offset further: a clamp from 2 does not give up offset 1.
        wider: || super::loss::clamped_run(2),
    },
    Row {
        kind: ExcuseKind::Skipped,
        checker: CheckerName::NoLostAck,
        needs: || skipped_at(1),
        // One frame over: a skip of the frame at 0 does not cover offset 1.
        wider: || skipped_at(0),
    },
    Row {
        kind: ExcuseKind::Retention,
        checker: CheckerName::NoLostAck,
        needs: || retention_to(1),
        // One offset further: a log start of 0 deleted nothing.
        wider: || retention_to(0),
    },
    Row {
        kind: ExcuseKind::OutOfContract,
        checker: CheckerName::NoLostAck,
        needs: || lost_fsync_reaching(OffsetRange { start: 1, end: 2 }),
        // One offset further: the lost frames were [2, 3).
        wider: || lost_fsync_reaching(OffsetRange { start: 2, end: 3 }),
    },
    Row {
        kind: ExcuseKind::OutOfContract,
        checker: CheckerName::NoLostAck,
        // Id 2's copy at 3, which a frontier moved by the flip skipped.
        needs: || frontier_skipped_copy(consumer_offset_flip(), 2),
        // One record over: the copy the frontier skipped was another record's.
        wider: || frontier_skipped_copy(consumer_offset_flip(), 7),
    },
    Row {
        kind: ExcuseKind::OutOfContract,
        checker: CheckerName::NoLostAck,
        needs: || frontier_skipped_copy(consumer_offset_flip(), 2),
        // One file over: a fault on the segment cannot have moved the frontier.
        wider: || {
            frontier_skipped_copy(
                FaultKind::LostFsync {
                    file: FileKind::Segment,
                    offsets: Some(OffsetRange {
                        start: 2,
                        end: 1_000,
                    }),
                },
                2,
            )
        },
    },
    Row {
        kind: ExcuseKind::OutOfContract,
        checker: CheckerName::NoLostAck,
        // Id 2's copy at 3, in the hidden tail an `hwm` flip from 4 to 2 made.
        needs: || hidden_copy(hwm_flip_over(OffsetRange { start: 2, end: 4 }), 2),
        // One record over: the hidden copy was another record's.
        wider: || hidden_copy(hwm_flip_over(OffsetRange { start: 2, end: 4 }), 7),
    },
    Row {
        kind: ExcuseKind::OutOfContract,
        checker: CheckerName::NoLostAck,
        needs: || hidden_copy(hwm_flip_over(OffsetRange { start: 2, end: 4 }), 2),
        // One file over: a flip of `consumer.offset` hides nothing.
        wider: || {
            hidden_copy(
                FaultKind::BitFlip {
                    file: FileKind::ConsumerOffset,
                    offsets: Some(OffsetRange { start: 2, end: 4 }),
                    below_hwm: None,
                },
                2,
            )
        },
    },
    Row {
        kind: ExcuseKind::BothCopiesDamaged,
        checker: CheckerName::NoLostAck,
        needs: || both_copies_with_flip_at(2),
        // One frame lower: the flip at 1 left id 3's frame readable (the cut salvages).
        wider: || both_copies_with_flip_at(1),
    },
    Row {
        kind: ExcuseKind::CutAboveHwm,
        checker: CheckerName::StableOffsets,
        needs: || cut_at(1),
        // One offset further: a cut at 2 left offset 1 where it was.
        wider: || cut_at(2),
    },
    Row {
        kind: ExcuseKind::LastHiddenTail,
        checker: CheckerName::StableOffsets,
        needs: || last_hidden_tail_to(3),
        // One offset further: the hidden tail [1, 2) does not hold offset 2.
        wider: || last_hidden_tail_to(2),
    },
    Row {
        kind: ExcuseKind::HiddenTail,
        checker: CheckerName::BoundedDuplicates,
        needs: || hidden_tail_duplicates(false),
        // One duplicate more than the hidden tail held.
        wider: || hidden_tail_duplicates(true),
    },
    Row {
        kind: ExcuseKind::DamagedCopyRecommitted,
        checker: CheckerName::BoundedDuplicates,
        needs: || skipped_copy_at(0),
        // One frame over: the skip of offset 1's frame does not hide the copy at 0.
        wider: || skipped_copy_at(1),
    },
    Row {
        kind: ExcuseKind::CheckpointLost,
        checker: CheckerName::BoundedDuplicates,
        needs: || checkpoint_lost(true),
        // One crash later: the open that lost the checkpoint came after the copy.
        wider: || checkpoint_lost(false),
    },
    Row {
        kind: ExcuseKind::DamageNeverScanned,
        checker: CheckerName::NoCorruptDelivery,
        needs: || flip_scanned(false),
        // One open more: the partition was scanned and the flip missed.
        wider: || flip_scanned(true),
    },
    Row {
        kind: ExcuseKind::DamageDeletedBeforeScan,
        checker: CheckerName::NoCorruptDelivery,
        needs: || flip_before_log_start(1),
        // One offset further: a log start of 0 deleted nothing.
        wider: || flip_before_log_start(0),
    },
    Row {
        kind: ExcuseKind::DamageRepairedBeforeScan,
        checker: CheckerName::NoCorruptDelivery,
        needs: || flip_covered(2),
        // One offset further: the disk the open read ends at the damaged frame.
        wider: || flip_covered(0),
    },
];

#[test]
fn every_excuse_row_is_needed_and_one_step_wider_is_refused() {
    for row in ROWS {
        let report = (row.needs)().report();
        assert_eq!(
            report.failed_checkers(),
            Vec::<CheckerName>::new(),
            "{}: the history that needs it fails: {:#?}",
            row.kind,
            report.violations()
        );
        assert!(
            report.excuses_used().contains_key(&row.kind),
            "{}: did not fire (used: {:?})",
            row.kind,
            report.excuses_used()
        );
        let wider = (row.wider)().report();
        assert!(
            !wider.violations_of(row.checker).is_empty(),
            "{}: one step wider is excused too (used: {:?})",
            row.kind,
            wider.excuses_used()
        );
    }
}

#[test]
fn the_table_has_a_row_for_every_excuse_kind() {
    for kind in ExcuseKind::ALL {
        assert!(
            ROWS.iter().any(|r| r.kind == kind),
            "no decision-table row for {kind}"
        );
        assert!(!kind.rule().is_empty());
    }
}

/// `sim/HARNESS.md` lists every row of the table: a new excuse cannot land unexplained.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "host I/O: the repository's HARNESS.md"
)]
fn harness_md_names_every_excuse_row() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/HARNESS.md"))
        .expect("sim/HARNESS.md");
    for kind in ExcuseKind::ALL {
        assert!(
            doc.contains(&format!("| `{}` |", kind.name())),
            "sim/HARNESS.md has no row for {kind}"
        );
    }
}

/// helper-104 F2: a lost checkpoint adds only re-commits of records below the floor it
/// held. Id 1's earlier copy is at offset 0: a floor at 1 for orders/0 excuses its
/// re-commit; a floor at 0, a checkpoint with no floor for orders/0 (another
/// partition's only), or one that did not read before the flip does not.
#[test]
fn a_lost_checkpoint_excuses_only_copies_below_the_floor_it_held() {
    let cases: [(Option<&[Floor]>, bool); 5] = [
        (Some(&[(0, 1, 1)]), true),
        (Some(&[(0, 1, 1), (1, 9, 9)]), true),
        (Some(&[(0, 0, 0)]), false),
        (Some(&[(1, 9, 9)]), false),
        (None, false),
    ];
    for (held, excused) in cases {
        let r = checkpoint_lost_holding(true, Some(held));
        let fired = !duplicate_messages(&r).is_empty();
        assert_eq!(fired, !excused, "held {held:?}");
        let report = r.report();
        let covers: Vec<&str> = report
            .bounded_duplicates
            .excused
            .iter()
            .filter(|(_, e)| e.kind == ExcuseKind::CheckpointLost)
            .map(|(_, e)| e.covers.as_str())
            .collect();
        assert_eq!(
            covers.iter().any(|c| c.contains("below the lost floor 1")),
            excused,
            "{covers:?}"
        );
    }
}

/// Fresh quick seed 3968282518: the engine lowers a floor's offset to a cut and keeps
/// its seq, so a copy a cut took can lie at or above the lost floor; only a copy
/// retention took must lie below it. Id 1's copy at 0 is cut (R1 at 0, log start 0),
/// the checkpoint held orders/0 at (1, 0), and the blind replay re-commits id 1 at 1:
/// excused; the same copy reaped (log start 1) is not.
#[test]
fn a_copy_a_cut_took_is_excused_above_the_lost_floor() {
    for reaped in [false, true] {
        let mut r = delivered_then_crashed();
        r.checkpoint_flipped_holding(Some(&[(0, 1, 0)]))
            .restart()
            .with(|t, h| {
                let mut view = if reaped {
                    disk_view(OpenRule::Clean, 1, 1, None)
                } else {
                    disk_view(OpenRule::TornTail, 1, 0, Some(0))
                };
                view.log_start = u64::from(reaped);
                h.disk_at_open(t, &tp(0), view, false);
            })
            .alarm(None, Alarm::WalCheckpointUnreadable)
            .alarm(
                Some(0),
                Alarm::LogOpened {
                    log_start: u64::from(reaped),
                    hwm: u64::from(reaped),
                    tail: u64::from(reaped),
                    hidden: 0,
                },
            )
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            })
            .hwm(0, 2, 2, 2)
            .deliver(1, 0, 1, 1_100)
            .consume(0, 1);
        let fired = !duplicate_messages(&r).is_empty();
        assert_eq!(
            fired,
            reaped,
            "reaped {reaped}: {:?}",
            duplicate_messages(&r)
        );
    }
}

/// helper-107: recovery's R4 clamp lowers the checkpoint's offset below copies it had
/// passed (`lower_checkpoint_to_clamps`), as a cut does. Ids 1-3 at 0-2, a flip of
/// [1, 3), R1 at 1 and a clamp 3 -> 1 (ids 2 and 3 given up); the replay re-commits id 3
/// at 1; the lowered checkpoint (seq 2, offset 1) is flipped, and the blind replay
/// re-commits id 2 at 2, above the lost floor: excused (a clamp, not retention, took its
/// copy at 1).
#[test]
fn a_copy_a_clamp_gave_up_is_excused_above_the_lost_floor() {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3);
    for o in 0..3 {
        r.consume(0, o);
    }
    r.crash(&[(0, 3, 3, 3)])
        .fault(
            segment_flip(OffsetRange { start: 1, end: 3 }, Some(true)),
            Some(0),
        )
        .restart()
        .disk(0, OpenRule::TornTail, 3, 1, Some(1))
        .alarm(Some(0), torn_tail(1))
        .alarm(Some(0), clamp(3, 1))
        .counters(0, 2, 0)
        .opened(0, 1, 1)
        .frontier_seen(0, 1)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .hwm(0, 2, 2, 2)
        .deliver(3, 0, 1, 1_500)
        .consume(0, 1)
        .checkpoint_flipped_holding(Some(&[(0, 2, 1)]))
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .disk(0, OpenRule::Clean, 2, 2, None)
        .with(|t, h| {
            h.visible_at_open(t, &tp(0), 0, 2, vec![held(0, 1), held(1, 3)]);
        })
        .alarm(None, Alarm::WalCheckpointUnreadable)
        .opened(0, 2, 2)
        .frontier_seen(0, 2)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .hwm(0, 3, 3, 3)
        .deliver(2, 0, 2, 2_500)
        .consume(0, 2);
    assert!(
        duplicate_messages(&r).is_empty(),
        "{:?}",
        duplicate_messages(&r)
    );
}

/// helper-107 (3), helper-113: the floor a lost checkpoint bounds its excuse by is the
/// one the file the open read held. Id 1 at 0 was reaped while the checkpoint held
/// orders/0's floor at 0 (a reap above the durable floor); the checkpoint was flipped,
/// and then (`tmp`) a `checkpoint.tmp` holding floor 1 that no rename made the file
/// read. The flips land before the restart (which names the flip of the file it read),
/// or (`during`) while the open runs (the world marks the flip of the file it read): the
/// temp file lends nothing either way, nor when (`!read_file`) the file read was never
/// flipped (helper-113: the floor fell back to the temp file's flip).
#[test]
fn a_lost_checkpoints_floor_is_the_file_the_open_read() {
    for (read_file, tmp, during) in [
        (true, false, false),
        (true, true, false),
        (true, false, true),
        (true, true, true),
        (false, true, false),
        (false, true, true),
    ] {
        let mut r = delivered_then_crashed();
        // A flip of the checkpoint file `name` holding orders/0's floor at `floor`,
        // marked as the running open's file when `read`.
        let flip = |r: &mut Run, name: &str, floor: u64, read: bool| {
            r.with(|t, h| {
                h.fault(t, wal_flip().0, None, Some(&format!("/data/wal/{name}")));
                let fault = h.len() - 1;
                let floor = CheckpointFloor {
                    tp: tp(0),
                    seq: floor,
                    offset: floor,
                };
                h.checkpoint_damaged(t, fault, Some(vec![floor]), (None, read));
            });
        };
        let flips = |r: &mut Run| {
            let read = read_file.then(|| {
                flip(r, "checkpoint", 0, during);
                r.h.len() - 2
            });
            if tmp {
                flip(r, "checkpoint.tmp", 1, false);
            }
            read
        };
        let read = if during { None } else { flips(&mut r) };
        r.restart().with(|t, h| {
            h.checkpoint_at_open(t, None, read);
            let mut view = disk_view(OpenRule::Clean, 1, 1, None);
            view.log_start = 1;
            h.disk_at_open(t, &tp(0), view, false);
        });
        if during {
            flips(&mut r);
        }
        r.alarm(None, Alarm::WalCheckpointUnreadable)
            .alarm(
                Some(0),
                Alarm::LogOpened {
                    log_start: 1,
                    hwm: 1,
                    tail: 1,
                    hidden: 0,
                },
            )
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            });
        r.hwm(0, 2, 2, 2).deliver(1, 0, 1, 1_100).consume(0, 1);
        assert!(
            duplicate_messages(&r).iter().any(|m| m.contains("id 1")),
            "read {read_file}, tmp {tmp}, during {during}: {:?}",
            duplicate_messages(&r)
        );
    }
}

/// As [`both_copies_with_flip_at`] at 2, with a flip the page cache did not take
/// (`missed`: of the frame, of the WAL entry) and a process crash in place of the power
/// loss (`process`): such a flip is read only by an open after a power loss
/// (helper-108), so it destroyed no copy the open after a process crash read.
fn both_copies_missed(frame_missed: bool, wal_missed: bool, process: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 1, 4).delivered(2).with(|t, h| {
        h.fault(t, flip_above_hwm(2), Some(&tp(0)), None);
        if frame_missed {
            h.flip_missed_cache(t, h.len() - 1);
        }
    });
    if process {
        r.process_crash(&[(0, 1, 4, 4)]);
    } else {
        r.crash(&[(0, 1, 4, 4)]);
    }
    r.with(|t, h| {
        h.fault(t, wal_flip().0, None, None);
        let fault = h.len() - 1;
        let entries = vec![DamagedWalEntry {
            seq: 2,
            tp: tp(0),
            id: 3,
        }];
        h.wal_entries_damaged(t, fault, 1, entries);
        if wal_missed {
            h.flip_missed_cache(t, fault);
        }
    })
    .restart()
    .disk(0, OpenRule::Hole, 1, 2, Some(2))
    .alarm(Some(0), hole(2))
    .opened(0, 1, 2)
    .with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    })
    .deliver(4, 0, 2, 1_100);
    r
}

#[test]
fn both_copies_damaged_needs_flips_the_open_could_read() {
    for (frame_missed, wal_missed, process, excused) in [
        (false, false, false, true),
        (false, false, true, true),
        // Across a power loss the platter's image is read.
        (true, false, false, true),
        (true, false, true, false),
        (false, true, false, false),
        (false, true, true, false),
    ] {
        let report = both_copies_missed(frame_missed, wal_missed, process).report();
        assert_eq!(
            report.no_lost_ack.excuse_of(3).map(|e| e.kind) == Some(ExcuseKind::BothCopiesDamaged),
            excused,
            "frame missed {frame_missed}, wal missed {wal_missed}, process {process}: {:?}",
            report.no_lost_ack
        );
    }
}
