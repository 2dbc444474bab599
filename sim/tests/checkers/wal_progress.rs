//! `wal_progress`: at the end of a run whose WAL has been quiet for the bound, only the
//! newest WAL segment is listed; a refused partition's segment is kept; a short quiet
//! end, or a poison in the last incarnation, is not judged. No listed segment has a
//! frame past the segment size.

use super::*;
use cafelog_sim::history::{RequestKind, TopicSetup, WalSegmentAtEnd};

/// Topic `orders` (1 partition), its HWM persisted every 100 ms, on a disk that
/// answers at once: a bound of 100 + 250 + 2 x (100 + 10) = 570 ms. Ids 1..=3
/// acknowledged at 0..3 of orders/0, then the heal.
fn produced_then_healed() -> Run {
    produced_then_healed_after(|_| {})
}

/// [`produced_then_healed`], with `before` run right after the setup.
fn produced_then_healed_after(before: impl FnOnce(&mut Run)) -> Run {
    let mut r = Run::new();
    let topic = TopicSetup {
        name: "orders".into(),
        partitions: 1,
        delay_ms: 0,
        lease_ms: 300,
        retention_ms: None,
        hwm_persist_ms: Some(100),
        reaper_interval_ms: None,
    };
    r.h.run_started(0, 1_000, vec![topic], 0, None, false);
    before(&mut r);
    // Committed between the attempt and the ack, by a wall clock at 1_000 + t.
    let commits: Vec<u64> = (0..3)
        .map(|offset| {
            let commit = 1_000 + r.t + 15;
            r.produce(offset + 1, 0, offset, commit);
            commit
        })
        .collect();
    for (offset, commit) in (0..).zip(commits) {
        r.deliver(offset + 1, 0, offset, commit).consume(0, offset);
    }
    r.with(|t, h| {
        h.heal(t);
    });
    r
}

fn segment(base: u64, end: Option<u64>) -> WalSegmentAtEnd {
    WalSegmentAtEnd {
        base,
        entries: end.map_or(0, |e| e - base),
        ends: end.map(|e| (tp(0), e)).into_iter().collect(),
        last_frame_at: end.map(|_| 0),
    }
}

/// The store's WAL segment size in these runs.
const SEGMENT_BYTES: u64 = 4096;

/// The end of the run `quiet_ms` after the last event: the WAL lists `segments`, the
/// last of which the engine writes to, the checkpoint is past seq 3, and the store
/// opened at t=0.
fn ends(r: &mut Run, quiet_ms: u64, segments: Vec<WalSegmentAtEnd>) -> CheckReport {
    let active = segments.last().map_or(0, |s| s.base);
    ends_writing(r, quiet_ms, segments, active)
}

/// [`ends`], with the engine writing to the segment at `active`.
fn ends_writing(
    r: &mut Run,
    quiet_ms: u64,
    segments: Vec<WalSegmentAtEnd>,
    active: u64,
) -> CheckReport {
    r.wait(quiet_ms).with(|t, h| {
        h.wal_at_end(
            t,
            0,
            segments,
            Some(vec![(tp(0), 3, 0)]),
            active,
            SEGMENT_BYTES,
        );
    });
    r.report()
}

#[test]
fn a_segment_the_checkpoint_passed_still_listed_fires() {
    let mut r = produced_then_healed();
    let report = ends(&mut r, 600, vec![segment(0, Some(3)), segment(3, None)]);
    assert!(report.wal_progress.judged);
    let messages = fires_only(&report, CheckerName::WalProgress);
    assert_mentions(&messages, &["WAL segment 0 (3 entries)", "bound of 570 ms"]);
}

#[test]
fn only_the_newest_segment_listed_passes() {
    let mut r = produced_then_healed();
    let report = ends(&mut r, 600, vec![segment(3, None)]);
    assert!(report.wal_progress.judged);
    assert!(report.violations().is_empty(), "{:?}", report.violations());
}

#[test]
fn a_quiet_end_shorter_than_the_bound_is_not_judged() {
    let mut r = produced_then_healed();
    let report = ends(&mut r, 500, vec![segment(0, Some(3)), segment(3, None)]);
    assert!(!report.wal_progress.judged);
    assert!(report.wal_progress.violations.is_empty());
}

#[test]
fn a_produce_after_the_heal_starts_the_quiet_end_again() {
    let mut r = produced_then_healed();
    let commit = 1_000 + r.t + 400 + 15;
    r.wait(400).produce(4, 0, 3, commit);
    let report = ends(&mut r, 300, vec![segment(0, Some(4)), segment(4, None)]);
    assert!(!report.wal_progress.judged, "{:?}", report.wal_progress);
}

#[test]
fn a_segment_holding_a_refused_partitions_entries_is_kept() {
    let mut r = produced_then_healed();
    r.with(|t, h| {
        h.partition_refused(t, &tp(0), "checksum mismatch");
    });
    // Entries 3 and 4 are past the checkpoint's seq 3.
    let report = ends(&mut r, 600, vec![segment(0, Some(5)), segment(5, None)]);
    assert!(report.wal_progress.judged);
    assert_eq!(report.wal_progress.kept_for_refused, vec![0]);
    assert!(report.wal_progress.violations.is_empty());
}

#[test]
fn a_refused_partitions_segment_the_checkpoint_passed_is_not_kept() {
    let mut r = produced_then_healed();
    r.with(|t, h| {
        h.partition_refused(t, &tp(0), "checksum mismatch");
    });
    // Entries 0..3 are listed, and the checkpoint is past seq 3: nothing to replay.
    let report = ends(&mut r, 600, vec![segment(0, Some(3)), segment(3, None)]);
    assert!(report.wal_progress.kept_for_refused.is_empty());
    assert_eq!(report.wal_progress.violations.len(), 1);
}

#[test]
fn a_poison_in_the_last_incarnation_is_not_judged_but_one_before_it_is() {
    let poison = || Alarm::Poisoned {
        cancelled: false,
        directory: false,
        verify: false,
    };
    let mut r = produced_then_healed();
    r.alarm(Some(0), poison());
    let report = ends(&mut r, 600, vec![segment(0, Some(3)), segment(3, None)]);
    assert!(!report.wal_progress.judged);
    assert!(report.wal_progress.violations.is_empty());

    let mut r = produced_then_healed_after(|r| {
        r.alarm(Some(0), poison())
            .process_crash(&[(0, 0, 0, 0)])
            .restart();
    });
    let report = ends(&mut r, 600, vec![segment(0, Some(3)), segment(3, None)]);
    assert!(report.wal_progress.judged);
    assert_eq!(report.wal_progress.violations.len(), 1);
}

#[test]
fn a_damaged_segment_is_kept_only_when_the_incarnation_refused_a_partition() {
    let flipped = |refuse: bool| {
        move |r: &mut Run| {
            r.with(|t, h| {
                let flip = FaultKind::BitFlip {
                    file: FileKind::Wal,
                    offsets: None,
                    below_hwm: None,
                };
                h.fault(t, flip, None, Some("/data/wal/00000000000000000002.wal"));
            });
            if refuse {
                r.with(|t, h| {
                    h.partition_refused(t, &tp(1), "checksum mismatch");
                });
            }
        }
    };
    let listing = || vec![segment(0, Some(2)), segment(2, Some(3)), segment(3, None)];
    let mut r = produced_then_healed_after(flipped(true));
    let report = ends(&mut r, 600, listing());
    assert_eq!(report.wal_progress.kept_for_damage, vec![2]);
    assert_eq!(
        report.wal_progress.violations.len(),
        1,
        "segment 0 still fires"
    );

    let mut r = produced_then_healed_after(flipped(false));
    let report = ends(&mut r, 600, listing());
    assert!(report.wal_progress.kept_for_damage.is_empty());
    assert_eq!(report.wal_progress.violations.len(), 2, "both fire");
}

#[test]
fn an_empty_file_past_the_active_segment_is_kept_only_after_a_produce_was_cancelled() {
    let listing = || vec![segment(0, Some(3)), segment(3, None)];
    // The engine still writes to segment 0 (its roll to 3 was dropped after the create).
    let cancelled = |r: &mut Run| {
        let cancel = FaultKind::Cancel {
            request: RequestKind::Produce,
        };
        r.fault(cancel, Some(0));
    };
    let mut r = produced_then_healed_after(cancelled);
    let report = ends_writing(&mut r, 600, listing(), 0);
    assert_eq!(report.wal_progress.kept_abandoned_roll, vec![3]);
    assert!(report.wal_progress.violations.is_empty());

    let mut r = produced_then_healed();
    let report = ends_writing(&mut r, 600, listing(), 0);
    assert!(report.wal_progress.kept_abandoned_roll.is_empty());
    let messages = messages_of(&report, CheckerName::WalProgress);
    assert_mentions(&messages, &["WAL segment 3 (0 entries)"]);
}

#[test]
fn a_second_empty_file_past_the_active_segment_fires() {
    let listing = || vec![segment(0, Some(3)), segment(3, None), segment(4, None)];
    let mut r = produced_then_healed_after(|r| {
        let cancel = FaultKind::Cancel {
            request: RequestKind::Produce,
        };
        r.fault(cancel, Some(0));
    });
    let report = ends_writing(&mut r, 600, listing(), 0);
    assert_eq!(report.wal_progress.kept_abandoned_roll, vec![3]);
    let messages = fires_only(&report, CheckerName::WalProgress);
    assert_mentions(&messages, &["WAL segment 4 (0 entries)"]);
}

/// The newest segment, holding entries 3 and 4, with its last frame at byte `at`.
fn active_with_last_frame_at(at: u64) -> WalSegmentAtEnd {
    WalSegmentAtEnd {
        last_frame_at: Some(at),
        ..segment(3, Some(5))
    }
}

#[test]
fn a_frame_at_or_past_the_segment_size_fires_with_or_without_a_heal() {
    let mut r = produced_then_healed();
    let report = ends(&mut r, 600, vec![active_with_last_frame_at(SEGMENT_BYTES)]);
    let messages = fires_only(&report, CheckerName::WalProgress);
    assert_mentions(
        &messages,
        &["WAL segment 3 has a frame at byte 4096", "4096 bytes"],
    );

    // Unhealed (not judged for liveness), the size still holds.
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_015);
    let report = ends(
        &mut r,
        10,
        vec![active_with_last_frame_at(SEGMENT_BYTES + 1)],
    );
    assert!(!report.wal_progress.judged);
    let messages = messages_of(&report, CheckerName::WalProgress);
    assert_mentions(&messages, &["WAL segment 3 has a frame at byte 4097"]);

    let mut r = produced_then_healed();
    let report = ends(
        &mut r,
        600,
        vec![active_with_last_frame_at(SEGMENT_BYTES - 1)],
    );
    assert!(report.violations().is_empty(), "{:?}", report.violations());
}

#[test]
fn a_frame_past_the_segment_size_is_excused_only_by_a_misdirected_write_on_it() {
    let misdirected = |path: &'static str| {
        move |r: &mut Run| {
            r.with(|t, h| {
                let fault = FaultKind::Misdirected {
                    file: FileKind::Wal,
                    offsets: None,
                    below_hwm: None,
                    parts: None,
                };
                h.fault(t, fault, None, Some(path));
            });
        }
    };
    let mut r = produced_then_healed_after(misdirected("/data/wal/00000000000000000003.wal"));
    let report = ends(&mut r, 600, vec![active_with_last_frame_at(SEGMENT_BYTES)]);
    assert_eq!(report.wal_progress.oversized_misdirected, vec![3]);
    assert!(report.violations().is_empty(), "{:?}", report.violations());

    let mut r = produced_then_healed_after(misdirected("/data/wal/00000000000000000000.wal"));
    let report = ends(&mut r, 600, vec![active_with_last_frame_at(SEGMENT_BYTES)]);
    assert!(report.wal_progress.oversized_misdirected.is_empty());
    fires_only(&report, CheckerName::WalProgress);
}
