//! What the engine wrote, in shape: a partition's segment files as the page cache holds
//! them at the end of the run, decoded by the reference decoder and summarised per
//! segment, with the knobs the spec's shape rules are stated in (storage-engine.md:
//! "one frame per drain" of at most `flush_records` records and about `flush_bytes`;
//! "an append that would overflow seals the segment and rolls a new one"). The
//! `layout` checker holds them to those rules.
//!
//! Invariants (of [`SegmentLayout`]):
//! - `valid_len <= file_len`; `frames == 0` exactly when `valid_len == 0`, and then
//!   `first_frame_len == 0`, `records_max == 0`;
//! - `multi_record_bytes_max` and `zstd_payload_min` summarise only valid frames.

use super::Offset;
use serde::{Deserialize, Serialize};

/// The knobs of a partition's topic the shape rules use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutKnobs {
    pub segment_bytes: u64,
    pub flush_records: u64,
    pub flush_bytes: u64,
    /// Payloads shorter than this are stored raw.
    pub compress_min_bytes: u64,
    /// The topic's codec is zstd (else every frame is raw).
    pub zstd: bool,
}

/// One segment file, summarised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentLayout {
    /// The first offset, from its name.
    pub base: Offset,
    /// One past the last offset of its valid frames.
    pub end: Offset,
    pub file_len: u64,
    /// Bytes of its valid frames from byte 0.
    pub valid_len: u64,
    pub frames: u32,
    /// The first frame's length (0 without frames): the frame whose write rolled it.
    pub first_frame_len: u64,
    /// The most records one frame holds.
    pub records_max: u32,
    /// The most record bytes (length prefixes excluded) of a frame of two or more
    /// records.
    pub multi_record_bytes_max: u64,
    /// The fewest payload bytes (before the codec) of a zstd frame.
    pub zstd_payload_min: Option<u64>,
    /// In a zstd topic, the first raw frame of at least `compress_min_bytes` payload
    /// bytes that zstd at the topic's settings shrinks: `(position, payload bytes,
    /// zstd's bytes)`. `None` in histories written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressible_raw: Option<(u64, u64, u64)>,
    /// The decoder stopped inside it (damage): only the frames before are summarised.
    pub damaged: bool,
    /// The commit time of its last record (the last valid frame's; what the engine's
    /// open reads and the reaper ages it by). `None` without frames, and in
    /// histories written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_committed_ms: Option<u64>,
}
