//! What the world reads off the simulated disk for the checkers: images decoded by the
//! reference decoder ([`crate::reference`]), never by the engine's scanner, and read
//! synchronously, so that looking neither draws the disk's dice nor lets simulated time
//! pass.
//!
//! Invariants:
//! - every read names its [`Image`]: the *durable* one (what the platter holds: what a
//!   power loss leaves and what damage at rest hits) or the *visible* one (the page
//!   cache: what a process crash leaves, and what an open reads). Right after a power
//!   loss the two are the same;
//! - a frame is named by an offset range only when the decoder (or, past a bad region,
//!   a header walk continuing the offsets) placed it in the image it read.

use super::damage;
use crate::fs::SimFs;
use crate::history::{CrashPartition, HeldCopy, OffsetRange, TopicPartition, parse_payload_id};
use crate::reference::{self, Decoded, DirImage, Rule, frame};
use cafelog_engine::format::layout;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which of the disk's two views a read takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// What the platter holds.
    Durable,
    /// What the page cache shows (reads, listings).
    Visible,
}

impl Image {
    fn names(self, fs: &SimFs, dir: &Path) -> Option<Vec<String>> {
        match self {
            Image::Durable => fs.durable_names(dir),
            Image::Visible => fs.visible_names(dir),
        }
    }

    /// The bytes of the file named `path` in this view.
    pub fn bytes(self, fs: &SimFs, path: &Path) -> Option<Vec<u8>> {
        match self {
            Image::Durable => fs.durable_bytes(path),
            Image::Visible => fs.visible_bytes(path),
        }
    }
}

/// The durable image of a partition directory: its segment files and `hwm`. `None`
/// when the directory is not durably there.
pub fn durable_image(fs: &SimFs, dir: &Path) -> Option<DirImage> {
    dir_image(fs, dir, Image::Durable)
}

/// A partition directory's segment files and `hwm` in the view `which`. `None` when
/// the directory is not there in that view.
pub fn dir_image(fs: &SimFs, dir: &Path, which: Image) -> Option<DirImage> {
    let names = which.names(fs, dir)?;
    let mut image = DirImage::default();
    for name in names {
        if name == layout::HWM_FILE {
            image.hwm = which.bytes(fs, &dir.join(&name));
        } else if reference::partition::segment_base(&name).is_some()
            && let Some(bytes) = which.bytes(fs, &dir.join(&name))
        {
            image.segments.push((name, bytes));
        }
    }
    Some(image)
}

/// Every record the segment files of `image` hold at offsets in `range`, by the
/// reference decoder, with the produce id its payload carries.
pub fn held_in(image: &DirImage, range: std::ops::Range<u64>) -> Vec<HeldCopy> {
    if range.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, bytes) in &image.segments {
        let Some(base) = reference::partition::segment_base(name) else {
            continue;
        };
        out.extend(
            reference::held_records(name, base, bytes)
                .into_iter()
                .filter(|r| range.contains(&r.offset))
                .filter_map(|r| {
                    Some(HeldCopy {
                        offset: r.offset,
                        id: parse_payload_id(&r.payload).ok()?,
                        committed_at_ms: r.committed_at_ms,
                    })
                }),
        );
    }
    out
}

/// The durable image of `dir`, decoded.
pub fn decode_durable(fs: &SimFs, dir: &Path) -> Option<Decoded> {
    durable_image(fs, dir).map(|image| reference::decode(&image))
}

/// The state of each partition right after a crash, in the view the next open reads
/// (`which`: durable after a power loss, visible after a process crash). `damaged`
/// names the partitions whose segments took damage at rest, `memory` the HWMs the
/// engine had.
pub fn crash_partitions(
    fs: &SimFs,
    dirs: &[(TopicPartition, PathBuf)],
    damaged: &std::collections::BTreeSet<TopicPartition>,
    memory: &BTreeMap<TopicPartition, u64>,
    which: Image,
) -> Vec<CrashPartition> {
    let mut out = Vec::new();
    for (tp, dir) in dirs {
        let Some(decoded) = dir_image(fs, dir, which).map(|image| reference::decode(&image)) else {
            continue;
        };
        let persisted_hwm = decoded.persisted_hwm.unwrap_or(0);
        // Damage at rest ends the extent early, hiding the true durable tail. The tail
        // is then at least what was durable for certain: the persisted HWM and the HWM
        // the engine had in memory (it only covers fsynced, verified frames).
        let durable_tail = if damaged.contains(tp) || decoded.rule() == Rule::Refuse {
            decoded
                .tail_offset
                .max(persisted_hwm)
                .max(memory.get(tp).copied().unwrap_or(0))
        } else {
            decoded.tail_offset
        };
        out.push(CrashPartition {
            persisted_hwm,
            durable_tail,
            memory_hwm: memory.get(tp).copied(),
            tp: tp.clone(),
        });
    }
    out
}

/// The records of the frame that holds byte `position` of a segment, and whether that
/// frame starts below the persisted HWM, from decodes taken before the damage
/// (`before`, per partition directory) and the file's durable bytes before it
/// (`bytes`).
pub fn locate(
    before: &BTreeMap<PathBuf, Decoded>,
    path: &Path,
    position: u64,
    bytes: Option<&[u8]>,
) -> (Option<OffsetRange>, Option<bool>) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let decoded = path.parent().and_then(|dir| before.get(dir));
    let extent = decoded.and_then(|d| d.extents.iter().find(|e| e.name == name));
    let walked = match extent {
        Some(extent) => {
            if let Some(frame) = extent.frames.iter().find(|f| f.holds_position(position)) {
                let range = OffsetRange {
                    start: frame.base_offset,
                    end: frame.end_offset(),
                };
                let persisted = decoded.and_then(|d| d.persisted_hwm).unwrap_or(0);
                return (Some(range), Some(range.start < persisted));
            }
            // Past the valid extent (behind earlier damage): walk the headers from there.
            bytes.and_then(|b| walk_headers(b, extent.valid_len, extent.end_offset, position))
        }
        // A segment past the bad region of an earlier decode (or not durably named
        // then): walk it from its start. Without its bytes, where the flip stands is
        // unknown.
        None => match bytes {
            Some(bytes) if layout::parse_segment_file_name(name).is_some() => {
                locate_in_image(path, position, bytes)
            }
            _ => return (None, None),
        },
    };
    let Some(decoded) = decoded else {
        // Where the persisted HWM stood is unknown.
        return (walked, None);
    };
    if let Some(range) = walked {
        return (
            Some(range),
            Some(range.start < decoded.persisted_hwm.unwrap_or(0)),
        );
    }
    // Past every frame: garbage or a torn tail nobody acknowledged.
    (None, Some(false))
}

/// The records of the frame holding byte `position` of the segment image `bytes` (the
/// file at `path`), walking its headers from byte 0.
pub fn locate_in_image(path: &Path, position: u64, bytes: &[u8]) -> Option<OffsetRange> {
    let name = path.file_name().and_then(|n| n.to_str())?;
    let base = layout::parse_segment_file_name(name)?;
    walk_headers(bytes, 0, base, position)
}

/// Walks frame headers in `bytes` from `at` (where the frame with base offset `base`
/// starts) to the frame holding byte `position`, and returns its records. Where the
/// walk meets bytes that are no header (earlier damage: a misdirected write, a flip),
/// it resynchronises on the next CRC-valid frame before `position` and walks on from
/// there, as a scanner's hunt would.
fn walk_headers(bytes: &[u8], at: u64, base: u64, position: u64) -> Option<OffsetRange> {
    let mut from = (at, base);
    loop {
        let mut end = from.0;
        for (at, header) in damage::segment_headers(bytes, from.0, from.1) {
            if position >= at && position < at + header.frame_len() {
                return Some(OffsetRange {
                    start: header.base_offset,
                    end: header.end_offset(),
                });
            }
            end = at + header.frame_len();
        }
        // The walk stopped at `end`: a valid frame at the wrong offset starts a new walk
        // there; anything else is hunted past.
        let next = if end > from.0 && frame::valid_at(bytes, end).is_some() {
            end
        } else {
            frame::hunt(bytes, end)?
        };
        if next > position {
            return None;
        }
        let header = frame::header_at(bytes, next)?;
        from = (next, header.base_offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cafelog_engine::format::frame::{Codec, Codecs};

    #[test]
    fn a_flip_behind_earlier_damage_is_still_placed() {
        // Quick seeds 301446 and 309544: a misdirected write had overwritten a frame's
        // header in the durable image, and a later flip in a frame past it went unplaced
        // (taken for garbage above the HWM); the engine then skipped that frame.
        let mut codecs = Codecs::default();
        let mut image = Vec::new();
        let mut starts = Vec::new();
        for base in 0..3u64 {
            starts.push(image.len() as u64);
            codecs
                .encode_frame(Codec::None, base, [&b"record"[..]].into_iter(), &mut image)
                .expect("encodes");
        }
        let name = "00000000000000000000.log";
        let path = Path::new("/data/topics/t/p00000").join(name);
        let clean = reference::decode(&DirImage {
            segments: vec![(name.to_owned(), image.clone())],
            hwm: Some(3u64.to_be_bytes().to_vec()),
        });
        let before = BTreeMap::from([(PathBuf::from("/data/topics/t/p00000"), clean)]);
        let in_third = starts[2] + 30;
        assert_eq!(
            locate(&before, &path, in_third, Some(&image)),
            (Some(OffsetRange { start: 2, end: 3 }), Some(true))
        );
        // Garbage over the second frame's header: the decode before the flip stops at
        // frame 1, and the walk must hunt past it to place the flip in frame 2.
        image[starts[1] as usize] = 0;
        let damaged = reference::decode(&DirImage {
            segments: vec![(name.to_owned(), image.clone())],
            hwm: Some(3u64.to_be_bytes().to_vec()),
        });
        let before = BTreeMap::from([(PathBuf::from("/data/topics/t/p00000"), damaged)]);
        assert_eq!(
            locate(&before, &path, in_third, Some(&image)),
            (Some(OffsetRange { start: 2, end: 3 }), Some(true))
        );
        // In the garbage itself: no frame.
        assert_eq!(
            locate(&before, &path, starts[1], Some(&image)).0,
            None,
            "the damaged header is in no frame"
        );
    }
}
