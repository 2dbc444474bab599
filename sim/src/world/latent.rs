//! Latent sector errors, injected at a power loss: one sector of a segment's durable
//! image becomes unreadable (`fs::latent` has the disk's model). The world records it
//! as `fault LatentSector` with the offsets of every frame the sector shares a byte
//! with, located in the durable image as it was before (with the bytes under earlier
//! unreadable sectors as written, so a sector behind one is placed too), so the
//! checkers hold the engine to it as to a bit flip: detect it (a cut, a refusal or a
//! skip) and lose nothing it did not take.

use super::{World, disk, partition_dirs, recorder};
use crate::history::{FaultKind, FileKind, OffsetRange};
use crate::reference::Extent;
use std::collections::BTreeMap;

/// Makes one sector of a segment unreadable; `false` when no segment has durable bytes
/// (or the run has healed).
pub(super) fn inject(world: &World) -> bool {
    // Map frames before: afterwards the decode stops at the unreadable sector. The
    // sector's frames are placed under earlier latent sectors too (`written`: the bytes
    // there as written), since a decode of what a reader gets stops at the first one
    // and would place no frame past it.
    let mut before = BTreeMap::new();
    let mut written = BTreeMap::new();
    let mut dir_images = BTreeMap::new();
    for (_, dir) in partition_dirs(world) {
        if let Some(image) = disk::durable_image(&world.fs, &dir) {
            let decoded = crate::reference::decode(&image);
            let placed = match disk::written_image(&world.fs, &dir, &image) {
                Some(unmasked) => crate::reference::decode(&unmasked),
                None => decoded.clone(),
            };
            before.insert(dir.clone(), decoded);
            written.insert(dir.clone(), placed);
            dir_images.insert(dir, image);
        }
    }
    // Where the frames lie: a sector of preallocated zeros is judged like a flip there.
    let frames_end = |path: &std::path::Path| {
        let name = path.file_name()?.to_str()?;
        let decoded = before.get(path.parent()?)?;
        decoded
            .extents
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.valid_len)
    };
    let Some(sector) = world
        .fs
        .latent_sector(|p| recorder::file_kind(p) == FileKind::Segment, frames_end)
    else {
        return false;
    };
    let tp = recorder::partition_of(&sector.path);
    if let Some(tp) = &tp {
        world.recorder.lock().segment_damaged(tp);
    }
    // The file's bytes as written, to walk its frames (a sector does not change them),
    // and the directory as a reader saw it before, for what the sector took.
    let image = sector.path.parent().and_then(|d| dir_images.get(d));
    let written_bytes = world.fs.durable_bytes_unmasked(&sector.path);
    let bytes = written_bytes.as_deref();
    // Every frame the sector shares a byte with: the ones holding its first and last
    // bytes, and each frame that starts inside it.
    let end = sector.position + sector.len;
    let extent = sector
        .path
        .parent()
        .and_then(|dir| written.get(dir))
        .and_then(|d| {
            let name = sector.path.file_name()?.to_str()?;
            d.extents.iter().find(|e| e.name == name)
        });
    let name = sector
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let starts = starts_inside(name, extent, bytes, sector.position..end);
    let mut located = Vec::new();
    let mut below_hwm = None;
    for position in std::iter::once(sector.position)
        .chain(starts)
        .chain(std::iter::once(end - 1))
    {
        let (range, below) = disk::locate(&written, &sector.path, position, bytes);
        below_hwm = below_hwm.or(below);
        located.extend(range);
    }
    let offsets = contiguous(&located);
    // Injected right after a power loss, when the cache was rebuilt from the platter:
    // the engine reads exactly these records there.
    let held = match (offsets, image) {
        (Some(range), Some(image)) => disk::held_in(image, range.start..range.end),
        _ => Vec::new(),
    };
    let mut rec = world.recorder.lock();
    rec.paths.latent_sectors += 1;
    let fault_index = rec.fault(
        FaultKind::LatentSector {
            file: FileKind::Segment,
            offsets,
            below_hwm,
        },
        tp.as_ref(),
        Some(&sector.path.display().to_string()),
    );
    if let Some(tp) = &tp
        && !held.is_empty()
    {
        let now = rec.now_ms();
        rec.history.damage_held(now, fault_index, tp, held);
    }
    true
}

/// Where frames start strictly inside `sector` (a byte range of the segment `name`,
/// written as `bytes`): each frame of the valid extent `extent` that starts there (its
/// last byte may lie in the zeros past the last frame), and past that extent, behind a
/// bad frame, each frame the header walk [`disk::locate`] places by takes (a frame
/// whose CRC holds, or whose header the next one confirms).
fn starts_inside(
    name: &str,
    extent: Option<&Extent>,
    bytes: Option<&[u8]>,
    sector: std::ops::Range<u64>,
) -> Vec<u64> {
    let inside = |p: &u64| sector.start < *p && *p < sector.end;
    let mut starts: Vec<u64> = extent
        .map(|e| e.frames.iter().map(|f| f.position).filter(inside).collect())
        .unwrap_or_default();
    let from = match extent {
        Some(e) => Some((e.valid_len, e.end_offset)),
        None => crate::reference::partition::segment_base(name).map(|base| (0, base)),
    };
    if let (Some(bytes), Some((at, due))) = (bytes, from) {
        starts.extend(
            disk::walked_frames(bytes, at, due, sector.end - 1)
                .into_iter()
                .map(|(position, _)| position)
                .filter(inside),
        );
    }
    starts
}

/// The offsets of the frames located in byte order, joined while each continues the
/// last: the frames of one extent hold consecutive offsets, and a frame past a break
/// (a stale or misdirected frame beyond the valid extent) can name any offset, which
/// joined in would stretch the reach over records the sector never touched.
fn contiguous(located: &[OffsetRange]) -> Option<OffsetRange> {
    let (first, rest) = located.split_first()?;
    let mut joined = *first;
    for r in rest {
        if r.start > joined.end || r.end < joined.start {
            break;
        }
        joined = OffsetRange {
            start: joined.start.min(r.start),
            end: joined.end.max(r.end),
        };
    }
    Some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, end: u64) -> OffsetRange {
        OffsetRange { start, end }
    }

    /// Quick seed 1826: a sector over frames 2..6 of a segment whose first frame is
    /// bad (the decode keeps none) was placed on frames 2 and 5 only, the frames between
    /// starting behind the valid extent.
    #[test]
    fn frames_behind_a_bad_frame_that_start_in_the_sector_are_found() {
        let (mut bytes, at) = disk::tests::six_frames();
        bytes[at[0] as usize + 33] ^= 1;
        let name = "00000000000000000000.log";
        let decoded = crate::reference::decode(&crate::reference::DirImage {
            segments: vec![(name.to_owned(), bytes.clone())],
            ..Default::default()
        });
        let extent = decoded.extents.first();
        assert_eq!(extent.map(|e| e.frames.len()), Some(0));
        let sector = at[2] + 10..at[5] + 10;
        assert_eq!(
            starts_inside(name, extent, Some(&bytes), sector.clone()),
            at[3..=5].to_vec()
        );
        // helper-82 N: a frame in the sector whose body is flipped, its header intact
        // and confirmed by the next one, is placed too.
        bytes[at[3] as usize + 33] ^= 1;
        assert_eq!(
            starts_inside(name, extent, Some(&bytes), sector.clone()),
            at[3..=5].to_vec()
        );
        bytes[at[3] as usize + 33] ^= 1;
        // In the valid extent, its frames alone.
        bytes[at[0] as usize + 33] ^= 1;
        let whole = crate::reference::decode(&crate::reference::DirImage {
            segments: vec![(name.to_owned(), bytes.clone())],
            ..Default::default()
        });
        assert_eq!(
            starts_inside(name, whole.extents.first(), Some(&bytes), sector.clone()),
            at[3..=5].to_vec()
        );
        // A segment the decode did not reach is walked from its start.
        assert_eq!(
            starts_inside(name, None, Some(&bytes), sector),
            at[3..=5].to_vec()
        );
    }

    #[test]
    fn the_frames_a_sector_spans_join_while_their_offsets_continue() {
        assert_eq!(contiguous(&[]), None);
        assert_eq!(contiguous(&[r(4, 5), r(5, 7), r(7, 8)]), Some(r(4, 8)));
        // The first and last byte in one frame.
        assert_eq!(contiguous(&[r(4, 6), r(4, 6)]), Some(r(4, 6)));
        // A frame past the valid extent naming offset 90 stretches nothing.
        assert_eq!(contiguous(&[r(40, 41), r(90, 91)]), Some(r(40, 41)));
        assert_eq!(
            contiguous(&[r(40, 41), r(90, 91), r(41, 42)]),
            Some(r(40, 41))
        );
        assert_eq!(contiguous(&[r(40, 41), r(12, 13)]), Some(r(40, 41)));
    }
}
