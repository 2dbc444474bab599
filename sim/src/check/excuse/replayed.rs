//! A segment fault's reach covers a record only while the record may have needed the
//! frames it took: not once the first power loss after the fault and the ack found the
//! record at or above the persisted HWM, with its WAL entry intact up to an open that
//! completed. The checkpoint never passes an entry above the persisted HWM, so that
//! open's replay re-commits the record, and a loss after it is not the fault's.
//!
//! "Intact": no damage named the entry, and no out-of-contract fault on the WAL, on a
//! directory, on another store file or on the partition's `hwm` came before that open
//! (each can spend or take the entry, or move the persisted HWM, and has a reach of its
//! own).

use super::Excuses;
use crate::check::contract::Reach;
use crate::history::{EventKind, FileKind, Offset, ProduceId, TopicPartition};

impl Excuses<'_, '_> {
    /// Whether the WAL replay of an open after the segment fault `r` had record `id`
    /// (acknowledged at `offset` of `tp`, history index `ack`) to restore.
    pub(super) fn replay_restores(
        &self,
        r: &Reach,
        tp: &TopicPartition,
        offset: Option<Offset>,
        id: Option<ProduceId>,
        ack: Option<usize>,
    ) -> bool {
        let (Some(offset), Some(id), Some(ack)) = (offset, id, ack) else {
            return false;
        };
        let facts = self.facts;
        // A crash between the ack and the fault may have moved the record.
        if r.file != FileKind::Segment
            || r.tp.as_ref() != Some(tp)
            || facts.crash_between(ack, r.fault_index)
        {
            return false;
        }
        let Some(loss) = facts
            .crashes
            .iter()
            .find(|c| !c.process && c.index > ack.max(r.fault_index))
        else {
            return false;
        };
        let above = loss
            .partitions
            .get(tp)
            .is_some_and(|p| offset >= p.persisted_hwm);
        // The first open after it that completed with `tp` open (one that refused it
        // replayed nothing into it).
        let Some(&restart) = facts
            .opened
            .range(loss.incarnation + 1..)
            .find(|&&inc| !facts.alarms.refused_in(tp, inc))
            .and_then(|inc| facts.restarts.get(inc))
        else {
            return false;
        };
        let events = facts.history.events();
        let entry_damaged = facts.wal_damage.get(&id).is_some_and(|damage| {
            damage.iter().any(|&e| match &events[e].kind {
                EventKind::WalEntriesDamaged { fault_index, .. } => *fault_index < restart,
                _ => false,
            })
        });
        let other_fault = facts.reaches.iter().any(|o| {
            o.fault_index < restart
                && (matches!(
                    o.file,
                    FileKind::Wal | FileKind::Directory | FileKind::Other
                ) || (o.file == FileKind::Hwm && o.tp.as_ref() == Some(tp)))
        });
        above && !entry_damaged && !other_fault
    }
}
