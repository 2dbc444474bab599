//! Read-only access to a partition directory, shared by the inspection commands.
//!
//! Invariants:
//! - every file is opened with [`OpenMode::Read`]; nothing here can change the directory;
//! - memory stays within one frame: records are decoded frame by frame from the scan's
//!   frame index, never by loading a segment;
//! - a frame is re-checked (header against the scan's entry, then CRC) before any of its
//!   bytes are returned, because the file may have changed since the scan: wrong bytes
//!   are never returned, a frame that fails is skipped and counted (DESIGN.md, consume
//!   time).

use super::CliError;
use cafelog_engine::format::envelope;
use cafelog_engine::format::frame::{Codecs, FRAME_HEADER_LEN, FrameHeader, split_records};
use cafelog_engine::fs::{Fs, OpenMode, StdFs, read_exact_at};
use cafelog_engine::recovery::{FrameEntry, PartitionScan, ScanDepth, SegmentScan, scan_partition};
use std::path::Path;

/// Scans `dir` as recovery would, decoding every record (what `verify` reports).
pub fn scan(dir: &Path) -> Result<PartitionScan, CliError> {
    // StdFs futures complete immediately: block_on never parks.
    pollster::block_on(scan_partition(&StdFs, dir, ScanDepth::Records)).map_err(|source| {
        CliError::Io {
            path: dir.to_path_buf(),
            source,
        }
    })
}

/// One record as a consumer would receive it.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub offset: u64,
    pub key: &'a [u8],
    pub committed_at_ms: u64,
    pub payload: &'a [u8],
}

/// Records in the visible range that were not returned, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub offset: u64,
    pub reason: String,
}

/// What [`for_each_visible`] did not return.
#[derive(Clone, Debug, Default)]
pub struct SkipReport {
    /// Total records skipped (unparseable envelopes, or frames that failed a re-check).
    pub count: u64,
    /// The first [`SKIPPED_LISTED_MAX`] of them, for the message on stderr.
    pub first: Vec<Skipped>,
}

/// Bound on the skipped records listed individually (the count is always exact).
pub const SKIPPED_LISTED_MAX: usize = 16;

impl SkipReport {
    fn add(&mut self, offset: u64, count: u64, reason: String) {
        if self.first.len() < SKIPPED_LISTED_MAX {
            self.first.push(Skipped { offset, reason });
        }
        self.count += count;
    }
}

/// Calls `visit` with every record at `from <= offset < scan.hwm()`, in offset order.
/// `visit` may stop the walk by returning an error (e.g. the output pipe closed).
pub fn for_each_visible(
    dir: &Path,
    scan: &PartitionScan,
    from: u64,
    mut visit: impl FnMut(&Record<'_>) -> Result<(), CliError>,
) -> Result<SkipReport, CliError> {
    let hwm = scan.hwm();
    let start = from.max(scan.log_start);
    let mut skipped = SkipReport::default();
    if start >= hwm {
        return Ok(skipped);
    }
    let mut codecs = Codecs::default();
    let mut expected = start;
    for segment in &scan.segments {
        let wanted = |f: &&FrameEntry| f.end_offset() > start && f.base_offset < hwm;
        if !segment.frames.iter().any(|f| wanted(&f)) {
            continue;
        }
        let path = dir.join(&segment.file_name);
        let io_error = |source| CliError::Io {
            path: path.clone(),
            source,
        };
        let file = pollster::block_on(StdFs.open(&path, OpenMode::Read)).map_err(io_error)?;
        for entry in segment.frames.iter().filter(wanted) {
            let frame = match read_frame(&file, segment, entry, &mut codecs) {
                Ok(Ok(frame)) => frame,
                Ok(Err(reason)) => {
                    // start < hwm and the filter make first < last.
                    let first = entry.base_offset.max(start);
                    let last = entry.end_offset().min(hwm);
                    skipped.add(
                        first,
                        last - first,
                        format!("frame at byte {}: {reason}", entry.position),
                    );
                    expected = last;
                    continue;
                }
                Err(source) => return Err(io_error(source)),
            };
            for (index, range) in frame.ranges.iter().enumerate() {
                let offset = entry.base_offset + index as u64;
                if offset < start || offset >= hwm {
                    continue;
                }
                // The scan's entries are contiguous; a gap here is a bug in this walk.
                assert_eq!(offset, expected, "visible records are walked in order");
                expected = offset + 1;
                let bytes = frame.payload.get(range.clone()).unwrap_or_default();
                match envelope::decode(bytes) {
                    Ok(env) => visit(&Record {
                        offset,
                        key: env.key,
                        committed_at_ms: env.committed_at_ms,
                        payload: env.payload,
                    })?,
                    Err(e) => skipped.add(offset, 1, e.to_string()),
                }
            }
        }
    }
    // The scan's frames cover log_start..tail_offset without gaps and hwm <= tail_offset.
    assert_eq!(
        expected, hwm,
        "every visible offset was returned or skipped"
    );
    Ok(skipped)
}

/// A frame's decoded payload and the byte ranges of its records.
struct DecodedFrame {
    payload: Vec<u8>,
    ranges: Vec<std::ops::Range<usize>>,
}

/// Reads the frame the scan indexed at `entry` and checks it again. The outer `Err` is
/// an I/O error; the inner one says why the bytes are no longer that frame.
fn read_frame<F: cafelog_engine::fs::File>(
    file: &F,
    segment: &SegmentScan,
    entry: &FrameEntry,
    codecs: &mut Codecs,
) -> std::io::Result<Result<DecodedFrame, String>> {
    // The scan bounded frame_len by the file length and FRAME_BYTES_MAX, so this
    // allocation is at most one frame.
    let frame_len = usize::try_from(entry.frame_len).unwrap_or(usize::MAX);
    if entry.end_position() > segment.valid_len || frame_len < FRAME_HEADER_LEN {
        return Ok(Err(format!(
            "frame index entry outside the valid extent of {}",
            segment.file_name
        )));
    }
    let mut bytes = vec![0u8; frame_len];
    match pollster::block_on(read_exact_at(file, &mut bytes, entry.position)) {
        Ok(()) => {}
        // The file shrank since the scan: the frame is gone, not an I/O failure.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Ok(Err(
                "the file is shorter than when it was scanned".to_string()
            ));
        }
        Err(e) => return Err(e),
    }
    let (head, stored) = bytes.split_at(FRAME_HEADER_LEN);
    let Ok(head) = <&[u8; FRAME_HEADER_LEN]>::try_from(head) else {
        return Ok(Err("short frame header".to_string()));
    };
    let header = match FrameHeader::parse(head) {
        Ok(h) => h,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if header.base_offset != entry.base_offset
        || header.record_count != entry.record_count
        || header.frame_len() != entry.frame_len
    {
        return Ok(Err("frame header changed since the scan".to_string()));
    }
    if let Err(e) = header.check_crc(stored) {
        return Ok(Err(e.to_string()));
    }
    let payload = match codecs.decode_payload(&header, stored) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e.to_string())),
    };
    match split_records(&payload, header.record_count) {
        Ok(ranges) => Ok(Ok(DecodedFrame { payload, ranges })),
        Err(e) => Ok(Err(e.to_string())),
    }
}
