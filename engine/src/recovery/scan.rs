//! The recovery scanner: from a partition's segment files and persisted HWM to a
//! [`PartitionScan`], the plan recovery carries out (rules R1-R4 of DESIGN.md).
//!
//! Invariants:
//! - frames are contiguous: each frame's base offset is the previous frame's end, and a
//!   segment's name is its first frame's base offset; a CRC-valid frame at the wrong
//!   offset is corruption;
//! - the scan reads through [`SegmentReader`], so memory stays within one window or one
//!   frame (at most `FRAME_BYTES_MAX`), whatever the headers claim;
//! - the scan only reads; [`crate::recovery::apply`] performs the truncations;
//! - `hwm = min(persisted, tail)`; `recorded_loss = persisted - hwm` when positive.

use super::reader::SegmentReader;
use crate::format::frame::{Codecs, FrameHeader, split_records};
use crate::format::{envelope, layout, word};
use crate::fs::{File, Fs, OpenMode, read_exact_at};
use std::fmt;
use std::io;
use std::path::Path;

/// How deep the scan looks inside valid frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanDepth {
    /// Check every frame's CRC; decode only each segment's last frame (for its commit
    /// time). What opening a log needs.
    Frames,
    /// Also decode every frame and parse every envelope, counting unparseable records.
    /// What `verify` reports.
    Records,
}

/// One valid frame's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameEntry {
    pub position: u64,
    pub base_offset: u64,
    pub record_count: u32,
    pub frame_len: u64,
}

impl FrameEntry {
    pub fn end_offset(&self) -> u64 {
        self.base_offset + u64::from(self.record_count)
    }
    pub fn end_position(&self) -> u64 {
        self.position + self.frame_len
    }
}

/// The valid extent of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentScan {
    pub file_name: String,
    pub base_offset: u64,
    /// Length of the file before recovery.
    pub file_len: u64,
    /// Bytes of valid frames from the start of the file.
    pub valid_len: u64,
    /// Zero bytes after the last valid frame, up to the end of the file: space the
    /// writer preallocated and had not used yet. The normal end of the segment, not a
    /// torn tail (a frame starts with its magic, so it is never all zeros).
    pub zero_tail: u64,
    /// Bytes after the last valid frame of a sealed segment that are neither zeros nor a
    /// frame, when the next segment starts at this one's end offset (so nothing is
    /// missing): damaged preallocated space. Trimmed at open like a zero tail.
    pub junk_tail: u64,
    /// Why the junk tail is not a frame.
    pub junk_reason: Option<String>,
    /// One past the last valid record's offset.
    pub end_offset: u64,
    pub frames: Vec<FrameEntry>,
    /// Commit time of the last record whose envelope parses, if any.
    pub last_committed_at_ms: Option<u64>,
}

/// Which rule truncates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TruncationRule {
    /// R1: nothing valid follows the bad region.
    TornTail,
    /// R2: something valid follows, but the bad frame starts at or above the persisted HWM.
    HoleAboveHwm,
}

/// What recovery cuts away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truncation {
    pub rule: TruncationRule,
    /// The segment truncated, and the position it is truncated to.
    pub segment: String,
    pub position: u64,
    /// Offset of the first record discarded.
    pub offset: u64,
    pub reason: String,
    /// Later segments removed whole.
    pub removed_segments: Vec<String>,
    /// Bytes discarded in all (the truncated part plus removed segments).
    pub bytes: u64,
}

/// Why recovery refuses to open (R3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// File name inside the partition directory.
    pub segment: String,
    /// Byte position in that file.
    pub position: u64,
    pub reason: String,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {}: {}",
            self.segment, self.position, self.reason
        )
    }
}

impl std::error::Error for Corruption {}

/// The result of scanning a partition: the recovery plan and what it reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionScan {
    /// Segments kept, with their valid extents.
    pub segments: Vec<SegmentScan>,
    /// The value in the `hwm` file; `None` when the file is absent (or empty).
    pub persisted_hwm: Option<u64>,
    /// The first offset still on disk.
    pub log_start: u64,
    /// One past the last record in the valid extent.
    pub tail_offset: u64,
    pub truncation: Option<Truncation>,
    /// Set when recovery must refuse to open (R3).
    pub corruption: Option<Corruption>,
    /// Offsets of records inside valid frames whose envelope does not parse
    /// (only with [`ScanDepth::Records`]).
    pub unparseable: Vec<u64>,
    /// Commit time of the last record in the valid extent.
    pub last_committed_at_ms: Option<u64>,
}

impl PartitionScan {
    /// The HWM after the clamp (R4).
    pub fn hwm(&self) -> u64 {
        self.persisted_hwm
            .unwrap_or(0)
            .min(self.tail_offset)
            .max(self.log_start.min(self.tail_offset))
    }

    /// Acknowledged records the clamp gave up (R4).
    pub fn recorded_loss_records(&self) -> u64 {
        self.persisted_hwm.unwrap_or(0).saturating_sub(self.hwm())
    }

    /// Records in the valid extent above the HWM.
    pub fn hidden_records(&self) -> u64 {
        self.tail_offset - self.hwm()
    }

    /// Bytes recovery would cut away.
    pub fn torn_tail_bytes(&self) -> u64 {
        self.truncation.as_ref().map_or(0, |t| t.bytes)
    }

    /// Unparseable records below the HWM: the ones a consumer would see skipped.
    pub fn skipped_records(&self) -> u64 {
        let hwm = self.hwm();
        self.unparseable.iter().filter(|o| **o < hwm).count() as u64
    }

    pub fn frames(&self) -> u64 {
        self.segments.iter().map(|s| s.frames.len() as u64).sum()
    }

    /// Zero-filled (preallocated, unused) bytes after the last frame of each segment.
    pub fn zero_tail_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.zero_tail).sum()
    }

    /// Damaged preallocated bytes after the last frame of sealed segments (see
    /// [`SegmentScan::junk_tail`]).
    pub fn junk_tail_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.junk_tail).sum()
    }

    /// Records in the valid extent.
    pub fn records(&self) -> u64 {
        self.tail_offset - self.log_start
    }

    /// `Err` when recovery must refuse to open.
    pub fn check(&self) -> Result<(), Corruption> {
        self.corruption.clone().map_or(Ok(()), Err)
    }
}

/// Where the valid extent of the log stops.
struct BadRegion {
    segment_index: usize,
    position: u64,
    offset: u64,
    reason: String,
}

/// Reads the `hwm` file: `None` when absent or empty, an error when malformed.
pub async fn read_word_file<F: Fs>(fs: &F, path: &Path) -> io::Result<Result<Option<u64>, String>> {
    read_word(fs, path, true).await
}

/// Reads a word file that only ever appears by renaming a fsynced temp file
/// (`consumer.offset`): `None` when absent, an error when malformed or empty (an empty
/// one means the temp file's fsync was lost, which must be reported, not read as
/// absent).
pub async fn read_replaced_word_file<F: Fs>(
    fs: &F,
    path: &Path,
) -> io::Result<Result<Option<u64>, String>> {
    read_word(fs, path, false).await
}

async fn read_word<F: Fs>(
    fs: &F,
    path: &Path,
    empty_is_absent: bool,
) -> io::Result<Result<Option<u64>, String>> {
    if !fs.exists(path).await? {
        return Ok(Ok(None));
    }
    let file = fs.open(path, OpenMode::Read).await?;
    let len = file.len().await?;
    if len == 0 && empty_is_absent {
        return Ok(Ok(None));
    }
    if len != word::WORD_FILE_LEN as u64 {
        return Ok(Err(format!(
            "{len} bytes, expected {}",
            word::WORD_FILE_LEN
        )));
    }
    let mut bytes = [0u8; word::WORD_FILE_LEN];
    read_exact_at(&file, &mut bytes, 0).await?;
    Ok(Ok(word::decode(&bytes)))
}

/// Scans the partition in `dir` without changing it.
pub async fn scan_partition<F: Fs>(
    fs: &F,
    dir: &Path,
    depth: ScanDepth,
) -> io::Result<PartitionScan> {
    let names: Vec<(u64, String)> = fs
        .list_dir(dir)
        .await?
        .into_iter()
        .filter_map(|name| layout::parse_segment_file_name(&name).map(|base| (base, name)))
        .collect();
    let persisted = read_word_file(fs, &dir.join(layout::HWM_FILE)).await?;
    let mut scan = PartitionScan {
        segments: Vec::new(),
        persisted_hwm: None,
        log_start: names.first().map_or(0, |(base, _)| *base),
        tail_offset: 0,
        truncation: None,
        corruption: None,
        unparseable: Vec::new(),
        last_committed_at_ms: None,
    };
    scan.tail_offset = scan.log_start;
    match persisted {
        Ok(p) => scan.persisted_hwm = p,
        Err(reason) => {
            scan.corruption = Some(Corruption {
                segment: layout::HWM_FILE.to_string(),
                position: 0,
                reason: format!("malformed hwm file: {reason}"),
            });
        }
    }

    let mut codecs = Codecs::default();
    let mut expected = scan.log_start;
    let mut bad: Option<BadRegion> = None;
    for (index, (base, name)) in names.iter().enumerate() {
        if *base != expected {
            let previous = scan.segments.last();
            bad = Some(BadRegion {
                segment_index: index.saturating_sub(1),
                position: previous.map_or(0, |s| s.valid_len),
                offset: expected,
                reason: format!("segment {name} starts at offset {base}, expected {expected}"),
            });
            break;
        }
        let (segment, segment_bad) = scan_segment(
            fs,
            dir,
            (index, *base, name),
            names.get(index + 1).map(|(base, _)| *base),
            depth,
            &mut codecs,
            &mut scan.unparseable,
        )
        .await?;
        bad = segment_bad;
        expected = segment.end_offset;
        if segment.last_committed_at_ms.is_some() {
            scan.last_committed_at_ms = segment.last_committed_at_ms;
        }
        scan.segments.push(segment);
        if bad.is_some() {
            break;
        }
    }
    scan.tail_offset = expected;

    if let Some(bad) = bad {
        decide(fs, dir, &names, &mut scan, bad).await?;
    }
    scan.assert_consistent();
    Ok(scan)
}

/// Scans one segment file, `(index, base, name)` in the partition's list, frame by
/// frame from its start: every frame that checks (and, at [`ScanDepth::Records`],
/// decodes) joins the segment; the scan stops at the first that does not (the bad
/// region it returns), at a zero tail, or at junk after the last frame of a segment
/// whose successor starts where its frames end. Unparseable records go to
/// `unparseable`.
async fn scan_segment<F: Fs>(
    fs: &F,
    dir: &Path,
    (index, base, name): (usize, u64, &str),
    next_base: Option<u64>,
    depth: ScanDepth,
    codecs: &mut Codecs,
    unparseable: &mut Vec<u64>,
) -> io::Result<(SegmentScan, Option<BadRegion>)> {
    let mut bad: Option<BadRegion> = None;
    let file = fs.open(&dir.join(name), OpenMode::Read).await?;
    let file_len = file.len().await?;
    let mut reader = SegmentReader::new(&file, file_len);
    let mut segment = SegmentScan {
        file_name: name.to_string(),
        base_offset: base,
        file_len,
        valid_len: 0,
        zero_tail: 0,
        junk_tail: 0,
        junk_reason: None,
        end_offset: base,
        frames: Vec::new(),
        last_committed_at_ms: None,
    };
    let mut last_frame: Option<(FrameHeader, Vec<u8>)> = None;
    while segment.valid_len < file_len {
        let position = segment.valid_len;
        let frame = match reader.probe(position).await? {
            Ok(frame) if frame.header.base_offset == segment.end_offset => frame,
            Ok(frame) => {
                bad = Some(BadRegion {
                    segment_index: index,
                    position,
                    offset: segment.end_offset,
                    reason: format!(
                        "frame has base offset {}, expected {}",
                        frame.header.base_offset, segment.end_offset
                    ),
                });
                break;
            }
            Err(_) if reader.zero_from(position).await? => {
                segment.zero_tail = file_len - position;
                break;
            }
            // Not zeros, but after the last frame of a segment whose successor starts
            // exactly where its frames end, with no valid frame further in: a flip in
            // preallocated space a crash kept from being trimmed. Offset continuity
            // proves no record is missing, so this is no bad region (which R3 would
            // refuse below the HWM, or R2 would cut with every later segment).
            Err(e)
                if next_base == Some(segment.end_offset)
                    && reader.hunt(position).await?.is_none() =>
            {
                segment.junk_tail = file_len - position;
                segment.junk_reason = Some(e.to_string());
                break;
            }
            Err(e) => {
                bad = Some(BadRegion {
                    segment_index: index,
                    position,
                    offset: segment.end_offset,
                    reason: e.to_string(),
                });
                break;
            }
        };
        let decoded = match depth {
            ScanDepth::Records => decode_frame(codecs, &frame.header, &frame.stored),
            ScanDepth::Frames => Ok(None),
        };
        match decoded {
            Ok(Some(records)) => {
                unparseable.extend(records.unparseable);
                segment.last_committed_at_ms = records
                    .last_committed_at_ms
                    .or(segment.last_committed_at_ms);
            }
            Ok(None) => {}
            Err(reason) => {
                bad = Some(BadRegion {
                    segment_index: index,
                    position,
                    offset: segment.end_offset,
                    reason,
                });
                break;
            }
        }
        segment.frames.push(FrameEntry {
            position,
            base_offset: frame.header.base_offset,
            record_count: frame.header.record_count,
            frame_len: frame.header.frame_len(),
        });
        segment.valid_len += frame.header.frame_len();
        segment.end_offset = frame.header.end_offset();
        last_frame = Some((frame.header, frame.stored));
    }
    if depth == ScanDepth::Frames
        && let Some((header, stored)) = &last_frame
        && let Some(last_bad) = decode_last_frame(codecs, header, stored, index, &mut segment)
    {
        bad = Some(last_bad);
    }
    Ok((segment, bad))
}

/// At [`ScanDepth::Frames`], decodes the segment's last frame for its commit time, which
/// continues the clock after a restart. A last frame that does not decode leaves the
/// segment (with its tails) and is the bad region returned.
fn decode_last_frame(
    codecs: &mut Codecs,
    header: &FrameHeader,
    stored: &[u8],
    index: usize,
    segment: &mut SegmentScan,
) -> Option<BadRegion> {
    match decode_frame(codecs, header, stored) {
        Ok(Some(records)) => {
            segment.last_committed_at_ms = records.last_committed_at_ms;
            None
        }
        Ok(None) => None,
        Err(reason) => {
            let entry = segment.frames.pop().expect("last frame was pushed");
            segment.valid_len = entry.position;
            segment.zero_tail = 0;
            segment.junk_tail = 0;
            segment.junk_reason = None;
            segment.end_offset = entry.base_offset;
            Some(BadRegion {
                segment_index: index,
                position: entry.position,
                offset: entry.base_offset,
                reason,
            })
        }
    }
}

/// Applies R1-R3 to the first bad region.
async fn decide<F: Fs>(
    fs: &F,
    dir: &Path,
    names: &[(u64, String)],
    scan: &mut PartitionScan,
    bad: BadRegion,
) -> io::Result<()> {
    let follows = valid_frame_follows(fs, dir, names, &bad).await?;
    let persisted = scan.persisted_hwm.unwrap_or(0);
    let segment = names
        .get(bad.segment_index)
        .map_or_else(String::new, |(_, n)| n.clone());
    if follows && bad.offset < persisted {
        // R3: acknowledged data below the persisted HWM is damaged and valid data
        // follows; truncating would destroy acknowledged records and regress offsets.
        scan.corruption.get_or_insert(Corruption {
            segment,
            position: bad.position,
            reason: format!(
                "{} (at offset {}, below the persisted HWM {persisted}; valid frames follow)",
                bad.reason, bad.offset
            ),
        });
        return Ok(());
    }
    let rule = if follows {
        TruncationRule::HoleAboveHwm
    } else {
        TruncationRule::TornTail
    };
    let mut bytes = scan
        .segments
        .get(bad.segment_index)
        .map_or(0, |s| s.file_len - bad.position);
    let mut removed_segments = Vec::new();
    for (_, name) in names.iter().skip(bad.segment_index + 1) {
        let file = fs.open(&dir.join(name), OpenMode::Read).await?;
        bytes += file.len().await?;
        removed_segments.push(name.clone());
    }
    scan.truncation = Some(Truncation {
        rule,
        segment,
        position: bad.position,
        offset: bad.offset,
        reason: bad.reason,
        removed_segments,
        bytes,
    });
    Ok(())
}

/// Whether any CRC-valid frame starts after the bad region (in its segment or later).
async fn valid_frame_follows<F: Fs>(
    fs: &F,
    dir: &Path,
    names: &[(u64, String)],
    bad: &BadRegion,
) -> io::Result<bool> {
    for (index, (_, name)) in names.iter().enumerate().skip(bad.segment_index) {
        let file = fs.open(&dir.join(name), OpenMode::Read).await?;
        let file_len = file.len().await?;
        let mut reader = SegmentReader::new(&file, file_len);
        let found = if index == bad.segment_index {
            reader.hunt(bad.position).await?
        } else if reader.probe(0).await?.is_ok() {
            Some(0)
        } else {
            reader.hunt(0).await?
        };
        if found.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

struct DecodedFrame {
    unparseable: Vec<u64>,
    last_committed_at_ms: Option<u64>,
}

/// Decodes a CRC-valid frame. `Err` when the payload does not decode into exactly its
/// records (the frame is bad); unparseable envelopes are reported, not errors.
fn decode_frame(
    codecs: &mut Codecs,
    header: &FrameHeader,
    stored: &[u8],
) -> Result<Option<DecodedFrame>, String> {
    let payload = codecs
        .decode_payload(header, stored)
        .map_err(|e| e.to_string())?;
    let ranges = split_records(&payload, header.record_count).map_err(|e| e.to_string())?;
    let mut decoded = DecodedFrame {
        unparseable: Vec::new(),
        last_committed_at_ms: None,
    };
    for (index, range) in ranges.into_iter().enumerate() {
        match envelope::decode(payload.get(range).unwrap_or_default()) {
            Ok(env) => decoded.last_committed_at_ms = Some(env.committed_at_ms),
            Err(_) => decoded.unparseable.push(header.base_offset + index as u64),
        }
    }
    Ok(Some(decoded))
}
