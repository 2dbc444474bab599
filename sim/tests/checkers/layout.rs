//! `layout`: each shape rule fires on its own, and each excuse covers one segment for
//! one named cause.

use super::*;
use cafelog_sim::history::{LayoutKnobs, SegmentLayout};

const KNOBS: LayoutKnobs = LayoutKnobs {
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
        damaged: false,
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

fn flip_on<'a>(r: &'a mut Run, segment: &str) -> &'a mut Run {
    let path = format!("/data/topics/orders/p00000/{segment}");
    r.with(|t, h| {
        h.fault(
            t,
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: None,
                below_hwm: None,
            },
            Some(&tp(0)),
            Some(&path),
        );
    })
}

#[test]
fn a_sealed_tail_is_excused_only_by_a_fault_on_its_file_since_the_last_open() {
    let long_tail = || {
        let mut s = good();
        s[0].file_len = 1_024;
        s
    };
    let mut r = Run::new();
    open_found(&mut r, 23, vec![0, 10, 20]);
    flip_on(&mut r, "00000000000000000000.log");
    observed(&mut r, long_tail());
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.layout.tails_excused.len(), 1);

    // On another segment's file: no excuse.
    let mut r = Run::new();
    flip_on(&mut r, "00000000000000000010.log");
    observed(&mut r, long_tail());
    fires_only(&r.report(), CheckerName::Layout);
    // Before the last open, which trims sealed tails: no excuse.
    let mut r = Run::new();
    flip_on(&mut r, "00000000000000000000.log");
    open_found(&mut r, 23, vec![0, 10, 20]);
    observed(&mut r, long_tail());
    fires_only(&r.report(), CheckerName::Layout);
}

#[test]
fn a_refused_partition_is_judged_on_its_frames_only() {
    let refused = |r: &mut Run| {
        r.crash(&[(0, 0, 0, 0)]).restart().with(|t, h| {
            h.partition_refused(t, &tp(0), "damage below the persisted HWM");
        });
    };
    let mut r = Run::new();
    refused(&mut r);
    let mut s = early_roll();
    s[0].file_len = 1_024;
    observed(&mut r, s);
    let report = r.report();
    assert_eq!(report.layout.violations, []);
    assert_eq!(report.layout.refused.len(), 1);

    let mut r = Run::new();
    refused(&mut r);
    let mut s = good();
    s[0].records_max = 11;
    observed(&mut r, s);
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
    // A refusal in an earlier incarnation, then an open that succeeded: judged.
    let mut r = Run::new();
    refused(&mut r);
    r.crash(&[(0, 0, 0, 0)]).restart();
    observed(&mut r, early_roll());
    assert!(r.report().failed_checkers().contains(&CheckerName::Layout));
}
