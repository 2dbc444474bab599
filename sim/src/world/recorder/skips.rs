//! What the disk held when the engine skipped a frame at consume time: the oracle's own
//! decode of that frame, so a skip is held to the bytes and not only to a fault that
//! once reached them (a write-back may have repaired them since).

use super::*;
use crate::reference::frame;
use crate::reference::partition::{segment_base, walk_segment};

impl Recorder {
    /// Right after the running incarnation's `frame_skipped` alarm for the frame of `tp`
    /// at `base` (`records` records) in the partition directory `dir`: records whether
    /// the page cache holds that frame whole, in the valid extent from byte 0 of the
    /// segment that holds `base`, or at `position`, where the engine says it read it (a
    /// frame after an earlier bad one lies past the valid extent; helper-57). The
    /// engine's word can only make the frame whole, never hide one the walk found.
    /// Nothing when no segment of `dir` holds it any more.
    pub fn frame_at_skip(
        &mut self,
        dir: &Path,
        tp: &TopicPartition,
        base: u64,
        records: u64,
        position: Option<u64>,
    ) {
        let Some(names) = self.fs.visible_names(dir) else {
            return;
        };
        let mut segments: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|n| segment_base(&n).map(|b| (b, n)))
            .collect();
        segments.sort();
        let Some(at) = segments.iter().rposition(|(b, _)| *b <= base) else {
            return;
        };
        let (segment_base, name) = &segments[at];
        let next_base = segments.get(at + 1).map(|(b, _)| *b);
        let Some(image) = self.fs.visible_bytes(&dir.join(name)) else {
            return;
        };
        let unreadable = self.fs.visible_unreadable(&dir.join(name));
        let readable = frame::Readable::new(&image, &unreadable);
        let (extent, _) = walk_segment(name, *segment_base, readable, next_base);
        let in_extent = extent
            .frames
            .iter()
            .any(|f| f.base_offset == base && u64::from(f.record_count) == records);
        let at_position = position.is_some_and(|at| {
            readable.valid_at(at).is_some_and(|header| {
                header.base_offset == base
                    && u64::from(header.record_count) == records
                    && frame::records_at(&image, at, &header).is_some()
            })
        });
        let whole = in_extent || at_position;
        let now = self.now_ms();
        self.history.frame_at_skip(now, tp, base, records, whole);
    }
}
