//! Produce and receive through the store: bytes and commit times round-trip, keys pick
//! partitions stably, and bad names, unknown topics and oversize records are typed
//! errors.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::store::{StoreError, TopicConfig};

#[test]
fn produced_records_are_received_with_their_bytes_and_commit_times() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("orders", topic(1))).unwrap();
    for i in 0..5u8 {
        let p = block(store.produce("orders", Some(0), &[i], &[i; 10])).unwrap();
        assert_eq!((p.partition, p.offset), (0, u64::from(i)));
    }
    let got = drain(&store, "orders", 0);
    assert_eq!(got.len(), 5);
    for (i, d) in got.iter().enumerate() {
        assert_eq!((d.offset, d.attempt), (i as u64, 1));
        assert_eq!(d.key, vec![i as u8]);
        assert_eq!(d.payload, vec![i as u8; 10]);
        assert_eq!(d.committed_at_ms, WALL_START_MS);
    }
    assert_eq!(block(store.frontier("orders", 0)).unwrap(), 5);
}

#[test]
fn keys_pick_partitions_stably_and_explicit_partitions_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(4))).unwrap();
    let a = block(store.produce("t", None, b"customer-1", b"x")).unwrap();
    let b = block(store.produce("t", None, b"customer-1", b"y")).unwrap();
    assert_eq!(a.partition, b.partition);
    assert_eq!(
        a.partition,
        store.partition_for_key("t", b"customer-1").unwrap()
    );
    // The documented map, CRC32C of the key modulo the partition count, spreads keys
    // over every partition.
    let mut used = std::collections::BTreeSet::new();
    for k in 0..64u32 {
        let key = format!("customer-{k}");
        let p = store.partition_for_key("t", key.as_bytes()).unwrap();
        assert_eq!(p, crc32c::crc32c(key.as_bytes()) % 4, "{key}");
        used.insert(p);
    }
    assert_eq!(used.len(), 4);
    let c = block(store.produce("t", Some(3), b"customer-1", b"z")).unwrap();
    assert_eq!(c.partition, 3);
    assert!(
        dir.path()
            .join("topics/t/p00003/00000000000000000000.log")
            .exists()
    );
}

#[test]
fn bad_names_unknown_topics_and_partitions_and_oversize_records_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    for bad in ["", ".", "..", "a/b", "../escape"] {
        let err = block(store.create_topic(bad, topic(1))).unwrap_err();
        assert!(
            matches!(err, StoreError::InvalidTopicName(_)),
            "{bad:?}: {err}"
        );
    }
    assert!(!dir.path().join("escape").exists());
    let err = block(store.create_topic(
        "z",
        TopicConfig {
            partitions: 0,
            ..topic(1)
        },
    ))
    .unwrap_err();
    assert!(matches!(err, StoreError::InvalidConfig(_)), "{err}");
    assert!(
        !dir.path().join("topics/z").exists(),
        "nothing written on a bad config"
    );
    block(store.create_topic("t", topic(2))).unwrap();
    assert!(matches!(
        block(store.create_topic("t", topic(2))),
        Err(StoreError::TopicExists(_))
    ));
    assert!(matches!(
        block(store.produce("nope", None, b"k", b"v")),
        Err(StoreError::UnknownTopic(_))
    ));
    let err = block(store.produce("t", Some(2), b"k", b"v")).unwrap_err();
    assert!(err.to_string().contains("no partition 2"), "{err}");
    let huge = vec![0u8; 200 * 1024 * 1024];
    assert!(matches!(
        block(store.produce("t", Some(0), b"k", &huge)),
        Err(StoreError::RecordTooLarge { .. })
    ));
    assert_eq!(store.wal().seq_range().end, 0, "no WAL entry was written");
}

#[test]
fn topics_and_their_config_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    let config = TopicConfig {
        delay_ms: 500,
        ..topic(3)
    };
    block(store.create_topic("t", config.clone())).unwrap();
    block(store.close()).unwrap();
    drop(store);
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(store.topics(), vec![("t".to_string(), config)]);
    assert_eq!(report.partitions_opened, 3);
}

/// Found by the simulator (quick seeds 1384, 2958, 3894): a misdirected write garbled one
/// topic's topic.conf, and every later open of the store failed, taking every other
/// topic down with it. The store now refuses that topic alone.
#[test]
fn an_unreadable_topic_conf_closes_that_topic_and_opens_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("bad", topic(1))).unwrap();
    block(store.create_topic("good", topic(1))).unwrap();
    block(store.produce("good", Some(0), b"k", b"v")).unwrap();
    block(store.produce("bad", Some(0), b"k", b"v")).unwrap();
    block(store.close()).unwrap();
    drop(store);
    let conf = dir.path().join("topics/bad/topic.conf");
    std::fs::write(&conf, b"partitions = \xff\xfe garbage").unwrap();
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(report.refused_topics.len(), 1);
    assert_eq!(report.refused_topics[0].0, "bad");
    // The store keeps saying so after the open (a caller must not create it again).
    assert_eq!(store.refused_topics(), report.refused_topics);
    assert_eq!(drain(&store, "good", 0).len(), 1, "the other topic opens");
    let refused =
        |e: StoreError| matches!(e, StoreError::TopicRefused { ref topic, .. } if topic == "bad");
    assert!(refused(
        block(store.produce("bad", Some(0), b"k", b"v")).unwrap_err()
    ));
    assert!(refused(block(store.receive("bad", 0, 1)).unwrap_err()));
    // Creating it again would write a fresh topic.conf over data it cannot read.
    assert!(refused(
        block(store.create_topic("bad", topic(1))).unwrap_err()
    ));
    assert!(
        dir.path().join("topics/bad/p00000").exists(),
        "its data is untouched"
    );
}

/// Found by the simulator (quick seed 3032355400001483, a fresh CI range): the fsync of
/// a new topic.conf was lost, so after the crash the renamed file was empty, and the
/// store opened the topic with the default config: one partition instead of two, the
/// second one's acknowledged records gone without a word. An empty file is refused.
#[test]
fn an_empty_topic_conf_refuses_the_topic_rather_than_opening_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(2))).unwrap();
    block(store.produce("t", Some(1), b"k", b"v")).unwrap();
    block(store.close()).unwrap();
    drop(store);
    std::fs::write(dir.path().join("topics/t/topic.conf"), b"").unwrap();
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(report.refused_topics.len(), 1, "{report:?}");
    assert!(matches!(
        block(store.receive("t", 1, 1)).unwrap_err(),
        StoreError::TopicRefused { .. }
    ));
}

/// Flips the byte just before `end` in `orders/0`'s first segment: the last byte of
/// the frame that ends there.
fn rot_before(root: &std::path::Path, end: u64) {
    use std::os::unix::fs::FileExt;
    let segment = root.join("topics/orders/p00000/00000000000000000000.log");
    #[allow(clippy::disallowed_methods)] // bit rot from outside the engine
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&segment)
        .unwrap();
    let mut byte = [0u8; 1];
    file.read_at(&mut byte, end - 1).unwrap();
    file.write_at(&[byte[0] ^ 0x01], end - 1).unwrap();
}

/// `orders/0` with one uncompressed frame per record and a one-frame cache, so reads go
/// to the disk: `records` records produced, and each frame's end in the segment.
fn one_frame_per_record(
    root: &std::path::Path,
    clock: &ManualClock,
    delay_ms: u64,
    records: usize,
) -> (TestStore, Vec<u64>) {
    let (store, _) = open(root, clock);
    let config = TopicConfig {
        delay_ms,
        log: cafelog_engine::log::LogConfig {
            codec: cafelog_engine::format::Codec::None,
            frame_cache_frames: 1,
            ..Default::default()
        },
        ..topic(1)
    };
    block(store.create_topic("orders", config)).unwrap();
    let segment = root.join("topics/orders/p00000/00000000000000000000.log");
    let ends = (0..records)
        .map(|_| {
            block(store.produce("orders", Some(0), b"k", &[1; 32])).unwrap();
            frames_end(&segment)
        })
        .collect();
    (store, ends)
}

fn skipped(store: &TestStore) -> u64 {
    store
        .metrics()
        .records_skipped
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// A frame skipped right before a record the delay gate holds is passed over for good:
/// the scan resumes after it, so later receives neither settle nor count it again.
#[test]
fn a_frame_rotten_just_before_a_delay_gate_is_skipped_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, ends) = one_frame_per_record(dir.path(), &clock, 500, 2);
    rot_before(dir.path(), ends[0]);
    // Offset 0 is skipped, and 1 is held by the gate for 500 ms.
    for _ in 0..3 {
        assert!(block(store.receive("orders", 0, 10)).unwrap().is_empty());
        assert_eq!(skipped(&store), 1, "the skipped frame was read again");
    }
    clock.advance(std::time::Duration::from_millis(500));
    let got = block(store.receive("orders", 0, 10)).unwrap();
    assert_eq!(got.iter().map(|d| d.offset).collect::<Vec<_>>(), vec![1]);
    assert_eq!(skipped(&store), 1);
}

#[test]
fn frames_rotten_after_open_are_skipped_once_and_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, ends) = one_frame_per_record(dir.path(), &clock, 0, 4);
    rot_before(dir.path(), ends[1]);
    rot_before(dir.path(), ends[3]);
    // 1 is skipped before 2, and 3 at the end of the log; neither is read again.
    let got = block(store.receive("orders", 0, 10)).unwrap();
    assert_eq!(got.iter().map(|d| d.offset).collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(skipped(&store), 2);
    assert!(block(store.receive("orders", 0, 10)).unwrap().is_empty());
    assert_eq!(skipped(&store), 2);
}
