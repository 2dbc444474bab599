//! An out-of-contract fault excuses only what its file can move: a word out of step
//! with the log (an HWM beyond the tail, an HWM that fell, a log start that fell) is
//! excused by a fault on a file that moves that word, whose offsets meet the gap; a
//! frame-level alarm by a fault on the log's own files; and a segment fault's reach
//! ends where an engine cut rewrote its offsets. Each test shows the excuse and the
//! same history with the fault on the wrong file or one step later, which fails.

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

/// Two records delivered; `fault` on orders/0; then an in-memory HWM 2 over a durable
/// tail of 1.
fn hwm_beyond_tail_after(fault: FaultKind) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .fault(fault, Some(0))
        .hwm(0, 2, 1, 1);
    r
}

fn lost_fsync(file: FileKind, offsets: Option<OffsetRange>) -> FaultKind {
    FaultKind::LostFsync { file, offsets }
}

#[test]
fn an_hwm_beyond_the_tail_is_excused_by_lost_frames_in_the_gap_only() {
    let lost = hwm_beyond_tail_after(lost_fsync(
        FileKind::Segment,
        Some(OffsetRange { start: 1, end: 2 }),
    ))
    .report();
    assert!(
        lost.stable_offsets.violations.is_empty(),
        "{:?}",
        lost.stable_offsets.violations
    );
    assert!(
        lost.stable_offsets
            .excused
            .iter()
            .any(|e| e.excuse.kind == ExcuseKind::OutOfContract),
        "{:?}",
        lost.stable_offsets.excused
    );
    // A lost fsync of consumer.offset cannot make the log shorter than the HWM.
    let word = hwm_beyond_tail_after(lost_fsync(FileKind::ConsumerOffset, None)).report();
    assert_mentions(
        &messages_of(&word, CheckerName::StableOffsets),
        &["in-memory HWM of orders/0 is 2, beyond the durable tail 1"],
    );
    // Frames lost above the HWM do not explain a tail below it.
    let above = hwm_beyond_tail_after(lost_fsync(
        FileKind::Segment,
        Some(OffsetRange { start: 2, end: 3 }),
    ))
    .report();
    assert_mentions(
        &messages_of(&above, CheckerName::StableOffsets),
        &["beyond the durable tail 1"],
    );
}

#[test]
fn an_hwm_beyond_the_tail_after_the_next_crash_is_not_the_lost_fsyncs() {
    // The lost frames are gone at the crash; the open that follows rebuilt its HWM from
    // the disk, so an HWM beyond the tail there is the engine's own.
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .fault(
            lost_fsync(FileKind::Segment, Some(OffsetRange { start: 1, end: 2 })),
            Some(0),
        )
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .hwm(0, 2, 1, 1);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::StableOffsets),
        &["in-memory HWM of orders/0 is 2, beyond the durable tail 1"],
    );
}

/// Two records delivered and a crash with persisted HWM 2; `fault` on orders/0 while
/// the node is down; the restart comes back with HWM 1 and records no clamp.
fn hwm_fell_after(fault: FaultKind, before_crash: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    if before_crash {
        r.fault(fault.clone(), Some(0));
    }
    r.crash(&[(0, 2, 2, 2)]);
    if !before_crash {
        r.fault(fault, Some(0));
    }
    r.restart().hwm(0, 1, 1, 2).counters(0, 0, 0);
    r
}

#[test]
fn an_hwm_that_fell_unrecorded_is_excused_by_a_fault_on_hwm_only() {
    let flip = FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start: 1, end: 2 }),
        below_hwm: None,
    };
    let report = hwm_fell_after(flip, false).report();
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    // Frames lost under the persisted HWM make the engine clamp (R4) and say so: a lost
    // segment fsync never excuses a drop the engine did not record.
    let segment = lost_fsync(FileKind::Segment, Some(OffsetRange { start: 1, end: 2 }));
    let report = hwm_fell_after(segment, true).report();
    assert_mentions(
        &messages_of(&report, CheckerName::StableOffsets),
        &[
            "below the persisted HWM 2",
            "recorded a loss of 0 record(s), 1 needed",
        ],
    );
    // A flip of hwm whose old and new values lie elsewhere moved nothing across [1, 2).
    let far = FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start: 5, end: 9 }),
        below_hwm: None,
    };
    let report = hwm_fell_after(far, false).report();
    assert_mentions(
        &messages_of(&report, CheckerName::StableOffsets),
        &["below the persisted HWM 2"],
    );
}

#[test]
fn a_log_start_that_fell_is_excused_by_a_lost_directory_fsync_only() {
    let run = |file: FileKind| {
        let mut r = Run::new();
        r.with(|t, h| {
            h.log_start_observed(t, &tp(0), 5);
        })
        .fault(lost_fsync(file, None), Some(0))
        .crash(&[(0, 0, 0, 0)])
        .restart()
        .with(|t, h| {
            h.log_start_observed(t, &tp(0), 3);
        });
        r.report()
    };
    let dir = run(FileKind::Other);
    assert!(
        dir.stable_offsets.violations.is_empty(),
        "{:?}",
        dir.stable_offsets.violations
    );
    // A lost segment fsync cannot bring a deleted segment back.
    assert_mentions(
        &messages_of(&run(FileKind::Segment), CheckerName::StableOffsets),
        &["log start of orders/0 moved backwards from 5"],
    );
}

/// Id 1 at offset 0; a misdirected write reaching offset 1 of orders/0; a crash, and an
/// open that cut the log at 1 (the engine's account). Then id 2 acknowledged at offset
/// 1 (`after_cut`) or before the crash, and never delivered.
fn lost_at_a_misdirected_offset(after_cut: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000);
    if !after_cut {
        r.produce(2, 0, 1, 1_001);
    }
    r.fault(
        FaultKind::Misdirected {
            file: FileKind::Segment,
            offsets: Some(OffsetRange { start: 1, end: 2 }),
            below_hwm: Some(false),
        },
        Some(0),
    )
    .deliver(1, 0, 0, 1_000)
    .crash(&[(0, 1, 2, 2)])
    .restart()
    .disk(0, OpenRule::Hole, 1, 1, Some(1))
    .alarm(Some(0), {
        Alarm::Hole {
            segment: "00000000000000000000.log".into(),
            position: 100,
            offset: 1,
            bytes: 100,
        }
    })
    .opened(0, 1, 1);
    if after_cut {
        r.produce(2, 0, 1, 1_001);
    }
    r
}

#[test]
fn a_segment_faults_reach_ends_where_an_engine_cut_rewrote_its_offsets() {
    let before = lost_at_a_misdirected_offset(false).report();
    let excuse = before.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract, "{excuse}");
    // Offset 1 was written again after the cut: the misdirected write never saw id 2.
    let after = lost_at_a_misdirected_offset(true).report();
    assert!(after.no_lost_ack.excuse_of(2).is_none());
    assert_mentions(
        &messages_of(&after, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

#[test]
fn a_malformed_hwm_refusal_needs_a_fault_on_hwm() {
    let run = |file: FileKind| {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .hwm(0, 1, 1, 1)
            .deliver(1, 0, 0, 1_000)
            .crash(&[(0, 1, 1, 1)])
            .fault(lost_fsync(file, None), Some(0))
            .restart()
            .with(|t, h| {
                let mut view = disk_view(OpenRule::Refuse, 1, 1, None);
                view.persisted_hwm = None;
                h.disk_at_open(t, &tp(0), view, false);
            })
            .alarm(
                Some(0),
                Alarm::Refused {
                    segment: "hwm".into(),
                    position: 0,
                },
            );
        r.report()
    };
    let hwm = run(FileKind::Hwm);
    assert!(
        hwm.alarms_explained.violations.is_empty(),
        "{:?}",
        hwm.alarms_explained.violations
    );
    assert_mentions(
        &messages_of(&run(FileKind::ConsumerOffset), CheckerName::AlarmsExplained),
        &["malformed hwm file with no fault on it that could make one"],
    );
}

/// Id 2 acknowledged at offset 1 after a lost fsync of the WAL left its entry
/// undurable; a crash with persisted HWM `persisted`; id 2 never delivered.
fn wal_entry_lost_then_crash(persisted: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .fault(lost_fsync(FileKind::Wal, None), None)
        .with(|t, h| {
            let fault_index = h.len() - 1;
            let entries = vec![DamagedWalEntry {
                seq: 2,
                tp: tp(0),
                id: 2,
            }];
            h.wal_entries_damaged(t, fault_index, 1, entries);
        })
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, persisted, 2)
        .deliver(1, 0, 0, 1_000)
        .crash(&[(0, persisted, 2, 2)])
        .restart()
        .open_clean(0, persisted, persisted)
        .hwm(0, persisted, persisted, persisted);
    r
}

#[test]
fn a_lost_wal_entry_excuses_a_record_only_while_its_log_copy_was_not_committed() {
    // At the crash offset 1 lay above the persisted HWM: only the WAL entry could bring
    // the record back, and the lost fsync took it.
    let needed = wal_entry_lost_then_crash(1).report();
    let excuse = needed.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract, "{excuse}");
    assert!(excuse.covers.contains("WAL entries"), "{excuse}");
    // Below the persisted HWM the log copy is what recovery trusts: the lost entry
    // cannot explain the loss.
    let committed = wal_entry_lost_then_crash(2).report();
    assert!(committed.no_lost_ack.excuse_of(2).is_none());
    assert_mentions(
        &messages_of(&committed, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

/// A hole at offset 2 (valid frames follow) above the true persisted HWM of 1: R2's to
/// cut. `fault` on orders/0 while the node is down; the open refuses instead.
fn refused_at_a_hole_after(fault: FaultKind) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .crash(&[(0, 1, 3, 1)])
        .fault(fault, Some(0))
        .restart()
        .disk(0, OpenRule::Refuse, 9, 2, Some(2))
        .alarm(
            Some(0),
            Alarm::Refused {
                segment: "00000000000000000000.log".into(),
                position: 200,
            },
        );
    r
}

#[test]
fn a_refusal_at_a_hole_above_the_hwm_is_explained_by_a_flip_of_hwm_past_it() {
    // The flip moved the word from 1 to 9, past the hole: R3 is then the rule.
    let flip = FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start: 1, end: 9 }),
        below_hwm: None,
    };
    let report = refused_at_a_hole_after(flip).report();
    assert!(
        report.alarms_explained.violations.is_empty(),
        "{:?}",
        report.alarms_explained.violations
    );
    // A fault on consumer.offset moves no word the scan compares the hole with.
    let word = FaultKind::BitFlip {
        file: FileKind::ConsumerOffset,
        offsets: Some(OffsetRange { start: 1, end: 9 }),
        below_hwm: None,
    };
    assert_mentions(
        &messages_of(
            &refused_at_a_hole_after(word).report(),
            CheckerName::AlarmsExplained,
        ),
        &["no damage at rest or out-of-contract fault reaching offset 2"],
    );
}

/// Id 1 consumed; a flip of orders/0's consumer.offset to 1000; the engine writes the
/// frontier 1 again, and a crash follows. The next open finds `found` there; id 2 is
/// acknowledged at offset 1 in that incarnation and never delivered (the open that
/// follows clamps the frontier 1000 to the HWM, over it).
fn frontier_rewrite_then_crash(found: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .fault(
            FaultKind::BitFlip {
                file: FileKind::ConsumerOffset,
                offsets: Some(OffsetRange {
                    start: 1,
                    end: 1_000,
                }),
                below_hwm: None,
            },
            Some(0),
        )
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 1);
        })
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), found);
        })
        .produce(2, 0, 1, 1_001)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1_000);
        });
    r
}

#[test]
fn a_flipped_frontier_lasts_until_a_rewrite_of_it_survives_a_crash() {
    // The rewrite before the crash was lost with it: the open still found the flipped
    // word, so the flip reaches id 2, acknowledged after that crash.
    let lost = frontier_rewrite_then_crash(1_000).report();
    let excuse = lost.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract, "{excuse}");
    // The rewrite lasted (the open found 1): the flip's word was gone before id 2.
    let lasted = frontier_rewrite_then_crash(1).report();
    assert!(
        lasted.no_lost_ack.excuse_of(2).is_none(),
        "{:?}",
        lasted.no_lost_ack.excuse_of(2)
    );
    assert_mentions(
        &messages_of(&lasted, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}
