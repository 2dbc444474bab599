//! What the disk held when the engine refused a partition (R3): the records
//! a refusal can take. A refusal makes unreachable what the partition and the WAL hold
//! at the open; a record gone before it (an earlier cut, a replay that dropped its
//! entry) is not the refusal's, and the `refused` excuse must not cover it.

use super::*;
use crate::history::{DiskView, ProduceId, parse_payload_id};
use crate::reference;
use crate::world::disk;

impl Recorder {
    /// A fault struck `tp`, or a store-wide file, since the restart.
    pub(super) fn struck_now(&self, tp: &TopicPartition) -> bool {
        self.struck_since_restart()
            .any(|t| t.is_none_or(|t| t == tp))
    }

    /// Right after the running incarnation's `r3_refused` alarm for `tp` (partition
    /// directory `dir`): the bad offset the reference decoder finds in the page cache,
    /// the ids the segments hold in readable frames (from each one's start, and past the
    /// bad region), and the ids of `tp`'s WAL entries.
    /// Nothing when a fault struck `tp` or a store-wide file since the restart: the
    /// open may have read bytes the page cache no longer shows.
    pub fn held_at_refusal(&mut self, dir: &Path, tp: &TopicPartition) {
        if self.struck_now(tp) {
            return;
        }
        let Some(image) = disk::dir_image(&self.fs, dir, disk::Image::Visible) else {
            return;
        };
        let decoded = reference::decode(&image);
        let view = DiskView::from_decoded(&decoded);
        // The valid frames from each segment's start, and those past the bad region (a
        // replay may have re-committed a record there, above the offset it was
        // acknowledged at).
        let past = decoded
            .bad
            .as_ref()
            .map(|bad| disk::held_past_hole(&image, bad))
            .unwrap_or_default();
        let mut log: Vec<ProduceId> = disk::held_in(&image, 0..u64::MAX)
            .into_iter()
            .chain(past)
            .map(|c| c.id)
            .collect();
        log.sort_unstable();
        log.dedup();
        let wal = self.wal_ids(tp);
        let now = self.now_ms();
        self.history
            .held_at_refusal(now, tp, view.bad.map(|b| b.offset), log, wal);
    }

    /// The produce ids of the entries for `tp` the WAL's segment files hold, as the page
    /// cache shows them, that a replay would commit: at or past the partition's floor in
    /// the checkpoint (seq and root), every one when the checkpoint does not read.
    fn wal_ids(&self, tp: &TopicPartition) -> Vec<ProduceId> {
        let dir = crate::world::node::wal_dir();
        let floor = crate::world::node::wal_checkpoint_seqs(&self.fs)
            .and_then(|seqs| seqs.into_iter().find(|(t, _)| t == tp).map(|(_, seq)| seq))
            .unwrap_or(0);
        let mut names = self.fs.visible_names(&dir).unwrap_or_default();
        names.sort();
        names
            .iter()
            .filter(|n| reference::wal::segment_base(n).is_some())
            .filter_map(|n| self.fs.visible_bytes(&dir.join(n)))
            .flat_map(|bytes| reference::wal::frames(&bytes))
            .flat_map(|f| f.entries)
            .filter(|e| e.topic == tp.topic && e.partition == tp.partition)
            .filter(|e| e.live_from(floor))
            .filter_map(|e| parse_payload_id(&e.payload).ok())
            .collect()
    }
}
