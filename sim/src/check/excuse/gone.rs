//! Why a record can be gone: for one no consumer was ever given, the first of every
//! row that covers it; for a copy that was delivered, the same rows but retention's;
//! and a copy stranded where no open would look for it again.

use super::*;

impl<'f, 'h> Excuses<'f, 'h> {
    /// Why record `id` of `tp`, acknowledged at `offset` when known (history index
    /// `after`), can have been lost: of every row that covers a record no consumer was
    /// ever given, the one whose causes came first.
    pub fn record_gone(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Option<Offset>,
        after: usize,
    ) -> Option<Excuse> {
        self.gone(tp, id, offset, after, true)
    }

    /// Why the copy of record `id` delivered at `offset` of `tp` (history index `after`)
    /// can be gone for good: the rows of [`Excuses::record_gone`] but `retention`'s,
    /// which forgives a reap of any copy consumers could have read, while this copy
    /// was read and must itself be gone (its own reap ends the obligation where it is
    /// judged, `redelivered_after_expiry`).
    pub fn delivered_copy_gone(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        after: usize,
    ) -> Option<Excuse> {
        self.gone(tp, id, Some(offset), after, false)
    }

    fn gone(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Option<Offset>,
        after: usize,
        any_copy: bool,
    ) -> Option<Excuse> {
        // A record's frame exists from its commit, which can come before the client
        // hears the ack; a delivered copy is known only from its delivery.
        let since = if any_copy {
            self.facts
                .attempts
                .get(&id)
                .map_or(after, |&a| a.min(after))
        } else {
            after
        };
        let by_offset = |o: Offset| {
            [
                self.skipped(tp, id, o, after, since),
                self.both_copies_damaged(tp, id, o, after),
                self.both_copies_damaged_listed(tp, id, o, after),
            ]
        };
        // Of the rows that apply, the one whose causes all came first: what made the
        // record unreachable, and what a deadline is measured against (a reap after a
        // frontier jump already lost it is no cause of the loss).
        [
            self.refused_record(tp, id, offset, after),
            any_copy
                .then(|| self.retention(tp, id, offset, after))
                .flatten(),
            self.out_of_contract(tp, offset, Some(id), Some(after), usize::MAX),
            self.stranded_copy(tp, id, after),
            self.clamped_copy(tp, id, offset, after),
        ]
        .into_iter()
        .chain(offset.map(by_offset).into_iter().flatten())
        .flatten()
        .min_by_key(|e| e.causes.iter().max().copied().unwrap_or(0))
    }

    /// `OutOfContract`, by a copy: after `after`, an open left the last copy of `id`
    /// (the WAL replay re-commits a record a cut took at another offset) where a word
    /// fault made it unreachable, and that fault, still live at the open, moved its
    /// word across the copy's offset. Two places, each with the one word that can strand
    /// a copy there:
    /// - a frontier loaded past the last one the engine wrote skipped it
    ///   (`FrontierSkipped`, which lists only records with no copy at or above the
    ///   loaded frontier): a fault on `consumer.offset`;
    /// - it lay in the hidden tail of the open (`HiddenAtOpen`), which the WAL replay
    ///   re-commits only for entries past its checkpoint, and the checkpoint moves by the
    ///   HWM the engine believed persisted: a fault on `hwm`.
    pub fn stranded_copy(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        after: usize,
    ) -> Option<Excuse> {
        use crate::history::EventKind;
        let events = self.facts.history.events();
        events
            .iter()
            .enumerate()
            .skip(after + 1)
            .find_map(|(index, e)| {
                let (file, from, to, held, place) = match &e.kind {
                    EventKind::FrontierSkipped {
                        tp: t,
                        from,
                        to,
                        held,
                    } if t == tp => (
                        FileKind::ConsumerOffset,
                        from,
                        to,
                        held,
                        "the frontier it moved skipped",
                    ),
                    EventKind::HiddenAtOpen {
                        tp: t,
                        from,
                        to,
                        held,
                    } if t == tp => (FileKind::Hwm, from, to, held, "the HWM it moved hid"),
                    _ => return None,
                };
                let copy = held.iter().find(|c| c.id == id)?.offset;
                let r = self.facts.reaches.iter().find(|r| {
                    r.file == file
                        && r.tp.as_ref() == Some(tp)
                        && r.offsets.is_some_and(|o| o.contains(copy))
                        && r.live_at(self.facts, index, None)
                })?;
                Some(Excuse::new(
                    ExcuseKind::OutOfContract,
                    vec![r.fault_index, index],
                    format!(
                        "{}: {place} [{from}, {to}), which held a copy at offset {copy}",
                        self.facts.describe_fault(r.fault_index)
                    ),
                ))
            })
    }

    /// Whether the record needed the WAL entry `r` destroyed: a reach by WAL entry
    /// covers a record only if its log copy was not yet committed below the persisted
    /// HWM at the first crash after the ack and the fault (from there on the log copy is
    /// what recovery trusts, and the entry is spent). Without a crash after, the
    /// running engine never read the entry back. When a crash lies between the ack and
    /// the fault, the record may sit at another offset since (a replay re-committed
    /// it), so the ack's offset proves nothing and the entry is taken as needed.
    pub(super) fn wal_entry_needed(
        &self,
        r: &Reach,
        tp: &TopicPartition,
        offset: Option<Offset>,
        id: Option<ProduceId>,
        ack_index: Option<usize>,
    ) -> bool {
        let (Some(id), Some(offset), Some(ack)) = (id, offset, ack_index) else {
            return true;
        };
        if !r.ids.contains(&id) || self.facts.crash_between(ack, r.fault_index) {
            return true;
        }
        let from = ack.max(r.fault_index);
        self.facts
            .crashes
            .iter()
            .find(|c| c.index > from)
            .and_then(|c| c.partitions.get(tp))
            .is_some_and(|p| offset >= p.persisted_hwm)
    }
}
