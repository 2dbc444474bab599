//! A segment fault's reach covers a record only while the record may have needed the
//! frames it took: not once the first power loss after the fault and the ack found the
//! record at or above the persisted HWM, with its WAL entry intact up to an open that
//! completed with the partition open. The checkpoint never passes an entry above the
//! persisted HWM, so that open's replay re-commits the record, and a loss after it is
//! not the fault's.
//!
//! "Intact": no damage named the entry before that open completed, and no
//! out-of-contract fault that could spend or take it came first: one on the WAL that
//! named the entry, or one on the partition's `hwm` between the ack and the power loss
//! whose words span the record's offset (the word the checkpoint followed may then
//! have passed it while the durable one stayed at or below it). Nothing else can: a WAL fault that named no entry destroyed none (the
//! checkpoint's own file "loses nothing"), a fault on `consumer.offset` strands
//! deliveries but spends no entry (its own rows judge it), a `topic.conf` fault refuses
//! the topic (such an open is not the one that completes), and an `hwm` fault before
//! the ack was overwritten by the word the engine wrote after it.
//!
//! An open between the ack and the fault that hid the record (its HWM at or below the
//! offset) does not void the rule: its replay committed the record at or above its
//! tail, so every copy still sits at or above the offset, and a word at or below the
//! offset at the power loss still means the entry was live.

use super::Excuses;
use crate::check::contract::Reach;
use crate::history::{Alarm, EventKind, FileKind, Offset, ProduceId, TopicPartition};

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
        if r.file != FileKind::Segment || r.tp.as_ref() != Some(tp) {
            return false;
        }
        // A cut or clamp between the ack and the fault put the record elsewhere (the
        // next replay committed it again): the fault's offsets then say nothing of it,
        // only a copy the world named in the frames it reached does. None named among
        // copies it did name: the fault took none of the record's.
        let offset = if self.moved(tp, offset, ack, r.fault_index) {
            match r.copy_at(tp, id) {
                Some(copy) => copy,
                None if !r.copies.is_empty() => return true,
                None => return false,
            }
        } else {
            offset
        };
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
        // A clamp down to the record since the ack lowers the word but not the
        // checkpoint, which the word past the record may have let spend its entry.
        let clamped = facts
            .alarms
            .clamps(tp)
            .any(|c| ack < c.index && c.index < loss.index && c.hwm <= offset);
        // The first open after it that completed with `tp` open (one that refused it
        // replayed nothing into it); the WAL is read while it runs.
        let Some(&done) = facts
            .opened_at
            .range(loss.incarnation + 1..)
            .find(|&(&inc, _)| !facts.alarms.refused_in(tp, inc))
            .map(|(_, done)| done)
        else {
            return false;
        };
        let events = facts.history.events();
        let entry_damaged = facts.wal_damage.get(&id).is_some_and(|damage| {
            damage.iter().any(|&e| match &events[e].kind {
                EventKind::WalEntriesDamaged { fault_index, .. } => *fault_index < done,
                _ => false,
            })
        });
        let other_fault = facts.reaches.iter().any(|o| match o.file {
            FileKind::Wal => o.ids.contains(&id) && o.fault_index < done,
            FileKind::Hwm => {
                o.tp.as_ref() == Some(tp)
                    && ack < o.fault_index
                    && o.fault_index < loss.index
                    && o.offsets.is_none_or(|w| w.contains(offset))
            }
            _ => false,
        });
        above && !clamped && !entry_damaged && !other_fault
    }

    /// Whether an open of `tp` between history indices `from` and `to` came up with its
    /// HWM at or below `offset`: its replay re-commits elsewhere a record its hidden
    /// tail holds there.
    pub(super) fn opened_below(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        from: usize,
        to: usize,
    ) -> bool {
        self.facts.alarms.of(tp).iter().any(|a| {
            from < a.index
                && a.index < to
                && matches!(a.alarm, Alarm::LogOpened { hwm, .. } if hwm <= offset)
        })
    }
}
