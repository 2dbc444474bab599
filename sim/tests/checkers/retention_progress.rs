//! `retention_progress`: once the run is quiet, a sealed segment retention has aged,
//! below the HWM shown and the WAL checkpoint's floor, is gone from the listing within
//! a reaper interval and a sweep's slack.

use super::layout::KNOBS;
use super::*;
use cafelog_sim::history::{SegmentLayout, TopicSetup};

/// A full segment of ten one-record frames of 100 bytes from `base`, whose last record
/// was committed at `committed_ms` (the wall clock starts at 0).
fn segment(base: u64, committed_ms: u64) -> SegmentLayout {
    SegmentLayout {
        base,
        end: base + 10,
        file_len: 1_000,
        valid_len: 1_000,
        frames: 10,
        first_frame_len: 100,
        records_max: 1,
        multi_record_bytes_max: 0,
        zstd_payload_min: None,
        compressible_raw: None,
        damaged: false,
        last_committed_ms: Some(committed_ms),
    }
}

/// What the run does before its end, and what the world lists then.
#[derive(Clone)]
struct End {
    /// Segment 0 holds `[0, 10)`, committed last at this wall-clock ms.
    committed_ms: u64,
    /// The checkpoint's offset for orders/0, and the HWM and persisted HWM a sample
    /// showed.
    floor: u64,
    hwm: u64,
    persisted: u64,
    /// Clock steps back, and a fault on orders/0 in the last incarnation.
    stepped_back_ms: u64,
    fault: bool,
    /// The decoder stopped inside segment 0 (its commit time is not the file's last).
    damaged: bool,
    /// The decoder found no frames in segment 0 (an empty file: no commit time).
    empty: bool,
    /// The disk's longest sleep.
    latency_ms: u64,
    /// How long after the heal the listing comes.
    end_after_heal_ms: u64,
}

const DUE: End = End {
    committed_ms: 100,
    floor: 20,
    hwm: 20,
    persisted: 20,
    stepped_back_ms: 0,
    fault: false,
    damaged: false,
    empty: false,
    latency_ms: 0,
    end_after_heal_ms: 3_000,
};

/// Topic `orders` keeping segments 1 s, reaped every 200 ms, HWM persisted every 100
/// ms, on a disk whose longest sleep is `latency_ms`.
fn reaped_every_200ms(latency_ms: u64) -> Run {
    let mut r = Run::new();
    let topic = TopicSetup {
        name: "orders".into(),
        partitions: 1,
        delay_ms: 0,
        lease_ms: 30_000,
        retention_ms: Some(1_000),
        hwm_persist_ms: Some(100),
        reaper_interval_ms: Some(200),
    };
    r.h.run_started(0, 0, vec![topic], latency_ms, None, false);
    r
}

/// [`reaped_every_200ms`]; the heal at t=1000ms; segments 0 `[0, 10)` and 10 `[10, 20)` listed at the end.
fn ends(e: &End) -> CheckReport {
    ends_with(e, |_| {})
}

/// [`ends`], with `before_heal` run just before the heal.
fn ends_with(e: &End, before_heal: impl FnOnce(&mut Run)) -> CheckReport {
    let mut r = reaped_every_200ms(e.latency_ms);
    if e.stepped_back_ms > 0 {
        let back_ms = e.stepped_back_ms;
        r.fault(FaultKind::ClockStep { back_ms }, None);
    }
    if e.fault {
        let flip = segment_flip(OffsetRange { start: 0, end: 1 }, Some(true));
        r.with(|t, h| {
            let path = "/data/topics/orders/p00000/00000000000000000000.log";
            h.fault(t, flip, Some(&tp(0)), Some(path));
        });
    }
    before_heal(&mut r);
    r.wait(1_000).with(|t, h| {
        h.heal(t);
    });
    r.hwm(0, e.hwm, e.persisted, e.hwm);
    let (committed_ms, floor, damaged, empty) = (e.committed_ms, e.floor, e.damaged, e.empty);
    r.wait(e.end_after_heal_ms).with(|t, h| {
        let mut first = segment(0, committed_ms);
        first.damaged = damaged;
        if empty {
            first = SegmentLayout {
                end: 0,
                file_len: 0,
                valid_len: 0,
                frames: 0,
                first_frame_len: 0,
                records_max: 0,
                last_committed_ms: None,
                ..first
            };
        }
        let segments = vec![first, segment(10, 900)];
        h.layout_observed(t, &tp(0), KNOBS, segments);
        let checkpoint = Some(vec![(tp(0), 0, floor)]);
        h.wal_at_end(t, 0, Vec::new(), checkpoint, 0, 1 << 20);
    });
    r.report()
}

#[test]
fn a_sealed_segment_retention_aged_still_listed_at_the_end_fires() {
    let report = ends(&DUE);
    assert_mentions(
        &fires_only(&report, CheckerName::RetentionProgress),
        &[
            "orders/0: sealed segment 0 ([0, 10)) still listed at the end",
            "committed at 100 ms, aged 1000 ms by t=1100ms",
            "below the HWM 20 shown at t=1020ms",
            "the WAL checkpoint's floor 20",
            "every 200 ms, had until t=2030ms",
        ],
    );
    assert_eq!(report.retention_progress.sealed, 1);
    assert!(CheckerName::RetentionProgress.is_liveness());
}

#[test]
fn a_segment_not_yet_due_for_a_reaper_interval_is_not_judged() {
    let quiet = |e: End| {
        let report = ends(&e);
        assert!(
            messages_of(&report, CheckerName::RetentionProgress).is_empty(),
            "{:#?}",
            report.retention_progress
        );
        assert_eq!(report.retention_progress.not_due, 1);
    };
    // Aged only at t=3800ms, 200 ms before the end: less than a reaper interval and
    // the slack.
    quiet(End {
        committed_ms: 2_800,
        ..DUE
    });
    // The checkpoint's floor, or the HWM shown, below the segment's end.
    quiet(End {
        floor: 9,
        persisted: 9,
        ..DUE
    });
    quiet(End {
        hwm: 9,
        persisted: 9,
        ..DUE
    });
    // Steps back of the clock delay the age by as much (the engine's clock may lag).
    quiet(End {
        committed_ms: 1_000,
        stepped_back_ms: 2_500,
        ..DUE
    });
    // Listed too soon after the heal for the WAL's quiet bound and a sweep.
    quiet(End {
        end_after_heal_ms: 600,
        ..DUE
    });
}

#[test]
fn a_partition_a_fault_reached_in_the_last_incarnation_is_not_judged() {
    let report = ends(&End { fault: true, ..DUE });
    assert!(messages_of(&report, CheckerName::RetentionProgress).is_empty());
    assert_eq!(report.retention_progress.sealed, 0);
    // Nor a lowest segment the decoder found damaged.
    let report = ends(&End {
        damaged: true,
        ..DUE
    });
    assert!(messages_of(&report, CheckerName::RetentionProgress).is_empty());
    assert_eq!(report.retention_progress.sealed, 0);
    // Nor one the engine poisoned (its reaper stops), with or without a floor behind.
    for floor in [20, 15] {
        let report = ends_with(&End { floor, ..DUE }, |r| {
            r.with(|t, h| {
                h.partition_poisoned(t, &tp(0));
            });
        });
        assert!(messages_of(&report, CheckerName::RetentionProgress).is_empty());
    }
}

#[test]
fn only_a_sealed_segment_is_judged_and_only_damage_to_segments_excludes() {
    // One segment listed: the active one, never reaped.
    let mut r = reaped_every_200ms(0);
    r.wait(1_000).with(|t, h| {
        h.heal(t);
    });
    r.hwm(0, 10, 10, 10).wait(3_000).with(|t, h| {
        h.layout_observed(t, &tp(0), KNOBS, vec![segment(0, 100)]);
        h.wal_at_end(t, 0, Vec::new(), Some(vec![(tp(0), 0, 10)]), 0, 1 << 20);
    });
    let report = r.report();
    assert!(report.violations().is_empty(), "{:#?}", report.violations());
    assert_eq!(report.retention_progress.sealed, 0);
    // A dropped receive on the partition touches no segment: still judged.
    let mut e = DUE;
    e.fault = false;
    let report = ends_with(&e, |r| {
        r.fault(
            FaultKind::Cancel {
                request: cafelog_sim::history::RequestKind::Receive,
            },
            Some(0),
        );
    });
    assert_mentions(
        &messages_of(&report, CheckerName::RetentionProgress),
        &["sealed segment 0 ([0, 10)) still listed"],
    );
}

#[test]
fn the_floor_reaches_the_persisted_hwm_once_the_wal_is_quiet() {
    // A sample read the persisted HWM 20; the checkpoint at the end says 15.
    let report = ends(&End {
        committed_ms: 2_800,
        floor: 15,
        ..DUE
    });
    assert_mentions(
        &fires_only(&report, CheckerName::RetentionProgress),
        &[
            "orders/0: the WAL checkpoint's offset (retention's floor) is 15 at the end",
            "below the persisted HWM 20 a sample read at t=1020ms",
        ],
    );
    // At the persisted HWM: nothing to say (and the segment is not due yet).
    assert_clean(&ends(&End {
        committed_ms: 2_800,
        ..DUE
    }));
}

#[test]
fn a_partition_refused_in_the_last_incarnation_is_not_judged() {
    // The engine runs no reaper and no checkpoint for a partition it refused, nor for
    // any of a topic it refused: neither the segment nor a floor behind is judged.
    let cases = [(20, DUE.committed_ms), (15, 2_800)];
    for (floor, committed_ms) in cases {
        let e = End {
            floor,
            committed_ms,
            ..DUE
        };
        let report = ends_with(&e, |r| {
            r.with(|t, h| {
                h.partition_refused(t, &tp(0), "crc mismatch at 0");
            });
        });
        let refused = messages_of(&report, CheckerName::RetentionProgress);
        assert!(
            refused.is_empty(),
            "partition refused, floor {floor}: {refused:#?}"
        );
        assert_eq!(report.retention_progress.sealed, 0);
        let report = ends_with(&e, |r| {
            let topic = "orders".into();
            r.alarm(None, Alarm::TopicRefused { topic });
        });
        let refused = messages_of(&report, CheckerName::RetentionProgress);
        assert!(
            refused.is_empty(),
            "topic refused, floor {floor}: {refused:#?}"
        );
        assert_eq!(report.retention_progress.sealed, 0);
    }
    // Another partition refused excuses nothing here.
    let report = ends_with(&DUE, |r| {
        r.with(|t, h| {
            h.partition_refused(t, &tp(1), "crc mismatch at 0");
        });
    });
    assert_mentions(
        &messages_of(&report, CheckerName::RetentionProgress),
        &["orders/0: sealed segment 0 ([0, 10)) still listed"],
    );
}

#[test]
fn a_lowest_segment_the_decoder_found_without_frames_is_not_judged() {
    // No frame, no commit time to age it by: the engine's reaper cannot age it either.
    let report = ends(&End { empty: true, ..DUE });
    assert!(
        messages_of(&report, CheckerName::RetentionProgress).is_empty(),
        "{:#?}",
        report.retention_progress
    );
    assert_eq!(report.retention_progress.sealed, 0);
    assert_eq!(report.retention_progress.not_due, 0);
}

#[test]
fn the_reapers_bound_allows_eight_of_the_disks_longest_sleeps() {
    // Aged at t=2850ms, 1180 ms before the end: past a reaper interval, the slack and
    // seven sleeps of 100 ms, not past eight.
    let e = End {
        committed_ms: 1_850,
        latency_ms: 100,
        ..DUE
    };
    let report = ends(&e);
    assert!(
        messages_of(&report, CheckerName::RetentionProgress).is_empty(),
        "{:#?}",
        report.retention_progress
    );
    assert_eq!(report.retention_progress.not_due, 1);
    // Aged 100 ms sooner, it is past eight too.
    let report = ends(&End {
        committed_ms: 1_750,
        ..e
    });
    assert_mentions(
        &fires_only(&report, CheckerName::RetentionProgress),
        &["aged 1000 ms by t=2750ms", "had until t=4000ms"],
    );
}
