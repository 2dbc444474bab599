//! What the world reads off the simulated disk for the checkers: images decoded by the
//! reference decoder ([`crate::reference`]), never by the engine's scanner, and read
//! synchronously, so that looking neither draws the disk's dice nor lets simulated time
//! pass.
//!
//! Invariants:
//! - every read names its [`Image`]: the *durable* one (what the platter holds: what a
//!   power loss leaves and what damage at rest hits) or the *visible* one (the page
//!   cache: what a process crash leaves, and what an open reads). Right after a power
//!   loss the two are the same; [`written_image`] is the durable one with the bytes
//!   under unreadable sectors as written, read only to place a new latent sector's
//!   frames;
//! - a frame is named by an offset range only when the decoder (or, past a bad region,
//!   a header walk continuing the offsets) placed it in the image it read.

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

    /// The byte ranges of [`Image::bytes`] a read fails on.
    pub fn unreadable(self, fs: &SimFs, path: &Path) -> Vec<std::ops::Range<u64>> {
        match self {
            Image::Durable => fs.durable_unreadable(path),
            Image::Visible => fs.visible_unreadable(path),
        }
    }
}

/// The durable image of a partition directory: its segment files and `hwm`. `None`
/// when the directory is not durably there.
pub fn durable_image(fs: &SimFs, dir: &Path) -> Option<DirImage> {
    dir_image(fs, dir, Image::Durable)
}

/// `durable`, the durable image of partition directory `dir`, with the bytes under
/// unreadable sectors as they were written: only to place frames (a new latent
/// sector's), never as what a reader gets. `None` when no byte is unreadable (the
/// image is `durable` itself).
pub fn written_image(fs: &SimFs, dir: &Path, durable: &DirImage) -> Option<DirImage> {
    let mut image = durable.clone();
    // Without its ranges the image decodes otherwise even where the bytes under them
    // were written as the fill.
    let mut differs = !image.unreadable.is_empty();
    image.unreadable.clear();
    for (name, bytes) in &mut image.segments {
        if let Some(written) = fs.durable_bytes_unmasked(&dir.join(name.as_str()))
            && written != *bytes
        {
            *bytes = written;
            differs = true;
        }
    }
    differs.then_some(image)
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
            let unreadable = which.unreadable(fs, &dir.join(&name));
            if !unreadable.is_empty() {
                image.unreadable.insert(name.clone(), unreadable);
            }
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
    image
        .segments
        .iter()
        .flat_map(|(name, bytes)| held_in_segment(name, image.readable(name, bytes), range.clone()))
        .collect()
}

/// [`held_in`] for one segment file, `name`, read as `image`.
pub fn held_in_segment(
    name: &str,
    image: frame::Readable<'_>,
    range: std::ops::Range<u64>,
) -> Vec<HeldCopy> {
    let Some(base) = reference::partition::segment_base(name) else {
        return Vec::new();
    };
    reference::partition::held_records_in(name, base, image, range)
        .into_iter()
        .filter_map(held_copy)
        .collect()
}

/// The readable records past the bad region `bad` of `image` that an R2 cut there
/// offers its salvage (see [`reference::partition::past_hole`]), by identity.
pub fn held_past_hole(image: &DirImage, bad: &reference::partition::BadRegion) -> Vec<HeldCopy> {
    reference::partition::past_hole(image, bad)
        .into_iter()
        .filter_map(held_copy)
        .collect()
}

/// A record the reference decoder read, by the produce id its payload carries (`None`
/// for a payload that carries none: no produce of this run's).
pub fn held_copy(r: reference::HeldRecord) -> Option<HeldCopy> {
    Some(HeldCopy {
        offset: r.offset,
        id: parse_payload_id(&r.payload).ok()?,
        committed_at_ms: r.committed_at_ms,
    })
}

/// The durable image of `dir`, decoded.
pub fn decode_durable(fs: &SimFs, dir: &Path) -> Option<Decoded> {
    durable_image(fs, dir).map(|image| reference::decode(&image))
}

/// The state of each partition right after a crash, in the view the next open reads
/// (`which`: durable after a power loss, visible after a process crash). `damaged`
/// names the partitions whose segments took damage at rest, `memory` the HWMs the
/// engine had, `carried` the tails certainly durable at the kill before, of the
/// partitions no open cut since, `words` the `hwm` words the engine wrote.
pub fn crash_partitions(
    fs: &SimFs,
    dirs: &[(TopicPartition, PathBuf)],
    damaged: &std::collections::BTreeSet<TopicPartition>,
    memory: &BTreeMap<TopicPartition, u64>,
    carried: &BTreeMap<TopicPartition, u64>,
    words: &WordsWritten,
    which: Image,
) -> Vec<CrashPartition> {
    let mut out = Vec::new();
    for (tp, dir) in dirs {
        let Some(decoded) = dir_image(fs, dir, which).map(|image| reference::decode(&image)) else {
            continue;
        };
        let word = words.engines(tp, decoded.persisted_hwm.unwrap_or(0));
        let durable_tail = certain_tail(
            &decoded,
            damaged.contains(tp),
            [memory, carried].map(|m| m.get(tp).copied().unwrap_or(0)),
            word,
        );
        out.push(CrashPartition {
            persisted_hwm: decoded.persisted_hwm.unwrap_or(0),
            durable_tail,
            memory_hwm: memory.get(tp).copied(),
            tp: tp.clone(),
        });
    }
    out
}

/// The `hwm` words the engine wrote, per partition: how the world tells the engine's
/// word on the platter from a fault's (a flip, a torn write).
#[derive(Clone, Debug, Default)]
pub struct WordsWritten {
    /// The words that may be on the platter as the engine wrote them: the last one a
    /// successful fsync covered, and every one issued since (the recorder's
    /// `hwm_words`). An older word is no longer the engine's: a fault that sets the word
    /// back to one of them (a flip) is judged like any other.
    pub all: BTreeMap<TopicPartition, std::collections::BTreeSet<u64>>,
    /// The highest word of the last incarnation that wrote one, this one's included (an
    /// open after a clamp writes a lower word: older ones speak of frames it cut).
    pub ceiling: BTreeMap<TopicPartition, u64>,
}

impl WordsWritten {
    /// How much of the persisted `word` of `tp` is the engine's: all of it when the
    /// engine may have left that word there (a clamp's word may be lost at a power loss,
    /// leaving the one fsynced before), else no more than the ceiling.
    pub fn engines(&self, tp: &TopicPartition, word: u64) -> u64 {
        if self.all.get(tp).is_some_and(|words| words.contains(&word)) {
            word
        } else {
            word.min(self.ceiling.get(tp).copied().unwrap_or(0))
        }
    }
}

/// The durable tail of a partition the reference decoded as `decoded`. Damage at rest
/// (`damaged`) ends the extent early, hiding the true durable tail, which is then at
/// least what was durable for certain: `word`, the part of the persisted HWM that is
/// the engine's ([`WordsWritten::engines`]: a flipped word is no tail), the HWM the
/// engine had in memory (it only covers fsynced, verified frames), or, for a partition
/// no open cut since the last kill, what was certain then (`memory` and `carried`).
fn certain_tail(decoded: &Decoded, damaged: bool, [memory, carried]: [u64; 2], word: u64) -> u64 {
    if !damaged && decoded.rule() != Rule::Refuse {
        return decoded.tail_offset;
    }
    decoded.tail_offset.max(word).max(memory).max(carried)
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

/// Walks the frames in `bytes` from `at`, where the frame with base offset `base` is
/// due, to the frame holding byte `position`, and returns its records. A frame is
/// taken at its word only when its CRC holds, or when the next frame's header confirms
/// its own (it starts right where this one ends, at the offset this one says comes
/// next): past the valid extent a header alone can be garbage (a misdirected write
/// over it) that claims any length. It must also hold the offsets due there: the next
/// ones, or after a hunt any later ones (a stale or misdirected frame can name any
/// offset). Past anything else the walk resynchronises on the next valid frame, as a
/// scanner's hunt would.
fn walk_headers(bytes: &[u8], at: u64, base: u64, position: u64) -> Option<OffsetRange> {
    walked_frames(bytes, at, base, position)
        .into_iter()
        .find(|(at, header)| position < at + header.frame_len())
        .map(|(_, header)| OffsetRange {
            start: header.base_offset,
            end: header.end_offset(),
        })
}

/// The frames the walk of [`walk_headers`] takes in `bytes` from byte `at`, where the
/// frame with base offset `base` is due, that start at or before byte `until`, as
/// `(position, header)` in byte order.
pub fn walked_frames(
    bytes: &[u8],
    mut at: u64,
    base: u64,
    until: u64,
) -> Vec<(u64, frame::Header)> {
    let mut out = Vec::new();
    let mut due = base;
    let mut hunted = false;
    while at <= until {
        let header = frame::valid_at(bytes, at)
            .or_else(|| confirmed_by_next(bytes, at))
            .filter(|h| h.base_offset == due || (hunted && h.base_offset > due));
        match header {
            Some(header) => {
                out.push((at, header));
                at += header.frame_len();
                due = header.end_offset();
                hunted = false;
            }
            None => match frame::hunt(bytes, at) {
                Some(next) => {
                    at = next;
                    hunted = true;
                }
                None => break,
            },
        }
    }
    out
}

/// The header at `at` of a frame whose body is damaged, when the header after it
/// starts where this one says the frame ends and continues its offsets.
fn confirmed_by_next(bytes: &[u8], at: u64) -> Option<frame::Header> {
    let header = frame::header_at(bytes, at)?;
    let next = frame::header_at(bytes, at.checked_add(header.frame_len())?)?;
    (next.base_offset == header.end_offset()).then_some(header)
}

#[cfg(test)]
pub(super) mod tests {
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
            ..DirImage::default()
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
            ..DirImage::default()
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

    /// Six one-record frames of one segment, and where each starts.
    pub(in crate::world) fn six_frames() -> (Vec<u8>, Vec<u64>) {
        let mut codecs = Codecs::default();
        let mut image = Vec::new();
        let mut starts = Vec::new();
        for base in 0..6u64 {
            starts.push(image.len() as u64);
            codecs
                .encode_frame(Codec::None, base, [&b"record"[..]].into_iter(), &mut image)
                .expect("encodes");
        }
        (image, starts)
    }

    fn decoded_before(name: &str, image: &[u8]) -> BTreeMap<PathBuf, Decoded> {
        let decoded = reference::decode(&DirImage {
            segments: vec![(name.to_owned(), image.to_vec())],
            hwm: Some(6u64.to_be_bytes().to_vec()),
            ..DirImage::default()
        });
        BTreeMap::from([(PathBuf::from("/data/topics/t/p00000"), decoded)])
    }

    #[test]
    fn a_damaged_header_that_claims_a_long_frame_does_not_swallow_the_frames_after_it() {
        // Quick 3806035408: a misdirected write over the tail of frame 1's header left
        // a length that reached far past it, and a later flip in another frame was
        // placed in frame 1.
        let (mut image, starts) = six_frames();
        let name = "00000000000000000000.log";
        let path = Path::new("/data/topics/t/p00000").join(name);
        let header = starts[1] as usize;
        for field in [15, 19] {
            image[header + field..header + field + 4].copy_from_slice(&600u32.to_be_bytes());
        }
        let before = decoded_before(name, &image);
        assert_eq!(
            locate(&before, &path, starts[4] + 30, Some(&image)),
            (Some(OffsetRange { start: 4, end: 5 }), Some(true))
        );
    }

    #[test]
    fn a_damaged_body_between_valid_frames_is_placed_by_its_header() {
        let (mut image, starts) = six_frames();
        let name = "00000000000000000000.log";
        let path = Path::new("/data/topics/t/p00000").join(name);
        // An earlier flip in frame 1's body: the decode stops there, and the next frame
        // starts where frame 1's header says it ends.
        image[starts[1] as usize + 30] ^= 1;
        let before = decoded_before(name, &image);
        assert_eq!(
            locate(&before, &path, starts[1] + 31, Some(&image)),
            (Some(OffsetRange { start: 1, end: 2 }), Some(true))
        );
    }
    #[test]
    fn a_valid_frame_with_offsets_not_due_there_is_not_taken_at_its_word() {
        // A copy of frame 4 over frame 1 (a misdirected write of the same length): the
        // decode stops at frame 1, and a flip in the copy is not frame 4's.
        let (mut image, starts) = six_frames();
        let name = "00000000000000000000.log";
        let path = Path::new("/data/topics/t/p00000").join(name);
        let (one, four) = (starts[1] as usize, starts[4] as usize);
        let len = starts[2] as usize - one;
        assert_eq!(len, starts[5] as usize - four, "equal frames");
        let copy = image[four..four + len].to_vec();
        image[one..one + len].copy_from_slice(&copy);
        let before = decoded_before(name, &image);
        assert_eq!(locate(&before, &path, starts[1] + 30, Some(&image)).0, None);
        // The frames after the copy are still placed.
        assert_eq!(
            locate(&before, &path, starts[3] + 30, Some(&image)).0,
            Some(OffsetRange { start: 3, end: 4 })
        );
    }

    #[test]
    fn a_flipped_word_above_every_word_written_lifts_no_tail() {
        // Default 3908332466: an `hwm` flip to 2^32 over a partition a flip had damaged
        // long before made the crash's durable tail 2^32, so the replay after it was
        // taken to commit there, and its copy of a skipped record was no repeat.
        let (image, starts) = six_frames();
        let cut = image[..starts[3] as usize].to_vec();
        let decode = |word: u64| {
            reference::decode(&DirImage {
                segments: vec![("00000000000000000000.log".to_owned(), cut.clone())],
                hwm: Some(word.to_be_bytes().to_vec()),
                ..DirImage::default()
            })
        };
        let tp = TopicPartition::new("t", 0);
        let words = |all: &[u64], ceiling: u64| WordsWritten {
            all: BTreeMap::from([(tp.clone(), all.iter().copied().collect())]),
            ceiling: BTreeMap::from([(tp.clone(), ceiling)]),
        };
        let tail = |word: u64, damaged: bool, written: &WordsWritten| {
            certain_tail(&decode(word), damaged, [0, 0], written.engines(&tp, word))
        };
        // Words up to 10 fsynced long ago; an open after a clamp wrote 3, then 6, and
        // fsynced 6.
        let after_clamp = words(&[6], 6);
        assert_eq!(
            tail(1 << 32, true, &after_clamp),
            6,
            "a flip: up to the ceiling"
        );
        assert_eq!(
            tail(14, true, &after_clamp),
            6,
            "under the run's highest word too"
        );
        // helper-86: a flip of 6 to 7, a word the engine wrote before the clamp.
        assert_eq!(
            tail(7, true, &after_clamp),
            6,
            "an old word is no longer the engine's"
        );
        assert_eq!(
            tail(1 << 32, false, &after_clamp),
            3,
            "undamaged: the extent's end"
        );
        // A word the engine may have left there is what was durable below it, even
        // with those frames gone (quick 410: a latent sector took them and an open cut
        // them), and even above the ceiling (default 3908350564: the clamp's word 5,
        // still pending, lost at a power loss, left the word fsynced before it).
        assert_eq!(tail(4, true, &words(&[4], 4)), 4);
        assert_eq!(tail(10, true, &words(&[10, 5], 5)), 10);
        assert_eq!(
            certain_tail(&decode(5), true, [7, 0], after_clamp.engines(&tp, 5)),
            7
        );
    }

    #[test]
    fn adjacent_damaged_bodies_are_placed_by_their_headers() {
        let (mut image, starts) = six_frames();
        let name = "00000000000000000000.log";
        let path = Path::new("/data/topics/t/p00000").join(name);
        image[starts[1] as usize + 30] ^= 1;
        image[starts[2] as usize + 30] ^= 1;
        let before = decoded_before(name, &image);
        assert_eq!(
            locate(&before, &path, starts[2] + 31, Some(&image)).0,
            Some(OffsetRange { start: 2, end: 3 })
        );
    }
}
