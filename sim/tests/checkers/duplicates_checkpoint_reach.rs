//! Where a replay blind from a lost WAL checkpoint stopped: a completed open's reach is
//! what its own incarnation showed, never an HWM a later incarnation showed
//! (helper-104).

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

/// Ids 1-3 at offsets 0-2, delivered; retention moved the log start to 1. A flip of the
/// checkpoint and a crash; the open after finds it unreadable, no longer sees id 1 and
/// replays it at 3; it completes and is killed by a power loss before it shows an HWM
/// (durable tail 4). The next open reads a checkpoint with orders/0's floor at 4 and
/// completes; id 1 is delivered from `offset` (3: the blind replay's; 4: a copy a
/// replay past that floor cannot have made).
fn blind_then_checked(offset: u64) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3).consume(0, 2);
    let view = |persisted, tail| {
        move |t: u64, h: &mut History| {
            let mut view = disk_view(OpenRule::Clean, persisted, tail, None);
            view.log_start = 1;
            h.disk_at_open(t, &tp(0), view, false);
        }
    };
    let opened = |hwm| Alarm::LogOpened {
        log_start: 1,
        hwm,
        tail: hwm,
        hidden: 0,
    };
    r.checkpoint_flipped()
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .checkpoint_read(None)
        .with(view(3, 3))
        .alarm(None, Alarm::WalCheckpointUnreadable)
        .alarm(Some(0), opened(3))
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        })
        .crash(&[(0, 4, 4, 4)])
        .restart()
        .checkpoint_read(Some((4, 4)))
        .with(view(4, 4))
        .alarm(Some(0), opened(4))
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        })
        .hwm(0, 6, 6, 6)
        .deliver(1, 0, offset, 1_300);
    r
}

#[test]
fn a_blind_replay_reaches_no_further_than_its_own_incarnation_showed() {
    let report = blind_then_checked(3).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    let kinds: Vec<_> = d.excused.iter().map(|(_, e)| e.kind).collect();
    assert_eq!(kinds, [ExcuseKind::CheckpointLost], "{d:?}");
    // At 4, past what the blind replay left, a copy the next (checked) replay made.
    assert_mentions(
        &messages_of(
            &blind_then_checked(4).report(),
            CheckerName::BoundedDuplicates,
        ),
        &["produce id 1 delivered from orders/0@0"],
    );
}
