//! Where the copies of a record are, for the rows that name the copy an engine alarm
//! took by identity (`skipped`, `clamped` by copy). A copy is known at its
//! acknowledged offset, or where the world listed it: an open's hidden tail
//! (`HiddenAtOpen`) or the frames a damage hit, decoded just before it (`DamageHeld`).
//! A copy stops being known where a cut, clamp or restart may have put another record
//! at its offset ([`Excuses::moved`]); an alarm takes the record only if no other known
//! copy may outlive it ([`Excuses::other_copy`]).

use super::Excuses;
use crate::check::alarms::Cut;
use crate::history::{Alarm, EventKind, Incarnation, Offset, ProduceId, TopicPartition};
use std::ops::Range;

impl Excuses<'_, '_> {
    /// Whether a copy of the record other than the one at `copy` (known from `from`)
    /// may outlive the alarm at history index `index` that took the offsets `taken`:
    /// another known copy outside them that nothing moved before it, or an open that
    /// listed `copy` in its hidden tail and did not expose it there, whose WAL replay
    /// then committed the record again elsewhere.
    pub(super) fn other_copy(
        &self,
        tp: &TopicPartition,
        copies: &[(usize, Offset)],
        index: usize,
        taken: &Range<Offset>,
        from: usize,
        copy: Offset,
    ) -> bool {
        let events = self.facts.history.events();
        copies.iter().any(|&(at, o)| {
            at < index
                && if o == copy {
                    at >= from
                        && matches!(events[at].kind, EventKind::HiddenAtOpen { .. })
                        && !self.exposed(tp, events[at].incarnation, o)
                } else {
                    !taken.contains(&o) && !self.moved(tp, o, at, index)
                }
        })
    }

    /// Whether an open restarted between history indices `from` and `to` listed the copy
    /// of `id` at `offset` of `tp` in its hidden tail and did not expose it there: its
    /// WAL replay committed the record again elsewhere, and that copy is a stale
    /// duplicate whose loss takes nothing.
    pub(super) fn hidden_and_replayed(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        from: usize,
        to: usize,
    ) -> bool {
        self.facts
            .restarts
            .iter()
            .filter(|&(_, &restart)| from < restart && restart < to)
            .any(|(&inc, _)| {
                self.facts
                    .held_at_open(tp, inc)
                    .iter()
                    .any(|c| c.id == id && c.offset == offset)
                    && !self.exposed(tp, inc, offset)
            })
    }

    /// Whether the open of `incarnation` exposed its hidden tail at `offset` (the WAL
    /// replay then leaves the record there and commits it nowhere else).
    fn exposed(&self, tp: &TopicPartition, incarnation: Incarnation, offset: Offset) -> bool {
        self.facts.alarms.of(tp).iter().any(|a| {
            a.incarnation == incarnation
                && matches!(a.alarm, Alarm::HiddenExposed { from, to } if from <= offset && offset < to)
        })
    }

    /// Whether the record at `offset` of `tp` since history index `from` may no longer
    /// be there at `to`: a cut or clamp reached it, or an open found the log ending
    /// cleanly at or below it (a power loss took a copy only the page cache held) or
    /// had no view of it.
    pub(super) fn moved(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        from: usize,
        to: usize,
    ) -> bool {
        self.moved_but(tp, offset, from, to, &(0..0))
    }

    /// [`Excuses::moved`], not counting the cuts announced by the opens of `own` (the
    /// incarnations whose cuts a clamp counts as its own), nor a log found ending at
    /// the copy after one of those cuts reached it: that end is the cut's.
    pub(super) fn moved_but(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        from: usize,
        to: usize,
        own: &Range<Incarnation>,
    ) -> bool {
        let facts = self.facts;
        let alarms = &facts.alarms;
        let reaches = |c: &Cut| from < c.index && c.index < to && c.offset <= offset;
        let own_cut = alarms
            .cuts(tp)
            .filter(reaches)
            .filter(|c| own.contains(&c.incarnation))
            .map(|c| c.index)
            .min()
            .unwrap_or(to);
        alarms
            .cuts(tp)
            .filter(reaches)
            .any(|c| !own.contains(&c.incarnation))
            || alarms
                .clamps(tp)
                .any(|c| from < c.index && c.index < to && c.hwm <= offset)
            || facts.restarts.iter().any(|(&incarnation, &restart)| {
                // A restart whose view the world could not take (no directory) proves
                // nothing was kept. A log that ends at a bad frame at or below the copy
                // still holds it there, unreadable: only the cut the open announces
                // makes room for another record.
                from < restart
                    && restart < own_cut
                    && alarms
                        .disk_at(tp, incarnation)
                        .is_none_or(|d| d.tail <= offset && d.bad.is_none())
            })
    }

    /// Every copy of `id` the world named on `tp` after `after`, in an open's hidden
    /// tail, in the frames a damage hit (decoded before it) or in those an
    /// out-of-contract segment fault reached (`ReachHeld`): (the listing's history
    /// index, the copy's offset).
    pub(super) fn listed_copies(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        after: usize,
    ) -> Vec<(usize, Offset)> {
        self.facts
            .history
            .events()
            .iter()
            .enumerate()
            .skip(after + 1)
            .filter_map(|(index, e)| match &e.kind {
                EventKind::HiddenAtOpen { tp: t, held, .. }
                | EventKind::DamageHeld { tp: t, held, .. }
                | EventKind::ReachHeld { tp: t, held, .. }
                    if t == tp =>
                {
                    Some((index, held))
                }
                _ => None,
            })
            .flat_map(|(index, held)| {
                held.iter()
                    .filter(move |c| c.id == id)
                    .map(move |c| (index, c.offset))
            })
            .collect()
    }
}
