//! The writer's preallocation contract (`Log::preallocate`): before a frame of at most
//! a quarter of `preallocate_bytes` would end past the allocated space, zeros are
//! written from where it ends, up to `preallocate_bytes` more but never past
//! `segment_bytes`; frames then land in allocated space. Larger frames, a chunk of 0
//! and a segment whose preallocation failed get no zeros. Every zero byte is written
//! once, and `bytes_preallocated` counts them. A sealed segment is trimmed to its
//! frames. Only speed depends on this, so the simulator cannot see it; the write
//! pattern, recorded here, can.

use crate::common::*;
use cafelog_engine::format::Codec;
use cafelog_engine::log::LogConfig;
use std::sync::atomic::Ordering;

/// The frame of each record the tests commit.
const FRAME: u64 = ONE_RECORD_FRAME;

/// The writes the model expects for `frames` one-record frames of `FRAME` bytes from
/// an empty log.
fn expected(frames: u64, chunk: u64, segment_bytes: u64) -> Vec<SegmentWrite> {
    let mut out = Vec::new();
    let (mut base, mut len, mut allocated) = (0, 0, 0);
    for offset in 0..frames {
        if len > 0 && len + FRAME > segment_bytes {
            (base, len, allocated) = (offset, 0, 0);
        }
        let end = len + FRAME;
        if end > allocated && FRAME <= chunk / 4 {
            let target = (end + chunk).min(segment_bytes.max(end));
            if target > end {
                out.push((base, end, target - end, true));
                allocated = target;
            }
        }
        out.push((base, len, FRAME, false));
        allocated = allocated.max(end);
        len = end;
    }
    out
}

/// A write to a segment file: `(segment base, position, len, zeros)`.
type SegmentWrite = (u64, u64, u64, bool);
type FailingLog = cafelog_engine::log::Log<FailingFs, cafelog_engine::clock::ManualClock>;

/// Commits `frames` records one at a time; returns the log, its fs, and the writes to
/// segment files.
fn run(
    dir: &std::path::Path,
    frames: u64,
    chunk: u64,
    segment_bytes: u64,
) -> (FailingLog, FailingFs, Vec<SegmentWrite>) {
    let config = LogConfig {
        codec: Codec::None,
        segment_bytes,
        preallocate_bytes: chunk,
        ..LogConfig::default()
    };
    let (log, fs) = open_failing(dir, config);
    for i in 0..frames {
        let payload = vec![b'a' + (i % 26) as u8; PAYLOAD];
        pollster::block_on(log.commit([(&b"k"[..], payload.as_slice())])).unwrap();
    }
    let writes = segment_writes(&fs);
    (log, fs, writes)
}

fn segment_writes(fs: &FailingFs) -> Vec<SegmentWrite> {
    fs.writes
        .lock()
        .unwrap()
        .iter()
        .filter_map(|w| {
            let base = w.file.strip_suffix(".log")?.parse().ok()?;
            Some((base, w.position, w.len, w.zeros))
        })
        .collect()
}

fn zero_bytes(writes: &[SegmentWrite]) -> u64 {
    writes.iter().filter(|w| w.3).map(|w| w.2).sum()
}

#[test]
fn zeros_go_after_the_frame_that_runs_out_of_space_capped_at_the_segment() {
    // 1024-byte chunks in 1200-byte segments: the second chunk is cut at the segment's
    // end, and the tenth frame rolls.
    let dir = tempfile::tempdir().unwrap();
    let (log, _, writes) = run(dir.path(), 12, 1024, 1200);
    let want = expected(12, 1024, 1200);
    assert!(want.iter().any(|w| w.3 && w.1 + w.2 == 1200), "{want:?}");
    assert!(want.iter().any(|w| w.0 > 0), "the model rolls: {want:?}");
    assert_eq!(writes, want);
    assert_eq!(
        log.metrics().snapshot().bytes_preallocated,
        zero_bytes(&writes)
    );
    // The sealed segment was trimmed to its frames.
    let sealed = std::fs::metadata(dir.path().join(&segment_files(dir.path())[0]))
        .unwrap()
        .len();
    assert_eq!(sealed, 9 * FRAME);
    assert_eq!(read_all(&log, 0).len(), 12);
}

#[test]
fn frames_over_a_quarter_chunk_and_a_zero_chunk_get_no_zeros() {
    for chunk in [4 * FRAME - 1, 0] {
        let dir = tempfile::tempdir().unwrap();
        let (log, _, writes) = run(dir.path(), 5, chunk, 1 << 20);
        assert_eq!(writes, expected(5, chunk, 1 << 20), "chunk {chunk}");
        assert!(writes.iter().all(|w| !w.3), "chunk {chunk}: {writes:?}");
        assert_eq!(log.metrics().snapshot().bytes_preallocated, 0);
    }
    // At exactly a quarter, the frame is preallocated for.
    let dir = tempfile::tempdir().unwrap();
    let (_, _, writes) = run(dir.path(), 5, 4 * FRAME, 1 << 20);
    assert_eq!(writes, expected(5, 4 * FRAME, 1 << 20));
    assert!(writes.iter().any(|w| w.3));
}

#[test]
fn a_failed_preallocation_stops_it_for_the_segment_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        codec: Codec::None,
        preallocate_bytes: 4 * FRAME,
        ..LogConfig::default()
    };
    let (log, fs) = open_failing(dir.path(), config);
    fs.fail_zero_writes.store(true, Ordering::SeqCst);
    for i in 0..10 {
        let payload = vec![b'a' + i as u8; PAYLOAD];
        pollster::block_on(log.commit([(&b"k"[..], payload.as_slice())])).unwrap();
    }
    let writes = segment_writes(&fs);
    let zero_attempts = writes.iter().filter(|w| w.3).count();
    assert_eq!(zero_attempts, 1, "one attempt, then none: {writes:?}");
    assert_eq!(log.metrics().snapshot().bytes_preallocated, 0);
    assert_eq!(read_all(&log, 0).len(), 10);
}
