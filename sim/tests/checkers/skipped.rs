//! `skipped`: a skip excuses a record only when it took the record's last copy, named
//! by identity. The review histories (an adversarial read of 7ab2aba) are each one step
//! wider than an excuse may go.

use super::loss::hole_at;
use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

fn copy(offset: u64, id: ProduceId) -> HeldCopy {
    HeldCopy {
        offset,
        id,
        committed_at_ms: 1_000 + offset,
    }
}

fn torn_at(offset: u64) -> Alarm {
    Alarm::TornTail {
        segment: "00000000000000000000.log".into(),
        position: 100 * offset,
        offset,
        bytes: 100,
    }
}

/// A flip below the HWM at `offset`, and the engine's counted skip of its frame.
fn skip_at(r: &mut Run, offset: u64) {
    r.fault(
        segment_flip(
            OffsetRange {
                start: offset,
                end: offset + 1,
            },
            Some(true),
        ),
        Some(0),
    )
    .alarm(
        Some(0),
        Alarm::FrameSkipped {
            base: offset,
            records: 1,
        },
    )
    .counters(0, 0, 1);
}

fn assert_not_skipped(report: &CheckReport, id: ProduceId) {
    assert_ne!(
        report.no_lost_ack.excuse_of(id).map(|e| e.kind),
        Some(ExcuseKind::Skipped),
        "{:#?}",
        report.violations()
    );
    assert!(
        report
            .violations_of(CheckerName::NoLostAck)
            .iter()
            .any(|v| v.message.contains(&format!("id {id} at offset"))),
        "{:#?}",
        report.violations()
    );
}

/// Ids 1-3 acknowledged at offsets 0-2 and hidden by a crash; a flip makes the open of
/// incarnation 1 cut at 1 (R2) and its replay re-commits ids 2 and 3 at 2 and 3, which
/// the open of incarnation 2 lists in its hidden tail and, when `exposed`, exposes (its
/// replay then commits them nowhere else). Id 1 is delivered.
/// A flip then hits the frame at `skip`, below the HWM, and the engine skips it; when
/// `relisted`, a later open lists id 2 again, at 5.
fn skip_after_a_recommit(skip: u64, relisted: bool, exposed: bool) -> Run {
    let copy = |offset, id| HeldCopy {
        offset,
        id,
        committed_at_ms: 1_000 + offset,
    };
    let mut r = Run::new();
    r.produced(3)
        .crash(&[(0, 0, 3, 3)])
        .fault(flip_above_hwm(1), Some(0))
        .restart()
        .disk(0, OpenRule::Hole, 0, 1, Some(1))
        .alarm(Some(0), hole_at(1))
        .crash(&[(0, 0, 4, 4)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 4, None)
        .with(|t, h| {
            let held = vec![copy(0, 1), copy(1, 1), copy(2, 2), copy(3, 3)];
            h.hidden_at_open(t, &tp(0), 0, 4, held);
        })
        .opened(0, 0, 4);
    if exposed {
        r.alarm(Some(0), Alarm::HiddenExposed { from: 0, to: 4 });
    }
    r.hwm(0, 4, 4, 4)
        .deliver(1, 0, 0, 1_000)
        .fault(
            segment_flip(
                OffsetRange {
                    start: skip,
                    end: skip + 1,
                },
                Some(true),
            ),
            Some(0),
        )
        .alarm(
            Some(0),
            Alarm::FrameSkipped {
                base: skip,
                records: 1,
            },
        )
        .counters(0, 0, 1);
    if relisted {
        r.crash(&[(0, 4, 6, 6)]).restart().with(|t, h| {
            h.hidden_at_open(t, &tp(0), 4, 6, vec![copy(4, 3), copy(5, 2)]);
        });
    }
    r
}

#[test]
fn a_skip_excuses_the_copy_it_took_not_what_sits_at_the_acked_offset() {
    // Fresh quick seed 198016343: an R2 cut sent 43 records back through the WAL to new
    // offsets, and a flip below the HWM later took the frame that held those copies.
    let report = skip_after_a_recommit(2, false, true).report();
    match report.no_lost_ack.excuse_of(2) {
        Some(e) if e.kind == ExcuseKind::Skipped => {
            assert!(e.covers.contains("its copy at offset 2"), "{e}");
        }
        other => panic!(
            "expected a skip of id 2's copy, got {other:?}: {:#?}",
            report.violations()
        ),
    }
    // The frame at the acked offset holds another record since the cut; a later open
    // that still found a copy shows the skip did not take the last one.
    for (skip, relisted) in [(1, false), (2, true)] {
        let report = skip_after_a_recommit(skip, relisted, true).report();
        assert_mentions(
            &messages_of(&report, CheckerName::NoLostAck),
            &["id 2 at offset 1"],
        );
    }
}

#[test]
fn a_skip_of_one_of_two_listed_copies_excuses_nothing() {
    // One listing names id 2 at 2 and at 4 (crashes with a lagging persisted HWM leave
    // several copies); the skip takes 2 only.
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 0, 2)
        .crash(&[(0, 0, 2, 2)])
        .fault(flip_above_hwm(1), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 0, 1, Some(1))
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![copy(0, 1)]);
        })
        .alarm(Some(0), torn_at(1))
        .opened(0, 0, 1)
        .hwm(0, 3, 0, 3)
        .crash(&[(0, 0, 3, 3)])
        .restart()
        .open_clean(0, 0, 3)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 3, vec![copy(0, 1), copy(1, 1), copy(2, 2)]);
        })
        .hwm(0, 5, 0, 5)
        .crash(&[(0, 0, 5, 5)])
        .restart()
        .open_clean(0, 0, 5)
        .with(|t, h| {
            let held = vec![copy(0, 1), copy(1, 1), copy(2, 2), copy(3, 1), copy(4, 2)];
            h.hidden_at_open(t, &tp(0), 0, 5, held);
            h.frontier_observed(t, &tp(0), 0);
        })
        .alarm(Some(0), Alarm::HiddenExposed { from: 0, to: 5 })
        .hwm(0, 7, 7, 7)
        .deliver(1, 0, 0, 1_000);
    skip_at(&mut r, 2);
    assert_not_skipped(&r.report(), 2);
}

#[test]
fn a_listed_copy_the_open_did_not_expose_was_committed_again_elsewhere() {
    // The listing open replays an intact WAL: it commits id 2 again at its tail, a copy
    // no listing names. The same history as the one above that excuses, without the
    // exposure.
    let r = skip_after_a_recommit(2, false, false);
    assert_not_skipped(&r.report(), 2);
}

#[test]
fn a_listing_of_the_page_cache_undone_by_a_power_loss_names_no_copy() {
    // Incarnation 2 lists id 2 at 2 after a process crash; a power loss drops that copy
    // (the next open's log ends at 2) and offset 2 is refilled with id 1, no cut or
    // clamp between. A skip at 2 took id 1's frame, not id 2's.
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 0, 2)
        .crash(&[(0, 0, 2, 2)])
        .fault(flip_above_hwm(1), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 0, 1, Some(1))
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![copy(0, 1)]);
        })
        .alarm(Some(0), torn_at(1))
        .process_crash(&[(0, 0, 3, 3)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 3, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 3, vec![copy(0, 1), copy(1, 1), copy(2, 2)]);
        })
        .alarm(Some(0), Alarm::HiddenExposed { from: 0, to: 3 })
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 2, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 2, vec![copy(0, 1), copy(1, 1)]);
            h.frontier_observed(t, &tp(0), 0);
        })
        .opened(0, 0, 2)
        .alarm(Some(0), Alarm::HiddenExposed { from: 0, to: 2 })
        .hwm(0, 3, 3, 3)
        .deliver(1, 0, 0, 1_000);
    skip_at(&mut r, 2);
    assert_not_skipped(&r.report(), 2);
}

/// Id 1 attempted; the engine commits it at offset 0 (HWM 1) and a flip below the HWM
/// makes it skip that frame before the producer hears the ack; the ack comes after.
/// With `cut`, an open cut the log at 0 between the skip and the ack (another record
/// sits there by the ack).
fn skipped_before_the_ack(cut: bool) -> Run {
    let mut r = Run::new();
    r.attempt(1, 0).hwm(0, 1, 0, 1);
    skip_at(&mut r, 0);
    if cut {
        r.alarm(Some(0), torn_at(0));
    }
    let t = r.now();
    r.h.produce_ack(t, 1, &tp(0), Some(0), Some(1_000));
    r
}

#[test]
fn a_skip_between_the_commit_and_the_ack_took_the_acknowledged_record() {
    // Fresh quick seed 2886010034007467 (cancels on): the producer heard the ack after
    // the engine had skipped the record's frame.
    let report = skipped_before_the_ack(false).report();
    assert_eq!(
        report.no_lost_ack.excuse_of(1).map(|e| e.kind),
        Some(ExcuseKind::Skipped),
        "{:#?}",
        report.violations()
    );
    // A cut at the offset between the skip and the ack: the skipped frame was not
    // the acknowledged record's.
    let report = skipped_before_the_ack(true).report();
    assert_ne!(
        report.no_lost_ack.excuse_of(1).map(|e| e.kind),
        Some(ExcuseKind::Skipped),
        "{:#?}",
        report.violations()
    );
}

/// Id 1 is committed at 0 in incarnation 0 and its frame skipped there;
/// id 2 is attempted before that skip, but its request is queued and served only by
/// incarnation 1, after a power loss that lost the partition's directory (so the world
/// records no `DiskAtOpen` for it): incarnation 1 commits id 2 at 0 again, acks it, and
/// loses it. With `view`, the restart's view (tail 0) is recorded.
fn skip_in_an_earlier_incarnation(view: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000).hwm(0, 1, 1, 1).attempt(2, 0);
    skip_at(&mut r, 0);
    r.crash(&[(0, 0, 0, 1)]).restart();
    if view {
        r.disk(0, OpenRule::Clean, 0, 0, None);
    }
    r.opened(0, 0, 0).with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    });
    let t = r.now();
    r.h.produce_ack(t, 2, &tp(0), Some(0), Some(1_100));
    r.hwm(0, 1, 1, 1);
    r
}

#[test]
fn a_skip_in_an_earlier_incarnation_than_the_ack_took_another_record() {
    // Adversarial read of 78f7485: the skip took id 1's frame in incarnation 0; id 2
    // was committed at 0 only by incarnation 1, which acknowledged it. An ack comes
    // from the incarnation that committed, so a skip before it in an earlier one never
    // held the record, view or no view.
    for view in [false, true] {
        let report = skip_in_an_earlier_incarnation(view).report();
        assert_ne!(
            report.no_lost_ack.excuse_of(2).map(|e| e.kind),
            Some(ExcuseKind::Skipped),
            "view {view}: {:#?}",
            report.violations()
        );
    }
}

/// Id 1 acknowledged at offset 0; an open cuts at 0 and its replay commits id 1 there
/// again; a flip hits that frame, and when `named` the world records what the frame
/// held before it (`DamageHeld`). The engine then skips the frame.
fn skipped_recommit_at_the_same_offset(named: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .crash(&[(0, 0, 1, 1)])
        .fault(flip_above_hwm(0), Some(0))
        .restart()
        .disk(0, OpenRule::Hole, 0, 0, Some(0))
        .alarm(Some(0), hole_at(0))
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 1, 1, 1)
        .fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        );
    if named {
        r.with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(0, 1)]);
        });
    }
    r.alarm(
        Some(0),
        Alarm::FrameSkipped {
            base: 0,
            records: 1,
        },
    )
    .counters(0, 0, 1);
    r
}

#[test]
fn a_skip_of_a_frame_the_damage_named_as_the_records_copy_excuses_it() {
    // Fresh quick seed 214005017: an R2 cut at 0 and the replay put ids 0-3 back at
    // their own offsets; a flip hit that frame and the engine skipped it. Only the
    // world's decode of the frame before the flip says the copy there was the record.
    let report = skipped_recommit_at_the_same_offset(true).report();
    assert_eq!(
        report.no_lost_ack.excuse_of(1).map(|e| e.kind),
        Some(ExcuseKind::Skipped),
        "{:#?}",
        report.violations()
    );
    let report = skipped_recommit_at_the_same_offset(false).report();
    assert_not_skipped(&report, 1);
}

/// The world decodes a skipped frame right after the alarm. A frame it finds whole was
/// skipped intact, though a flip once reached it (a write-back may have repaired it
/// since): the skip is refused. Found damaged, the flip explains it.
#[test]
fn a_frame_the_disk_held_whole_at_its_skip_was_skipped_intact() {
    let run = |whole: bool| {
        let mut r = Run::new();
        r.produce(1, 0, 0, 1_000)
            .produce(2, 0, 1, 1_001)
            .hwm(0, 2, 2, 2)
            .deliver(1, 0, 0, 1_000)
            .consume(0, 0)
            .fault(
                segment_flip(OffsetRange { start: 1, end: 2 }, Some(true)),
                Some(0),
            )
            .alarm(Some(0), frame_skipped(1))
            .with(|t, h| {
                h.frame_at_skip(t, &tp(0), 1, 1, whole);
            })
            .counters(0, 0, 1);
        r.report()
    };
    assert_mentions(
        &messages_of(&run(true), CheckerName::AlarmsExplained),
        &["frame_skipped", "held whole at [1, 2)"],
    );
    assert_alarms_explained(&run(false));
}
