//! What the disk held when the engine refused a partition (R3): the records a refusal
//! can take. A refusal makes unreachable what the partition and the WAL hold at the
//! open; a record gone before it (an earlier cut, a replay that dropped its entry) is
//! not the refusal's, and the `refused` excuse must not cover it.

use super::*;
use crate::history::{DiskView, ProduceId, parse_payload_id};
use crate::reference;
use crate::world::disk;

impl Recorder {
    /// Right after the running incarnation's `r3_refused` alarm for `tp` (partition
    /// directory `dir`): the bad offset the reference decoder finds in the page cache,
    /// the ids the segments' valid extents hold, and the ids of `tp`'s WAL entries.
    /// Nothing when a fault struck `tp` or a store-wide file since the restart: the
    /// open may have read bytes the page cache no longer shows.
    pub fn held_at_refusal(&mut self, dir: &Path, tp: &TopicPartition) {
        let events = self.history.events();
        let since = events
            .iter()
            .rposition(|e| matches!(e.kind, EventKind::Restart))
            .unwrap_or(0);
        let struck = events[since..].iter().any(|e| match &e.kind {
            EventKind::Fault { tp: t, .. } => t.as_ref().is_none_or(|t| t == tp),
            _ => false,
        });
        if struck {
            return;
        }
        let Some(image) = disk::dir_image(&self.fs, dir, disk::Image::Visible) else {
            return;
        };
        let view = DiskView::from_decoded(&reference::decode(&image));
        let log = disk::held_in(&image, 0..u64::MAX)
            .into_iter()
            .map(|c| c.id)
            .collect();
        let wal = self.wal_ids(tp);
        let now = self.now_ms();
        self.history
            .held_at_refusal(now, tp, view.bad.map(|b| b.offset), log, wal);
    }

    /// The produce ids of every readable entry for `tp` in the WAL's segment files, as
    /// the page cache shows them.
    fn wal_ids(&self, tp: &TopicPartition) -> Vec<ProduceId> {
        let dir = crate::world::node::wal_dir();
        let mut names = self.fs.visible_names(&dir).unwrap_or_default();
        names.sort();
        names
            .iter()
            .filter(|n| reference::wal::segment_base(n).is_some())
            .filter_map(|n| self.fs.visible_bytes(&dir.join(n)))
            .flat_map(|bytes| reference::wal::frames(&bytes))
            .flat_map(|f| f.entries)
            .filter(|e| e.topic == tp.topic && e.partition == tp.partition)
            .filter_map(|e| parse_payload_id(&e.payload).ok())
            .collect()
    }
}
