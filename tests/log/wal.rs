//! The ingress WAL under failures the store's tests cannot stage: a failed fsync (it
//! poisons the WAL, and no later sync may report the entries durable), a frame whose
//! CRC holds but whose entry does not parse (counted and raised), and a failed
//! directory fsync after a checkpoint's unlinks (the next checkpoint finishes them).

use super::common::{FailingFs, with_alarms};
use cafelog_engine::format::Codec;
use cafelog_engine::format::frame::Codecs;
use cafelog_engine::store::wal::segment_name;
use cafelog_engine::store::{Checkpoint, Wal};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

fn pid() -> (String, u32) {
    ("orders".to_string(), 0)
}

#[test]
fn after_a_failed_fsync_no_sync_reports_the_entries_durable() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FailingFs::default();
    pollster::block_on(async {
        let (wal, _, _, _) = Wal::open(fs.clone(), dir.path(), 1 << 20).await.unwrap();
        let seq = wal.append(&pid(), b"k", b"v").unwrap();
        fs.fail_sync.store(true, Ordering::SeqCst);
        assert!(wal.sync_to(seq).await.is_err());
        fs.fail_sync.store(false, Ordering::SeqCst);
        // Linux marks the pages clean after the EIO: an fsync now would succeed and
        // persist nothing, so the entry must never be reported durable.
        assert!(wal.sync_to(seq).await.is_err(), "synced after an EIO");
        assert!(wal.poisoned().is_some());
        assert!(wal.append(&pid(), b"k", b"w").is_err());
    });
}

#[test]
fn a_valid_frame_whose_entry_does_not_parse_is_counted_and_raised() {
    let dir = tempfile::tempdir().unwrap();
    let mut frame = Vec::new();
    Codecs::default()
        .encode_frame(
            Codec::None,
            0,
            [&b"not a WAL record"[..]].into_iter(),
            &mut frame,
        )
        .unwrap();
    // The test plants the file behind the engine's back.
    #[allow(clippy::disallowed_methods)]
    std::fs::write(dir.path().join(segment_name(0)), &frame).unwrap();
    let ((entries, report), alarms) = with_alarms(|| {
        pollster::block_on(async {
            let (_, _, entries, report) = Wal::open(FailingFs::default(), dir.path(), 1 << 20)
                .await
                .unwrap();
            (entries, report)
        })
    });
    assert!(entries.is_empty());
    assert_eq!(report.corrupt_entries, 1);
    assert_eq!(report.skipped_bytes, 0);
    let raised: Vec<_> = alarms.iter().filter(|a| a.name == "wal_damaged").collect();
    assert_eq!(raised.len(), 1, "{alarms:?}");
    assert_eq!(raised[0].numbers.get("corrupt_entries"), Some(&1));
}

#[test]
fn a_checkpoint_after_a_failed_unlink_sync_finishes_the_deletion() {
    // helper-85: the unlinked segments stayed in the WAL's list when the directory
    // fsync after them failed, and every later checkpoint failed on their unlink
    // (NotFound), which froze WAL deletion and the log's retention floor.
    let dir = tempfile::tempdir().unwrap();
    let fs = FailingFs::default();
    pollster::block_on(async {
        let (wal, _, _, _) = Wal::open(fs.clone(), dir.path(), 64).await.unwrap();
        let mut last = 0;
        for i in 0..6u8 {
            last = wal.append(&pid(), b"k", &[i; 40]).unwrap();
            wal.sync_to(last).await.unwrap();
        }
        assert!(wal.segment_count() >= 3, "{}", wal.segment_count());
        let checkpoint = BTreeMap::from([(
            pid(),
            Checkpoint {
                seq: last + 1,
                offset: 6,
            },
        )]);
        fs.fail_sync_dir_after_remove.store(true, Ordering::SeqCst);
        assert!(wal.checkpoint(&checkpoint).await.is_err());
        fs.fail_sync_dir_after_remove.store(false, Ordering::SeqCst);
        let deleted = wal
            .checkpoint(&checkpoint)
            .await
            .expect("the next checkpoint finishes the deletion");
        assert!(!deleted.is_empty());
        assert_eq!(wal.segment_count(), 1, "only the active segment is left");
        wal.checkpoint(&checkpoint)
            .await
            .expect("and the one after");
    });
}
