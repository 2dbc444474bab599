//! `replay_restores` (check/excuse/replayed.rs): a segment fault's reach does not excuse
//! a record the next WAL replay had to restore, and the faults that could have spent
//! its entry, and only those, step the rule aside.

use super::loss::lost_fsync;
use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

#[test]
fn a_segment_fault_does_not_excuse_a_record_the_next_replay_had_to_restore() {
    // The lost fsync took id 2's frame at 1, but the power loss found offset 1 at or
    // above the persisted HWM: its WAL entry was live, and the open that completed
    // after it had to replay it.
    let run_with = |persisted: u64, between: fn(&mut Run)| {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .fault(lost_fsync(Some(OffsetRange { start: 1, end: 2 })), Some(0))
            .produce(2, 0, 1, 1_001)
            .hwm(0, 2, persisted, 2)
            .deliver(1, 0, 0, 1_000);
        between(&mut r);
        r.crash(&[(0, persisted, 1, 2)]).restart().with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        });
        r.report()
    };
    let run = |persisted: u64| run_with(persisted, |_| {});
    assert_mentions(
        &messages_of(&run(1), CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    // A fault on another topic's `topic.conf` touches neither the entry nor the HWM.
    let other_topic = run_with(1, |r| {
        r.misdirected_store_file("/data/topics/audit/topic.conf");
    });
    assert_mentions(
        &messages_of(&other_topic, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    // A lost fsync of the partition's `hwm` may have moved the word the checkpoint
    // followed: the segment fault's reach stands.
    let hwm_fault = run_with(1, |r| {
        r.fault(
            FaultKind::LostFsync {
                file: FileKind::Hwm,
                offsets: Some(OffsetRange { start: 1, end: 2 }),
            },
            Some(0),
        );
    });
    assert!(hwm_fault.no_lost_ack.excuse_of(2).is_some());
    // With the HWM persisted past it, the checkpoint may have spent the entry: the
    // lost frame was its last copy.
    let report = run(2);
    let excuse = report.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract);
}

/// Id 1 at 0, a lost fsync of the frame of offset 1, and id 2 acknowledged at 1 on its
/// strength, the HWM persisted at 1; id 1 delivered.
pub(super) fn acked_on_a_lost_fsync() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .fault(lost_fsync(Some(OffsetRange { start: 1, end: 2 })), Some(0))
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000);
    r
}

/// Id 2 acked at 1 on a lost fsync's strength, the HWM persisted at 1, then `between`,
/// a power loss, and an open that completes without bringing id 2 back.
fn replay_had_to_restore(between: impl FnOnce(&mut Run)) -> CheckReport {
    let mut r = acked_on_a_lost_fsync();
    between(&mut r);
    r.crash(&[(0, 1, 1, 2)]).restart().with(|t, h| {
        h.frontier_observed(t, &tp(0), 1);
    });
    r.report()
}

#[test]
fn faults_that_cannot_spend_the_entry_leave_the_rule_standing() {
    // From helper-66's read: each of these switched the rule off, and none can spend
    // or take a WAL entry.
    type Between = Box<dyn FnOnce(&mut Run)>;
    let cases: Vec<(&str, Between)> = vec![
        (
            "a lost fsync of the WAL's checkpoint (names no entry)",
            Box::new(|r: &mut Run| {
                r.with(|t, h| {
                    let kind = FaultKind::LostFsync {
                        file: FileKind::Wal,
                        offsets: None,
                    };
                    h.fault(t, kind, None, Some("/data/wal/checkpoint.tmp"));
                });
            }),
        ),
        (
            "a flip of the partition's consumer.offset",
            Box::new(|r: &mut Run| {
                r.fault(offset_flip(7, 9), Some(0));
            }),
        ),
        (
            "a lost fsync of the partition's consumer.offset",
            Box::new(|r: &mut Run| {
                let kind = FaultKind::LostFsync {
                    file: FileKind::ConsumerOffset,
                    offsets: Some(OffsetRange { start: 7, end: 9 }),
                };
                r.fault(kind, Some(0));
            }),
        ),
        (
            "a misdirected write of the topic's topic.conf",
            Box::new(|r: &mut Run| {
                r.misdirected_store_file("/data/topics/orders/topic.conf");
            }),
        ),
        (
            "a lost hwm fsync whose words lie above the record",
            Box::new(|r: &mut Run| {
                r.fault(hwm_lost_fsync(2, 3), Some(0));
            }),
        ),
    ];
    for (what, between) in cases {
        let report = replay_had_to_restore(between);
        assert_eq!(report.no_lost_ack.excuse_of(2), None, "{what}");
        assert_mentions(
            &messages_of(&report, CheckerName::NoLostAck),
            &["id 2 at offset 1"],
        );
    }
}

#[test]
fn an_hwm_fault_before_the_ack_was_overwritten_by_the_word_after_it() {
    let mut r = Run::new();
    r.fault(hwm_lost_fsync(0, 1), Some(0))
        .produce(1, 0, 0, 1_000)
        .fault(lost_fsync(Some(OffsetRange { start: 1, end: 2 })), Some(0))
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .crash(&[(0, 1, 1, 2)])
        .restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        });
    assert_eq!(r.report().no_lost_ack.excuse_of(2), None);
    // The same fault after the ack, its words spanning the record, steps the rule aside.
    let report = replay_had_to_restore(|r| {
        r.fault(hwm_lost_fsync(1, 2), Some(0));
    });
    assert!(report.no_lost_ack.excuse_of(2).is_some());
}

/// Id 2 acked at 1; a process crash; an open that hides it (HWM 1, tail 2) and whose
/// replay commits it again above; a misdirected write over the hidden copy at 1; a
/// power loss with the HWM persisted at `persisted`; an open that completes without
/// id 2.
fn hidden_then_misdirected(persisted: u64) -> CheckReport {
    let part = OffsetRange { start: 1, end: 2 };
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .process_crash(&[(0, 1, 2, 2)])
        .restart()
        .open_clean(0, 1, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .hwm(0, 3, persisted, 3)
        .fault(misdirected_segment(part), Some(0))
        .crash(&[(0, persisted, 3, 3)])
        .restart()
        .open_clean(0, persisted, 3)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        });
    r.report()
}

#[test]
fn an_open_that_hid_the_record_before_the_fault_leaves_the_rule_standing() {
    // helper-66: that open's replay put the record at or above its tail, so every copy
    // is at or above 1, and a word at 1 at the power loss means the entry was live.
    let report = hidden_then_misdirected(1);
    assert_eq!(report.no_lost_ack.excuse_of(2), None);
    // With the word past the record at the loss, the checkpoint may have spent it.
    let report = hidden_then_misdirected(3);
    let excuse = report.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract);
}

/// helper-66: id 2 acked at 1 on a lost fsync's strength; a power loss; the open finds
/// the log ending at 1, and its replay (bug) drops id 2; id 3 is acknowledged at the
/// new offset 1, and then a misdirected write, meant for id 3's frame, with the copies
/// the world names in it (`held`), and a power loss that shows it.
fn moved_then_misdirected(held: Option<&[(ProduceId, u64)]>) -> CheckReport {
    let part = OffsetRange { start: 1, end: 2 };
    let mut r = acked_on_a_lost_fsync();
    r.crash(&[(0, 1, 1, 2)])
        .restart()
        .open_clean(0, 1, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        })
        .produce(3, 0, 1, 1_010)
        .hwm(0, 2, 2, 2)
        .fault(misdirected_segment(part), Some(0));
    if let Some(held) = held {
        r.with(|t, h| {
            let fault = h.len() - 1;
            let held = held
                .iter()
                .map(|&(id, offset)| HeldCopy {
                    offset,
                    id,
                    committed_at_ms: 1_010,
                })
                .collect();
            h.reach_held(t, fault, &tp(0), held);
        });
    }
    r.deliver(3, 0, 1, 1_010)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .open_clean(0, 2, 2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        });
    r.report()
}

#[test]
fn a_fault_after_the_record_moved_excuses_it_only_by_a_named_copy() {
    // The world named the misdirected frame's copies, and none is id 2's.
    let report = moved_then_misdirected(Some(&[(3, 1)]));
    assert_eq!(report.no_lost_ack.excuse_of(2), None);
    assert_mentions(
        &messages_of(&report, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    // Named nothing (a hull the world could not split): the reach stands.
    assert!(
        moved_then_misdirected(None)
            .no_lost_ack
            .excuse_of(2)
            .is_some()
    );
    // A copy of id 2 among them (a replay that did restore it, there): it stands too.
    let named = moved_then_misdirected(Some(&[(3, 1), (2, 1)]));
    assert!(named.no_lost_ack.excuse_of(2).is_some());
}
