//! `alarms_explained` rule 4: an open says `wal_checkpoint_unreadable` exactly when the
//! reference decoder could not read the checkpoint at the restart.

use super::*;
use cafelog_sim::history::CheckpointFloor;

/// A flip of the WAL checkpoint and a power loss; a restart whose checkpoint the world
/// reads as `read` (`None`: unreadable; a flip only the page cache held is gone); the
/// open says `wal_checkpoint_unreadable` when `said`, then completes. With
/// `fault_meanwhile`, a flip of the checkpoint lands while the open reads.
fn checkpoint_open(read: Option<Vec<CheckpointFloor>>, said: bool, fault_meanwhile: bool) -> Run {
    let mut r = Run::new();
    r.produced(1)
        .checkpoint_flipped()
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .with(|t, h| {
            h.wal_at_open(t, 0, 0);
            h.checkpoint_at_open(t, read);
        });
    if fault_meanwhile {
        r.checkpoint_flipped();
    }
    if said {
        r.alarm(None, Alarm::WalCheckpointUnreadable);
    }
    r.open_clean(0, 1, 1).with(|t, h| {
        h.frontier_observed(t, &tp(0), 0);
    });
    r
}

#[test]
fn the_open_says_the_checkpoint_is_unreadable_exactly_when_it_is() {
    let found = |read: Option<Vec<CheckpointFloor>>, said, meanwhile| {
        checkpoint_open(read, said, meanwhile)
            .report()
            .alarms_explained
            .violations
            .iter()
            .map(|v| v.message.clone())
            .filter(|m| m.contains("checkpoint"))
            .collect::<Vec<_>>()
    };
    let floors = || {
        Some(vec![CheckpointFloor {
            tp: tp(0),
            seq: 1,
            offset: 1,
        }])
    };
    // Agreeing: a checkpoint that reads (or no file) replayed from; one that does not,
    // said.
    assert_eq!(found(floors(), false, false), Vec::<String>::new());
    assert_eq!(found(Some(vec![]), false, false), Vec::<String>::new());
    assert_eq!(found(None, true, false), Vec::<String>::new());
    // A checkpoint that reads called unreadable (a replay of every entry would be
    // excused), and one that does not read replayed from.
    let claimed = found(floors(), true, false);
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert!(
        claimed[0].contains("said wal_checkpoint_unreadable but the reference decoder read"),
        "{claimed:?}"
    );
    let missed = found(None, false, false);
    assert_eq!(missed.len(), 1, "{missed:?}");
    assert!(missed[0].contains("could not read"), "{missed:?}");
    // A flip of the checkpoint while the open read it: not judged.
    assert_eq!(found(floors(), true, true), Vec::<String>::new());
}
