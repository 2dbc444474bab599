//! `alarms_explained` rule 4: an open says `wal_checkpoint_unreadable` exactly when the
//! reference decoder could not read the checkpoint at the restart.

use super::*;
use cafelog_sim::history::CheckpointFloor;

/// A flip of the WAL checkpoint and a power loss; a restart whose checkpoint the world
/// reads as `read` (`None`: unreadable; a flip only the page cache held is gone); the
/// open says `wal_checkpoint_unreadable` when `said`, then completes. With
/// `fault_meanwhile`, a flip of the checkpoint lands while the open reads.
fn checkpoint_open(read: Option<Vec<CheckpointFloor>>, said: bool, fault_meanwhile: bool) -> Run {
    checkpoint_open_after(None, read, said, fault_meanwhile)
}

/// As [`checkpoint_open`], with `cause` (a fault and its path) in place of the flip.
fn checkpoint_open_after(
    cause: Option<(FaultKind, &str)>,
    read: Option<Vec<CheckpointFloor>>,
    said: bool,
    fault_meanwhile: bool,
) -> Run {
    let mut r = Run::new();
    r.produced(1);
    match cause {
        Some((kind, path)) => r.with(|t, h| {
            h.fault(t, kind, None, Some(path));
        }),
        None => r.checkpoint_flipped(),
    };
    r.crash(&[(0, 1, 1, 1)]).restart().with(|t, h| {
        h.wal_at_open(t, 0, 0);
        h.checkpoint_at_open(t, read, None);
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

/// The engine replaces its checkpoint atomically: a write lost or torn by a crash, or an
/// fsync error, on it or its temp file cannot leave it unreadable (helper-104). Only a
/// flip or an out-of-contract fault on either explains the alarm (the rename makes the
/// temp file the checkpoint: quick seed 363 lost the temp file's fsync).
#[test]
fn only_damage_to_the_checkpoint_itself_explains_it_unreadable() {
    let uncaused = |cause| {
        messages_of(
            &checkpoint_open_after(Some(cause), None, true, false).report(),
            CheckerName::AlarmsExplained,
        )
        .iter()
        .any(|m| m.contains("no flip or out-of-contract fault hit the WAL checkpoint"))
    };
    let wal = FileKind::Wal;
    for cause in [
        (FaultKind::LostWrite { file: wal }, "/data/wal/checkpoint"),
        (
            FaultKind::TornWrite { file: wal },
            "/data/wal/checkpoint.tmp",
        ),
        (
            FaultKind::FsyncEio { file: wal },
            "/data/wal/checkpoint.tmp",
        ),
        (wal_flip().0, "/data/wal/00000000000000000000.wal"),
    ] {
        assert!(uncaused(cause.clone()), "{cause:?}");
    }
    let lost_fsync = FaultKind::LostFsync {
        file: wal,
        offsets: None,
    };
    for cause in [
        (wal_flip().0, "/data/wal/checkpoint"),
        (wal_flip().0, "/data/wal/checkpoint.tmp"),
        (lost_fsync, "/data/wal/checkpoint.tmp"),
    ] {
        assert!(!uncaused(cause.clone()), "{cause:?}");
    }
}
