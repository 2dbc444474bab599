//! `clamped`: a recorded clamp excuses a record only when it took the record's last
//! copy, named by identity: at the acknowledged offset while nothing moved it, or where
//! the world listed a copy (a hidden tail, or the frames a damage hit).

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

/// Ids 1-3 acknowledged at offsets 0-2 and hidden by a crash; a flip makes the open of
/// incarnation 1 cut at 0 (R2), and its replay re-commits id 3 at offset 4 (the WAL
/// held other records first). Ids 1 and 2 are delivered. A power loss then leaves a
/// latent sector over [`hit`, 5), and when `named` the world records that it held id
/// 3's copy at 4 (`DamageHeld`); the open of incarnation 2 cuts at `hit` (R1) and
/// clamps the persisted HWM 5 to `hit`. When `relisted`, a later open lists id 3 in its
/// hidden tail again.
fn clamp_after_a_recommit(hit: u64, named: bool, relisted: bool) -> Run {
    clamp_after_a_killed_open(hit, named, relisted, false)
}

/// Ids 1-3 acknowledged at offsets 0-2 and hidden by a crash; a flip makes the open of
/// incarnation 1 cut at 0 (R2), its replay re-commits them (id 3 at 4), and ids 1 and
/// 2 are delivered under an HWM of 5.
fn recommitted_at_4() -> Run {
    let mut r = Run::new();
    r.produced(3)
        .crash(&[(0, 0, 3, 3)])
        .fault(flip_above_hwm(0), Some(0))
        .restart()
        .disk(0, OpenRule::Hole, 0, 0, Some(0))
        .alarm(Some(0), hole_at(0))
        .opened(0, 0, 0)
        .hwm(0, 5, 5, 5)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    r
}

/// [`clamp_after_a_recommit`], with an open that read the damaged log and was killed
/// before it cut anything when `killed`.
fn clamp_after_a_killed_open(hit: u64, named: bool, relisted: bool, killed: bool) -> Run {
    let mut r = recommitted_at_4();
    r.crash(&[(0, 5, 5, 5)])
        .fault(latent_below_hwm(hit, 5), Some(0));
    if named {
        r.with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(4, 3)]);
        });
    }
    if killed {
        r.restart()
            .disk(0, OpenRule::TornTail, 5, hit, Some(hit))
            .crash(&[(0, 5, hit, 5)]);
    }
    r.restart()
        .disk(0, OpenRule::TornTail, 5, hit, Some(hit))
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 100 * hit,
                offset: hit,
                bytes: 100 * (5 - hit),
            },
        )
        .alarm(Some(0), clamp(5, hit))
        .opened(0, hit, hit)
        .counters(0, 5 - hit, 0);
    if relisted {
        r.crash(&[(0, hit, hit + 2, hit + 2)])
            .restart()
            .with(|t, h| {
                h.hidden_at_open(t, &tp(0), hit, hit + 2, vec![copy(hit + 1, 3)]);
            });
    }
    r
}

fn assert_not_clamped(report: &CheckReport, id: ProduceId) {
    assert_ne!(
        report.no_lost_ack.excuse_of(id).map(|e| e.kind),
        Some(ExcuseKind::Clamped),
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

#[test]
fn a_clamp_excuses_the_copy_a_damage_named_not_what_sits_at_the_acked_offset() {
    // Fresh seed 2886010034006745 (quick, latent sectors on): an R1 cut sent id 8 back
    // through the WAL from offset 11 to 6, and a latent sector over that frame later
    // made an open cut at 6 and clamp [6, 8) away.
    let report = clamp_after_a_recommit(4, true, false).report();
    match report.no_lost_ack.excuse_of(3) {
        Some(e) if e.kind == ExcuseKind::Clamped => {
            assert!(e.covers.contains("its copy at offset 4"), "{e}");
        }
        other => panic!(
            "expected a clamp of id 3's copy, got {other:?}: {:#?}",
            report.violations()
        ),
    }
    // Without the world's listing nothing says where the copy went.
    assert_not_clamped(&clamp_after_a_recommit(4, false, false).report(), 3);
    // A later open that still lists a copy shows the clamp did not take the last one.
    assert_not_clamped(&clamp_after_a_recommit(4, true, true).report(), 3);
}

#[test]
fn a_clamp_over_the_acked_offset_after_a_cut_moved_the_record_excuses_nothing() {
    // The clamp gives up [2, 5), which holds id 3's acknowledged offset 2; but the cut
    // at 0 put another record there, and the copy the damage named (4) is inside too.
    // Named, the copy is the excuse; unnamed, the acknowledged offset proves nothing.
    let report = clamp_after_a_recommit(2, true, false).report();
    match report.no_lost_ack.excuse_of(3) {
        Some(e) if e.kind == ExcuseKind::Clamped => {
            assert!(e.covers.contains("its copy at offset 4"), "{e}");
        }
        other => panic!(
            "expected a clamp of id 3's copy, got {other:?}: {:#?}",
            report.violations()
        ),
    }
    assert_not_clamped(&clamp_after_a_recommit(2, false, false).report(), 3);
}

#[test]
fn an_open_killed_before_its_cut_moves_no_copy() {
    // Fresh seed 3790003275 (quick, latent sectors on): the open after the latent
    // sector read the log ending at the damaged frame and was killed; the next one cut
    // and clamped. The killed open's view ends at a bad frame, which still holds the
    // copy: only a cut makes room for another record there.
    let report = clamp_after_a_killed_open(4, true, false, true).report();
    assert_eq!(
        report.no_lost_ack.excuse_of(3).map(|e| e.kind),
        Some(ExcuseKind::Clamped),
        "{:#?}",
        report.violations()
    );
}

/// Ids 1, 2 at 0, 1 (persisted HWM 2); id 1 delivered. A flip takes both frames; the
/// open of incarnation 1 cuts at 0 and clamps [0, 2); its replay re-commits id 2 at 0
/// (the WAL still held it), persisted before a power loss. A latent sector then takes
/// that frame (`DamageHeld` names id 2 at 0), and the open of incarnation 2 cuts at 0
/// and clamps [0, 1): the record's last copy, a recorded loss.
fn clamped_twice() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .flipped_and_clamped(2)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 1, 1, 1)
        .crash(&[(0, 1, 1, 1)])
        .fault(
            FaultKind::LatentSector {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 0, end: 1 }),
                below_hwm: Some(true),
            },
            Some(0),
        )
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(0, 2)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 1, 0, Some(0))
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 0,
                offset: 0,
                bytes: 100,
            },
        )
        .alarm(Some(0), clamp(1, 0))
        .counters(0, 1, 0)
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    r
}

#[test]
fn a_later_clamp_of_the_listed_copy_is_tried_after_an_earlier_one() {
    // An adversarial read of 5e815fb: the row settled on the first clamp, gave up on
    // seeing a later listing, and never tried the second clamp, which took the copy
    // DamageHeld named (a recorded loss).
    let report = clamped_twice().report();
    match report.no_lost_ack.excuse_of(2) {
        Some(e) if e.kind == ExcuseKind::Clamped => {
            assert!(e.covers.contains("its copy at offset 0"), "{e}");
        }
        other => panic!(
            "expected the second clamp, got {other:?}: {:#?}",
            report.violations()
        ),
    }
}

/// Ids 1, 2 at 0, 1 (persisted HWM 2), not delivered; a latent sector at rest takes
/// both frames (`DamageHeld`). When `killed_between`, the open of incarnation 1 cuts at
/// 0 (R1) and is killed (ENOSPC, a process crash) before its clamp, and the open of
/// incarnation 2 finds the log truncated at 0 under the persisted HWM 2 and clamps;
/// otherwise one open cuts and clamps.
fn clamp_after_a_killed_cut(killed_between: bool) -> Run {
    let torn = Alarm::TornTail {
        segment: "00000000000000000000.log".into(),
        position: 0,
        offset: 0,
        bytes: 200,
    };
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .crash(&[(0, 2, 2, 2)])
        .fault(
            FaultKind::LatentSector {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 0, end: 2 }),
                below_hwm: Some(true),
            },
            Some(0),
        )
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(0, 1), held(1, 2)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 2, 0, Some(0))
        .alarm(Some(0), torn.clone());
    if killed_between {
        r.with(|t, h| {
            h.process_crash(
                t,
                vec![CrashPartition {
                    tp: tp(0),
                    persisted_hwm: 2,
                    durable_tail: 2,
                    memory_hwm: None,
                }],
            );
        })
        .restart()
        .disk(0, OpenRule::Clean, 2, 0, None);
    }
    r.alarm(Some(0), clamp(2, 0))
        .counters(0, 2, 0)
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    r
}

#[test]
fn a_clamp_after_a_killed_opens_cut_is_still_the_clamps() {
    // One open cuts and clamps: both ids excused by the clamp.
    let report = clamp_after_a_killed_cut(false).report();
    assert_clean(&report);
    assert_eq!(
        report.no_lost_ack.excuse_of(2).map(|e| e.kind),
        Some(ExcuseKind::Clamped)
    );
    // The cut announced by an open killed before the clamp is the clamp's own
    // (fresh quick 3795012648 with latent sectors).
    let report = clamp_after_a_killed_cut(true).report();
    for id in [1, 2] {
        assert_eq!(
            report.no_lost_ack.excuse_of(id).map(|e| e.kind),
            Some(ExcuseKind::Clamped),
            "id {id}: {:#?}",
            report.violations()
        );
    }
}

/// Id 1 acknowledged at offset 0 and hidden by a crash; the open of incarnation 1 keeps
/// it hidden (its replay re-commits it at offset 1) and finishes. A crash hides both
/// copies, and the open of incarnation 2 lists them and exposes its hidden tail.
fn both_copies_exposed() -> Run {
    let mut r = Run::new();
    r.produced(1)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 1, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![copy(0, 1)]);
        })
        .opened(0, 0, 1)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 2, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 2, vec![copy(0, 1), copy(1, 1)]);
        })
        .opened(0, 0, 2)
        .alarm(Some(0), Alarm::HiddenExposed { from: 0, to: 2 });
    r
}

/// Id 1 acknowledged at offset 0 and hidden by a crash; the open of incarnation 1 keeps
/// it hidden (its replay re-commits it at offset 1) and finishes. A crash hides both
/// copies; the open of incarnation 2 lists them, exposes its hidden tail and dies
/// (when `exposed_open_killed`, before the store finished opening). A latent sector
/// then takes `[0, 2)`, and the open of incarnation 3 cuts at 0 (R1) and clamps the
/// persisted HWM 2 to 0.
fn clamp_after_an_open_that_exposed_both_copies(exposed_open_killed: bool) -> Run {
    let mut r = both_copies_exposed();
    if !exposed_open_killed {
        r.with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        });
    }
    r.crash(&[(0, 2, 2, 2)])
        .fault(latent_below_hwm(0, 2), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(0, 1), copy(1, 1)]);
        });
    clamp_at_zero(&mut r);
    r
}

/// The open of incarnation 3 cuts at 0 (R1) and clamps the persisted HWM 2 to 0.
fn clamp_at_zero(r: &mut Run) {
    r.restart()
        .disk(0, OpenRule::TornTail, 2, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(2, 0))
        .opened(0, 0, 0)
        .counters(0, 2, 0);
}

#[test]
fn a_clamp_after_a_killed_open_still_counts_the_copies_that_open_listed() {
    // Fresh quick 3800206633 (--with latent_sector): the walk back over the killed
    // open of incarnation 2 also dropped the copies it listed, leaving only the
    // earlier ones, which its predecessor's replay had made stale.
    for killed in [false, true] {
        let report = clamp_after_an_open_that_exposed_both_copies(killed).report();
        assert!(
            messages_of(&report, CheckerName::NoLostAck).is_empty(),
            "killed {killed}: {:?}",
            messages_of(&report, CheckerName::NoLostAck)
        );
        assert_eq!(
            report.no_lost_ack.excuse_of(1).map(|e| e.kind),
            Some(ExcuseKind::Clamped)
        );
    }
}

/// As [`clamp_after_an_open_that_exposed_both_copies`] with its open killed, but a power
/// loss then takes both copies: the open of incarnation 3 finds the log ending cleanly
/// at 0 and dies before it clamps, and the open of incarnation 4 clamps `[0, 2)`.
#[test]
fn a_clamp_does_not_take_copies_a_power_loss_took_before_it() {
    let mut r = both_copies_exposed();
    r.crash(&[(0, 2, 0, 0)])
        .restart()
        .disk(0, OpenRule::Clean, 2, 0, None)
        .crash(&[(0, 2, 0, 0)])
        .fault(latent_below_hwm(0, 2), Some(0));
    clamp_at_zero(&mut r);
    let report = r.report();
    assert_ne!(
        report.no_lost_ack.excuse_of(1).map(|e| e.kind),
        Some(ExcuseKind::Clamped),
        "{:#?}",
        report.violations()
    );
}

/// [`clamp_after_a_recommit`] with id 3 re-committed at 4 and the log opened with HWM
/// 5; then an open is killed before it does anything, a power loss and a latent sector
/// over offset 4 (listed: id 3's copy); the open of incarnation 3 cuts at 4 (R1) and
/// dies in a process crash; the open of incarnation 4 finds the log ending cleanly at 4
/// (that cut) and dies too; the open of incarnation 5 clamps 5 to 4. The walk back takes
/// incarnations 2-4 into the clamp.
#[test]
fn a_clean_end_a_walked_open_cut_does_not_move_the_copies_listed_inside_the_walk() {
    // Adversarial review of 692cad1: the restart of incarnation 4 shows the log ending
    // at 4 because incarnation 3 cut it there, which is the clamp's own cut.
    let process_crash = |r: &mut Run| {
        r.with(|t, h| {
            h.process_crash(
                t,
                vec![CrashPartition {
                    tp: tp(0),
                    persisted_hwm: 5,
                    durable_tail: 4,
                    memory_hwm: None,
                }],
            );
        });
    };
    let mut r = recommitted_at_4();
    r.crash(&[(0, 5, 5, 5)])
        .restart()
        .disk(0, OpenRule::Clean, 5, 5, None)
        .crash(&[(0, 5, 5, 5)])
        .fault(latent_below_hwm(4, 5), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![copy(4, 3)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, 5, 4, Some(4))
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 400,
                offset: 4,
                bytes: 100,
            },
        );
    process_crash(&mut r);
    r.restart().disk(0, OpenRule::Clean, 5, 4, None);
    process_crash(&mut r);
    r.restart()
        .disk(0, OpenRule::Clean, 5, 4, None)
        .alarm(Some(0), clamp(5, 4))
        .opened(0, 4, 4)
        .counters(0, 1, 0);
    let report = r.report();
    assert_eq!(
        report.no_lost_ack.excuse_of(3).map(|e| e.kind),
        Some(ExcuseKind::Clamped),
        "{:#?}",
        report.violations()
    );
}
