//! Which decoded frames the read cache keeps: a frame a reader will come back to (its
//! read stopped inside it) and the log's newest frames, which tail readers share; a scan
//! reading older frames whole passes through without evicting them.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::log::LogConfig;
use std::sync::atomic::Ordering;

/// Ten records to a frame, one frame per commit.
const FRAME: u64 = 10;

fn log_of_frames(dir: &std::path::Path, frames: u64, cache: usize) -> TestLog {
    log_in_segments(dir, frames, cache, LogConfig::default().segment_bytes)
}

/// As [`log_of_frames`], rolling a segment once one holds `segment_bytes`.
fn log_in_segments(
    dir: &std::path::Path,
    frames: u64,
    cache: usize,
    segment_bytes: u64,
) -> TestLog {
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        frame_cache_frames: cache,
        segment_bytes,
        ..LogConfig::default()
    };
    let (log, _) = open(dir, &clock, config);
    for frame in 0..frames {
        let records: Vec<Vec<u8>> = (frame * FRAME..(frame + 1) * FRAME)
            .map(json_record)
            .collect();
        pollster::block_on(log.commit(records.iter().map(|r| (&b"k"[..], r.as_slice())))).unwrap();
    }
    assert_eq!(log.metrics().frames_written.load(Ordering::Relaxed), frames);
    log
}

fn decoded(log: &TestLog) -> u64 {
    log.metrics().frames_decoded.load(Ordering::Relaxed)
}

/// Reads `from..to` in calls of `step` records, checking every record is served once.
fn read(log: &TestLog, from: u64, to: u64, step: usize) {
    let mut next = from;
    while next < to {
        let batch = pollster::block_on(log.read(next, step)).unwrap();
        let offsets: Vec<u64> = batch.records.iter().map(|r| r.offset).collect();
        let want = (next..to.min(next + step as u64)).collect::<Vec<_>>();
        assert_eq!(offsets, want);
        next = batch.next_offset;
    }
}

#[test]
fn a_scan_of_older_frames_leaves_the_tail_cached() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_frames(dir.path(), 8, 2);
    read(&log, 6 * FRAME, 8 * FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 2, "the two newest frames, decoded once each");
    // A consumer catching up from the start, a frame a read.
    read(&log, 0, 6 * FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 8);
    read(&log, 0, FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 9, "an older frame read whole is not kept");
    read(&log, 6 * FRAME, 8 * FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 9, "the scan evicted a tail frame");
}

/// The newest frames counted across segments: with a frame to a segment, the two newest
/// frames are the last frame of each of the two newest segments.
#[test]
fn the_newest_frames_are_counted_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in_segments(dir.path(), 6, 2, 1);
    assert_eq!(log.metrics().segments_rolled.load(Ordering::Relaxed), 5);
    read(&log, 4 * FRAME, 6 * FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 2);
    read(&log, 0, 4 * FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 6);
    read(&log, 0, FRAME, FRAME as usize);
    assert_eq!(
        decoded(&log),
        7,
        "a frame of an older segment read whole is not kept"
    );
    read(&log, 4 * FRAME, 6 * FRAME, FRAME as usize);
    assert_eq!(decoded(&log), 7, "the scan evicted a tail frame");
}

#[test]
fn a_frame_a_read_stopped_inside_is_kept_for_the_next_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_frames(dir.path(), 4, 1);
    // Three records a read: the reader comes back to each older frame three times.
    read(&log, 0, 3 * FRAME, 3);
    assert_eq!(decoded(&log), 3, "each older frame decoded once");
}
