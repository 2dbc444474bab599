//! What damage at rest destroyed, read from a file's durable bytes as they stood just
//! before it: the ingress WAL entries a bit flip or a misdirected write hit, and the
//! segment frames a misdirected write landed on. The checkers need both to tell a
//! record whose two durable copies were destroyed (no engine can recover it) from a
//! record the engine lost.
//!
//! Invariants:
//! - an entry or frame is named only if the bytes before the damage held it whole and
//!   readable: a WAL frame that parses, passes its CRC and decodes, a segment frame
//!   whose header parses and continues the offsets from the file name's base; so every
//!   name is a fact about the old image, never a guess;
//! - a WAL frame is one CRC unit: damage to any of its bytes names all of its entries
//!   (the engine can read none of them);
//! - every walk moves forward by at least one byte per step, so it ends within the
//!   file's length.

use crate::history::{DamagedWalEntry, OffsetRange, TopicPartition, parse_payload_id};
use crate::reference::frame::{self, Header};
use crate::reference::partition::segment_base;
use crate::reference::wal;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

/// The byte ranges where `a` and `b` differ, a length difference counting as a
/// difference from the shorter one's end; ascending, merged.
pub fn differing(a: &[u8], b: &[u8]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    let common = a.len().min(b.len());
    let mut push = |range: Range<u64>| match out.last_mut() {
        Some(last) if last.end >= range.start => last.end = last.end.max(range.end),
        _ => out.push(range),
    };
    // Compared a block at a time: a segment is mostly unchanged.
    const BLOCK: usize = 512;
    let mut at = 0;
    while at < common {
        let end = (at + BLOCK).min(common);
        if a.get(at..end) != b.get(at..end) {
            for i in at..end {
                if a.get(i) != b.get(i) {
                    push(i as u64..i as u64 + 1);
                }
            }
        }
        at = end;
    }
    if a.len() != b.len() {
        push(common as u64..a.len().max(b.len()) as u64);
    }
    out
}

/// Whether two byte ranges share a byte.
fn overlaps(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

/// The base seq a WAL segment file name carries: 20 digits and `.wal`.
fn wal_segment_base(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".wal")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The readable entries of a WAL: per (topic, partition, group), where the group is the
/// entries a replay commits as one record ([`wal::Entry::group`]: a root and its salvage
/// copies, or the revivals of one spent root), the seqs of the entries in it.
pub type WalRoots = BTreeMap<(String, u32, wal::Group), BTreeSet<u64>>;

/// The [`WalRoots`] of every readable entry in the WAL segment `images`.
pub fn wal_roots<'a>(images: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> WalRoots {
    let mut roots = WalRoots::new();
    for entry in images
        .into_iter()
        .filter(|(name, _)| wal_segment_base(name).is_some())
        .flat_map(|(_, image)| wal::frames(image))
        .flat_map(|frame| frame.entries)
    {
        let group = entry.group();
        roots
            .entry((entry.topic, entry.partition, group))
            .or_default()
            .insert(entry.seq);
    }
    roots
}

/// What a damage did to the WAL entries whose frames it touched.
#[derive(Debug, Default)]
pub struct WalHit {
    /// Entries destroyed with nothing left that stands for them: the WAL lost them.
    pub lost: Vec<DamagedWalEntry>,
    /// Entries still readable after the damage (it wrote the bytes that were there).
    pub intact: u64,
    /// Entries destroyed while another entry standing for their root (a salvage copy,
    /// or the entry a copy copied) stayed readable.
    pub saved_by_copy: u64,
}

/// The entries of the WAL segment at `path` whose frames, in the image `before`, share a
/// byte with one of the `hit` ranges, judged against `readable` (the WAL as it reads
/// after the damage, see [`wal_roots`]): an entry is lost only when no entry standing
/// for its root is readable. Nothing for a WAL file that is not a segment (the
/// checkpoint: damage there makes the replay start over, it loses nothing).
pub fn wal_entries_hit(
    path: &Path,
    before: &[u8],
    hit: &[Range<u64>],
    readable: &WalRoots,
) -> WalHit {
    let mut out = WalHit::default();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if wal_segment_base(name).is_none() {
        return out;
    }
    for entry in wal::frames(before)
        .into_iter()
        .filter(|frame| hit.iter().any(|h| overlaps(&frame.position, h)))
        .flat_map(|frame| frame.entries)
    {
        match readable.get(&(entry.topic.clone(), entry.partition, entry.group())) {
            Some(seqs) if seqs.contains(&entry.seq) => out.intact += 1,
            Some(_) => out.saved_by_copy += 1,
            // An entry whose payload carries no id is no produce of this run's: the
            // damage destroyed nothing the checkers account for.
            None => {
                out.lost.extend(
                    parse_payload_id(&entry.payload)
                        .ok()
                        .map(|id| DamagedWalEntry {
                            seq: entry.seq,
                            tp: TopicPartition::new(entry.topic, entry.partition),
                            id,
                        }),
                )
            }
        }
    }
    out
}

/// Frame headers of a segment image from byte `at`, where the frame with base offset
/// `base` starts: `(position, header)` for each header that parses (its CRC unchecked:
/// only lengths and offsets are needed) and continues the offsets, in file order.
pub fn segment_headers(
    bytes: &[u8],
    at: u64,
    base: u64,
) -> impl Iterator<Item = (u64, Header)> + '_ {
    let mut next = Some((at, base));
    std::iter::from_fn(move || {
        let (at, base) = next.take()?;
        let header = frame::header_at(bytes, at)?;
        if header.base_offset != base {
            return None;
        }
        next = Some((at + header.frame_len(), header.end_offset()));
        Some((at, header))
    })
}

/// The offsets of the frames of the segment at `path` that, in the image `before`,
/// share a byte with one of the `hit` ranges (from the first such frame's base to the
/// last one's end). `None` when the write hit no frame the walk from the file's start
/// reaches (garbage past the last frame, or past earlier damage), or the file is not a
/// segment.
pub fn segment_offsets_hit(path: &Path, before: &[u8], hit: &[Range<u64>]) -> Option<OffsetRange> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let base = segment_base(name)?;
    let mut found: Option<OffsetRange> = None;
    for (at, header) in segment_headers(before, 0, base) {
        let frame = at..at + header.frame_len();
        if hit.iter().any(|h| overlaps(&frame, h)) {
            let range = found.get_or_insert(OffsetRange {
                start: header.base_offset,
                end: header.end_offset(),
            });
            range.end = header.end_offset();
        }
    }
    found
}

/// Whether a write over `hit` in the segment image `bytes` at `path` can have touched
/// a frame the walk from the file's start does not reach: a hit range ending past the
/// walked frames where the image holds a non-zero byte after them (frames past a hole
/// or past damage). When it cannot, [`segment_offsets_hit`] names every frame the
/// write hit, and its `None` means the write hit none.
pub fn segment_hit_unseen(path: &Path, bytes: &[u8], hit: &[Range<u64>]) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(base) = segment_base(name) else {
        return true;
    };
    let walked = segment_headers(bytes, 0, base)
        .last()
        .map_or(0, |(at, header)| at + header.frame_len());
    let rest = usize::try_from(walked).map_or(&[][..], |w| bytes.get(w..).unwrap_or(&[]));
    hit.iter().any(|h| h.end > walked) && rest.iter().any(|&b| b != 0)
}

/// The offsets of the segment at `path` a lost fsync reached: the frames of `visible`
/// (the page cache) that `undurable` (where it differs from the platter) touches, and,
/// when the platter is longer than the cache (a truncation it did not persist), the
/// offset past the last frame, where a later open reads what the platter kept beyond.
pub fn lost_fsync_reach(
    path: &Path,
    visible: &[u8],
    undurable: &[Range<u64>],
    durable_len: usize,
) -> Option<OffsetRange> {
    let hit = segment_offsets_hit(path, visible, undurable);
    if durable_len <= visible.len() {
        return hit;
    }
    let end = segment_end_offset(path, visible)?;
    Some(hit.map_or(
        OffsetRange {
            start: end,
            end: end + 1,
        },
        |r| OffsetRange {
            start: r.start.min(end),
            end: r.end.max(end + 1),
        },
    ))
}

/// The offset the log goes on at past the last frame of the segment image `image` at
/// `path` (its base when it holds none).
pub fn segment_end_offset(path: &Path, image: &[u8]) -> Option<u64> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let base = segment_base(name)?;
    Some(
        segment_headers(image, 0, base)
            .last()
            .map_or(base, |(_, header)| header.end_offset()),
    )
}

#[cfg(test)]
#[expect(
    clippy::single_range_in_vec_init,
    reason = "a list of one damaged byte range, not a range meant as its elements"
)]
mod tests {
    use super::*;
    use crate::history::encode_payload;
    use crate::reference::wal::Group;
    use cafelog_engine::format::frame::{Codec, Codecs};
    use cafelog_engine::store::wal;

    fn frame(codecs: &mut Codecs, base: u64, records: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        codecs
            .encode_frame(
                Codec::None,
                base,
                records.iter().map(Vec::as_slice),
                &mut out,
            )
            .expect("encodes");
        out
    }

    fn wal_record(topic: &str, partition: u32, id: u64) -> Vec<u8> {
        wal::encode_record(
            &(topic.to_owned(), partition),
            b"k",
            &encode_payload(id, b"body"),
            None,
        )
    }

    fn none() -> WalRoots {
        WalRoots::new()
    }

    /// A WAL segment named for seq 10 with three frames: seqs 10-11 (ids 1, 2), 12 (id 3)
    /// and 13 (id 4); returns the image and each frame's byte range.
    fn wal_image() -> (Vec<u8>, Vec<Range<u64>>) {
        let mut codecs = Codecs::default();
        let frames = [
            frame(
                &mut codecs,
                10,
                &[wal_record("orders", 0, 1), wal_record("orders", 1, 2)],
            ),
            frame(&mut codecs, 12, &[wal_record("orders", 0, 3)]),
            frame(&mut codecs, 13, &[wal_record("orders", 1, 4)]),
        ];
        let mut image = Vec::new();
        let mut ranges = Vec::new();
        for f in &frames {
            let at = image.len() as u64;
            image.extend_from_slice(f);
            ranges.push(at..image.len() as u64);
        }
        (image, ranges)
    }

    fn ids(hit: WalHit) -> Vec<(u64, u32, u64)> {
        hit.lost
            .iter()
            .map(|e| (e.seq, e.tp.partition, e.id))
            .collect()
    }

    #[test]
    fn the_reference_counts_wal_damage_as_an_open_does() {
        use crate::reference::wal::damage;
        let (image, frames) = wal_image();
        assert_eq!(damage(10, &image), (0, 0));
        // Seqs 8 and 9 the segment's name promises are missing before the first frame.
        assert_eq!(damage(8, &image), (0, 2));
        // A flip in the middle frame: its bytes skipped, its entry (seq 12) a gap.
        let mut hit = image.clone();
        hit[(frames[1].end - 2) as usize] ^= 0x40;
        let middle = frames[1].end - frames[1].start;
        assert_eq!(damage(10, &hit), (middle, 1));
        // A torn last frame: its bytes skipped, no later frame to show a gap.
        let torn = &image[..(frames[2].start + 5) as usize];
        assert_eq!(damage(10, torn), (5, 0));
    }

    #[test]
    fn a_wal_hit_names_every_entry_of_each_frame_it_touches() {
        let (image, frames) = wal_image();
        let path = Path::new("/data/wal").join(wal::segment_name(10));
        // One byte in the first frame's payload: both of its entries, nothing else.
        let flip = frames[0].end - 3;
        assert_eq!(
            ids(wal_entries_hit(&path, &image, &[flip..flip + 1], &none())),
            vec![(10, 0, 1), (11, 1, 2)]
        );
        // A range straddling the second and third frames names both.
        let straddle = frames[1].end - 2..frames[2].start + 2;
        assert_eq!(
            ids(wal_entries_hit(&path, &image, &[straddle], &none())),
            vec![(12, 0, 3), (13, 1, 4)]
        );
        // Past the last frame: nothing was there.
        let past = frames[2].end;
        assert!(
            wal_entries_hit(&path, &image, &[past..past + 512], &none())
                .lost
                .is_empty()
        );
        // The checkpoint is not a segment.
        assert!(
            wal_entries_hit(Path::new("/data/wal/checkpoint"), &image, &[0..1], &none())
                .lost
                .is_empty()
        );
    }

    #[test]
    fn a_wal_hit_past_earlier_damage_is_still_named() {
        // The first frame was already unreadable (an earlier flip): the walk resyncs on
        // the next frame, like the engine, and a hit there names its entry; the earlier
        // frame's entries are not named again.
        let (mut image, frames) = wal_image();
        let earlier = (frames[0].start + 30) as usize;
        image[earlier] ^= 0x04;
        let path = Path::new("/data/wal").join(wal::segment_name(10));
        assert_eq!(
            ids(wal_entries_hit(
                &path,
                &image,
                &[frames[1].start..frames[1].start + 1],
                &none()
            )),
            vec![(12, 0, 3)]
        );
        assert!(
            wal_entries_hit(&path, &image, &[frames[0].start..frames[0].end], &none())
                .lost
                .is_empty()
        );
    }

    #[test]
    fn a_wal_hit_on_an_entry_with_a_readable_salvage_copy_names_nothing() {
        // Seq 14 is a salvage copy of seq 12 (id 3), in the same segment.
        let (mut image, frames) = wal_image();
        let mut codecs = Codecs::default();
        let copy = wal::encode_record(
            &("orders".to_owned(), 0),
            b"k",
            &encode_payload(3, b"body"),
            Some(wal::Link::Copy(12)),
        );
        image.extend(frame(&mut codecs, 14, &[copy]));
        let path = Path::new("/data/wal").join(wal::segment_name(10));
        let name = wal::segment_name(10);
        let roots = wal_roots([(name.as_str(), image.as_slice())]);
        assert_eq!(
            roots.get(&("orders".to_owned(), 0, Group::Root(12))),
            Some(&BTreeSet::from([12, 14])),
            "the copy stands for seq 12, not for itself"
        );
        assert_eq!(roots.len(), 4);
        let hit = [frames[1].start..frames[1].start + 1];
        // With the copy readable after the damage, the entry lost nothing.
        let mut after = image.clone();
        after[frames[1].start as usize + 20] ^= 1;
        let readable = wal_roots([(name.as_str(), after.as_slice())]);
        let judged = wal_entries_hit(&path, &image, &hit, &readable);
        assert!(judged.lost.is_empty());
        assert_eq!((judged.saved_by_copy, judged.intact), (1, 0));
        // A write of the bytes that were there destroyed nothing.
        let judged = wal_entries_hit(
            &path,
            &image,
            &hit,
            &wal_roots([(name.as_str(), image.as_slice())]),
        );
        assert_eq!(
            (judged.lost.len(), judged.saved_by_copy, judged.intact),
            (0, 0, 1)
        );
        // Once the copy is gone too, the damage names the entry.
        let without_copy = wal_roots([(name.as_str(), &after[..frames[2].end as usize])]);
        assert_eq!(
            ids(wal_entries_hit(&path, &image, &hit, &without_copy)),
            vec![(12, 0, 3)]
        );
    }

    #[test]
    fn a_revival_is_saved_only_by_another_revival_of_its_root() {
        // Seqs 14 and 15 revive seq 12 (id 3), which the checkpoint passed: a replay
        // from a readable checkpoint commits the revivals as one record and skips 12.
        let (mut image, frames) = wal_image();
        let mut codecs = Codecs::default();
        let revival = wal::encode_record(
            &("orders".to_owned(), 0),
            b"k",
            &encode_payload(3, b"body"),
            Some(wal::Link::Revival(12)),
        );
        let at = image.len();
        image.extend(frame(&mut codecs, 14, std::slice::from_ref(&revival)));
        let second = image.len();
        image.extend(frame(&mut codecs, 15, &[revival]));
        let path = Path::new("/data/wal").join(wal::segment_name(10));
        let name = wal::segment_name(10);
        let roots = wal_roots([(name.as_str(), image.as_slice())]);
        assert_eq!(
            roots.get(&("orders".to_owned(), 0, Group::Revivals(12))),
            Some(&BTreeSet::from([14, 15])),
        );
        assert_eq!(
            roots.get(&("orders".to_owned(), 0, Group::Root(12))),
            Some(&BTreeSet::from([12])),
            "the spent root is a group of its own"
        );
        // The first revival destroyed while the second reads: nothing lost.
        let hit = [at as u64..at as u64 + 1];
        let mut after = image.clone();
        after[at + 20] ^= 1;
        let readable = wal_roots([(name.as_str(), after.as_slice())]);
        let judged = wal_entries_hit(&path, &image, &hit, &readable);
        assert!(judged.lost.is_empty());
        assert_eq!(judged.saved_by_copy, 1);
        // With only the spent root left, the revival's record is lost.
        let root_only = wal_roots([(name.as_str(), &after[..second])]);
        assert_eq!(
            ids(wal_entries_hit(&path, &image, &hit, &root_only)),
            vec![(14, 0, 3)]
        );
        // And the spent root destroyed while its revivals read names its id, as a plain
        // spent entry did: its own group has nothing left.
        let hit = [frames[1].start..frames[1].start + 1];
        let mut after = image.clone();
        after[frames[1].start as usize + 20] ^= 1;
        let readable = wal_roots([(name.as_str(), after.as_slice())]);
        assert_eq!(
            ids(wal_entries_hit(&path, &image, &hit, &readable)),
            vec![(12, 0, 3)]
        );
    }

    #[test]
    fn a_segment_hit_names_the_offsets_of_the_frames_it_touches() {
        let mut codecs = Codecs::default();
        let mut image = frame(&mut codecs, 5, &[b"a".to_vec(), b"b".to_vec()]);
        let second = image.len() as u64;
        image.extend(frame(&mut codecs, 7, &[b"c".to_vec()]));
        let third = image.len() as u64;
        image.extend(frame(&mut codecs, 8, &[b"d".to_vec()]));
        let end = image.len() as u64;
        let path = Path::new("/data/topics/orders/p00000").join("00000000000000000005.log");
        assert_eq!(
            segment_offsets_hit(&path, &image, &[second + 1..second + 2]),
            Some(OffsetRange { start: 7, end: 8 })
        );
        assert_eq!(
            segment_offsets_hit(&path, &image, &[0..1, third..third + 1]),
            Some(OffsetRange { start: 5, end: 9 })
        );
        assert_eq!(segment_offsets_hit(&path, &image, &[end..end + 512]), None);
        assert_eq!(segment_end_offset(&path, &image), Some(9));
        assert_eq!(
            segment_end_offset(&path, &[]),
            Some(5),
            "no frame: its base"
        );
    }

    #[test]
    fn a_lost_fsync_of_a_truncation_reaches_the_offset_past_the_last_frame() {
        // Quick 3804013083: a lost fsync dropped a sealed segment's trim, the platter
        // kept a misdirected frame past the end, and a later open refused at 37.
        let mut codecs = Codecs::default();
        let mut image = frame(&mut codecs, 5, &[b"a".to_vec(), b"b".to_vec()]);
        let second = image.len() as u64;
        image.extend(frame(&mut codecs, 7, &[b"c".to_vec()]));
        let end = image.len();
        let path = Path::new("/data/topics/orders/p00000").join("00000000000000000005.log");
        let tail = [end as u64..end as u64 + 512];
        assert_eq!(
            lost_fsync_reach(&path, &image, &tail, end + 512),
            Some(OffsetRange { start: 8, end: 9 }),
            "the trim alone: the offset past the last frame"
        );
        assert_eq!(
            lost_fsync_reach(
                &path,
                &image,
                &[second..second + 1, tail[0].clone()],
                end + 512
            ),
            Some(OffsetRange { start: 7, end: 9 }),
            "a frame and the trim"
        );
        assert_eq!(
            lost_fsync_reach(&path, &image, &[second..second + 1], end),
            Some(OffsetRange { start: 7, end: 8 }),
            "no truncation lost: the frames only"
        );
        assert_eq!(lost_fsync_reach(&path, &image, &[], end), None);
        // A file named for another base: its frames do not continue, nothing is named.
        let wrong = Path::new("/data/topics/orders/p00000").join("00000000000000000004.log");
        assert_eq!(segment_offsets_hit(&wrong, &image, &[0..1]), None);
    }
}
