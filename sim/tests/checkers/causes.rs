//! An out-of-contract fault excuses only what its file can move: a word out of step
//! with the log (an HWM beyond the tail, an HWM that fell, a log start that fell) is
//! excused by a fault on a file that moves that word, whose offsets meet the gap; a
//! frame-level alarm by a fault on the log's own files; and a segment fault's reach
//! ends where an engine cut rewrote its offsets. Each test shows the excuse and the
//! same history with the fault on the wrong file or one step later, which fails.

use std::collections::BTreeSet;

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

/// Two records delivered, then `fault` on orders/0.
fn delivered_then(fault: FaultKind) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .fault(fault, Some(0));
    r
}

/// [`delivered_then`], then an in-memory HWM 2 over a durable tail of 1.
fn hwm_beyond_tail_after(fault: FaultKind) -> Run {
    let mut r = delivered_then(fault);
    r.hwm(0, 2, 1, 1);
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

/// Two records delivered; a lost fsync of offset 1's frame, then `hwm` written as 2 on
/// its strength; a crash seals the loss (persisted 2, tail 1) and the open after it is
/// killed before it finishes. With `clamped`, the next open clamps to 1 and rewrites
/// `hwm`, id 3 takes offset 1, and a crash again finds persisted 2 over a tail of 1.
fn persisted_hwm_over_lost_frames(clamped: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .fault(
            lost_fsync(FileKind::Segment, Some(OffsetRange { start: 1, end: 2 })),
            Some(0),
        )
        .hwm(0, 2, 0, 2)
        .hwm(0, 2, 2, 2)
        .crash(&[(0, 2, 1, 2)])
        .restart()
        .crash(&[(0, 2, 1, 1)]);
    if clamped {
        r.restart()
            .alarm(
                Some(0),
                Alarm::Clamp {
                    persisted_hwm: 2,
                    hwm: 1,
                    lost: 1,
                },
            )
            .opened(0, 1, 1)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 2);
            })
            .hwm(0, 1, 1, 1)
            .counters(0, 1, 0)
            .produce(3, 0, 1, 1_100)
            .hwm(0, 2, 2, 2)
            .deliver(3, 0, 1, 1_100)
            .crash(&[(0, 2, 1, 2)]);
    }
    r
}

#[test]
fn a_persisted_hwm_over_lost_frames_stays_excused_until_hwm_is_rewritten() {
    // Quick seed 91704990007832: the `hwm` write before the crash rested on the lost
    // frame, so it does not end the gap; the killed open rewrote nothing, and the crash
    // ending it still finds the word past the log.
    let report = persisted_hwm_over_lost_frames(false).report();
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    let crashes: BTreeSet<usize> = report
        .stable_offsets
        .excused
        .iter()
        .filter(|e| e.excuse.kind == ExcuseKind::OutOfContract)
        .map(|e| e.index)
        .collect();
    assert_eq!(crashes.len(), 2, "{:?}", report.stable_offsets.excused);
    // Once the clamp rewrote `hwm` and a crash made that durable, a persisted word past
    // the tail again is the engine's.
    let report = persisted_hwm_over_lost_frames(true).report();
    assert_mentions(
        &messages_of(&report, CheckerName::StableOffsets),
        &["persisted HWM of orders/0 is 2, beyond the durable tail 1"],
    );
}

#[test]
fn a_lost_segment_fsync_is_sealed_by_the_power_loss_not_a_process_crash() {
    // Quick seed 188014160: the `hwm` word passed the frame a lost fsync left in the
    // page cache only; a process crash kept the cache, its open found the log whole and
    // wrote the word again, and the power loss after dropped the frame. The gap opens at
    // that power loss, so the word the open wrote does not end the excuse.
    let run = |power_loss_first: bool| {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .produce(2, 0, 1, 1_001)
            .deliver(1, 0, 0, 1_000)
            .deliver(2, 0, 1, 1_001)
            .fault(
                lost_fsync(FileKind::Segment, Some(OffsetRange { start: 1, end: 2 })),
                Some(0),
            )
            .hwm(0, 2, 2, 2);
        if power_loss_first {
            r.crash(&[(0, 2, 1, 2)])
                .restart()
                .alarm(
                    Some(0),
                    Alarm::Clamp {
                        persisted_hwm: 2,
                        hwm: 1,
                        lost: 1,
                    },
                )
                .opened(0, 1, 1)
                .counters(0, 1, 0)
                .hwm(0, 1, 1, 1)
                .produce(3, 0, 1, 1_100)
                .hwm(0, 2, 2, 2);
        } else {
            r.process_crash(&[(0, 2, 2, 2)])
                .restart()
                .open_clean(0, 2, 2)
                .hwm(0, 2, 2, 2);
        }
        r.crash(&[(0, 2, 1, 2)]);
        r.report()
    };
    let report = run(false);
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    // After a power loss sealed it and the clamp's word lasted, the gap is closed: a
    // persisted word past the tail again is the engine's.
    assert_mentions(
        &messages_of(&run(true), CheckerName::StableOffsets),
        &["persisted HWM of orders/0 is 2, beyond the durable tail 1"],
    );
}

#[test]
fn a_lost_fsync_excuses_no_gap_an_open_should_have_written_back_or_below_its_frames() {
    let lost = |start, end| lost_fsync(FileKind::Segment, Some(OffsetRange { start, end }));
    // Frame 1 loses its fsync, before the process crash (`during_open`: false) or while
    // the open after it runs; that open recovers HWM 1, the word goes to 3, and a power
    // loss leaves the tail at 1.
    let frame_1_lost = |during_open: bool| {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .hwm(0, 1, 1, 1)
            .deliver(1, 0, 0, 1_000);
        if !during_open {
            r.fault(lost(1, 2), Some(0));
        }
        r.produce(2, 0, 1, 1_001)
            .deliver(2, 0, 1, 1_001)
            .process_crash(&[(0, 1, 2, 2)])
            .restart();
        if during_open {
            r.fault(lost(1, 2), Some(0));
        }
        r.open_clean(0, 1, 2)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            })
            .hwm(0, 3, 3, 3)
            .crash(&[(0, 3, 1, 3)]);
        r.report()
    };
    // Before the crash: the open's write-back owed frame 1 a rewrite and an fsync, so
    // the tail at 1 is the engine's (an adversarial read: this passed).
    assert_mentions(
        &messages_of(&frame_1_lost(false), CheckerName::StableOffsets),
        &["HWM of orders/0 is 3, beyond the durable tail 1"],
    );
    // On the open's own write-back: that write-back's loss, excused (fresh quick
    // 196005164, a misdirected write-back).
    let report = frame_1_lost(true);
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    // A fault on frame 3 cannot put the tail at 1: frames 1-2 were durable before it.
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 3, 3)
        .delivered(3)
        .fault(lost(3, 4), Some(0))
        .produce(4, 0, 3, 1_003)
        .deliver(4, 0, 3, 1_003)
        .hwm(0, 4, 4, 4)
        .process_crash(&[(0, 4, 4, 4)])
        .restart()
        .open_clean(0, 4, 4)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 4, 4, 4)
        .crash(&[(0, 4, 1, 4)]);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::StableOffsets),
        &["HWM of orders/0 is 4, beyond the durable tail 1"],
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
            parts: None,
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
            // The world records what a power loss did to pending writes just before it.
            .fault(FaultKind::TornWrite { file }, Some(0))
            .crash(&[(0, 1, 1, 1)])
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
    assert_alarms_explained(&hwm);
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
        .alarm(Some(0), refused_alarm(200));
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
    assert_alarms_explained(&report);
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

/// How [`hole_left_by_an_open_that_read_a_raised_hwm`] varies its story.
#[derive(Clone, Copy, Default)]
struct HoleStory {
    /// The flip of `hwm` and the offsets it moved the word between (none: no flip).
    flip: Option<OffsetRange>,
    /// No fsync EIO: the frame at offset 1 reached the platter.
    no_eio: bool,
    /// The open that read the word clamped (and so wrote every frame back).
    clamped: bool,
    /// The open that read the word found a frame above its HWM (offset 3), which it
    /// wrote back: the frame holding offset 1 may be that one.
    above_hwm: bool,
    /// Power losses before the refusing open (0 is taken as 1); the opens after all
    /// but the last complete.
    power_losses: usize,
    /// After the power loss an open completes, then a process crash.
    opened_after: bool,
    /// Before the flip, an open read the true word and wrote the frame back.
    written_back_between: bool,
    /// The record at offset 1 was acknowledged (its fsync succeeded) before the EIO.
    acked_at_hole: bool,
}

/// Offset 1 written but never durable (an fsync EIO left it only in the page cache);
/// then the story's flip on orders/0's `hwm` and a process crash. The open after it reads
/// the word and writes back nothing below its HWM of 3; the engine rewrites the word
/// (4), and after the story's power losses an open refuses at the hole at offset 1.
fn hole_left_by_an_open_that_read_a_raised_hwm(story: HoleStory) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000).hwm(0, 1, 1, 1);
    if story.acked_at_hole {
        r.produce(9, 0, 1, 1_001);
    }
    if !story.no_eio {
        let eio = FaultKind::FsyncEio {
            file: FileKind::Segment,
        };
        r.fault(eio, Some(0));
    }
    if story.written_back_between {
        // An open that read the true word and wrote offsets 1-2 back (durably).
        r.process_crash(&[(0, 1, 3, 1)])
            .restart()
            .disk(0, OpenRule::Clean, 1, 3, None)
            .opened(0, 1, 3);
    }
    if let Some(offsets) = story.flip {
        let kind = FaultKind::BitFlip {
            file: FileKind::Hwm,
            offsets: Some(offsets),
            below_hwm: None,
        };
        r.fault(kind, Some(0));
    }
    let word = if story.flip.is_some() { 3 } else { 1 };
    let tail = if story.above_hwm { 4 } else { 3 };
    let on_disk = if story.clamped { word + 1 } else { word };
    r.process_crash(&[(0, word, tail, 1)])
        .restart()
        .disk(0, OpenRule::Clean, on_disk, tail, None);
    if story.clamped {
        let clamp = Alarm::Clamp {
            persisted_hwm: word + 1,
            hwm: word,
            lost: 1,
        };
        r.alarm(Some(0), clamp);
    }
    r.opened(0, word, tail)
        .hwm(0, 3, word, tail)
        .produce(2, 0, 3, 1_003)
        .hwm(0, 4, 4, 4);
    for _ in 1..story.power_losses {
        r.crash(&[(0, 4, 4, 4)]).restart().open_clean(0, 4, 4);
    }
    r.crash(&[(0, 4, 4, 4)]);
    if story.opened_after {
        r.restart()
            .open_clean(0, 4, 4)
            .process_crash(&[(0, 4, 4, 4)]);
    }
    r.restart()
        .disk(0, OpenRule::Refuse, 4, 1, Some(1))
        .alarm(Some(0), refused_alarm(100));
    r
}

#[test]
fn a_hole_an_open_left_below_a_flipped_hwm_is_the_flips_until_the_next_power_loss() {
    let raised = HoleStory {
        flip: Some(OffsetRange { start: 1, end: 3 }),
        ..HoleStory::default()
    };
    let report = hole_left_by_an_open_that_read_a_raised_hwm(raised).report();
    assert_alarms_explained(&report);
    let uncaused = ["no damage at rest or out-of-contract fault reaching offset 1"];
    let stories = [
        ("no flip: the open wrote back from 1", HoleStory::default()),
        (
            "a flip that missed the hole's offset",
            HoleStory {
                flip: Some(OffsetRange { start: 2, end: 3 }),
                ..raised
            },
        ),
        (
            "no fsync EIO: the frame was on the platter when the open read the word",
            HoleStory {
                no_eio: true,
                ..raised
            },
        ),
        (
            "the open clamped, so it wrote every frame back",
            HoleStory {
                clamped: true,
                ..raised
            },
        ),
        (
            "the open wrote back a frame above its HWM, which may hold offset 1",
            HoleStory {
                above_hwm: true,
                ..raised
            },
        ),
        (
            "an open between the EIO and the flip wrote the frame back",
            HoleStory {
                written_back_between: true,
                ..raised
            },
        ),
        (
            "the record at the hole was acknowledged: its fsync succeeded",
            HoleStory {
                acked_at_hole: true,
                ..raised
            },
        ),
        (
            "an open after an earlier power loss found the frame whole",
            HoleStory {
                power_losses: 2,
                ..raised
            },
        ),
        (
            "an open completed after the power loss",
            HoleStory {
                opened_after: true,
                ..raised
            },
        ),
    ];
    for (why, story) in stories {
        let report = hole_left_by_an_open_that_read_a_raised_hwm(story).report();
        let messages = messages_of(&report, CheckerName::AlarmsExplained);
        assert!(
            messages
                .iter()
                .any(|m| uncaused.iter().all(|u| m.contains(u))),
            "{why}: {messages:?}"
        );
    }
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

/// Two records, persisted HWM 2; `fault` on orders/0; the kills `kills` after it
/// (`true`: a process crash), each restart's open completing, and a consume-time skip
/// of offset 1's frame.
fn skip_after_kills(fault: FaultKind, kills: &[bool]) -> Run {
    let mut r = Run::new();
    r.produced(2).hwm(0, 2, 2, 2).fault(fault, Some(0));
    for &process in kills {
        if process {
            r.process_crash(&[(0, 2, 2, 2)]);
        } else {
            r.crash(&[(0, 2, 2, 2)]);
        }
        r.restart().open_clean(0, 2, 2);
    }
    r.alarm(
        Some(0),
        Alarm::FrameSkipped {
            base: 1,
            records: 1,
        },
    )
    .counters(0, 0, 1);
    r
}

/// [`skip_after_kills`] with one power loss when `crash`.
fn skip_after(fault: FaultKind, crash: bool) -> Run {
    skip_after_kills(fault, if crash { &[false] } else { &[] })
}

#[test]
fn a_lost_fsync_explains_an_alarm_only_once_a_crash_followed_it() {
    // Frames a lost fsync did not persist are still in the page cache and read back
    // whole until a power loss drops them; a process crash leaves the cache.
    let lost = || lost_fsync(FileKind::Segment, Some(OffsetRange { start: 1, end: 2 }));
    assert_mentions(
        &messages_of(
            &skip_after(lost(), false).report(),
            CheckerName::AlarmsExplained,
        ),
        &["frame_skipped base=1 records=1"],
    );
    let report = skip_after(lost(), true).report();
    assert_alarms_explained(&report);
    assert_mentions(
        &messages_of(
            &skip_after_kills(lost(), &[true]).report(),
            CheckerName::AlarmsExplained,
        ),
        &["frame_skipped base=1 records=1"],
    );
    let report = skip_after_kills(lost(), &[true, false]).report();
    assert_alarms_explained(&report);
    // A misdirected write lands on the platter too: the page cache keeps the right
    // bytes until a power loss.
    let misdirected = || FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 1, end: 2 }),
        below_hwm: Some(true),
        parts: None,
    };
    for kills in [&[][..], &[true]] {
        assert_mentions(
            &messages_of(
                &skip_after_kills(misdirected(), kills).report(),
                CheckerName::AlarmsExplained,
            ),
            &["frame_skipped base=1 records=1"],
        );
    }
    let report = skip_after(misdirected(), true).report();
    assert_alarms_explained(&report);
}

#[test]
fn a_segment_fault_explains_nothing_at_offsets_a_completed_open_cut_away() {
    // The misdirected write hit offset 1; an open that completed cut the log at 1 and
    // the frame there was written again since. A skip of that frame is not the
    // fault's: its bytes are gone.
    let misdirected = FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 1, end: 2 }),
        below_hwm: Some(false),
        parts: None,
    };
    let run = |completed: bool| {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 1, 1, 2)
            .fault(misdirected.clone(), Some(0))
            .crash(&[(0, 1, 2, 2)])
            .restart()
            .disk(0, OpenRule::TornTail, 1, 1, Some(1))
            .alarm(
                Some(0),
                Alarm::TornTail {
                    segment: "00000000000000000000.log".into(),
                    position: 100,
                    offset: 1,
                    bytes: 100,
                },
            )
            .opened(0, 1, 1);
        if completed {
            r.with(|t, h| {
                h.frontier_observed(t, &tp(0), 1);
            });
        }
        r.produce(3, 0, 1, 1_100)
            .hwm(0, 2, 2, 2)
            .alarm(
                Some(0),
                Alarm::FrameSkipped {
                    base: 1,
                    records: 1,
                },
            )
            .counters(0, 0, 1);
        r.report()
    };
    assert_mentions(
        &messages_of(&run(true), CheckerName::AlarmsExplained),
        &["frame_skipped base=1 records=1"],
    );
    // An open killed before it completed may not have made its cut durable.
    assert!(
        !messages_of(&run(false), CheckerName::AlarmsExplained)
            .iter()
            .any(|m| m.contains("frame_skipped")),
    );
}

#[test]
fn a_malformed_hwm_refusal_needs_a_fault_that_changes_its_length() {
    // `fault` on hwm, then (with `rewritten`) an `hwm` write and a crash that made it
    // durable; then an open refuses the partition for a malformed `hwm`.
    let run = |fault: FaultKind, rewritten: bool| {
        let mut r = Run::new();
        r.produced(2).hwm(0, 1, 1, 2).fault(fault, Some(0));
        if rewritten {
            r.hwm(0, 2, 2, 2)
                .crash(&[(0, 2, 2, 2)])
                .restart()
                .open_clean(0, 2, 2);
        }
        r.crash(&[(0, 2, 2, 2)]).restart().alarm(
            Some(0),
            Alarm::Refused {
                segment: cafelog_engine::format::layout::HWM_FILE.into(),
                position: 0,
            },
        );
        r.report()
    };
    let malformed = |report: &CheckReport| {
        messages_of(report, CheckerName::AlarmsExplained)
            .iter()
            .any(|m| m.contains("malformed hwm"))
    };
    // A flip changes the word's bytes, never its length.
    let flip = FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: None,
        below_hwm: None,
    };
    assert!(malformed(&run(flip, false)));
    // A misdirected write past its end leaves it long under every rewrite at 0.
    let misdirected = FaultKind::Misdirected {
        file: FileKind::Hwm,
        offsets: None,
        below_hwm: None,
        parts: None,
    };
    assert!(!malformed(&run(misdirected.clone(), false)));
    assert!(!malformed(&run(misdirected, true)));
    // A lost fsync leaves the old word or an empty file, which opens as absent.
    assert!(malformed(&run(lost_fsync(FileKind::Hwm, None), false)));
    assert!(!malformed(&run(
        FaultKind::TornWrite {
            file: FileKind::Hwm
        },
        false
    )));
}

#[test]
fn a_log_start_falls_from_a_lost_directory_fsync_only_after_a_crash() {
    // The unlink stays in the page cache until the crash: the running engine's log
    // start cannot fall on its account.
    let mut r = Run::new();
    r.with(|t, h| {
        h.log_start_observed(t, &tp(0), 5);
    })
    .fault(lost_fsync(FileKind::Other, None), Some(0))
    .with(|t, h| {
        h.log_start_observed(t, &tp(0), 3);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::StableOffsets),
        &["log start of orders/0 moved backwards from 5"],
    );
}

#[test]
fn a_lost_hwm_fsync_never_puts_the_persisted_word_past_the_log() {
    // It leaves the older, lower word durable; a persisted HWM beyond the tail at the
    // crash is someone else's doing.
    let run = |fault: FaultKind| {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 2, 1, 2)
            .fault(fault, Some(0))
            .hwm(0, 2, 2, 2)
            .crash(&[(0, 2, 1, 2)]);
        r.report()
    };
    assert_mentions(
        &messages_of(
            &run(lost_fsync(FileKind::Hwm, None)),
            CheckerName::StableOffsets,
        ),
        &["persisted HWM of orders/0 is 2, beyond the durable tail 1"],
    );
    let flip = FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start: 1, end: 2 }),
        below_hwm: None,
    };
    assert!(
        !messages_of(&run(flip), CheckerName::StableOffsets)
            .iter()
            .any(|m| m.contains("persisted HWM")),
    );
}

/// orders/0 with HWM 2 and frontier 2 written; `fault` on orders/0, then a crash; with
/// `killed`, the next open is killed before it finishes; the open after finds the HWM
/// at 1 and clamps the frontier read from disk, `read`, to 1.
fn frontier_clamped_after(fault: FaultKind, killed: bool, read: u64) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 2, 2)
        .delivered(2)
        .frontier_written(0, 2)
        .fault(fault, Some(0))
        .crash(&[(0, 1, 2, 2)]);
    if killed {
        r.restart().crash(&[(0, 1, 2, 2)]);
    }
    r.restart().frontier_clamped(0, read, 1);
    r
}

/// orders/0: 4 records, frontier 2 written; a flip takes `consumer.offset` 2 -> 1026,
/// a second flip 1026 -> 1010; the engine writes frontier 3 to its temp file and a
/// process crash comes before the rename. The open reads `read` over an HWM of 4 and
/// clamps it.
fn chained_frontier_flips(read: u64) -> Run {
    let mut r = Run::new();
    r.produced(4)
        .hwm(0, 4, 4, 4)
        .delivered(2)
        .frontier_written(0, 2)
        .fault(offset_flip(2, 1026), Some(0))
        .fault(offset_flip(1010, 1026), Some(0))
        .frontier_written(0, 3)
        .process_crash(&[(0, 4, 4, 4)])
        .restart()
        .frontier_clamped(0, read, 4);
    r
}

/// The open read the second flip's word, so the write of 3 did not last and the first
/// flip (whose reach alone meets the gap 4..1010) still explains the clamp. A word no
/// flip made says the write lasted: then nothing explains it (fresh quick 3859001702).
#[test]
fn a_chain_of_frontier_flips_outlives_a_write_the_crash_lost() {
    let report = chained_frontier_flips(1010).report();
    assert_alarms_explained(&report);
    assert_mentions(
        &messages_of(
            &chained_frontier_flips(1500).report(),
            CheckerName::AlarmsExplained,
        ),
        &["frontier_clamped 1500 -> 4"],
    );
}

/// orders/0, ids 1-4 at offsets 0-3 (HWM 4), offsets 0-2 delivered and acked, frontier
/// 2 persisted (the replace returned). `flips` flips of `consumer.offset`; then the
/// engine replaces the word with 3 and, when `returned`, the replace returns (temp
/// fsynced, renamed, directory fsynced). A process crash (the page cache survives). The
/// next open reads `read`, clamps it to 4 (a replace that returns) and loads 4, skipping
/// id 4 at offset 3. (helper-35's review of 1667f62.)
fn persisted_then_read(flips: &[(u64, u64)], returned: bool, read: u64) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 4, 4);
    for offset in 0..3 {
        r.deliver(offset + 1, 0, offset, 1_000 + offset)
            .consume(0, offset);
    }
    let persist = |r: &mut Run, value: u64, returned: bool| {
        r.alarm(Some(0), Alarm::FrontierPersisting { value })
            .frontier_written(0, value);
        if returned {
            r.alarm(Some(0), Alarm::FrontierPersisted { value });
        }
    };
    persist(&mut r, 2, true);
    for &(a, b) in flips {
        r.fault(offset_flip(a, b), Some(0));
    }
    persist(&mut r, 3, returned);
    r.process_crash(&[(0, 4, 4, 4)])
        .restart()
        .open_clean(0, 4, 4)
        .alarm(
            Some(0),
            Alarm::FrontierClamped {
                value: read,
                clamped: 4,
            },
        );
    persist(&mut r, 4, true);
    r.with(|t, h| {
        h.frontier_loaded(t, &tp(0), 4, 4);
        h.frontier_skipped(
            t,
            &tp(0),
            3,
            4,
            vec![cafelog_sim::history::HeldCopy {
                offset: 3,
                id: 4,
                committed_at_ms: 1_003,
            }],
        );
    });
    r
}

/// A replace of the word that returned before a process crash is on disk: an open that
/// reads an older word back (the end of a flip, or of a chain of flips, from before the
/// replace) shows an engine that lost its own durable write, and the flips, which the
/// replace overwrote, explain nothing. Without the replace returning, the crash may have
/// come before the rename (fresh quick 3859001702), and the first flip still explains it.
#[test]
fn a_frontier_replace_that_returned_ends_a_chain_of_flips() {
    let chain = [(2, 1026), (1010, 1026)];
    for (flips, read) in [(&chain[..], 1010), (&chain[..1], 1026)] {
        assert_mentions(
            &messages_of(
                &persisted_then_read(flips, true, read).report(),
                CheckerName::AlarmsExplained,
            ),
            &[&format!("frontier_clamped {read} -> 4")],
        );
        assert_clean(&persisted_then_read(flips, false, read).report());
    }
}

#[test]
fn a_lost_hwm_fsync_explains_a_frontier_clamp_until_hwm_is_written_again() {
    // The crash left the old word (1) durable under a frontier of 2; a killed open
    // writes nothing, so the open after it still reads 1.
    let lost = lost_fsync(FileKind::Hwm, Some(OffsetRange { start: 1, end: 2 }));
    for killed in [false, true] {
        let report = frontier_clamped_after(lost.clone(), killed, 2).report();
        assert!(
            report.alarms_explained.violations.is_empty(),
            "killed={killed}: {:?}",
            report.alarms_explained.violations
        );
    }
    // Once an open after the crash came up and wrote `hwm` (it reported 2 persisted),
    // the old word is gone: a later open's clamp is not the lost fsync's.
    let rewritten = {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 2, 2, 2)
            .delivered(2)
            .with(|t, h| {
                h.frontier_written(t, &tp(0), 2);
            })
            .fault(lost.clone(), Some(0))
            .crash(&[(0, 1, 2, 2)])
            .restart()
            .open_clean(0, 1, 2)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 1);
            })
            .hwm(0, 2, 2, 2)
            .crash(&[(0, 2, 2, 2)])
            .restart()
            .alarm(
                Some(0),
                Alarm::FrontierClamped {
                    value: 2,
                    clamped: 1,
                },
            );
        r.report()
    };
    assert_mentions(
        &messages_of(&rewritten, CheckerName::AlarmsExplained),
        &["frontier_clamped 2 -> 1"],
    );
    // A lost fsync of another partition's word explains nothing here.
    let elsewhere = {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 2, 2, 2)
            .delivered(2)
            .fault(
                lost_fsync(FileKind::Hwm, Some(OffsetRange { start: 1, end: 2 })),
                Some(1),
            )
            .crash(&[(0, 1, 2, 2)])
            .restart()
            .alarm(
                Some(0),
                Alarm::FrontierClamped {
                    value: 2,
                    clamped: 1,
                },
            );
        r.report()
    };
    assert_mentions(
        &messages_of(&elsewhere, CheckerName::AlarmsExplained),
        &["frontier_clamped 2 -> 1"],
    );
}

#[test]
fn a_frontier_flip_is_still_there_when_the_open_reads_its_value_before_a_clamp() {
    // Quick seed 3824: the frontier was flipped to 1000, its rewrite lost with the
    // crash, and the open clamped the 1000 it read; the clamp, not the frontier the
    // world saw after it, says what the open found.
    let flip = FaultKind::BitFlip {
        file: FileKind::ConsumerOffset,
        offsets: Some(OffsetRange {
            start: 2,
            end: 1_000,
        }),
        below_hwm: None,
    };
    let run = |read: u64| {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 2, 2, 2)
            .delivered(2)
            .fault(flip.clone(), Some(0))
            .frontier_written(0, 3)
            .crash(&[(0, 2, 2, 2)])
            .restart()
            .frontier_clamped(0, read, 2);
        r.report()
    };
    let report = run(1_000);
    assert_alarms_explained(&report);
    // Had the open read the rewritten 3, the flip was gone: the clamp is the engine's.
    assert_mentions(
        &messages_of(&run(3), CheckerName::AlarmsExplained),
        &["frontier_clamped 3 -> 2"],
    );
}

#[test]
fn a_later_flip_that_finds_the_earlier_flips_word_shows_the_rewrite_did_not_last() {
    // Fresh quick seed 2966590862002001: consumer.offset was flipped (2 -> 1000), the
    // engine clamped it and wrote 3, but that write never reached the platter: a second
    // flip at the next power loss found 1000 there and made it 996, which the open
    // clamped. The second flip's before-value is the first one's word.
    let flip = |start: u64, end: u64| FaultKind::BitFlip {
        file: FileKind::ConsumerOffset,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: None,
    };
    let run = |first: FaultKind, second: FaultKind, read: u64| {
        let mut r = Run::new();
        r.produced(2)
            .hwm(0, 2, 2, 2)
            .delivered(2)
            .fault(first, Some(0))
            .with(|t, h| {
                h.frontier_written(t, &tp(0), 3);
            })
            .crash(&[(0, 2, 2, 2)])
            .fault(second, Some(0))
            .restart()
            .alarm(
                Some(0),
                Alarm::FrontierClamped {
                    value: read,
                    clamped: 2,
                },
            )
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 2);
            });
        r.report()
    };
    let report = run(flip(2, 1_000), flip(996, 1_000), 996);
    assert_alarms_explained(&report);
    // A second flip that found a word the first did not leave proves nothing about the
    // write: the first flip's reach ended with it, and the second's misses [2, 996).
    assert_mentions(
        &messages_of(
            &run(flip(2, 500), flip(996, 1_000), 996),
            CheckerName::AlarmsExplained,
        ),
        &["frontier_clamped 996 -> 2"],
    );
}

#[test]
fn a_clamp_after_a_cut_in_the_same_open_is_still_the_faults() {
    // The misdirected write hit offsets [1, 3) under the persisted HWM 3; the open cuts
    // the log at 1 and then clamps to 1. Its own cut does not hide the fault from its
    // clamp: only a cut of an open that completed earlier rewrote those frames.
    let misdirected = FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 1, end: 3 }),
        below_hwm: Some(true),
        parts: None,
    };
    let report = super::loss::clamped_run_after(misdirected, 1).report();
    assert!(
        !messages_of(&report, CheckerName::AlarmsExplained)
            .iter()
            .any(|m| m.contains("r4_clamp")),
        "{:?}",
        report.alarms_explained.violations
    );
}

/// A lost segment fsync of offset 1, then a crash leaving persisted 2 over a tail of 1;
/// the open clamps to 1 and its `hwm` write is `lost` too (a lost fsync of the word
/// from 2 down to 1), or lasts; a crash then finds the persisted word at 2 again.
fn clamp_write_lost(lost: bool) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .delivered(2)
        .fault(
            lost_fsync(FileKind::Segment, Some(OffsetRange { start: 1, end: 2 })),
            Some(0),
        )
        .hwm(0, 2, 2, 2)
        .crash(&[(0, 2, 1, 2)])
        .restart()
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 2,
                hwm: 1,
                lost: 1,
            },
        );
    if lost {
        r.fault(
            lost_fsync(FileKind::Hwm, Some(OffsetRange { start: 1, end: 2 })),
            Some(0),
        );
    }
    r.opened(0, 1, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .counters(0, 1, 0)
        .crash(&[(0, 2, 1, 1)]);
    r
}

#[test]
fn a_clamps_lost_hwm_write_leaves_the_word_past_the_log() {
    // The write the lost fsync dropped went down across the gap: the old word is the
    // one past the log.
    let report = clamp_write_lost(true).report();
    assert!(
        !messages_of(&report, CheckerName::StableOffsets)
            .iter()
            .any(|m| m.contains("persisted HWM of orders/0 is 2")),
        "{:?}",
        report.stable_offsets.violations
    );
    // Without it, the open that completed had clamped and synced the word, though the
    // engine reported no HWM since: a crash finding it past the log again is the
    // engine's (its clamp was never durable).
    assert_mentions(
        &messages_of(
            &clamp_write_lost(false).report(),
            CheckerName::StableOffsets,
        ),
        &["persisted HWM of orders/0 is 2, beyond the durable tail 1"],
    );
}

/// `hwm` reported persisted at 1 while the engine had written 2; flips chained 2 -> 3
/// (with `first_flip`) and 3 -> 100; then a late report of `reported`; a crash finds
/// 100 over a tail of 4 and the open clamps.
fn chained_hwm_flips(first_flip: bool, reported: u64) -> Run {
    let flip = |start, end| FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: None,
    };
    let mut r = Run::new();
    r.produced(4).delivered(4).hwm(0, 4, 1, 4);
    if first_flip {
        r.fault(flip(2, 3), Some(0));
    }
    r.fault(flip(3, 100), Some(0))
        .hwm(0, 4, reported, 4)
        .crash(&[(0, 100, 4, 4)])
        .restart()
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 100,
                hwm: 4,
                lost: 96,
            },
        )
        .opened(0, 4, 4)
        .counters(0, 96, 0);
    r
}

#[test]
fn a_late_report_of_a_word_a_chained_flip_left_is_no_rewrite() {
    // Seed 12000957 (default): the report of 2 after both flips is the engine's own
    // write from before them; the second flip's word is still there at the crash.
    let clamp_uncaused = |r: &Run| {
        messages_of(&r.report(), CheckerName::AlarmsExplained)
            .iter()
            .any(|m| m.contains("r4_clamp"))
    };
    assert!(!clamp_uncaused(&chained_hwm_flips(true, 2)));
    // A value above any the word held before the fault is a write after it, which
    // ended the flip's reach.
    assert!(clamp_uncaused(&chained_hwm_flips(true, 5)));
    assert!(clamp_uncaused(&chained_hwm_flips(false, 5)));
    // Without the first flip the word 3 on disk was the engine's own write, so a report
    // of 2 is older still: reported late, not written after the flip (fresh quick
    // 3851001784).
    assert!(!clamp_uncaused(&chained_hwm_flips(false, 2)));
}

#[test]
fn a_lost_fsync_that_left_nothing_undurable_excuses_no_gap() {
    // The world gives such a fault an empty reach (e.g. a lost fsync of recovery's
    // write-back of bytes the platter already held); it meets no gap.
    let empty = hwm_beyond_tail_after(lost_fsync(
        FileKind::Segment,
        Some(OffsetRange { start: 1, end: 1 }),
    ))
    .report();
    assert_mentions(
        &messages_of(&empty, CheckerName::StableOffsets),
        &["beyond the durable tail 1"],
    );
}

#[test]
fn a_process_crash_tail_below_the_hwm_is_not_a_platter_faults_before_a_power_loss() {
    // The crash partition of a process crash is the page cache, which a lost fsync does
    // not touch: a tail below the HWM there is the engine's, until a power loss.
    let run = |process: bool| {
        let mut r = delivered_then(lost_fsync(
            FileKind::Segment,
            Some(OffsetRange { start: 1, end: 2 }),
        ));
        if process {
            r.process_crash(&[(0, 1, 1, 2)]);
        } else {
            r.crash(&[(0, 1, 1, 2)]);
        }
        r.report()
    };
    assert_mentions(
        &messages_of(&run(true), CheckerName::StableOffsets),
        &["in-memory HWM of orders/0 is 2, beyond the durable tail 1"],
    );
    assert!(
        run(false).stable_offsets.violations.is_empty(),
        "{:?}",
        run(false).stable_offsets.violations
    );
}

/// Ids 1-10 at offsets 0-9, delivered. The frontier is 2 when a flip makes it 1000
/// ([2, 1000]); the engine writes 3, then 6 (both last). When `second`, a flip finds the
/// engine's 6 and makes it 2 ([2, 6]); the engine then writes 10, which lasts: the next
/// open reads 10. In that incarnation id 11 is acknowledged at offset 10, and the crash
/// after leaves the log ending at 10 with the open finding nothing past it: id 11 is
/// gone (an engine that acked before its fsync, or whose replay dropped the entry).
fn later_flip_of_a_later_word(second: bool) -> Run {
    let mut r = Run::new();
    r.produced(10).hwm(0, 10, 10, 10).delivered(10);
    r.consume(0, 0).consume(0, 1).with(|t, h| {
        h.frontier_written(t, &tp(0), 2);
    });
    r.fault(offset_flip(2, 1_000), Some(0));
    r.consume(0, 2).with(|t, h| {
        h.frontier_written(t, &tp(0), 3);
    });
    for o in 3..6 {
        r.consume(0, o);
    }
    r.with(|t, h| {
        h.frontier_written(t, &tp(0), 6);
    });
    if second {
        r.fault(offset_flip(2, 6), Some(0));
    }
    for o in 6..10 {
        r.consume(0, o);
    }
    r.with(|t, h| {
        h.frontier_written(t, &tp(0), 10);
    })
    .crash(&[(0, 10, 10, 10)])
    .restart()
    .open_clean(0, 10, 10)
    .with(|t, h| {
        h.frontier_observed(t, &tp(0), 10);
    })
    .produce(11, 0, 10, 1_100)
    .crash(&[(0, 10, 10, 10)])
    .restart()
    .open_clean(0, 10, 10)
    .with(|t, h| {
        h.frontier_observed(t, &tp(0), 10);
    });
    r
}

#[test]
fn a_later_flip_that_found_the_engines_own_word_proves_no_write_undone() {
    // An adversarial read of fbe4885: the second flip found the engine's 6 and made it
    // the engine's old 2; neither is the first flip's word, so the first flip's reach
    // ended with the write that lasted, and the loss of id 11 after it is unexcused.
    for second in [true, false] {
        let report = later_flip_of_a_later_word(second).report();
        assert_mentions(
            &messages_of(&report, CheckerName::NoLostAck),
            &["id 11 at offset 10"],
        );
    }
}

/// Id 1 at offset 0 of orders/0; at rest a flip moves `hwm` up to `BIG`; the open clamps
/// it back to 1 and rewrites the word, whose fsync is lost; the power loss after it
/// leaves the flipped word, the open after that is killed before its clamp, and the
/// next power loss finds the word still past the log. With `rewritten`, an open clamps
/// and rewrites the word before that last power loss (and is killed before the store's
/// open completes), which then finds `BIG` again.
fn flip_clamped_then_write_lost(rewritten: bool) -> Run {
    const BIG: u64 = 1 << 24;
    let gap = Some(OffsetRange { start: 1, end: BIG });
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .crash(&[(0, 1, 1, 1)])
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Hwm,
                offsets: gap,
                below_hwm: None,
            },
            Some(0),
        )
        .restart()
        .alarm(Some(0), clamp(BIG, 1))
        .counters(0, BIG - 1, 0)
        .opened(0, 1, 1)
        .fault(lost_fsync(FileKind::Hwm, gap), Some(0))
        .hwm(0, 1, 1, 1)
        .crash(&[(0, BIG, 1, 1)])
        .restart();
    if rewritten {
        // The partition's open wrote and synced the word before `log_opened`; the rest
        // of the store's open is killed.
        r.alarm(Some(0), clamp(BIG, 1))
            .counters(0, BIG - 1, 0)
            .opened(0, 1, 1);
    }
    r.crash(&[(0, BIG, 1, 1)]);
    r
}

#[test]
fn a_lost_fsync_of_a_clamps_hwm_write_lasts_until_the_word_is_rewritten() {
    // Fresh quick 3912000110: the open between the two power losses was killed before
    // its clamp, so the platter still held the flipped word the lost fsync left.
    let report = flip_clamped_then_write_lost(false).report();
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    assert!(
        report
            .stable_offsets
            .excused
            .iter()
            .any(|e| e.excuse.kind == ExcuseKind::OutOfContract
                && e.excuse.covers.contains("lost fsync")),
        "{:?}",
        report.stable_offsets.excused
    );
    // Once an open rewrote the word, a word past the log at the next power loss is the
    // engine's.
    assert_mentions(
        &messages_of(
            &flip_clamped_then_write_lost(true).report(),
            CheckerName::StableOffsets,
        ),
        &["persisted HWM of orders/0 is 16777216, beyond the durable tail 1"],
    );
}

/// helper-108: a flip the page cache did not take (a pending write masked its byte, or
/// a failed fsync left the cache apart from the platter) is the platter's only: the
/// engine reads it only after a power loss, so it explains a skip, a poison or junk
/// trimmed by an open only across one.
#[test]
fn a_flip_the_cache_missed_explains_an_alarm_only_across_a_power_loss() {
    let run = |missed: bool, kill: Option<bool>, alarm: Alarm| {
        let mut r = Run::new();
        r.produced(2).hwm(0, 2, 2, 2).with(|t, h| {
            let flip = segment_flip(OffsetRange { start: 1, end: 2 }, Some(true));
            h.fault(t, flip, Some(&tp(0)), None);
            if missed {
                let fault = h.len() - 1;
                h.flip_missed_cache(t, fault);
            }
        });
        match kill {
            Some(true) => r.process_crash(&[(0, 2, 2, 2)]).restart(),
            Some(false) => r.crash(&[(0, 2, 2, 2)]).restart(),
            None => &mut r,
        };
        r.alarm(Some(0), alarm);
        r.report()
    };
    let skip = Alarm::FrameSkipped {
        base: 1,
        records: 1,
    };
    let poison = Alarm::Poisoned {
        cancelled: false,
        directory: false,
        verify: true,
    };
    let junk = Alarm::JunkTrimmed {
        segment: "00000000000000000000.log".into(),
        bytes: 8,
    };
    // Each alarm, what its message says, the kills before it, and whether a power loss
    // between the flip and it lets the flip explain it (a poison is explained only by
    // damage in its own incarnation).
    for (alarm, says, kills, across) in [
        (
            skip,
            "frame_skipped base=1 records=1",
            [None, Some(true)],
            true,
        ),
        (poison, "poisoned", [None, None], false),
        (junk, "junk_trimmed", [Some(true), Some(true)], true),
    ] {
        for kill in kills {
            // Taken by the cache: explained; missed, with no power loss since: not.
            assert_alarms_explained(&run(false, kill, alarm.clone()));
            assert_mentions(
                &messages_of(
                    &run(true, kill, alarm.clone()),
                    CheckerName::AlarmsExplained,
                ),
                &[says],
            );
        }
        if across {
            assert_alarms_explained(&run(true, Some(false), alarm.clone()));
        }
    }
}
