//! `showed` (check/excuse/showed.rs): a fault only the platter holds excuses a record
//! only once a power loss showed it, and not after an open wrote the frame back from
//! the page cache (recovery's write-back of everything above its HWM).

use super::loss::lost_fsync;
use super::replayed::acked_on_a_lost_fsync;
use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

/// Id 2 acknowledged at 1 on the strength of a lost fsync of its frame, then `after`.
fn lost_then(after: impl FnOnce(&mut Run)) -> CheckReport {
    let mut r = acked_on_a_lost_fsync();
    after(&mut r);
    r.report()
}

fn assert_lost(report: &CheckReport, what: &str) {
    assert_eq!(report.no_lost_ack.excuse_of(2), None, "{what}");
    assert_mentions(
        &messages_of(report, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

#[test]
fn a_lost_fsync_no_power_loss_showed_excuses_nothing() {
    // helper-66: the page cache served the frame to the end of the run.
    assert_lost(&lost_then(|_| {}), "no crash");
    // Nor through a process crash: the open's write-back made the frame durable.
    let report = lost_then(|r| {
        r.process_crash(&[(0, 1, 2, 2)])
            .restart()
            .open_clean(0, 1, 2)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 1);
            });
    });
    assert_lost(&report, "a process crash");
}

#[test]
fn a_write_back_before_the_power_loss_healed_the_frame() {
    // helper-66: the open after the process crash (HWM 1, at the record) wrote the
    // frame back and fsynced it, its replay committed id 2 again at 2, and a power
    // loss followed: two durable copies, neither the fault's to take.
    let healed = |hwm_at_open: u64| {
        lost_then(|r| {
            r.process_crash(&[(0, hwm_at_open, 2, 2)])
                .restart()
                .open_clean(0, hwm_at_open, 2)
                .with(|t, h| {
                    h.frontier_observed(t, &tp(0), 1);
                })
                .hwm(0, 3, 3, 3)
                .crash(&[(0, 3, 3, 3)])
                .restart()
                .open_clean(0, 3, 3)
                .with(|t, h| {
                    h.frontier_observed(t, &tp(0), 3);
                });
        })
    };
    assert_lost(&healed(1), "written back");
    // An open whose HWM was past the record wrote nothing back there: the power loss
    // shows what the fault took.
    let report = healed(2);
    let excuse = report.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract);
}

#[test]
fn a_power_loss_after_the_fault_shows_it() {
    let report = lost_then(|r| {
        r.crash(&[(0, 2, 1, 2)]).restart().with(|t, h| {
            h.frontier_observed(t, &tp(0), 1);
        });
    });
    let excuse = report.no_lost_ack.excuse_of(2).expect("excused");
    assert_eq!(excuse.kind, ExcuseKind::OutOfContract);
}

fn misdirected_at_1() -> FaultKind {
    misdirected_segment(OffsetRange { start: 1, end: 2 })
}

/// Id 1 at 0 (durable); `before` (a platter-only fault of offset 1's frame, `None`:
/// nothing); id 2 acknowledged at 1 and read there (committed at 1_001); a process
/// crash with the persisted HWM at 1; the next open (HWM 1) writes offset 1's frame
/// back, and `in_open` is a fault of that write-back's fsync, recorded before the
/// open's `log_opened`; a power loss while the store's replay ran (its re-commit of
/// id 2 at 2 never reached the platter); the open after it finds the log ending
/// cleanly at 1 (no cut, no clamp) and its replay re-commits id 2 at 1, with a commit
/// time of its own (1_050).
fn written_back(before: Option<FaultKind>, in_open: Option<FaultKind>) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000);
    if let Some(kind) = before {
        r.fault(kind, Some(0));
    }
    r.produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .process_crash(&[(0, 1, 2, 2)])
        .restart()
        .disk(0, OpenRule::Clean, 1, 2, None);
    if let Some(kind) = in_open {
        r.fault(kind, Some(0));
    }
    r.opened(0, 1, 2)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .open_clean(0, 1, 1)
        .frontier_seen(0, 1)
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, 1, 1_050);
    r
}

fn offset_1_excuse(r: &Run) -> (Vec<String>, Option<ExcuseKind>) {
    let report = r.report();
    let violations = messages_of(&report, CheckerName::StableOffsets);
    let excuse = report
        .stable_offsets
        .excused
        .iter()
        .find(|e| e.offset == 1)
        .map(|e| e.excuse.kind);
    (violations, excuse)
}

#[test]
fn a_lost_fsync_of_the_write_back_leaves_the_first_fault_shown() {
    // helper-67: the write-back's fsync was itself lost (the swarm allows two lost fsyncs): the
    // frame never reached the platter, the power loss showed the first fault.
    let r = written_back(
        Some(lost_fsync(Some(OffsetRange { start: 1, end: 2 }))),
        Some(lost_fsync(Some(OffsetRange { start: 1, end: 2 }))),
    );
    let (violations, excuse) = offset_1_excuse(&r);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_eq!(excuse, Some(ExcuseKind::OutOfContract));
}

#[test]
fn a_misdirected_write_back_is_not_healed_by_its_own_open() {
    // The write-back's own fsync misdirected the frame: the open whose log_opened
    // follows the fault is the one that did the damage, not one that repaired it.
    let r = written_back(None, Some(misdirected_at_1()));
    let (violations, excuse) = offset_1_excuse(&r);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_eq!(excuse, Some(ExcuseKind::OutOfContract));
}

#[test]
fn a_clean_write_back_voids_the_excuse_of_a_changed_offset() {
    // The rule's own case: the write-back's fsync persisted the frame; a log ending at
    // 1 after the power loss is the engine's.
    let r = written_back(
        Some(lost_fsync(Some(OffsetRange { start: 1, end: 2 }))),
        None,
    );
    let (violations, excuse) = offset_1_excuse(&r);
    assert!(!violations.is_empty());
    assert_eq!(excuse, None);
}
