//! Refusals (R3). What the disk held when the engine refused a partition: the records
//! a refusal can take. A refusal makes unreachable what the partition and the WAL hold
//! at the open; a record gone before it (an earlier cut, a replay that dropped its
//! entry) is not the refusal's, and the `refused` excuse must not cover it.
//!
//! And what the refusing incarnation changed under the partition's directory: an open
//! only reads a partition before it decides to refuse it, and a store never touches a
//! refused one, so any write, truncation, creation, unlink or rename there destroys
//! what the refusal keeps for the operator (`RefusedPartitionChanged`, which
//! `retention_safe` rule 8 flags). The change is tagged with the incarnation that
//! issued it (a killed one's futures may still run), and the refusal with the one that
//! raised it. A refusal counts once the world knows of it (its record, the engine's
//! alarm) or, with no fault on the partition or a store-wide file since the restart,
//! once the restart's view of the disk says R3: an open killed or failed before it
//! refused changed nothing either (helper-114 H1).

use super::*;
use crate::history::{DiskView, FileChange, ProduceId, parse_payload_id};
use crate::reference;
use crate::world::disk;

/// What the running incarnation changed and refused, per partition.
#[derive(Default)]
pub struct RefusalWatch {
    incarnation: Incarnation,
    /// The first change the engine issued under each partition's directory: its path,
    /// kind and time; `None` once reported.
    first_change: BTreeMap<TopicPartition, Option<(PathBuf, FileChange, u64)>>,
    refused: BTreeSet<TopicPartition>,
    /// The partitions the open must refuse: R3 in the world's view of the disk at the
    /// restart (an open killed or failed before the world learns of its refusal still
    /// changes nothing).
    expected: BTreeSet<TopicPartition>,
}

impl RefusalWatch {
    /// Forgets an earlier incarnation's account once `incarnation` acts.
    fn at(&mut self, incarnation: Incarnation) -> bool {
        if incarnation > self.incarnation {
            *self = RefusalWatch {
                incarnation,
                ..RefusalWatch::default()
            };
        }
        incarnation == self.incarnation
    }
}

impl Recorder {
    /// Before the engine issues `change` to `path` in `tp`'s directory.
    pub fn engine_changes(&mut self, tp: &TopicPartition, path: &Path, change: FileChange) {
        let incarnation = self.issuing_incarnation();
        let now = self.now_ms();
        let watch = &mut self.refusal_watch;
        if !watch.at(incarnation) || watch.first_change.contains_key(tp) {
            return;
        }
        watch
            .first_change
            .insert(tp.clone(), Some((path.to_path_buf(), change, now)));
        let expected = watch.expected.contains(tp);
        if watch.refused.contains(tp) || expected && !self.struck_now(tp) {
            self.report_refused_change(tp);
        }
    }

    /// At a restart, after `Restart`: the world's view of `tp` at it is R3, so its open
    /// must refuse it unless a fault strikes it (or a store-wide file) before.
    pub fn refusal_expected(&mut self, tp: &TopicPartition) {
        let incarnation = self.history.incarnation();
        let watch = &mut self.refusal_watch;
        if watch.at(incarnation) {
            watch.expected.insert(tp.clone());
        }
    }

    /// A fault struck `tp`, or a store-wide file, since the restart.
    fn struck_now(&self, tp: &TopicPartition) -> bool {
        self.struck_since_restart()
            .any(|t| t.is_none_or(|t| t == tp))
    }

    /// When the world learns that `incarnation`'s open refused `tp` (its own record, or
    /// the engine's alarm).
    pub fn refusal_known(&mut self, tp: &TopicPartition, incarnation: Incarnation) {
        let watch = &mut self.refusal_watch;
        if watch.at(incarnation) && watch.refused.insert(tp.clone()) {
            self.report_refused_change(tp);
        }
    }

    fn report_refused_change(&mut self, tp: &TopicPartition) {
        let Some(first) = self.refusal_watch.first_change.get_mut(tp) else {
            return;
        };
        if let Some((path, change, changed_ms)) = first.take() {
            let now = self.now_ms();
            self.history.refused_partition_changed(
                now,
                tp,
                &path.to_string_lossy(),
                change,
                changed_ms,
            );
        }
    }

    /// The incarnation whose task is issuing a call: the running one outside any node
    /// task.
    fn issuing_incarnation(&self) -> Incarnation {
        crate::world::alarms::running_incarnation().unwrap_or(self.history.incarnation())
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
