//! Crash-shaped tests: the store is dropped without closing (a process crash) at points
//! of the produce and consume paths, then reopened.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// Produces `n` records with payloads `id:<n>` and returns the acknowledged ids.
fn produce_ids(store: &TestStore, from: u64, n: u64) -> Vec<u64> {
    let ids: Vec<u64> = (from..from + n).collect();
    for id in &ids {
        block(store.produce("t", Some(0), b"k", format!("id:{id}").as_bytes())).unwrap();
    }
    ids
}

/// Delivered ids and how many distinct offsets each appeared at.
fn delivered(store: &TestStore) -> BTreeMap<u64, u64> {
    let mut seen = BTreeMap::new();
    for d in drain(store, "t", 0) {
        let id: u64 = std::str::from_utf8(&d.payload).unwrap()[3..]
            .parse()
            .unwrap();
        *seen.entry(id).or_insert(0) += 1;
    }
    seen
}

#[test]
fn crash_after_acks_before_the_hwm_persist_duplicates_but_never_loses() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let mut acked = produce_ids(&store, 0, 5);
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    acked.extend(produce_ids(&store, 5, 4)); // above the persisted HWM
    drop(store);
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(
        report.replayed, 4,
        "entries past the checkpoint are re-committed"
    );
    let part = report.partitions[&("t".to_string(), 0)].clone();
    assert_eq!((part.hwm, part.hidden_records), (5, 4));
    let seen = delivered(&store);
    for id in &acked {
        assert!(seen.contains_key(id), "acknowledged id {id} lost");
    }
    // The hidden copies of 5..9 became visible when the replay moved the HWM over them.
    let duplicated: Vec<u64> = seen
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(
        duplicated,
        vec![5, 6, 7, 8],
        "duplicates only above the persisted HWM"
    );
}

#[test]
fn crash_after_the_checkpoint_gives_no_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let acked = produce_ids(&store, 0, 6);
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    drop(store);
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(report.replayed, 0);
    let seen = delivered(&store);
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), acked);
    assert!(seen.values().all(|n| *n == 1));
}

#[test]
fn crash_with_a_persisted_hwm_but_a_stale_checkpoint_gives_no_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let mut acked = produce_ids(&store, 0, 3);
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    acked.extend(produce_ids(&store, 3, 3));
    block(store.persist_hwms()).unwrap(); // HWM persisted, checkpoint not yet moved
    drop(store);
    let (store, report) = open(dir.path(), &clock);
    // Entries 3..6 are past the checkpoint, but their copies are visible below the
    // recovered HWM, so replay does not commit them again.
    assert_eq!(report.replayed, 0);
    let seen = delivered(&store);
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), acked);
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
}

#[test]
fn crash_with_leases_outstanding_redelivers_from_the_persisted_frontier() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let acked = produce_ids(&store, 0, 6);
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    let got = block(store.receive("t", 0, 6)).unwrap();
    for d in &got[..3] {
        block(store.ack("t", 0, d.offset)).unwrap();
    }
    block(store.persist_frontiers()).unwrap();
    drop(store); // 3..6 leased, unacked
    let (store, _) = open(dir.path(), &clock);
    let again = drain(&store, "t", 0);
    assert_eq!(
        again.iter().map(|d| d.offset).collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    assert_eq!(acked.len(), 6);
}

#[test]
fn repeated_crashes_keep_every_acknowledged_produce() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let mut acked = Vec::new();
    let mut next = 0u64;
    for round in 0..6u64 {
        let (store, _) = open(dir.path(), &clock);
        if round == 0 {
            block(store.create_topic("t", topic(1))).unwrap();
        }
        acked.extend(produce_ids(&store, next, 3 + round));
        next += 3 + round;
        match round % 3 {
            0 => {}
            1 => block(store.persist_hwms()).unwrap(),
            _ => {
                block(store.persist_hwms()).unwrap();
                block(store.checkpoint_wal()).unwrap();
            }
        }
        drop(store);
    }
    let (store, _) = open(dir.path(), &clock);
    let seen = delivered(&store);
    for id in &acked {
        assert!(seen.contains_key(id), "acknowledged id {id} lost");
    }
    assert_eq!(seen.len(), acked.len(), "nothing unexpected");
}

/// Found by the simulator (quick seed 31): a recovery clamp cut the log below the WAL
/// checkpoint's offset; the replay then committed an entry below that offset, and the
/// next restart's replay, looking for visible copies only from the stale offset up,
/// committed it again: a duplicate no hidden tail explained.
#[test]
fn a_clamp_below_the_checkpoint_offset_does_not_make_replay_duplicate_later() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let mut config = topic(1);
    config.log.fsync = cafelog_engine::log::FsyncPolicy::PerWrite;
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", config)).unwrap();
    produce_ids(&store, 0, 3);
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap(); // checkpoint offset 3
    produce_ids(&store, 3, 1); // id 3 at offset 3: in the WAL past the checkpoint
    block(store.persist_hwms()).unwrap();
    drop(store);
    // Damage: cut the segment back to its first two frames (offsets 0 and 1), so
    // recovery clamps the persisted HWM 4 down to 2 and records the loss.
    let segment = dir.path().join("topics/t/p00000/00000000000000000000.log");
    let frame_len = frames_end(&segment) / 4;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len((frame_len * 2) as u64)
        .unwrap();
    let (store, report) = open(dir.path(), &clock);
    let part = &report.partitions[&("t".to_string(), 0)];
    assert_eq!((part.hwm, part.recorded_loss_records), (2, 2));
    assert_eq!(report.replayed, 1, "id 3 is re-committed at offset 2");
    block(store.persist_hwms()).unwrap();
    drop(store); // crash before any checkpoint
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(
        report.replayed, 0,
        "the copy at offset 2 is visible: nothing to replay"
    );
    let seen = delivered(&store);
    assert_eq!(seen.get(&3), Some(&1), "id 3 exactly once: {seen:?}");
}

/// Flips one bit inside the first occurrence of `needle` in the file at `path`: the
/// frame holding it then fails its CRC.
fn flip_inside(path: &std::path::Path, needle: &[u8]) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {}", path.display()));
    bytes[at + needle.len() - 1] ^= 0x01;
    std::fs::write(path, &bytes).unwrap();
}

/// Found by the simulator (quick seeds 105536 and 115839, fresh ranges): two bit flips
/// at rest, both in contract. One destroyed a record's ingress WAL entry; the other hit
/// a log frame below that record but above the persisted HWM, so recovery cut the log
/// there by R2, discarding the record's readable log copy on the strength of a WAL
/// entry that no longer existed: an acknowledged record lost. The cut now keeps (writes
/// into the WAL again) every readable record past the hole whose entry is gone, and
/// copies those whose entry is there.
#[test]
fn an_r2_cut_keeps_a_record_whose_wal_entry_was_damaged_too() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    // Each produce is one WAL frame and one log frame; the HWM is never persisted, so
    // every record is above the persisted HWM 0 after the crash.
    let acked = produce_ids(&store, 0, 6);
    drop(store);
    flip_inside(&dir.path().join("wal/00000000000000000000.wal"), b"id:4");
    flip_inside(
        &dir.path().join("topics/t/p00000/00000000000000000000.log"),
        b"id:1",
    );
    let (store, report) = open(dir.path(), &clock);
    let part = &report.partitions[&("t".to_string(), 0)];
    assert_eq!(
        part.truncation.map(|t| t.0),
        Some(cafelog_engine::recovery::TruncationRule::HoleAboveHwm),
        "offset 1's frame is bad and valid frames follow: R2"
    );
    assert_eq!(report.wal.corrupt_entries, 1, "id 4's WAL entry is gone");
    let seen = delivered(&store);
    for id in &acked {
        assert!(seen.contains_key(id), "acknowledged id {id} lost: {seen:?}");
    }
    assert_eq!(
        (part.salvage_offered, part.salvaged, part.salvage_copied),
        (4, 1, 3),
        "of ids 2..6 past the hole, only id 4 lacks a WAL entry; the others get a copy"
    );
    assert_eq!(report.salvaged, 4);
    drop(store);
    // The kept copy is an ordinary WAL entry now: the next open finds no hole and
    // salvages nothing, and id 4 is still there.
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(report.salvaged, 0);
    assert!(
        report.partitions[&("t".to_string(), 0)]
            .truncation
            .is_none()
    );
    assert!(delivered(&store).contains_key(&4));
}

/// A bit flip at rest in the WAL's last frame: the replay skips its bytes, and no later
/// entry shows a gap in the seqs, so no entry is counted corrupt. The only copy of the
/// record left is in the log's hidden tail, which the open must expose for any
/// unreadable WAL region, not only one that shows lost entries.
#[test]
fn a_flip_in_the_wal_tail_exposes_the_hidden_copy_of_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let acked = produce_ids(&store, 0, 6);
    drop(store); // the HWM was never persisted: all six sit in the hidden tail
    flip_inside(&dir.path().join("wal/00000000000000000000.wal"), b"id:5");
    let (store, report) = open(dir.path(), &clock);
    assert_eq!(report.wal.corrupt_entries, 0, "no later seq shows the gap");
    assert!(report.wal.skipped_bytes > 0, "the flipped frame is skipped");
    assert_eq!(report.hidden_exposed, 6);
    let seen = delivered(&store);
    for id in &acked {
        assert_eq!(seen.get(id), Some(&1), "id {id} exactly once: {seen:?}");
    }
}

/// Found by the simulator (quick seed 506647, a fresh range): the WAL checkpoint was
/// lost, so the next open replayed every WAL entry. Entries whose log copies retention
/// had reaped were committed again at new offsets above later entries' copies, so WAL
/// order was no longer offset order, and the next checkpoint (held at the first of those
/// entries) took the persisted HWM as its offset: above the copies of the later entries.
/// The open after that looked for their copies from there, missed them, and committed
/// records below the persisted HWM a second time. The checkpoint's offset now stays at
/// or below every known copy of an entry past it.
#[test]
fn a_checkpoint_after_a_full_replay_stays_below_the_copies_it_relies_on() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    let config = cafelog_engine::store::TopicConfig {
        log: cafelog_engine::log::LogConfig {
            segment_bytes: 200,
            retention_ms: Some(1_000),
            ..cafelog_engine::log::LogConfig::default()
        },
        ..topic(1)
    };
    block(store.create_topic("t", config)).unwrap();
    let payload = |id: u64| format!("id:{id}:{}", "x".repeat(40));
    let produce = |store: &TestStore, ids: std::ops::Range<u64>| {
        for id in ids {
            block(store.produce("t", Some(0), b"k", payload(id).as_bytes())).unwrap();
        }
    };
    let counts = |store: &TestStore| {
        let mut seen = BTreeMap::<u64, u64>::new();
        for d in drain(store, "t", 0) {
            let text = std::str::from_utf8(&d.payload).unwrap();
            *seen
                .entry(text.split(':').nth(1).unwrap().parse().unwrap())
                .or_default() += 1;
        }
        seen
    };
    produce(&store, 0..20);
    block(store.persist_hwms()).unwrap();
    block(store.checkpoint_wal()).unwrap();
    clock.advance(std::time::Duration::from_secs(2));
    let part = store.partition("t", 0).unwrap();
    let log_start = block(part.log.reap_once()).unwrap().log_start;
    assert!(log_start > 2, "retention reaped the first segments");
    // More entries in the same (active) WAL segment keep the reaped records' entries.
    produce(&store, 20..25);
    block(store.persist_hwms()).unwrap();
    drop(store);
    std::fs::write(dir.path().join("wal/checkpoint"), b"garbage").unwrap();

    let (store, report) = open(dir.path(), &clock);
    assert_eq!(
        report.replayed, log_start,
        "only the entries whose copies were reaped are committed again"
    );
    // The persisted HWM (25) is below the re-committed entries at 25.., so the
    // checkpoint stays at entry 0, and must not rise above the copies of 3..25.
    let written = |store: &TestStore| store.metrics().wal_checkpoints.load(Ordering::Relaxed);
    let before = written(&store);
    block(store.checkpoint_wal()).unwrap();
    // Its offset still rises, from 0 to the lowest of those copies, with its seq
    // unchanged: that alone is a new checkpoint, written (the retention floor and
    // the next replay's start both read it).
    assert_eq!(
        written(&store),
        before + 1,
        "the checkpoint's offset moved alone"
    );
    drop(store);

    let (store, _) = open(dir.path(), &clock);
    let seen = counts(&store);
    for id in 0..25 {
        assert!(
            seen.contains_key(&id),
            "acknowledged id {id} lost: {seen:?}"
        );
    }
    for id in log_start..25 {
        assert_eq!(
            seen[&id], 1,
            "id {id} was below the persisted HWM: {seen:?}"
        );
    }
}

/// A flipped `hwm` below `consumer.offset` and a bad frame above it: R2 cuts there, and
/// salvage and replay commit every record past the hole again, at new offsets below the
/// stale frontier. The frontier must be bounded by the HWM the log recovered to, not the
/// one after the replay, or acknowledged records are taken as consumed.
#[test]
fn a_frontier_above_the_recovered_hwm_does_not_hide_replayed_records() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let mut acked = produce_ids(&store, 0, 10);
    block(store.persist_hwms()).unwrap(); // persisted HWM 10
    block(store.checkpoint_wal()).unwrap(); // entries of ids 0..10 checkpointed
    let got = block(store.receive("t", 0, 8)).unwrap();
    for d in &got {
        block(store.ack("t", 0, d.offset)).unwrap();
    }
    block(store.persist_frontiers()).unwrap(); // consumer.offset = 8
    acked.extend(produce_ids(&store, 10, 2)); // above the persisted HWM: only in the WAL
    drop(store);
    let part = dir.path().join("topics/t/p00000");
    std::fs::write(part.join("hwm"), 2u64.to_be_bytes()).unwrap(); // the out-of-contract flip
    flip_inside(&part.join("00000000000000000000.log"), b"id:3"); // R2 hole at offset 3
    let (store, report) = open(dir.path(), &clock);
    let p = &report.partitions[&("t".to_string(), 0)];
    assert_eq!(
        p.truncation.map(|t| t.0),
        Some(cafelog_engine::recovery::TruncationRule::HoleAboveHwm)
    );
    let seen = delivered(&store);
    for id in [10, 11] {
        assert!(
            seen.contains_key(&id),
            "acknowledged id {id} lost: {seen:?} (acked {acked:?})"
        );
    }
}
