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

/// As [`checkpoint_open`], with `cause` (a fault and its path) in place of the flip;
/// the restart names a flip that came before it as the file it read (`CheckpointAtOpen::
/// flipped`) when the file did not read, unless `temp` (a temp file no rename made the
/// checkpoint).
fn checkpoint_open_after(
    cause: Option<(FaultKind, &str)>,
    read: Option<Vec<CheckpointFloor>>,
    said: bool,
    fault_meanwhile: bool,
) -> Run {
    checkpoint_open_named(cause, read, said, fault_meanwhile, false)
}

fn checkpoint_open_named(
    cause: Option<(FaultKind, &str)>,
    read: Option<Vec<CheckpointFloor>>,
    said: bool,
    fault_meanwhile: bool,
    temp: bool,
) -> Run {
    let mut r = Run::new();
    r.produced(1);
    let of_checkpoint = cause
        .as_ref()
        .is_none_or(|(_, path)| path.contains("checkpoint"));
    match cause {
        Some((kind, path)) => r.with(|t, h| {
            h.fault(t, kind, None, Some(path));
        }),
        None => r.checkpoint_flipped(),
    };
    let fault = r.h.len() - 1;
    let flipped = (read.is_none() && !temp && r.h.is_flip(fault) && of_checkpoint).then_some(fault);
    r.crash(&[(0, 1, 1, 1)]).restart().with(|t, h| {
        h.wal_at_open(t, 0, 0);
        h.checkpoint_at_open(t, read, flipped);
    });
    if fault_meanwhile {
        // Of the file the open reads, which the world marks.
        r.with(|t, h| {
            h.fault(t, wal_flip().0, None, Some("/data/wal/checkpoint"));
            let fault = h.len() - 1;
            h.checkpoint_damaged(t, fault, None, (None, true));
        });
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
    // (No flip of the file it read explains the alarm either.)
    let claimed = found(floors(), true, false);
    assert_mentions(
        &claimed,
        &["said wal_checkpoint_unreadable but the reference decoder read"],
    );
    let missed = found(None, false, false);
    assert_eq!(missed.len(), 1, "{missed:?}");
    assert!(missed[0].contains("could not read"), "{missed:?}");
    // A flip of the checkpoint while the open read it: not judged.
    assert_eq!(found(floors(), true, true), Vec::<String>::new());
}

/// The engine replaces its checkpoint atomically: a write lost or torn by a crash, or an
/// fsync error, on it or its temp file cannot leave it unreadable (helper-104). Only a
/// flip of the file the open read (the restart names it) or an out-of-contract fault on
/// either name explains the alarm (the rename makes the temp file the checkpoint: quick
/// seed 363 lost the temp file's fsync); a flip of a temp file no rename made the
/// checkpoint does not (helper-113).
#[test]
fn only_damage_to_the_checkpoint_itself_explains_it_unreadable() {
    let uncaused_if = |cause, temp| {
        messages_of(
            &checkpoint_open_named(Some(cause), None, true, false, temp).report(),
            CheckerName::AlarmsExplained,
        )
        .iter()
        .any(|m| m.contains("no flip of the checkpoint file the open read"))
    };
    let uncaused = |cause| uncaused_if(cause, false);
    assert!(uncaused_if(
        (wal_flip().0, "/data/wal/checkpoint.tmp"),
        true
    ));
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

/// A flip of the file the open read that the page cache did not take is read only by an
/// open after a power loss: across a process crash it explains nothing (helper-108).
#[test]
fn a_flip_the_page_cache_missed_explains_the_alarm_only_across_a_power_loss() {
    for power_loss in [false, true] {
        let mut r = Run::new();
        r.produced(1).with(|t, h| {
            h.fault(t, wal_flip().0, None, Some("/data/wal/checkpoint"));
            let fault = h.len() - 1;
            h.checkpoint_damaged(t, fault, None, (None, false));
            h.flip_missed_cache(t, fault);
        });
        let fault = r.h.len() - 3;
        if power_loss {
            r.crash(&[(0, 1, 1, 1)]);
        } else {
            r.process_crash(&[(0, 1, 1, 1)]);
        }
        r.restart().with(|t, h| {
            h.wal_at_open(t, 0, 0);
            h.checkpoint_at_open(t, None, Some(fault));
        });
        r.alarm(None, Alarm::WalCheckpointUnreadable)
            .open_clean(0, 1, 1)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            });
        let uncaused = messages_of(&r.report(), CheckerName::AlarmsExplained)
            .iter()
            .any(|m| m.contains("no flip of the checkpoint file the open read"));
        assert_eq!(uncaused, !power_loss, "power loss {power_loss}");
    }
}

/// helper-114 H2: a checkpoint the world read whole at the restart was made unreadable,
/// if at all, while the open ran: a fault before the restart (a lost fsync of the temp
/// file, a flip) explains no alarm of that open; a flip of the file it reads while it
/// runs does.
#[test]
fn a_checkpoint_read_whole_at_the_restart_takes_its_damage_while_the_open_runs() {
    let floors = || {
        Some(vec![CheckpointFloor {
            tp: tp(0),
            seq: 1,
            offset: 1,
        }])
    };
    let uncaused = |cause: (FaultKind, &str), meanwhile| {
        messages_of(
            &checkpoint_open_named(Some(cause), floors(), true, meanwhile, false).report(),
            CheckerName::AlarmsExplained,
        )
        .iter()
        .any(|m| m.contains("no flip of the checkpoint file the open read"))
    };
    let lost_fsync = FaultKind::LostFsync {
        file: FileKind::Wal,
        offsets: None,
    };
    for cause in [
        (lost_fsync, "/data/wal/checkpoint.tmp"),
        (wal_flip().0, "/data/wal/checkpoint"),
    ] {
        assert!(uncaused(cause.clone(), false), "{cause:?}");
        assert!(
            !uncaused(cause.clone(), true),
            "{cause:?}, flipped meanwhile"
        );
    }
}
