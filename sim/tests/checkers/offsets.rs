//! `stable_offsets`: content, vanishing, HWM and log start rules.

use super::*;

/// Offset 2 is read, a crash hides it (persisted HWM 1), the restart comes back with
/// HWM 2, and a later crash hides nothing: offset 2 is gone at the end. With damage at
/// rest in the first crash's hidden tail, R2 cut it there and the replay (which skips
/// records already visible) refilled fewer offsets: excused. Without damage it is a
/// vanished read (the last crash's hidden tail does not hold it).
fn vanished_after_an_earlier_damaged_hidden_tail(damaged: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .crash(&[(0, 1, 3, 3)]);
    if damaged {
        r.fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 2, end: 3 }),
                below_hwm: Some(false),
            },
            Some(0),
        );
    }
    r.restart();
    if damaged {
        // The open cut the hidden tail at the damaged frame (R2), and said so.
        r.disk(0, OpenRule::Hole, 1, 2, Some(2))
            .alarm(
                Some(0),
                Alarm::Hole {
                    segment: "00000000000000000000.log".into(),
                    position: 200,
                    offset: 2,
                    bytes: 100,
                },
            )
            .opened(0, 1, 2);
    }
    r.hwm(0, 2, 2, 2)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 2, 2, 2);
    r
}

#[test]
fn stable_offsets_fires_when_the_record_at_a_read_offset_changes() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .deliver_raw(0, 0, &payload(2), &key(2), 1_000, 1)
        .attempt(2, 0);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "record at orders/0 offset 0 changed",
            "produce id 1 -> 2",
            "inc 1",
        ],
    );
}

#[test]
fn stable_offsets_excuses_reuse_of_offsets_above_a_recorded_clamp() {
    let mut r = super::loss::clamped_run(1);
    // Offsets 1 and 2 are reused by new records after the clamp.
    r.produce(4, 0, 1, 1_010)
        .hwm(0, 2, 2, 2)
        .deliver(4, 0, 1, 1_010)
        .consume(0, 1);
    let report = r.report();
    assert_clean(&report);
    // The changed record at offset 1, and the HWM's drop (persisted and after the
    // restart), each rest on the clamp.
    let excused = &report.stable_offsets.excused;
    assert!(
        excused
            .iter()
            .all(|e| e.excuse.kind == cafelog_sim::check::excuse::ExcuseKind::Clamped)
    );
    assert_eq!(
        excused
            .iter()
            .filter(|e| e.excuse.covers.contains("offsets [1, 3)"))
            .count(),
        1,
        "{excused:?}"
    );
}

#[test]
fn stable_offsets_fires_when_the_hwm_moves_backwards_within_an_incarnation() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .hwm(0, 0, 1, 1)
        .deliver(1, 0, 0, 1_000);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "HWM of orders/0 moved backwards within incarnation 0: 1",
            "then 0",
        ],
    );
}

#[test]
fn stable_offsets_fires_when_the_hwm_restarts_below_the_persisted_one_unrecorded() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 1, 2, 2)
        .counters(0, 0, 0);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "HWM of orders/0 after the restart into incarnation 1 is 1",
            "below the persisted HWM 2",
            "recorded a loss of 0 record(s), 1 needed",
        ],
    );
}

#[test]
fn stable_offsets_fires_when_the_hwm_passes_the_durable_tail() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "in-memory HWM of orders/0 is 2, beyond the durable tail 1",
            "offsets 1..2",
        ],
    );
}

#[test]
fn stable_offsets_fires_when_a_read_offset_vanishes() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        // Offset 1 is below the persisted HWM and durable, yet the engine comes back
        // with HWM 1 and records no loss: offset 1, already read, is gone.
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 1, 1, 2);
    let report = r.report();
    // The restart below the persisted HWM fires too, in the same checker.
    assert_eq!(report.failed_checkers(), vec![CheckerName::StableOffsets]);
    let messages = messages_of(&report, CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "1 read offset(s) of orders/0 vanished: offsets 1",
            "final HWM is 1",
        ],
    );
}

#[test]
fn a_read_offset_cut_from_an_earlier_damaged_hidden_tail_may_vanish_and_not_otherwise() {
    let report = vanished_after_an_earlier_damaged_hidden_tail(true).report();
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    let report = vanished_after_an_earlier_damaged_hidden_tail(false).report();
    let messages = messages_of(&report, CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &["1 read offset(s) of orders/0 vanished: offsets 2"],
    );
}

#[test]
fn stable_offsets_fires_when_the_log_start_moves_backwards() {
    let mut r = Run::new();
    r.with(|t, h| {
        h.log_start_observed(t, &tp(0), 5);
    })
    .with(|t, h| {
        h.log_start_observed(t, &tp(0), 3);
    });
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &["log start of orders/0 moved backwards from 5", "to 3"],
    );
}

#[test]
fn stable_offsets_fires_when_the_persisted_hwm_moves_backwards() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "persisted HWM of orders/0 moved backwards from 2",
            "to 1",
            "at least 1 records",
        ],
    );
}
