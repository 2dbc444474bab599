//! The background flusher's policy (spec: "drain: flush_bytes, flush_records,
//! flush_interval"; "fsync: batched mode syncs on sync_interval / sync_bytes"), one
//! `flush_tick` at a time with a clock the test moves.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{FsyncPolicy, LogConfig};
use std::time::Duration;

#[test]
fn the_flusher_drains_on_thresholds_and_interval_without_committing_in_batched_mode() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        flush_records: 5,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    log.append_batch((0..3).map(|_| (&b"k"[..], &b"v"[..])))
        .unwrap();
    pollster::block_on(log.flush_tick()).unwrap();
    assert_eq!(
        log.metrics().snapshot().frames_written,
        0,
        "below every threshold"
    );
    log.append_batch((0..3).map(|_| (&b"k"[..], &b"v"[..])))
        .unwrap();
    pollster::block_on(log.flush_tick()).unwrap();
    let status = log.status();
    assert_eq!(status.written_end, 6, "record threshold reached: drained");
    assert_eq!(status.hwm, 0, "batched mode: written, not yet committed");
    log.append(b"k", b"late").unwrap();
    clock.advance(Duration::from_millis(100));
    pollster::block_on(log.flush_tick()).unwrap();
    assert_eq!(log.status().written_end, 7, "flush_interval reached");
    clock.advance(Duration::from_secs(1));
    pollster::block_on(log.flush_tick()).unwrap();
    assert_eq!(log.hwm(), 7, "sync_interval reached: fsynced and committed");
}

#[test]
fn batched_mode_syncs_once_sync_bytes_are_written_without_waiting_for_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    // One raw record of one byte per frame: header, length prefix, envelope.
    let frame = (cafelog_engine::format::frame::FRAME_HEADER_LEN
        + 4
        + cafelog_engine::format::envelope::encoded_len(1, 1)) as u64;
    let config = LogConfig {
        codec: Codec::None,
        flush_records: 1,
        fsync: FsyncPolicy::Batched,
        sync_bytes: 3 * frame,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for written in 1..=3 {
        log.append(b"k", b"v").unwrap();
        pollster::block_on(log.flush_tick()).unwrap();
        assert_eq!(log.status().written_end, written);
        let hwm = if written < 3 { 0 } else { 3 };
        assert_eq!(log.hwm(), hwm, "{written} frames of {frame} bytes written");
    }
    assert_eq!(log.metrics().snapshot().fsyncs, 1);
}
