//! The views of the disk a flip landing while an open runs gives, and which of them the
//! open is held to: `corruption.rs`'s `intact` and `alarms_explained`'s missing alarms.
//!
//! A view taken while the open ran whose valid log ends at a bad region below the
//! damage is set aside only when the open's account runs past that region (it read
//! another view). An open whose account ends there read that view, and is held to the
//! alarm it owes: a silent cut there is refused, with or without repaired damage above
//! it (helper-55 built both, passing every checker).

use super::*;

/// Ids 1..=4 at 0..4, persisted HWM 2. With `repaired`, a misdirected write meant for
/// the frame at 3 (id 4) lands on the platter; a process crash; its open's write-back
/// rewrites [2, 4) from the page cache, repairing it. A power loss; the open reads a
/// disk clean through 4. While it runs a flip lands in the frame at 2 (above the
/// persisted HWM, below the damage at 3 when there is one), and the world takes a
/// second view, R1 at 2.
///
/// `silent`: the engine read that second view and cut the log at 2 without a word
/// (no R1 alarm; its account: log through 2, HWM 2). Its replay re-commits ids 3 and 4
/// at 2 and 3, the same offsets: no loss, no duplicate. Without `silent`, 88d2c04's own
/// case: the account says the log runs through 4, so it read the first view.
fn flip_while_opening(repaired: bool, silent: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .delivered(2)
        .consume(0, 0)
        .consume(0, 1)
        .frontier_written(0, 2);
    if repaired {
        r.fault(
            FaultKind::Misdirected {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 3, end: 4 }),
                below_hwm: Some(false),
                parts: None,
            },
            Some(0),
        );
    }
    r.produce(3, 0, 2, 1_002)
        .produce(4, 0, 3, 1_003)
        .hwm(0, 4, 2, 4);
    if repaired {
        r.process_crash(&[(0, 2, 4, 4)])
            .restart()
            .open_clean(0, 2, 4);
    }
    r.crash(&[(0, 2, 4, 4)])
        .restart()
        .disk(0, OpenRule::Clean, 2, 4, None)
        .fault(
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
    if silent {
        r.opened(0, 2, 2);
    } else {
        r.opened(0, 2, 4);
    }
    r.frontier_seen(0, 2);
    r.hwm(0, 4, 4, 4)
        .deliver(3, 0, 2, 1_002)
        .deliver(4, 0, 3, 1_003)
        .consume(0, 2)
        .consume(0, 3);
    r
}

fn corrupt_failed(r: &Run) -> (bool, CheckReport) {
    let report = r.report();
    (
        report
            .failed_checkers()
            .contains(&CheckerName::NoCorruptDelivery),
        report,
    )
}

/// Control: 88d2c04's case (the account shows the open read the first view) passes.
#[test]
fn control_an_account_through_the_damage_read_the_first_view() {
    let (failed, report) = corrupt_failed(&flip_while_opening(true, false));
    assert!(!failed, "{:#?}", report.violations());
}

/// The hole: the open's account agrees only with the dropped view (log through 2, no
/// cut alarm). It read the flip at 2 and truncated silently; nothing is owed.
#[test]
fn a_silent_cut_at_a_dropped_views_bad_region_is_owed_by_someone() {
    let (failed, report) = corrupt_failed(&flip_while_opening(true, true));
    assert!(
        !report.failed_checkers().is_empty(),
        "a silent R1 cut at a flip the open read passes every checker (hole)"
    );
    assert!(
        failed,
        "no_corrupt_delivery accepts the silent cut (hole): {:?}",
        report.violations()
    );
}

/// The same silent cut with no repaired damage above it: the pre-existing root of the
/// gap (a flip landing while an open runs is never owed by that open).
#[test]
fn a_silent_cut_at_a_flip_landing_while_opening_alone() {
    let report = flip_while_opening(false, true).report();
    assert!(
        !report.failed_checkers().is_empty(),
        "a silent R1 cut at a flip the open read passes every checker (pre-existing hole): \
         {:?}",
        report.no_corrupt_delivery.damages
    );
}
