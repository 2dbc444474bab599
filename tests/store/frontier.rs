//! The consumer frontier: persisted by rename, recovered lazily, never past the
//! persisted HWM.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::log::LogConfig;
use cafelog_engine::store::TopicConfig;
use std::time::Duration;

fn frontier_file(dir: &std::path::Path) -> Option<u64> {
    std::fs::read(dir.join("topics/t/p00000/consumer.offset"))
        .ok()
        .map(|b| u64::from_be_bytes(b.try_into().unwrap()))
}

#[test]
fn the_frontier_is_persisted_by_rename_and_recovered_lazily() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    for i in 0..4u8 {
        block(store.produce("t", Some(0), b"k", &[i])).unwrap();
    }
    let got = block(store.receive("t", 0, 10)).unwrap();
    block(store.ack("t", 0, got[0].offset)).unwrap();
    block(store.ack("t", 0, got[2].offset)).unwrap();
    assert_eq!(
        block(store.frontier("t", 0)).unwrap(),
        1,
        "offset 1 is unacked"
    );
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    block(store.persist_frontiers()).unwrap();
    assert_eq!(frontier_file(dir.path()), Some(1));
    assert!(
        !dir.path()
            .join("topics/t/p00000/consumer.offset.tmp")
            .exists()
    );
    drop(store); // crash
    let (store, _) = open(dir.path(), &clock);
    // Delivery restarts at the persisted frontier: 1, 2, 3 again (2 was acked: a
    // redelivery is allowed, a skip is not).
    let again = drain(&store, "t", 0);
    assert_eq!(
        again.iter().map(|d| d.offset).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

#[test]
fn the_persisted_frontier_never_passes_the_persisted_hwm() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    block(store.produce("t", Some(0), b"k", b"a")).unwrap();
    block(store.persist_hwms()).unwrap();
    block(store.produce("t", Some(0), b"k", b"b")).unwrap();
    drain(&store, "t", 0);
    block(store.persist_frontiers()).unwrap();
    assert_eq!(
        frontier_file(dir.path()),
        Some(1),
        "held at the persisted HWM"
    );
}

#[test]
fn a_frontier_outside_the_log_is_clamped_with_a_counter() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    block(store.produce("t", Some(0), b"k", b"a")).unwrap();
    block(store.close()).unwrap();
    drop(store);
    std::fs::write(
        dir.path().join("topics/t/p00000/consumer.offset"),
        99u64.to_be_bytes(),
    )
    .unwrap();
    let (store, _) = open(dir.path(), &clock);
    assert_eq!(block(store.frontier("t", 0)).unwrap(), 1);
    assert_eq!(
        store
            .metrics()
            .frontier_clamps
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn an_empty_consumer_offset_is_reported_not_read_as_absent() {
    // Only a lost fsync of the temp file before its rename leaves an empty file: the
    // restart at the log start it forces is a frontier reset, counted.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    block(store.produce("t", Some(0), b"k", b"a")).unwrap();
    block(store.close()).unwrap();
    drop(store);
    std::fs::write(dir.path().join("topics/t/p00000/consumer.offset"), b"").unwrap();
    let (store, _) = open(dir.path(), &clock);
    assert_eq!(block(store.frontier("t", 0)).unwrap(), 0);
    assert_eq!(
        store
            .metrics()
            .frontier_clamps
            .load(std::sync::atomic::Ordering::Relaxed),
        1,
        "the reset is counted"
    );
}

#[test]
fn retention_moving_the_log_start_under_a_consumer_skips_it_forward() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    let config = TopicConfig {
        log: LogConfig {
            segment_bytes: 200,
            retention_ms: Some(1_000),
            ..LogConfig::default()
        },
        ..topic(1)
    };
    block(store.create_topic("t", config)).unwrap();
    for i in 0..20u8 {
        block(store.produce("t", Some(0), b"k", &[i; 40])).unwrap();
    }
    let first = block(store.receive("t", 0, 2)).unwrap();
    assert_eq!(first.len(), 2);
    clock.advance(Duration::from_secs(2));
    let part = store.partition("t", 0).unwrap();
    // Retention waits for the WAL checkpoint: replay may need the copies above it.
    assert!(block(part.log.reap_once()).unwrap().segments.is_empty());
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    let reaped = block(part.log.reap_once()).unwrap();
    assert!(reaped.log_start > 2, "{reaped:?}");
    let rest = drain(&store, "t", 0);
    assert_eq!(rest.first().unwrap().offset, reaped.log_start);
    assert_eq!(rest.last().unwrap().offset, 19);
    assert_eq!(block(store.frontier("t", 0)).unwrap(), 20);
}

#[test]
fn a_frontier_that_fails_to_persist_holds_no_other_partition_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(2))).unwrap();
    for p in 0..2 {
        block(store.produce("t", Some(p), b"k", b"a")).unwrap();
        let got = block(store.receive("t", p, 10)).unwrap();
        block(store.ack("t", p, got[0].offset)).unwrap();
    }
    block(store.persist_hwms()).unwrap();
    // Partition 0's temp file cannot be created: a directory stands at its path.
    let p0 = dir.path().join("topics/t/p00000");
    std::fs::create_dir(p0.join("consumer.offset.tmp")).unwrap();
    assert!(block(store.persist_frontiers()).is_err());
    let word = |p: &str| {
        std::fs::read(dir.path().join(format!("topics/t/{p}/consumer.offset")))
            .ok()
            .map(|b| u64::from_be_bytes(b.try_into().unwrap()))
    };
    assert_eq!(word("p00000"), None, "its write failed");
    assert_eq!(word("p00001"), Some(1), "persisted all the same");
    // The next round retries partition 0.
    std::fs::remove_dir(p0.join("consumer.offset.tmp")).unwrap();
    block(store.persist_frontiers()).unwrap();
    assert_eq!(word("p00000"), Some(1));
}
