//! Counters the embedder can read at any time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Live counters of one partition log.
#[derive(Debug, Default)]
pub struct LogMetrics {
    pub frames_written: AtomicU64,
    pub records_written: AtomicU64,
    pub bytes_stored: AtomicU64,
    pub bytes_uncompressed: AtomicU64,
    /// Zero bytes written ahead of frames (segment preallocation).
    pub bytes_preallocated: AtomicU64,
    /// Zero-filled bytes found after the last frame of the segments at open.
    pub zero_tail_bytes_at_open: AtomicU64,
    pub fsyncs: AtomicU64,
    pub commits: AtomicU64,
    pub hwm_persists: AtomicU64,
    pub segments_rolled: AtomicU64,
    /// Frames a read took from disk and decoded, good or bad: misses of the frame cache.
    pub frames_decoded: AtomicU64,
    /// Records skipped at read time (frame CRC failed after open, or envelope unparseable).
    pub records_skipped: AtomicU64,
    /// Acknowledged records recovery gave up (R4 clamp).
    pub recorded_loss_records: AtomicU64,
    /// Recovery truncations: torn tails (R1) and holes above the persisted HWM (R2).
    pub truncations_torn_tail: AtomicU64,
    pub truncations_hole: AtomicU64,
    pub truncated_bytes: AtomicU64,
    /// Records above the recovered HWM at open (the hidden tail).
    pub hidden_records_at_open: AtomicU64,
    /// Retention deletions, reason="age".
    pub retention_segments_deleted: AtomicU64,
    pub retention_bytes_deleted: AtomicU64,
    pub retention_records_deleted: AtomicU64,
    pub poisoned: AtomicBool,
}

/// A copy of [`LogMetrics`] at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    pub frames_written: u64,
    pub records_written: u64,
    pub bytes_stored: u64,
    pub bytes_uncompressed: u64,
    pub bytes_preallocated: u64,
    pub zero_tail_bytes_at_open: u64,
    pub fsyncs: u64,
    pub commits: u64,
    pub hwm_persists: u64,
    pub segments_rolled: u64,
    pub frames_decoded: u64,
    pub records_skipped: u64,
    pub recorded_loss_records: u64,
    pub truncations_torn_tail: u64,
    pub truncations_hole: u64,
    pub truncated_bytes: u64,
    pub hidden_records_at_open: u64,
    pub retention_segments_deleted: u64,
    pub retention_bytes_deleted: u64,
    pub retention_records_deleted: u64,
    pub poisoned: bool,
}

pub(crate) fn add(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

impl LogMetrics {
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MetricsSnapshot {
            frames_written: get(&self.frames_written),
            records_written: get(&self.records_written),
            bytes_stored: get(&self.bytes_stored),
            bytes_uncompressed: get(&self.bytes_uncompressed),
            bytes_preallocated: get(&self.bytes_preallocated),
            zero_tail_bytes_at_open: get(&self.zero_tail_bytes_at_open),
            fsyncs: get(&self.fsyncs),
            commits: get(&self.commits),
            hwm_persists: get(&self.hwm_persists),
            segments_rolled: get(&self.segments_rolled),
            frames_decoded: get(&self.frames_decoded),
            records_skipped: get(&self.records_skipped),
            recorded_loss_records: get(&self.recorded_loss_records),
            truncations_torn_tail: get(&self.truncations_torn_tail),
            truncations_hole: get(&self.truncations_hole),
            truncated_bytes: get(&self.truncated_bytes),
            hidden_records_at_open: get(&self.hidden_records_at_open),
            retention_segments_deleted: get(&self.retention_segments_deleted),
            retention_bytes_deleted: get(&self.retention_bytes_deleted),
            retention_records_deleted: get(&self.retention_records_deleted),
            poisoned: self.poisoned.load(Ordering::Relaxed),
        }
    }
}
