//! How long a flipped `hwm` word explains the engine's clamps: until the engine rewrote
//! it. A report at or below the flip's low end counts as a late report of a word written
//! before the flip only in the flip's own incarnation, after that incarnation's open; and
//! an open that clamped the flipped word ends the flip. Each history hides a persister
//! that writes a word past durable data behind an old flip.
use super::*;

/// Inc 0: orders/0 holds 17 records; the persisted HWM was reported at 14 while the
/// engine wrote 17; a segment fsync of 12..17 was lost; a flip takes the word 17 -> 1041,
/// before the power loss or (`flip_at_restart`) at inc 1's restart, before its open read
/// the word. Inc 1 reads 1041 over a tail of 12 and clamps to 12 (the lost fsync explains
/// it), rewriting the word; it re-produces 12..16 and persists (and reports) 14 and then
/// `second`. DEFECT: the persister then writes 20 while only 17 is durable; a power loss
/// before the next sample. Inc 2 reads 20 over 17 and clamps (lost 3): the engine's own
/// bug.
fn reported_below_the_flip(second: u64, flip_at_restart: bool) -> Run {
    let mut r = Run::new();
    r.produced(17).delivered(17).hwm(0, 17, 14, 17).fault(
        FaultKind::LostFsync {
            file: FileKind::Segment,
            offsets: Some(OffsetRange { start: 12, end: 17 }),
        },
        Some(0),
    );
    if flip_at_restart {
        r.crash(&[(0, 17, 12, 17)])
            .restart()
            .fault(hwm_flip_between(17, 1041), Some(0));
    } else {
        r.fault(hwm_flip_between(17, 1041), Some(0))
            .crash(&[(0, 1041, 12, 17)])
            .restart();
    }
    r.disk(0, OpenRule::Clean, 1041, 12, None)
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 1041,
                hwm: 12,
                lost: 1029,
            },
        )
        .opened(0, 12, 12)
        .counters(0, 1029, 0)
        .hwm(0, 12, 12, 12);
    for k in 0..5u64 {
        r.produce(100 + k, 0, 12 + k, 2_000 + k);
    }
    for k in 0..5u64 {
        r.deliver(100 + k, 0, 12 + k, 2_000 + k);
    }
    r.hwm(0, 17, 14, 17)
        .hwm(0, 17, second, 17)
        // The defective persister's word 20, never reported.
        .crash(&[(0, 20, 17, 17)])
        .restart()
        .disk(0, OpenRule::Clean, 20, 17, None)
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 20,
                hwm: 17,
                lost: 3,
            },
        )
        .opened(0, 17, 17)
        .counters(0, 3, 0);
    r
}

/// a flip 4 -> 1028; a process crash keeps it; inc 1
/// clamps it to 4 (explained) and rewrites the word, reports 4 once. DEFECT: the
/// persister writes 7 while only 4 is durable; a power loss before the next sample.
/// Inc 2 reads 7 over 4 and clamps (lost 3).
fn clamp_after_a_clamp_rewrote_the_flip(report_again: Option<u64>) -> Run {
    let mut r = Run::new();
    r.produced(4)
        .delivered(4)
        .hwm(0, 4, 4, 4)
        .fault(hwm_flip_between(4, 1028), Some(0))
        .process_crash(&[(0, 1028, 4, 4)])
        .restart()
        .disk(0, OpenRule::Clean, 1028, 4, None)
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 1028,
                hwm: 4,
                lost: 1024,
            },
        )
        .opened(0, 4, 4)
        .counters(0, 1024, 0)
        .hwm(0, 4, 4, 4);
    if let Some(p) = report_again {
        r.produce(200, 0, 4, 3_000)
            .deliver(200, 0, 4, 3_000)
            .hwm(0, 5, p, 5);
    }
    let tail = if report_again.is_some() { 5 } else { 4 };
    r.crash(&[(0, 7, tail, tail)])
        .restart()
        .disk(0, OpenRule::Clean, 7, tail, None)
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 7,
                hwm: tail,
                lost: 7 - tail,
            },
        )
        .opened(0, tail, tail)
        .counters(0, 7 - tail, 0);
    r
}

fn clamp_uncaused(r: &Run) -> bool {
    messages_of(&r.report(), CheckerName::AlarmsExplained)
        .iter()
        .any(|m| m.contains("r4_clamp") && m.contains("no cause"))
}

/// Reports from another incarnation, or from one whose open came after the flip, are
/// rewrites, not late reports: the flip ends with them.
#[test]
fn a_later_incarnations_rewrite_below_the_flip_ends_it() {
    assert!(clamp_uncaused(&reported_below_the_flip(14, false)));
    assert!(clamp_uncaused(&reported_below_the_flip(14, true)));
    // A report above the flip's low end was a rewrite under either rule.
    assert!(clamp_uncaused(&reported_below_the_flip(18, false)));
}

/// The open that clamped the flipped word wrote the word it came up with.
#[test]
fn an_open_that_clamped_the_flipped_word_ends_the_flip() {
    assert!(clamp_uncaused(&clamp_after_a_clamp_rewrote_the_flip(None)));
}

/// helper-68 F2: inc 0 holds 10 records with the word at 4 (4..10 hidden); a flip
/// raises the word to 10 at inc 1's restart, before its open read it. The open reads
/// 10 over a tail of 10 (no clamp) and writes 10 back (`LogOpened`); the engine commits
/// two more records and its persister writes 12 before the first sample, which reports
/// `first_report`. DEFECT: only 8 records survive the power loss that follows while the
/// word says 12; inc 2 clamps 12 to 8. A first report that differs from what the
/// incarnation's open wrote is a rewrite: the flip ends at the crash after it.
fn first_report_after_the_open(first_report: u64) -> Run {
    let mut r = Run::new();
    r.produced(10).delivered(10).hwm(0, 10, 4, 10);
    r.crash(&[(0, 4, 10, 10)])
        .restart()
        .fault(hwm_flip_between(4, 10), Some(0))
        .disk(0, OpenRule::Clean, 10, 10, None)
        .opened(0, 10, 10);
    r.produce(100, 0, 10, 2_000)
        .produce(101, 0, 11, 2_001)
        .deliver(100, 0, 10, 2_000)
        .deliver(101, 0, 11, 2_001)
        .hwm(0, 12, first_report, 12)
        .crash(&[(0, 12, 8, 12)])
        .restart()
        .disk(0, OpenRule::Clean, 12, 8, None)
        .alarm(
            Some(0),
            Alarm::Clamp {
                persisted_hwm: 12,
                hwm: 8,
                lost: 4,
            },
        )
        .opened(0, 8, 8)
        .counters(0, 4, 0);
    r
}

#[test]
fn a_first_report_unlike_the_word_the_open_wrote_ends_the_flip() {
    assert!(clamp_uncaused(&first_report_after_the_open(12)));
    // Control: a first report of the word the open wrote says nothing of a rewrite,
    // and the flip still explains the clamp.
    assert!(!clamp_uncaused(&first_report_after_the_open(10)));
}

/// helper-78: orders/0 holds 5 records and the persisted word is 4; a flip takes the
/// platter's word 4 -> 1. With `rewrite`, the engine then commits a fifth record and
/// reports 5 persisted (its fsync returned: the platter holds 5, the flip is gone).
/// A power loss finds 1 on the platter: the flip's doing without the rewrite, the
/// engine's own after it.
fn platter_word_after_a_flip(rewrite: bool) -> Run {
    let mut r = Run::new();
    r.produced(4)
        .delivered(4)
        .hwm(0, 4, 4, 4)
        .fault(hwm_flip_between(1, 4), Some(0));
    if rewrite {
        r.produce(100, 0, 4, 2_000)
            .deliver(100, 0, 4, 2_000)
            .hwm(0, 5, 5, 5)
            .crash(&[(0, 1, 5, 5)]);
    } else {
        r.crash(&[(0, 1, 4, 4)]);
    }
    r
}

fn persisted_fell(r: &Run) -> bool {
    messages_of(&r.report(), CheckerName::StableOffsets)
        .iter()
        .any(|m| m.contains("persisted HWM of orders/0 moved backwards"))
}

/// A flipped word explains the persisted word's fall until the engine reports a word it
/// wrote since, not until the crash after that report.
#[test]
fn a_flip_the_engine_rewrote_explains_no_later_fall_of_the_persisted_word() {
    assert!(!persisted_fell(&platter_word_after_a_flip(false)));
    assert!(persisted_fell(&platter_word_after_a_flip(true)));
}
