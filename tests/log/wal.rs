//! The ingress WAL under failures the store's tests cannot stage: a failed fsync (it
//! poisons the WAL, and no later sync may report the entries durable), and a frame
//! whose CRC holds but whose entry does not parse (counted and raised).

use super::common::{FailingFs, with_alarms};
use cafelog_engine::format::Codec;
use cafelog_engine::format::frame::Codecs;
use cafelog_engine::store::Wal;
use cafelog_engine::store::wal::segment_name;
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
