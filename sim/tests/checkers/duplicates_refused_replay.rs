//! `checkpoint_lost` when the open that lost the WAL checkpoint refused the partition:
//! that open replays nothing there and persists no checkpoint for it, so the first open
//! that brings the partition back replays every entry it cannot see (fresh default seed
//! 3908540571).

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;

/// Ids 1-3 at offsets 0-2, delivered, and retention moved the log start to 1. A flip of
/// the WAL checkpoint and a crash; the open after it refuses orders/0 (R3) and finds the
/// checkpoint unreadable. A crash; then, with `checked_open`, an open that brings the
/// partition back and completes (its checkpoints may pass every entry) and a crash.
/// The last open has orders/0 open, no longer sees id 1 and replays it at 3. Each open
/// after the first reads a checkpoint the first persisted, with orders/0's floor at
/// `floor` (seq, offset): (0, 0) as that open left it, knowing nothing; another when a
/// power loss dropped a flip only the page cache held, and the old checkpoint reads.
fn lost_while_refused(checked_open: bool, floor: (u64, u64)) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3).consume(0, 2);
    let view = |bad| {
        let mut view = disk_view(OpenRule::Clean, 3, 3, bad);
        view.log_start = 1;
        view
    };
    r.checkpoint_flipped()
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .with(|t, h| {
            let mut view = view(Some(2));
            view.rule = OpenRule::Refuse;
            h.disk_at_open(t, &tp(0), view, false);
        })
        .alarm(Some(0), refused_alarm(200))
        .alarm(None, Alarm::WalCheckpointUnreadable)
        .with(|t, h| {
            h.partition_refused(t, &tp(0), "bad frame at 2 below the persisted HWM 3");
        })
        .crash(&[(0, 3, 3, 3)]);
    let opened = |r: &mut Run| {
        r.restart()
            .checkpoint_read(Some(floor))
            .with(|t, h| {
                h.disk_at_open(t, &tp(0), view(None), false);
            })
            .alarm(
                Some(0),
                Alarm::LogOpened {
                    log_start: 1,
                    hwm: 3,
                    tail: 3,
                    hidden: 0,
                },
            );
    };
    if checked_open {
        opened(&mut r);
        r.with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        })
        .hwm(0, 3, 3, 3)
        .crash(&[(0, 3, 3, 3)]);
    }
    opened(&mut r);
    r.alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        })
        .hwm(0, 4, 4, 4)
        .deliver(1, 0, 3, 1_300);
    r
}

#[test]
fn a_partition_refused_when_the_checkpoint_is_lost_replays_blind_when_it_opens() {
    let report = lost_while_refused(false, (0, 0)).report();
    let d = &report.bounded_duplicates;
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    let excused: Vec<_> = d.excused.iter().map(|(id, e)| (*id, e.kind)).collect();
    assert_eq!(excused, [(1, ExcuseKind::CheckpointLost)], "{d:?}");
    assert!(
        d.excused[0]
            .1
            .covers
            .contains("the replay of incarnation 2"),
        "{:?}",
        d.excused[0].1
    );
    // An open that completed with the partition open since the loss could checkpoint
    // its entries; a checkpoint that reads a floor for it is not the one the loss
    // left: a later replay of the entry is the engine's duplicate.
    for (checked_open, floor) in [(true, (0, 0)), (false, (3, 3))] {
        assert_mentions(
            &messages_of(
                &lost_while_refused(checked_open, floor).report(),
                CheckerName::BoundedDuplicates,
            ),
            &["produce id 1 delivered from orders/0@0"],
        );
    }
}
