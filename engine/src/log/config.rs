//! The knobs of a partition log, with the spec's defaults.

use crate::format::frame::{Codec, FRAME_BYTES_MAX, ZSTD_HASH_LOG_DEFAULT, ZSTD_LEVEL_DEFAULT};
use std::time::Duration;

/// Default of [`LogConfig::preallocate_bytes`] (1 MiB).
pub const PREALLOCATE_BYTES_DEFAULT: u64 = 1024 * 1024;

/// Default of [`LogConfig::compress_min_bytes`]: a lone record of the bench's JSON-like
/// events (about 200 bytes enveloped, with its length prefix) is stored raw. Measured with
/// callgrind, zstd level 1 spends about 43,000 instructions on such a record (most of it
/// building Huffman and FSE tables for one tiny block) to save about 10% of its payload,
/// while two records already save 36%. A batch-1 commit then costs about 4,700
/// instructions instead of 48,000, for about 10% more bytes on disk per lone record.
/// tikv's raft-engine makes the same trade at 8 KiB.
pub const COMPRESS_MIN_BYTES_DEFAULT: usize = 256;

/// The zstd hash logs a log accepts besides 0 (zstd's own bounds on 64-bit targets).
pub const ZSTD_HASH_LOGS: std::ops::RangeInclusive<u32> = 6..=30;

/// The zstd levels a log accepts: zstd's fast levels (-7..=-1, faster and larger)
/// through its strongest (22). Level 0 would mean zstd's own default (3); it is not
/// accepted, so that a level always says what it does.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = -7..=22;

/// When written frames are fsynced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Every flushed frame is fsynced (and committed) at once.
    PerWrite,
    /// Frames are fsynced on `sync_interval`, `sync_bytes`, segment roll, close and
    /// explicit [`crate::log::Log::sync`].
    Batched,
}

impl std::str::FromStr for FsyncPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-write" | "per_write" => Ok(FsyncPolicy::PerWrite),
            "batched" => Ok(FsyncPolicy::Batched),
            other => Err(format!(
                "unknown fsync policy {other:?} (expected per-write or batched)"
            )),
        }
    }
}

/// Configuration of one partition log. `Default` is the spec's values.
#[derive(Clone, Debug, PartialEq)]
pub struct LogConfig {
    /// Codec for new frames (a frame that would not shrink is stored uncompressed).
    pub codec: Codec,
    pub zstd_level: i32,
    /// zstd's hash table size, as log2 of its entries; 0 leaves it to zstd's table for
    /// the level, as zstd's own parameter does (default 11: see
    /// [`ZSTD_HASH_LOG_DEFAULT`]). It is tuned for level 1: with a higher level, set 0 or
    /// a larger log.
    pub zstd_hash_log: u32,
    /// Frames whose payload (length prefixes included) is shorter than this are stored
    /// with codec `none` even when `codec` is zstd: on a lone small record zstd costs far
    /// more CPU than the few bytes it saves (256; 0 compresses every frame; see
    /// [`COMPRESS_MIN_BYTES_DEFAULT`]).
    pub compress_min_bytes: usize,
    /// Segment cap; an append that would overflow it rolls a new segment (64 MiB).
    pub segment_bytes: u64,
    /// Zero-filled space kept ahead of the active segment's last frame (1 MiB; 0 turns
    /// preallocation off). Small commits then overwrite allocated space, whose
    /// fdatasync needs no inode update. Recovery reads an all-zero tail as the normal
    /// end of a segment; sealing trims it.
    pub preallocate_bytes: u64,
    /// The flusher drains the buffer at this many bytes (1 MiB) ...
    pub flush_bytes: usize,
    /// ... or this many records (1000) ...
    pub flush_records: usize,
    /// ... or when the oldest buffered record is this old (100 ms).
    pub flush_interval: Duration,
    pub fsync: FsyncPolicy,
    /// Batched mode fsyncs written data at least this often (1 s) ...
    pub sync_interval: Duration,
    /// ... or once this many bytes are written but unsynced (8 MiB).
    pub sync_bytes: u64,
    /// How often the in-memory HWM is persisted when it moved (100 ms). This bounds the
    /// hidden tail after a crash, and with it the duplicates a crash can cause.
    pub hwm_persist_interval: Duration,
    /// Sealed segments whose last record is older than this are deleted; `None` keeps all.
    pub retention_ms: Option<u64>,
    /// How often the reaper sweeps (60 s).
    pub reaper_interval: Duration,
    /// Bound on the in-memory buffer; appends beyond it fail with `BufferFull` (64 MiB).
    pub buffer_bytes_max: usize,
    /// Decoded frames kept in the read cache. A frame is kept when the read that
    /// decoded it stopped inside it, or when it is among this many newest frames; a
    /// scan reading older frames whole leaves the cache as it was.
    pub frame_cache_frames: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            codec: Codec::Zstd,
            zstd_level: ZSTD_LEVEL_DEFAULT,
            zstd_hash_log: ZSTD_HASH_LOG_DEFAULT,
            compress_min_bytes: COMPRESS_MIN_BYTES_DEFAULT,
            segment_bytes: 64 * 1024 * 1024,
            preallocate_bytes: PREALLOCATE_BYTES_DEFAULT,
            flush_bytes: 1024 * 1024,
            flush_records: 1000,
            flush_interval: Duration::from_millis(100),
            fsync: FsyncPolicy::Batched,
            sync_interval: Duration::from_secs(1),
            sync_bytes: 8 * 1024 * 1024,
            hwm_persist_interval: Duration::from_millis(100),
            retention_ms: None,
            reaper_interval: Duration::from_secs(60),
            buffer_bytes_max: 64 * 1024 * 1024,
            frame_cache_frames: 64,
        }
    }
}

impl LogConfig {
    /// Checks every knob's range.
    pub fn validate(&self) -> Result<(), String> {
        let nonzero = |name: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(format!("{name} must be positive"))
            }
        };
        nonzero("segment_bytes", self.segment_bytes > 0)?;
        nonzero("flush_bytes", self.flush_bytes > 0)?;
        nonzero("flush_records", self.flush_records > 0)?;
        nonzero("flush_interval", !self.flush_interval.is_zero())?;
        nonzero("sync_interval", !self.sync_interval.is_zero())?;
        nonzero("sync_bytes", self.sync_bytes > 0)?;
        nonzero("hwm_persist_interval", !self.hwm_persist_interval.is_zero())?;
        nonzero("reaper_interval", !self.reaper_interval.is_zero())?;
        nonzero("frame_cache_frames", self.frame_cache_frames > 0)?;
        if self.flush_bytes as u64 > u64::from(FRAME_BYTES_MAX) / 2 {
            return Err(format!(
                "flush_bytes {} must be at most half the frame bound {FRAME_BYTES_MAX}",
                self.flush_bytes
            ));
        }
        if self.flush_records > i32::MAX as usize {
            return Err("flush_records must fit a frame's int32 record count".into());
        }
        if self.buffer_bytes_max < self.flush_bytes {
            return Err("buffer_bytes_max must be at least flush_bytes".into());
        }
        if !ZSTD_LEVELS.contains(&self.zstd_level) || self.zstd_level == 0 {
            return Err(format!(
                "zstd_level {} outside {}..={} (0 is not accepted)",
                self.zstd_level,
                ZSTD_LEVELS.start(),
                ZSTD_LEVELS.end()
            ));
        }
        if self.zstd_hash_log != 0 && !ZSTD_HASH_LOGS.contains(&self.zstd_hash_log) {
            return Err(format!(
                "zstd_hash_log {} outside {}..={} (0: zstd's own for the level)",
                self.zstd_hash_log,
                ZSTD_HASH_LOGS.start(),
                ZSTD_HASH_LOGS.end()
            ));
        }
        Ok(())
    }

    /// The largest record (enveloped) an append accepts: one record must fit a frame.
    pub fn record_bytes_max(&self) -> usize {
        (FRAME_BYTES_MAX as usize / 2).min(self.buffer_bytes_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_hash_logs_within_zstds_bounds_are_accepted() {
        let with = |zstd_hash_log| LogConfig {
            zstd_hash_log,
            ..LogConfig::default()
        };
        for log in [0, 6, 11, 30] {
            assert_eq!(with(log).validate(), Ok(()), "hash log {log}");
        }
        for log in [1, 5, 31] {
            let error = with(log).validate().expect_err("rejected");
            assert!(error.contains("zstd_hash_log"), "{error}");
        }
    }

    #[test]
    fn a_flush_buffer_up_to_half_the_frame_bound_is_accepted() {
        let half = FRAME_BYTES_MAX as usize / 2;
        let with = |flush_bytes| LogConfig {
            flush_bytes,
            buffer_bytes_max: 2 * half,
            ..LogConfig::default()
        };
        assert_eq!(with(half).validate(), Ok(()));
        let error = with(half + 1).validate().expect_err("rejected");
        assert!(error.contains("flush_bytes"), "{error}");
    }

    #[test]
    fn zstd_levels_from_the_fast_ones_to_22_are_accepted_and_0_is_not() {
        let with = |zstd_level| LogConfig {
            zstd_level,
            ..LogConfig::default()
        };
        for level in [-7, -3, -1, 1, 3, 22] {
            assert_eq!(with(level).validate(), Ok(()), "level {level}");
        }
        for level in [-8, 0, 23] {
            let error = with(level).validate().expect_err("rejected");
            assert!(error.contains("zstd_level"), "{error}");
        }
    }
}
