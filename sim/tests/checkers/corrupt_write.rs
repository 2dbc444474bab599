//! A corrupt write (a segment write that stored one bit flipped) is in contract: the
//! commit path re-reads what it fsynced before the HWM moves, and recovery's write-back
//! reads back what it wrote. So it explains a verify's poison of its own incarnation
//! (not one the write-back repaired before the open returned) and a cut of its own frame
//! by the next completed open, and nothing the engine should have prevented: no
//! consume-time skip, no refusal, no clamp.

use super::*;

/// A corrupt write to the frame holding `[start, end)` of partition 0's segment.
fn corrupt_write(start: u64, end: u64) -> FaultKind {
    FaultKind::CorruptWrite {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: Some(false),
    }
}

/// The poison a failed verify raises.
fn poison() -> Alarm {
    Alarm::Poisoned {
        cancelled: false,
        directory: false,
        verify: true,
    }
}

/// `alarms_explained` finds no cause for `r`'s poison.
fn assert_poison_uncaused(r: &Run) {
    assert_mentions(
        &messages_of(&r.report(), CheckerName::AlarmsExplained),
        &[
            "poisoned",
            "with no fsync error or ENOSPC on the log's files",
        ],
    );
}

#[test]
fn a_corrupt_write_explains_the_poison_of_its_own_incarnation_only() {
    let mut r = Run::new();
    r.produced(1)
        .fault(corrupt_write(1, 2), Some(0))
        .alarm(Some(0), poison());
    assert_alarms_explained(&r.report());

    // Written in the incarnation before: its handle is gone, the poison is not its.
    let mut r = Run::new();
    r.produced(1)
        .fault(corrupt_write(1, 2), Some(0))
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .alarm(Some(0), poison());
    assert_poison_uncaused(&r);

    // Not a verify's poison (an encode error, an engine that poisons itself): no cause.
    let mut r = Run::new();
    r.produced(1).fault(corrupt_write(1, 2), Some(0)).alarm(
        Some(0),
        Alarm::Poisoned {
            cancelled: false,
            directory: false,
            verify: false,
        },
    );
    assert_poison_uncaused(&r);

    // Written before the open returned: the write-back's, repaired by its read-back.
    let mut r = Run::new();
    r.produced(1)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .fault(corrupt_write(0, 1), Some(0))
        .opened(0, 1, 1)
        .alarm(Some(0), poison());
    assert_poison_uncaused(&r);

    // On another partition, or for a directory's poison: no cause either.
    let mut r = Run::new();
    r.produced(1)
        .fault(corrupt_write(1, 2), Some(1))
        .alarm(Some(0), poison());
    assert_poison_uncaused(&r);
    let mut r = Run::new();
    r.produced(1).fault(corrupt_write(1, 2), Some(0)).alarm(
        Some(0),
        Alarm::Poisoned {
            cancelled: false,
            directory: true,
            verify: false,
        },
    );
    assert_poison_uncaused(&r);
}

#[test]
fn a_corrupt_write_explains_a_cut_of_its_own_frame_only() {
    // The crash left a durable tail of 3; the open cut at 1.
    let cut = |fault: FaultKind| {
        let mut r = Run::new();
        r.produced(3).hwm(0, 3, 1, 3).delivered(1);
        r.fault(fault, Some(0))
            .crash(&[(0, 1, 3, 3)])
            .restart()
            .disk(0, OpenRule::TornTail, 1, 1, Some(1))
            .alarm(Some(0), torn_tail(1))
            .opened(0, 1, 1);
        r.report()
    };
    assert!(
        cut(corrupt_write(1, 2))
            .alarms_explained
            .violations
            .is_empty()
    );
    assert_mentions(
        &messages_of(&cut(corrupt_write(2, 3)), CheckerName::AlarmsExplained),
        &["cuts durable data (the crash before left the durable tail at 3)"],
    );

    // Before an open that completed since: that open found the frame whole or cut it.
    let mut r = Run::new();
    r.produced(3)
        .fault(corrupt_write(1, 2), Some(0))
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .opened(0, 3, 3)
        .hwm(0, 3, 1, 3)
        .delivered(1)
        .crash(&[(0, 1, 3, 3)])
        .restart()
        .disk(0, OpenRule::TornTail, 1, 1, Some(1))
        .alarm(Some(0), torn_tail(1))
        .opened(0, 1, 1);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::AlarmsExplained),
        &["cuts durable data (the crash before left the durable tail at 3)"],
    );
}

#[test]
fn a_corrupt_write_explains_no_skip_refusal_or_clamp() {
    // A skip of the very frame it hit: the verify should have refused that frame.
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 2, 2)
        .fault(corrupt_write(1, 2), Some(0))
        .alarm(Some(0), frame_skipped(1))
        .counters(0, 0, 1);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::AlarmsExplained),
        &["frame_skipped base=1 records=1", "no damage at rest"],
    );

    // A refusal where its frame starts.
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 2, 2)
        .delivered(2)
        .fault(corrupt_write(0, 1), Some(0))
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .disk(0, OpenRule::Refuse, 2, 0, Some(0))
        .alarm(Some(0), refused_alarm(0));
    assert_mentions(
        &messages_of(&r.report(), CheckerName::AlarmsExplained),
        &[
            "r3_refused",
            "no damage at rest or out-of-contract fault reaching offset 0",
        ],
    );

    // A clamp to its frame.
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 3, 3)
        .delivered(1)
        .fault(corrupt_write(1, 2), Some(0))
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .disk(0, OpenRule::TornTail, 3, 1, Some(1))
        .alarm(Some(0), torn_tail(1))
        .alarm(Some(0), clamp(3, 1));
    assert_mentions(
        &messages_of(&r.report(), CheckerName::AlarmsExplained),
        &["r4_clamp", "no damage at rest to the frame at offset 1"],
    );
}
