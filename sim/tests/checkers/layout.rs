//! `layout`: each shape rule fires on its own, and each excuse covers one segment for
//! one named cause.

use super::*;
use cafelog_sim::history::{LayoutKnobs, SegmentLayout};

pub(super) const KNOBS: LayoutKnobs = LayoutKnobs {
    segment_bytes: 1_000,
    flush_records: 10,
    flush_bytes: 500,
    compress_min_bytes: 256,
    zstd: true,
};

/// A sealed-shape segment of `frames` frames of 100 bytes from `base`, one record each.
fn segment(base: u64, frames: u32) -> SegmentLayout {
    let len = 100 * u64::from(frames);
    SegmentLayout {
        base,
        end: base + u64::from(frames),
        file_len: len,
        valid_len: len,
        frames,
        first_frame_len: if frames > 0 { 100 } else { 0 },
        records_max: u32::from(frames > 0),
        multi_record_bytes_max: 0,
        zstd_payload_min: None,
        compressible_raw: None,
        damaged: false,
        last_committed_ms: None,
    }
}

/// Two full segments (10 frames of 100 bytes fill 1,000) and an active one.
fn good() -> Vec<SegmentLayout> {
    vec![segment(0, 10), segment(10, 10), segment(20, 3)]
}

fn observed(r: &mut Run, segments: Vec<SegmentLayout>) -> &mut Run {
    r.with(|t, h| {
        h.layout_observed(t, &tp(0), KNOBS, segments);
    })
}

fn report_of(segments: Vec<SegmentLayout>) -> CheckReport {
    let mut r = Run::new();
    observed(&mut r, segments);
    r.report()
}

/// `good()` with the second segment rolled after 9 frames (the third starts one
/// offset early).
fn early_roll() -> Vec<SegmentLayout> {
    vec![segment(0, 10), segment(10, 9), segment(19, 3)]
}

#[test]
fn a_run_with_the_spec_shapes_passes_and_is_counted() {
    let report = report_of(good());
    assert_clean(&report);
    assert_eq!(report.layout.segments, 3);
    assert_eq!(report.layout.frames, 23);
    assert_eq!(report.layout.rolls_judged, 2);
}

#[test]
fn each_frame_rule_fires_alone() {
    let mut s = good();
    s[0].records_max = 11;
    let m = fires_only(&report_of(s), CheckerName::Layout);
    assert_mentions(&m, &["orders/0", "F1", "segment 0", "11 records"]);

    let mut s = good();
    s[1].multi_record_bytes_max = 501;
    let m = fires_only(&report_of(s), CheckerName::Layout);
    assert_mentions(&m, &["F2", "segment 10", "501 record bytes"]);

    let mut s = good();
    s[2].zstd_payload_min = Some(255);
    let m = fires_only(&report_of(s), CheckerName::Layout);
    assert_mentions(&m, &["F3", "segment 20", "255 payload bytes"]);
    // At the bound it is fine.
    let mut s = good();
    s[2].zstd_payload_min = Some(256);
    assert_clean(&report_of(s));

    let mut s = good();
    s[1].compressible_raw = Some((300, 400, 120));
    let m = fires_only(&report_of(s), CheckerName::Layout);
    assert_mentions(
        &m,
        &[
            "F5",
            "segment 10",
            "raw frame at byte 300",
            "400 payload",
            "in 120",
        ],
    );
}

/// The engine's account of a drain into the frame at 5 of `records` records of
/// `bytes`, leaving records behind, the next of `next_bytes`.
fn drained(r: &mut Run, records: u64, bytes: u64, next_bytes: u64) -> &mut Run {
    r.alarm(
        Some(0),
        Alarm::DrainPartial {
            base: 5,
            records,
            bytes,
            next_bytes,
        },
    )
}

#[test]
fn a_drain_that_left_records_must_have_filled_its_frame() {
    // KNOBS: flush_records 10, flush_bytes 500.
    let run = |records: u64, bytes: u64, next_bytes: u64| {
        let mut r = Run::new();
        drained(&mut r, records, bytes, next_bytes);
        observed(&mut r, good());
        r.report()
    };
    // Full by count, or the next record past the byte cap (a lone large record too).
    for (records, bytes, next) in [(10, 100, 10), (4, 400, 101), (1, 600, 10)] {
        let report = run(records, bytes, next);
        assert_clean(&report);
        assert_eq!(report.layout.drains_judged, 1);
    }
    // Room for the next one: by one record, and by one byte.
    let m = fires_only(&run(9, 100, 10), CheckerName::Layout);
    assert_mentions(
        &m,
        &[
            "orders/0 F4",
            "frame at 5",
            "took 9 record(s) of 100 bytes",
            "left the next",
        ],
    );
    let m = fires_only(&run(4, 400, 100), CheckerName::Layout);
    assert_mentions(&m, &["F4", "the next, of 100 bytes"]);
    // With no listing at the end there are no knobs, and an account from a directory
    // the world names no partition for has none either: counted, not judged.
    let mut r = Run::new();
    drained(&mut r, 1, 10, 10).alarm(
        None,
        Alarm::DrainPartial {
            base: 5,
            records: 1,
            bytes: 10,
            next_bytes: 10,
        },
    );
    let report = r.report();
    assert_clean(&report);
    assert_eq!(
        (report.layout.drains_judged, report.layout.drains_unjudged),
        (0, 2)
    );
}

#[test]
fn segment_rules_fire_alone() {
    // S1: eleven frames in one segment.
    let mut s = good();
    s[2] = segment(20, 11);
    let m = fires_only(&report_of(s), CheckerName::Layout);
    assert_mentions(&m, &["S1", "segment 20", "1100 bytes"]);
    // One frame larger than a segment is allowed.
    let mut s = good();
    s[2].valid_len = 5_000;
    s[2].file_len = 5_000;
    s[2].frames = 1;
    s[2].first_frame_len = 5_000;
    assert_clean(&report_of(s));

    let m = fires_only(&report_of(early_roll()), CheckerName::Layout);
    assert_mentions(
        &m,
        &["S2", "segment 10 was rolled at 900 bytes", "(100 bytes)"],
    );

    let mut s = good();
    s[0].file_len = 1_024;
    let m = fires_only(&report_of(s), CheckerName::Layout);
    assert_mentions(&m, &["S3", "sealed segment 0 is 1024 bytes", "end at 1000"]);
    // The active segment may keep its preallocated zeros.
    let mut s = good();
    s[2].file_len = 1_000;
    assert_clean(&report_of(s));
}

/// A restart whose open read the durable tail at `tail`, with `listed` segments.
fn open_found(r: &mut Run, tail: u64, listed: Vec<u64>) -> &mut Run {
    r.crash(&[(0, 0, tail, 0)]).restart().with(|t, h| {
        h.segments_listed(t, &tp(0), listed);
        h.disk_at_open(t, &tp(0), disk_view(OpenRule::Clean, 0, tail, None), false);
    })
}

#[test]
fn an_early_roll_is_excused_only_by_an_open_that_found_the_successor_empty() {
    let mut r = Run::new();
    open_found(&mut r, 19, vec![0, 10, 19]);
    observed(&mut r, early_roll());
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.layout.rolls_excused.len(), 1);
    assert_eq!(report.layout.rolls_excused[0].1, 19);

    // The open found frames in it (tail past its base): no excuse.
    let mut r = Run::new();
    open_found(&mut r, 20, vec![0, 10, 19]);
    observed(&mut r, early_roll());
    fires_only(&r.report(), CheckerName::Layout);
    // The tail was at its base, but the file was not there (a roll created it later).
    let mut r = Run::new();
    open_found(&mut r, 19, vec![0, 10]);
    observed(&mut r, early_roll());
    fires_only(&r.report(), CheckerName::Layout);
}

fn fault_on<'a>(r: &'a mut Run, kind: FaultKind, segment: &str) -> &'a mut Run {
    let path = format!("/data/topics/orders/p00000/{segment}");
    r.with(|t, h| {
        h.fault(t, kind, Some(&tp(0)), Some(&path));
    })
}

fn lost_fsync() -> FaultKind {
    FaultKind::LostFsync {
        file: FileKind::Segment,
        offsets: None,
    }
}

fn opened(r: &mut Run) -> &mut Run {
    r.with(|t, h| {
        let alarm = Alarm::LogOpened {
            log_start: 0,
            hwm: 23,
            tail: 23,
            hidden: 0,
        };
        h.engine_alarm(t, Some(&tp(0)), alarm, None);
    })
}

fn long_tail() -> Vec<SegmentLayout> {
    let mut s = good();
    s[0].file_len = 1_024;
    s
}

#[test]
fn a_sealed_tail_is_excused_only_by_a_lying_fsync_on_its_file_no_open_followed() {
    let power_loss = |r: &mut Run| {
        r.crash(&[(0, 0, 23, 23)]).restart();
    };
    let mut r = Run::new();
    fault_on(&mut r, lost_fsync(), "00000000000000000000.log");
    power_loss(&mut r);
    observed(&mut r, long_tail());
    let report = r.report();
    assert_eq!(report.layout.violations, []);
    assert_eq!(report.layout.tails_excused.len(), 1);

    // An open succeeded after the power loss that showed it: it trims sealed tails.
    let mut r = Run::new();
    fault_on(&mut r, lost_fsync(), "00000000000000000000.log");
    power_loss(&mut r);
    opened(&mut r);
    observed(&mut r, long_tail());
    fires_only(&r.report(), CheckerName::Layout);
    // No power loss since: the page cache still holds the engine's bytes, so the fault
    // cannot have lengthened what the world read; a process crash changes nothing.
    let mut r = Run::new();
    fault_on(&mut r, lost_fsync(), "00000000000000000000.log");
    r.process_crash(&[(0, 0, 23, 23)]).restart();
    observed(&mut r, long_tail());
    fires_only(&r.report(), CheckerName::Layout);
    // An open after a process crash, then the power loss: still excused (the open read
    // the cache, where the tail was trimmed).
    let mut r = Run::new();
    fault_on(&mut r, lost_fsync(), "00000000000000000000.log");
    r.process_crash(&[(0, 0, 23, 23)]).restart();
    opened(&mut r);
    power_loss(&mut r);
    observed(&mut r, long_tail());
    assert_eq!(r.report().layout.violations, []);
    // On another segment's file: no excuse.
    let mut r = Run::new();
    fault_on(&mut r, lost_fsync(), "00000000000000000010.log");
    power_loss(&mut r);
    observed(&mut r, long_tail());
    fires_only(&r.report(), CheckerName::Layout);
    // A bit flip lengthens no file: no excuse.
    let flip = FaultKind::BitFlip {
        file: FileKind::Segment,
        offsets: None,
        below_hwm: None,
    };
    let mut r = Run::new();
    fault_on(&mut r, flip, "00000000000000000000.log");
    observed(&mut r, long_tail());
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
}

#[test]
fn a_sealed_tail_is_excused_by_a_failed_fsync_on_its_file_no_open_followed() {
    // Fresh quick 3912019820: an open's trim of the sealed segment met an fsync EIO;
    // the opens after the process crash read the trimmed page cache and had nothing to
    // trim, the power loss dropped the trim, and every open since refused the partition.
    let eio = FaultKind::FsyncEio {
        file: FileKind::Segment,
    };
    let sealed = |r: &mut Run| {
        r.with(|t, h| {
            h.segment_created(t, &tp(0), 10);
        });
    };
    let story = |r: &mut Run, open_after: bool| {
        sealed(r);
        fault_on(r, eio.clone(), "00000000000000000000.log");
        r.process_crash(&[(0, 0, 23, 23)]).restart();
        opened(r);
        r.crash(&[(0, 0, 23, 23)]).restart();
        if open_after {
            opened(r);
        }
        observed(r, long_tail());
    };
    let mut r = Run::new();
    story(&mut r, false);
    let report = r.report();
    assert_eq!(report.layout.violations, []);
    assert_eq!(report.layout.tails_excused.len(), 1);
    // An open after the power loss would have trimmed it.
    let mut r = Run::new();
    story(&mut r, true);
    fires_only(&r.report(), CheckerName::Layout);
    // An EIO before the segment was sealed left no trim pending: the seal's own trim
    // came after it.
    let mut r = Run::new();
    fault_on(&mut r, eio.clone(), "00000000000000000000.log");
    sealed(&mut r);
    r.process_crash(&[(0, 0, 23, 23)]).restart();
    opened(&mut r);
    r.crash(&[(0, 0, 23, 23)]).restart();
    observed(&mut r, long_tail());
    fires_only(&r.report(), CheckerName::Layout);
}

#[test]
fn a_sealed_tail_is_excused_when_every_open_since_the_last_power_loss_refused() {
    let refused = |r: &mut Run| {
        r.with(|t, h| {
            let alarm = Alarm::Refused {
                segment: "00000000000000000010.log".into(),
                position: 0,
            };
            h.engine_alarm(t, Some(&tp(0)), alarm, None);
        });
    };
    let sealed = |r: &mut Run| {
        r.with(|t, h| {
            h.segment_created(t, &tp(0), 10);
        });
    };
    let mut r = Run::new();
    sealed(&mut r);
    r.crash(&[(0, 0, 23, 23)]).restart();
    refused(&mut r);
    observed(&mut r, long_tail());
    let report = r.report();
    assert_eq!(report.layout.violations, []);
    assert_eq!(report.layout.tails_excused.len(), 1);
    // Sealed before an earlier power loss: its trim had been made durable or would
    // have been trimmed by the open after that one.
    let mut r = Run::new();
    sealed(&mut r);
    r.crash(&[(0, 0, 23, 23)]).restart();
    opened(&mut r);
    r.crash(&[(0, 0, 23, 23)]).restart();
    refused(&mut r);
    observed(&mut r, long_tail());
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
    // The refusal followed a process crash only: nothing lost the trim.
    let mut r = Run::new();
    r.process_crash(&[(0, 0, 23, 23)]).restart();
    refused(&mut r);
    observed(&mut r, long_tail());
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
    // An open succeeded after the power loss: it trims.
    let mut r = Run::new();
    r.crash(&[(0, 0, 23, 23)]).restart();
    opened(&mut r);
    refused(&mut r);
    observed(&mut r, long_tail());
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
    // The early roll (S2) is not excused by it.
    let mut r = Run::new();
    r.crash(&[(0, 0, 23, 23)]).restart();
    refused(&mut r);
    observed(&mut r, early_roll());
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
}

#[test]
fn a_refused_partition_is_judged_like_any_other() {
    let refused = |r: &mut Run| {
        r.crash(&[(0, 0, 0, 0)]).restart().with(|t, h| {
            h.partition_refused(t, &tp(0), "damage below the persisted HWM");
        });
    };
    for segments in [early_roll(), long_tail()] {
        let mut r = Run::new();
        refused(&mut r);
        observed(&mut r, segments);
        assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
    }
}

#[test]
fn an_open_that_found_a_segment_empty_excuses_nothing_once_the_file_is_created_again() {
    let mut r = Run::new();
    open_found(&mut r, 19, vec![0, 10, 19]);
    r.with(|t, h| {
        h.segment_created(t, &tp(0), 19);
    });
    observed(&mut r, early_roll());
    fires_only(&r.report(), CheckerName::Layout);
}

#[test]
fn damage_in_one_segment_leaves_the_others_judged() {
    let mut s = good();
    s[0].damaged = true;
    s[0].valid_len = 300;
    s[0].frames = 3;
    s[0].end = 3;
    // The next segments are still judged: F1 in the last one fires.
    s[2].records_max = 11;
    let report = report_of(s);
    let m = fires_only(&report, CheckerName::Layout);
    assert_mentions(&m, &["F1", "segment 20"]);
    assert_eq!(report.layout.damaged, 1);
    assert_eq!(
        report.layout.rolls_judged, 1,
        "only the roll after the undamaged one"
    );
}
