//! Where a fault's reach may end the log (`lost_from`), and which cut alarm an open
//! owes the view its account agrees with (`missing_alarms`): histories an engine bug
//! makes that helper-56 found accepted, each refused now, beside the ones a correct
//! engine makes.

use super::*;

// ---------------------------------------------------------------------------------
// Hole 1: lost_from trusts a reach's OffsetRange as if every offset in it were
// touched. The world records a misdirected segment write's reach as the convex hull
// of the frames it LANDED on and the frames it was MEANT for
// (recorder/fs_faults.rs misdirected_segment: start = min, end = max), and
// segment_offsets_hit itself hulls every hit frame (a lost fsync whose undurable
// ranges include an earlier divergence plus the new tail). Frames strictly between
// the two are untouched, yet a found tail among them "is held by the reach".
//
// History: ids 1,2 at 0,1 (HWM 2 shown, read); a misdirected write meant for the frame
// at 3 (id 4) lands on the frame at 0 (reach hull [0, 4)); ids 3,4 acked at 2,3, HWM 4
// shown. Power loss; the open finds the log clean ending at 2. Nothing the fault did
// can remove frame 2 (it landed at 0, meant 3): a correct engine's log reaches 3. The
// replay re-commits ids 1..4 at 2..5, repeating ids 1 and 2 below the durable tail.
// ---------------------------------------------------------------------------------

fn frame_2_gone(fault: FaultKind, loud: bool) -> Run {
    let mode = if loud { Mode::Loud } else { Mode::Quiet };
    log_ends_at_2(Some(fault), mode, 2)
}

fn misdirected(offsets: Option<OffsetRange>) -> FaultKind {
    FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets,
        below_hwm: Some(true),
        parts: None,
    }
}

fn dup_refused(r: &Run) -> bool {
    !duplicate_messages(r).is_empty()
}

/// Control: landed-at-0 alone, or meant-for-3 alone, lowers nothing: refused.
#[test]
fn control_landed_or_meant_alone_is_refused() {
    for loud in [true, false] {
        for range in [(0, 1), (3, 4)] {
            let f = misdirected(Some(OffsetRange {
                start: range.0,
                end: range.1,
            }));
            assert!(dup_refused(&frame_2_gone(f, loud)), "{range:?} loud={loud}");
        }
    }
}

/// The same fault as the world records it, the hull [0, 4): the log cannot end at 2.
#[test]
fn a_reach_hull_does_not_hold_an_untouched_tail() {
    for loud in [true, false] {
        let f = misdirected(Some(OffsetRange { start: 0, end: 4 }));
        let r = frame_2_gone(f, loud);
        let report = r.report();
        assert!(
            dup_refused(&r),
            "loud={loud}: found tail 2 lies between landed [0,1) and meant [3,4): accepted; \
             failed checkers {:?}",
            report.failed_checkers()
        );
    }
}

// ---------------------------------------------------------------------------------
// Hole 2: a misdirected segment write that hit no frame and left no meant frame
// undurable is recorded `offsets: None` (misdirected_segment returns (None, None)
// "when unknown or when it hit no frame"), the widest reach there is: lost_from's
// None branch then lowers to any found tail at or past the lowest ack after it, and
// Reach::covers excuses every ack after it. A lost fsync that reached nothing is
// recorded Some(0..0) (an empty reach); this one should be too.
// ---------------------------------------------------------------------------------

#[test]
fn a_misdirected_write_that_hit_no_frame_ends_no_log() {
    for loud in [true, false] {
        let r = frame_2_gone(misdirected(None), loud);
        assert!(
            dup_refused(&r),
            "loud={loud}: a misdirected write recorded None (may have hit nothing) lowers \
             the replay start to 2 (accepted)"
        );
    }
}

// ---------------------------------------------------------------------------------
// Hole 3: missing_alarms' `demands` asks whether the open raised AN R1 (any offset),
// not one at the bad region of the view its account agrees with. With two views
// (torn tail at 4 at the restart; a flip landing at 2 while the open ran), an engine
// that announced R1 at 4 and truncated at 2 (account: log through 2) has an account
// agreeing with the second view, whose R1 "is there" (the one at 4). An open that read
// the second view never reached 4: its R1 at 2 is missing, and the cut at 2 is silent.
// corruption_while_open.rs's `a_silent_cut_at_a_flip_landing_while_opening_alone`,
// plus a stale R1 at another offset, passes.
// ---------------------------------------------------------------------------------

fn torn_at_4_then_flip_at_2(cut_alarm_at: Option<u64>) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .delivered(2)
        .consume(0, 0)
        .consume(0, 1)
        .frontier_written(0, 2)
        .produce(3, 0, 2, 1_002)
        .produce(4, 0, 3, 1_003)
        .hwm(0, 4, 2, 4)
        .attempt(5, 0)
        .crash(&[(0, 2, 4, 4)])
        .restart()
        .disk(0, OpenRule::TornTail, 2, 4, Some(4));
    let r1 = |r: &mut Run, offset: u64| {
        r.alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: offset * 100,
                offset,
                bytes: 50,
            },
        );
    };
    // R1 at 4 (the restart's view) is raised before the flip lands; R1 at 2 after.
    if cut_alarm_at == Some(4) {
        r1(&mut r, 4);
    }
    r.fault(
        FaultKind::BitFlip {
            file: FileKind::Segment,
            offsets: Some(OffsetRange { start: 2, end: 3 }),
            below_hwm: Some(false),
        },
        Some(0),
    );
    r.with(|t, h| {
        let view = super::disk_view(OpenRule::TornTail, 2, 2, Some(2));
        h.disk_at_open(t, &tp(0), view, true);
    });
    if cut_alarm_at == Some(2) {
        r1(&mut r, 2);
    }
    r.opened(0, 2, 2);
    r.frontier_seen(0, 2);
    r.hwm(0, 4, 4, 4)
        .deliver(3, 0, 2, 1_002)
        .deliver(4, 0, 3, 1_003)
        .consume(0, 2)
        .consume(0, 3);
    r
}

/// Control: the silent cut at 2 with no cut alarm at all is refused (aa17d68).
#[test]
fn control_silent_cut_without_any_alarm_is_refused() {
    let report = torn_at_4_then_flip_at_2(None).report();
    assert!(!report.failed_checkers().is_empty());
}

/// Control: the correct engine's account (R1 at 2, log through 2) passes.
#[test]
fn control_r1_at_the_flip_passes() {
    let report = torn_at_4_then_flip_at_2(Some(2)).report();
    assert!(
        report.failed_checkers().is_empty(),
        "{:#?}",
        report.violations()
    );
}

/// R1 announced at 4, the log cut at 2 with no word: refused.
#[test]
fn a_cut_alarm_at_another_offset_is_not_the_one_owed() {
    let report = torn_at_4_then_flip_at_2(Some(4)).report();
    assert!(
        !report.failed_checkers().is_empty(),
        "an open that announced R1 at 4 and cut silently at 2 passes every checker"
    );
}
