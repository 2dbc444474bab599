//! The read path: reads stop at the HWM, a frame damaged after open is skipped and
//! counted (never served), and reading below the log start is a clear error.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{LogConfig, LogError};
use std::os::unix::fs::FileExt;

#[test]
fn reads_stop_at_the_hwm_and_continue_from_next_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    let records: Vec<Vec<u8>> = (0..10).map(json_record).collect();
    pollster::block_on(log.commit(records.iter().map(|r| (&b"k"[..], r.as_slice())))).unwrap();
    log.append(b"k", b"uncommitted").unwrap();
    let first = pollster::block_on(log.read(3, 4)).unwrap();
    assert_eq!(
        first.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![3, 4, 5, 6]
    );
    assert_eq!(first.next_offset, 7);
    let rest = pollster::block_on(log.read(7, 100)).unwrap();
    assert_eq!(rest.records.len(), 3);
    assert_eq!(rest.next_offset, 10, "the uncommitted record is not served");
    let empty = pollster::block_on(log.read(10, 100)).unwrap();
    assert!(empty.records.is_empty());
}

/// A record is a view of its decoded frame, for both codecs: two reads of a cached frame
/// return the same bytes, not copies, and a record outlives the frame's eviction.
#[test]
fn records_share_their_frame_instead_of_copying_it() {
    for codec in [Codec::None, Codec::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(WALL_START_MS);
        let config = LogConfig {
            codec,
            compress_min_bytes: 0,
            frame_cache_frames: 1,
            ..LogConfig::default()
        };
        let (log, _) = open(dir.path(), &clock, config);
        let records: Vec<Vec<u8>> = (0..4).map(json_record).collect();
        pollster::block_on(log.commit(records.iter().map(|r| (&b"key"[..], r.as_slice()))))
            .unwrap();
        let m = log.metrics();
        let (stored, raw) = (
            m.bytes_stored.load(std::sync::atomic::Ordering::Relaxed),
            m.bytes_uncompressed
                .load(std::sync::atomic::Ordering::Relaxed),
        );
        assert_eq!(stored < raw, codec == Codec::Zstd, "stored with {codec:?}");
        let first = pollster::block_on(log.read(0, 4)).unwrap();
        let again = pollster::block_on(log.read(1, 1)).unwrap();
        assert_eq!(again.records.get(0).unwrap(), first.records.get(1).unwrap());
        assert_eq!(
            again.records.get(0).unwrap().payload.as_ptr(),
            first.records.get(1).unwrap().payload.as_ptr(),
            "{codec:?}: the second read copied the payload"
        );
        assert_eq!(
            again.records.get(0).unwrap().key.as_ptr(),
            first.records.get(1).unwrap().key.as_ptr()
        );
        // Another frame evicts the first from the one-frame cache; the records read
        // from it keep their bytes.
        pollster::block_on(log.commit([(&b"key"[..], &b"evicts"[..])])).unwrap();
        let later = pollster::block_on(log.read(4, 1)).unwrap();
        assert_eq!(later.records.get(0).unwrap().payload, &b"evicts"[..]);
        for (record, written) in first.records.iter().zip(&records) {
            assert_eq!((record.key, record.payload), (&b"key"[..], &written[..]));
        }
    }
}

#[test]
fn a_frame_corrupted_after_open_is_skipped_and_counted_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        frame_cache_frames: 1,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for i in 0..3u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    // Flip a payload byte of the middle frame on disk (bit rot after open).
    let segment = dir.path().join("00000000000000000000.log");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&segment)
        .unwrap();
    let frame_len = frames_end(dir.path(), "00000000000000000000.log") / 3;
    let mut byte = [0u8; 1];
    file.read_at(&mut byte, frame_len + 40).unwrap();
    file.write_at(&[byte[0] ^ 0x01], frame_len + 40).unwrap();
    let batch = pollster::block_on(log.read(0, 10)).unwrap();
    assert_eq!(
        batch.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![0, 2]
    );
    assert_eq!(batch.skipped, vec![1]);
    assert_eq!(log.metrics().snapshot().records_skipped, 1);
    // Read again: skipped again, counted once.
    let again = pollster::block_on(log.read(0, 10)).unwrap();
    assert_eq!(again.skipped, vec![1]);
    assert_eq!(log.metrics().snapshot().records_skipped, 1);
}

#[test]
fn reading_below_the_log_start_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        segment_bytes: 300,
        retention_ms: Some(1000),
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    clock.advance(std::time::Duration::from_secs(5));
    let reaped = pollster::block_on(log.reap_once()).unwrap();
    assert!(reaped.log_start > 0);
    let err = pollster::block_on(log.read(0, 10)).unwrap_err();
    assert!(
        matches!(err, LogError::OffsetBeforeLogStart { requested: 0, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("below the log start"));
}
