//! The WAL checkpoint's progress: segments it covers are deleted even when nothing moved
//! since the open, or since a checkpoint that failed.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::wal::{CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};

fn produce(store: &TestStore, n: u64) {
    for id in 0..n {
        block(store.produce("t", Some(0), b"k", format!("id:{id}").as_bytes())).unwrap();
    }
}

/// The WAL segment files in `root`'s WAL directory.
fn wal_files(root: &std::path::Path) -> usize {
    std::fs::read_dir(root.join("wal"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy().into_owned();
            name != CHECKPOINT_FILE && name != CHECKPOINT_TMP_FILE
        })
        .count()
}

/// A store in `root` with three records produced on t/0 and its HWM persisted.
fn three_persisted(root: &std::path::Path, clock: &ManualClock) -> TestStore {
    let (store, _) = open(root, clock);
    block(store.create_topic("t", topic(1))).unwrap();
    produce(&store, 3);
    block(store.persist_hwms()).unwrap();
    store
}

#[test]
fn the_first_checkpoint_after_an_open_deletes_what_the_loaded_one_covers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let store = three_persisted(dir.path(), &clock);
    // Persists a checkpoint past every entry; their segment is the active one, kept.
    block(store.checkpoint_wal()).unwrap();
    drop(store);
    let (store, _) = open(dir.path(), &clock);
    assert_eq!(store.wal().segment_count(), 2, "the open started a segment");
    // Nothing is past the loaded checkpoint, so no partition's checkpoint moves.
    block(store.checkpoint_wal()).unwrap();
    assert_eq!(store.wal().segment_count(), 1);
    assert_eq!(wal_files(dir.path()), 1, "the covered segment is unlinked");
}

#[test]
fn a_failed_checkpoint_is_retried_though_nothing_moved_since() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    drop(three_persisted(dir.path(), &clock));
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(report.replayed, 0, "the copies are below the persisted HWM");
    // A directory where the checkpoint's temp file goes: its create fails.
    let blocker = dir.path().join("wal").join(CHECKPOINT_TMP_FILE);
    std::fs::create_dir(&blocker).unwrap();
    assert!(block(store.checkpoint_wal()).is_err());
    assert_eq!(store.wal().segment_count(), 2);
    std::fs::remove_dir(&blocker).unwrap();
    block(store.checkpoint_wal()).unwrap();
    assert_eq!(
        store.wal().segment_count(),
        1,
        "the retry deleted the old segment"
    );
    assert_eq!(wal_files(dir.path()), 1);
    assert!(dir.path().join("wal").join(CHECKPOINT_FILE).exists());
}
