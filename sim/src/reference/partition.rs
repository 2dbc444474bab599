//! A partition directory's images decoded as FORMAT.md states it ("Partition
//! directory", "`hwm`", "Recovery, rules R1-R4", "Zero tail"): the valid extent, the
//! first bad region, whether a valid frame follows it, and so what an open must do.
//!
//! Invariants:
//! - the valid extent is contiguous: each kept frame starts at its segment's running end
//!   offset, and each segment's name is the previous one's end offset;
//! - `log_start <= hwm() <= tail_offset`;
//! - decoding reads only the images it is given; it never touches a file.

use super::frame::{self, Readable};
use std::collections::BTreeMap;
use std::ops::Range;

/// The byte images of one partition directory.
#[derive(Clone, Debug, Default)]
pub struct DirImage {
    /// `(file name, bytes)` of every `%020d.log` file, any order.
    pub segments: Vec<(String, Vec<u8>)>,
    /// The `hwm` file, `None` when absent.
    pub hwm: Option<Vec<u8>>,
    /// By segment file name, the byte ranges a read of it fails on (shown in its bytes
    /// as fill); a name not listed reads whole.
    pub unreadable: BTreeMap<String, Vec<Range<u64>>>,
}

impl DirImage {
    /// The segment `name` holding `bytes`, as a reader gets it.
    pub fn readable<'a>(&'a self, name: &str, bytes: &'a [u8]) -> Readable<'a> {
        self.unreadable
            .get(name)
            .map_or(Readable::whole(bytes), |r| Readable::new(bytes, r))
    }
}

/// One kept frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameAt {
    pub position: u64,
    pub base_offset: u64,
    pub record_count: u32,
    pub frame_len: u64,
}

impl FrameAt {
    pub fn end_offset(&self) -> u64 {
        self.base_offset + u64::from(self.record_count)
    }

    pub fn holds_position(&self, position: u64) -> bool {
        self.position <= position && position < self.position + self.frame_len
    }
}

/// One segment's valid extent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub name: String,
    pub base_offset: u64,
    pub file_len: u64,
    pub valid_len: u64,
    pub end_offset: u64,
    pub frames: Vec<FrameAt>,
    /// All-zero bytes after the last frame (preallocated space).
    pub zero_tail: u64,
    /// Damaged unused bytes after the last frame of a sealed segment whose successor
    /// continues its offsets.
    pub junk_tail: u64,
}

/// Where the valid extent stops short of the files' end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRegion {
    pub segment: String,
    pub position: u64,
    /// The offset the bad frame should have started.
    pub offset: u64,
    /// A valid frame starts after it (in that segment or a later one).
    pub follows: bool,
}

/// What opening must do, by FORMAT.md's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Nothing to cut.
    Clean,
    /// R1: truncate a torn tail.
    TornTail,
    /// R2: truncate at a hole at or above the persisted HWM.
    Hole,
    /// R3: refuse (damage below the persisted HWM with valid frames after it, or a
    /// malformed `hwm` file).
    Refuse,
}

/// The decoded directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The `hwm` value; `None` when absent or empty.
    pub persisted_hwm: Option<u64>,
    /// The `hwm` file has a length other than 0 or 8.
    pub hwm_malformed: bool,
    pub log_start: u64,
    pub tail_offset: u64,
    /// Segments up to and including the one with the bad region.
    pub extents: Vec<Extent>,
    pub bad: Option<BadRegion>,
    /// Commit time of the last parsable record of the last extent's last frame.
    pub last_committed_at_ms: Option<u64>,
}

impl Decoded {
    pub fn rule(&self) -> Rule {
        let persisted = self.persisted_hwm.unwrap_or(0);
        match &self.bad {
            _ if self.hwm_malformed => Rule::Refuse,
            None => Rule::Clean,
            Some(bad) if bad.follows && bad.offset < persisted => Rule::Refuse,
            Some(bad) if bad.follows => Rule::Hole,
            Some(_) => Rule::TornTail,
        }
    }

    /// R4: `min(P, tail)`, and at least the log start.
    pub fn hwm(&self) -> u64 {
        let tail = self.tail_offset;
        self.persisted_hwm
            .unwrap_or(0)
            .min(tail)
            .max(self.log_start.min(tail))
    }

    /// `P - hwm()` when positive: the loss an open must record.
    pub fn recorded_loss(&self) -> u64 {
        self.persisted_hwm.unwrap_or(0).saturating_sub(self.hwm())
    }

    /// Records in the valid extent above the HWM.
    pub fn hidden(&self) -> u64 {
        self.tail_offset - self.hwm()
    }

    /// The kept frame holding byte `position` of segment `name`.
    pub fn frame_holding(&self, name: &str, position: u64) -> Option<FrameAt> {
        self.extents
            .iter()
            .find(|e| e.name == name)?
            .frames
            .iter()
            .copied()
            .find(|f| f.holds_position(position))
    }
}

/// The base offset a segment file name carries: exactly 20 digits and `.log`.
pub fn segment_base(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The base offset of the segment file a path names (see [`segment_base`]).
pub fn segment_base_of_path(path: &str) -> Option<u64> {
    segment_base(std::path::Path::new(path).file_name()?.to_str()?)
}

/// The `hwm` word: `Ok(None)` for an absent or empty file, `Err(len)` for a file of
/// another length than 8 bytes.
pub fn hwm_word(bytes: Option<&[u8]>) -> Result<Option<u64>, usize> {
    match bytes {
        None | Some([]) => Ok(None),
        Some(b) => <[u8; 8]>::try_from(b)
            .map(|w| Some(u64::from_be_bytes(w)))
            .map_err(|_| b.len()),
    }
}

/// The segment files of `dir` as `(base, name, image)`, in base order; other names
/// are left out.
fn sorted_segments(dir: &DirImage) -> Vec<(u64, &str, Readable<'_>)> {
    let mut segments: Vec<(u64, &str, Readable<'_>)> = dir
        .segments
        .iter()
        .filter_map(|(name, bytes)| {
            Some((
                segment_base(name)?,
                name.as_str(),
                dir.readable(name, bytes),
            ))
        })
        .collect();
    segments.sort_by_key(|s| s.0);
    segments
}

/// Decodes the directory.
pub fn decode(dir: &DirImage) -> Decoded {
    let segments = sorted_segments(dir);
    let (persisted_hwm, hwm_malformed) = match hwm_word(dir.hwm.as_deref()) {
        Ok(value) => (value, false),
        Err(_) => (None, true),
    };
    let log_start = segments.first().map_or(0, |s| s.0);
    let mut decoded = Decoded {
        persisted_hwm,
        hwm_malformed,
        log_start,
        tail_offset: log_start,
        extents: Vec::new(),
        bad: None,
        last_committed_at_ms: None,
    };
    let mut expected = log_start;
    let mut bad: Option<(usize, u64, u64)> = None;
    for (index, &(base, name, image)) in segments.iter().enumerate() {
        if base != expected {
            let previous = decoded.extents.last().map_or(0, |e| e.valid_len);
            bad = Some((index.saturating_sub(1), previous, expected));
            break;
        }
        let next_base = segments.get(index + 1).map(|s| s.0);
        let (extent, bad_at) = walk(name, base, image, next_base);
        expected = extent.end_offset;
        if let Some(at) = extent_last_time(image.bytes, &extent) {
            decoded.last_committed_at_ms = Some(at);
        }
        decoded.extents.push(extent);
        if let Some((position, offset)) = bad_at {
            bad = Some((index, position, offset));
            break;
        }
    }
    decoded.tail_offset = expected;
    if let Some((index, position, offset)) = bad {
        let follows = follows(&segments, index, position);
        decoded.bad = Some(BadRegion {
            segment: segments
                .get(index)
                .map_or_else(String::new, |s| s.1.to_owned()),
            position,
            offset,
            follows,
        });
    }
    debug_assert!(decoded.log_start <= decoded.hwm() && decoded.hwm() <= decoded.tail_offset);
    decoded
}

/// One segment's frames from byte 0, on its own (whatever the segments before it
/// hold): its extent, and whether it stops short at a bad region. `next_base` is the
/// next segment's name, which lets damage after the last frame of a sealed segment
/// count as a junk tail, as in [`decode`].
pub fn walk_segment(
    name: &str,
    base: u64,
    image: Readable<'_>,
    next_base: Option<u64>,
) -> (Extent, bool) {
    let (extent, bad) = walk(name, base, image, next_base);
    (extent, bad.is_some())
}

/// One segment's frames from byte 0: the extent, and the bad region `(position,
/// offset)` where it stops short, if it does.
fn walk(
    name: &str,
    base: u64,
    readable: Readable<'_>,
    next_base: Option<u64>,
) -> (Extent, Option<(u64, u64)>) {
    let image = readable.bytes;
    let file_len = image.len() as u64;
    let mut extent = Extent {
        name: name.to_owned(),
        base_offset: base,
        file_len,
        valid_len: 0,
        end_offset: base,
        frames: Vec::new(),
        zero_tail: 0,
        junk_tail: 0,
    };
    let mut bad = None;
    while extent.valid_len < file_len {
        let at = extent.valid_len;
        match readable.valid_at(at) {
            Some(h) if h.base_offset == extent.end_offset => {
                extent.frames.push(FrameAt {
                    position: at,
                    base_offset: h.base_offset,
                    record_count: h.record_count,
                    frame_len: h.frame_len(),
                });
                extent.valid_len += h.frame_len();
                extent.end_offset = h.end_offset();
            }
            // A valid frame at the wrong offset (a misdirected write) is bad.
            Some(_) => {
                bad = Some((at, extent.end_offset));
                break;
            }
            None if image.get(at as usize..).is_some_and(all_zero) => {
                extent.zero_tail = file_len - at;
                break;
            }
            None if next_base == Some(extent.end_offset) && readable.hunt(at).is_none() => {
                extent.junk_tail = file_len - at;
                break;
            }
            None => {
                bad = Some((at, extent.end_offset));
                break;
            }
        }
    }
    // The last frame's payload must decode (its commit time continues the clock).
    if let Some(last) = extent.frames.last().copied()
        && frame::header_at(image, last.position)
            .and_then(|h| frame::records_at(image, last.position, &h))
            .is_none()
    {
        extent.frames.pop();
        extent.valid_len = last.position;
        extent.end_offset = last.base_offset;
        extent.zero_tail = 0;
        extent.junk_tail = 0;
        bad = Some((last.position, last.base_offset));
    }
    (extent, bad)
}

/// One record a segment image holds: its offset, the commit time its envelope carries,
/// and its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldRecord {
    pub offset: u64,
    pub committed_at_ms: u64,
    pub payload: Vec<u8>,
}

/// Every record of the segment `name` (first offset `base`) in its valid extent from
/// byte 0, in offset order: what a reader of the file could have had. Records whose
/// envelope does not parse are left out (a reader skips them).
pub fn held_records(name: &str, base: u64, image: Readable<'_>) -> Vec<HeldRecord> {
    held_records_in(name, base, image, 0..u64::MAX)
}

/// [`held_records`] at offsets in `range` only: frames wholly outside it are not
/// decoded (the same records, in the same order, as filtering the whole segment's).
pub fn held_records_in(
    name: &str,
    base: u64,
    readable: Readable<'_>,
    range: Range<u64>,
) -> Vec<HeldRecord> {
    let (extent, _) = walk(name, base, readable, None);
    let image = readable.bytes;
    let mut out = Vec::new();
    for f in &extent.frames {
        if let Some(header) = frame::header_at(image, f.position) {
            let end = header
                .base_offset
                .saturating_add(u64::from(header.record_count));
            if header.base_offset < range.end && range.start < end {
                push_records(image, f.position, &header, &mut out);
            }
        }
    }
    out.retain(|r| range.contains(&r.offset));
    out
}

/// Appends the records of the frame `header` at `at` whose envelopes parse; none when
/// its payload does not decode (a CRC-valid frame a reader skips).
fn push_records(image: &[u8], at: u64, header: &frame::Header, out: &mut Vec<HeldRecord>) {
    let Some(records) = frame::records_at(image, at, header) else {
        return;
    };
    for (offset, record) in (header.base_offset..).zip(&records) {
        if let Some(e) = frame::envelope(record) {
            out.push(HeldRecord {
                offset,
                committed_at_ms: e.committed_at_ms,
                payload: e.payload.to_vec(),
            });
        }
    }
}

/// The records an R2 cut at `bad` discards that a reader could still read: every
/// CRC-valid frame that decodes, found past the bad position (by the hunt) in its
/// segment and from the start of every later segment, whose base offset is at or past
/// the cut (a frame naming a lower offset is a stray, whose records the log holds below
/// the cut), with the records whose envelopes parse. What an open's R2 salvage is
/// offered, read independently of the engine's recovery.
pub fn past_hole(dir: &DirImage, bad: &BadRegion) -> Vec<HeldRecord> {
    let segments = sorted_segments(dir);
    let Some(first) = segments.iter().position(|s| s.1 == bad.segment) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (index, &(_, _, image)) in segments.iter().enumerate().skip(first) {
        let mut next = if index == first {
            image.hunt(bad.position)
        } else if image.valid_at(0).is_some() {
            Some(0)
        } else {
            image.hunt(0)
        };
        while let Some(at) = next {
            let Some(header) = image.valid_at(at) else {
                next = image.hunt(at);
                continue;
            };
            let end = at + header.frame_len();
            next = (end < image.bytes.len() as u64).then_some(end);
            if header.base_offset >= bad.offset {
                push_records(image.bytes, at, &header, &mut out);
            }
        }
    }
    out
}

/// Whether every byte is zero, sixteen at a time (a preallocated megabyte is checked at
/// every decode).
fn all_zero(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(16);
    let acc = (&mut words).fold(0u128, |acc, w| {
        acc | u128::from_ne_bytes(w.try_into().expect("16 bytes"))
    });
    acc == 0 && words.remainder().iter().all(|b| *b == 0)
}

/// The commit time of the last parsable record in `extent`'s last frame.
fn extent_last_time(image: &[u8], extent: &Extent) -> Option<u64> {
    let last = extent.frames.last()?;
    let header = frame::header_at(image, last.position)?;
    frame::records_at(image, last.position, &header)?
        .iter()
        .rev()
        .find_map(|r| frame::envelope(r).map(|e| e.committed_at_ms))
}

/// Whether a valid frame starts after `position` of segment `index`, or anywhere in a
/// later segment.
fn follows(segments: &[(u64, &str, Readable<'_>)], index: usize, position: u64) -> bool {
    segments
        .iter()
        .enumerate()
        .skip(index)
        .any(|(i, (_, _, image))| {
            if i == index {
                image.hunt(position).is_some()
            } else {
                image.valid_at(0).is_some() || image.hunt(0).is_some()
            }
        })
}
