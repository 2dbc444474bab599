//! The shape of what the engine wrote ([`crate::history::SegmentLayout`]), read off the
//! page cache's image of a partition directory at the end of the run and decoded by the
//! reference decoder, never by the engine's scanner.
//!
//! Invariants:
//! - a segment is summarised from its valid frames only, walked on its own from byte 0
//!   (`damaged` when it stops short of its end at a bad region);
//! - reading draws no dice and lets no simulated time pass (the page cache is read
//!   synchronously).

use crate::fs::SimFs;
use crate::history::{LayoutKnobs, SegmentLayout};
use crate::reference::{self, DirImage, frame};
use cafelog_engine::format::Codec;
use cafelog_engine::log::LogConfig;
use std::path::Path;

/// The knobs of `config` the shape rules use.
pub fn knobs(config: &LogConfig) -> LayoutKnobs {
    LayoutKnobs {
        segment_bytes: config.segment_bytes,
        flush_records: config.flush_records as u64,
        flush_bytes: config.flush_bytes as u64,
        compress_min_bytes: config.compress_min_bytes as u64,
        zstd: config.codec == Codec::Zstd,
    }
}

/// What a zstd topic asks of its raw frames: one of at least `compress_min_bytes` is
/// stored raw only when zstd at the topic's `level` and `hash_log` (0: zstd's own)
/// does not shrink it (storage-engine.md: "codec applied here").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZstdSettings {
    pub level: i32,
    pub hash_log: u32,
    pub compress_min_bytes: u64,
}

impl ZstdSettings {
    /// `None` for a raw topic.
    pub fn of(config: &LogConfig) -> Option<ZstdSettings> {
        (config.codec == Codec::Zstd).then_some(ZstdSettings {
            level: config.zstd_level,
            hash_log: config.zstd_hash_log,
            compress_min_bytes: config.compress_min_bytes as u64,
        })
    }

    /// A compressor at these settings (its output does not depend on what it
    /// compressed before, so one serves every frame of a listing).
    fn compressor(&self) -> zstd::bulk::Compressor<'static> {
        let mut compressor =
            zstd::bulk::Compressor::new(self.level).expect("a level the engine accepted");
        if self.hash_log != 0 {
            compressor
                .set_parameter(zstd::zstd_safe::CParameter::HashLog(self.hash_log))
                .expect("a hash log the engine accepted");
        }
        compressor
    }
}

/// zstd's output length for `payload` from `compressor`, when shorter than `payload`.
fn shrinks(compressor: &mut zstd::bulk::Compressor<'static>, payload: &[u8]) -> Option<u64> {
    let out = compressor.compress(payload).expect("compress in memory");
    (out.len() < payload.len()).then_some(out.len() as u64)
}

/// The segment files of `dir` as the page cache holds them, summarised in offset
/// order; `None` when the directory is not there.
pub fn visible_layout(
    fs: &SimFs,
    dir: &Path,
    zstd: Option<ZstdSettings>,
) -> Option<Vec<SegmentLayout>> {
    super::disk::dir_image(fs, dir, super::disk::Image::Visible)
        .map(|image| summarise(&image, zstd))
}

/// Every segment of `image`, each walked on its own from byte 0, summarised in offset
/// order: damage in one segment hides nothing of the others. With `zstd` (a zstd
/// topic), the first raw frame of each segment that should have been compressed is
/// noted.
pub fn summarise(image: &DirImage, zstd: Option<ZstdSettings>) -> Vec<SegmentLayout> {
    let mut segments: Vec<(u64, &str, &[u8])> = image
        .segments
        .iter()
        .filter_map(|(name, bytes)| {
            Some((
                reference::partition::segment_base(name)?,
                name.as_str(),
                bytes.as_slice(),
            ))
        })
        .collect();
    segments.sort_by_key(|s| s.0);
    let mut out = Vec::new();
    // Made at the first raw frame it must judge.
    let mut compressor = None;
    for (index, &(base, name, bytes)) in segments.iter().enumerate() {
        let next_base = segments.get(index + 1).map(|s| s.0);
        let readable = image.readable(name, bytes);
        let (extent, damaged) = reference::partition::walk_segment(name, base, readable, next_base);
        let mut layout = SegmentLayout {
            base: extent.base_offset,
            end: extent.end_offset,
            file_len: extent.file_len,
            valid_len: extent.valid_len,
            frames: u32::try_from(extent.frames.len()).unwrap_or(u32::MAX),
            first_frame_len: extent.frames.first().map_or(0, |f| f.frame_len),
            records_max: 0,
            multi_record_bytes_max: 0,
            zstd_payload_min: None,
            compressible_raw: None,
            damaged,
            last_committed_ms: extent.frames.last().and_then(|at| {
                let header = frame::header_at(bytes, at.position)?;
                let records = frame::records_at(bytes, at.position, &header)?;
                Some(frame::envelope(records.last()?)?.committed_at_ms)
            }),
        };
        for at in &extent.frames {
            let header = frame::header_at(bytes, at.position)
                .expect("the decoder placed a valid frame here");
            assert_eq!(header.record_count, at.record_count);
            layout.records_max = layout.records_max.max(header.record_count);
            // Each record is stored behind a 4-byte length prefix (FORMAT.md).
            let record_bytes =
                u64::from(header.uncompressed).saturating_sub(4 * u64::from(header.record_count));
            if header.record_count > 1 {
                layout.multi_record_bytes_max = layout.multi_record_bytes_max.max(record_bytes);
            }
            if header.zstd {
                let payload = u64::from(header.uncompressed);
                layout.zstd_payload_min =
                    Some(layout.zstd_payload_min.map_or(payload, |m| m.min(payload)));
            } else if let Some(z) = zstd
                && layout.compressible_raw.is_none()
                && u64::from(header.uncompressed) >= z.compress_min_bytes
            {
                let stored = frame::stored_at(bytes, at.position, &header)
                    .expect("the decoder placed a valid frame here");
                let compressor = compressor.get_or_insert_with(|| z.compressor());
                layout.compressible_raw = shrinks(compressor, stored)
                    .map(|zstd_len| (at.position, u64::from(header.uncompressed), zstd_len));
            }
        }
        assert!(layout.valid_len <= layout.file_len);
        assert_eq!(layout.frames == 0, layout.valid_len == 0);
        out.push(layout);
    }
    out
}
