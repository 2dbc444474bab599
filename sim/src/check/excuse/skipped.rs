//! `Skipped`: a consume-time skip (a frame or envelope that failed its checks below the
//! HWM, counted) took the record's copy. The row names the copy by identity: at its
//! acknowledged offset while no cut or clamp has put another record there, or where an
//! open's hidden tail listed it (the WAL replay re-commits a record a cut took at
//! another offset). A skip of whatever now sits at the acknowledged offset is no skip
//! of the record, and a skip of one copy is no loss while another may survive it.

use super::super::alarms::SkipFact;
use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{Alarm, EventKind, Incarnation, Offset, ProduceId, TopicPartition};

impl Excuses<'_, '_> {
    /// `Skipped`: a consume-time skip on `tp` after `since` whose frame held the last
    /// copy of `id`: at `offset` (acknowledged or delivered at `after`; an acknowledged
    /// record's frame exists from `since`, its attempt, as its commit can come before
    /// the client hears the ack), or at an offset a later open's hidden tail listed for
    /// `id`, with no cut, clamp or open that found the log ending at or below it in
    /// between (for a skip before `after`: in the incarnation that acknowledged it,
    /// which committed it, and nothing moved between the skip and `after`); and no
    /// other copy known before the skip survives it (see [`Excuses::other_copy`]), nor
    /// does a later open list one.
    pub fn skipped(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        after: usize,
        since: usize,
    ) -> Option<Excuse> {
        debug_assert!(since <= after);
        let listed = self.listed_copies(tp, id, after);
        // Every copy known, with the history index from which it is known.
        let copies: Vec<(usize, Offset)> = std::iter::once((since, offset))
            .chain(listed.iter().map(|&(at, o)| (at, o)))
            .collect();
        let (s, copy) = self
            .facts
            .alarms
            .skips(tp)
            .filter(|s| s.index > since)
            .find_map(|s| {
                copies
                    .iter()
                    .find(|&&(from, c)| {
                        from < s.index
                            && s.contains(c)
                            && !self.moved(tp, c, from, s.index)
                            && (s.index > after
                                || (s.incarnation == self.facts.incarnation_at(after)
                                    && !self.moved(tp, c, s.index, after)))
                            && !self.other_copy(tp, &copies, &s, from, c)
                    })
                    .map(|&(_, c)| (s, c))
            })?;
        if listed.iter().any(|&(at, _)| at > s.index) {
            return None;
        }
        Some(Excuse::new(
            ExcuseKind::Skipped,
            vec![s.index],
            format!(
                "{tp} offsets [{}, {}), holding its copy at offset {copy}",
                s.base,
                s.base + s.records
            ),
        ))
    }

    /// Whether a copy of the record other than the one at `copy` (known from `from`)
    /// may outlive the skip `s`: another known copy outside its frame that nothing
    /// moved before it, or an open that listed `copy` in its hidden tail and did not
    /// expose it there, whose WAL replay then committed the record again elsewhere.
    fn other_copy(
        &self,
        tp: &TopicPartition,
        copies: &[(usize, Offset)],
        s: &SkipFact,
        from: usize,
        copy: Offset,
    ) -> bool {
        let events = self.facts.history.events();
        copies.iter().any(|&(at, o)| {
            at < s.index
                && if o == copy {
                    at >= from
                        && matches!(events[at].kind, EventKind::HiddenAtOpen { .. })
                        && !self.exposed(tp, events[at].incarnation, o)
                } else {
                    !s.contains(o) && !self.moved(tp, o, at, s.index)
                }
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
    /// be there at `to`: a cut or clamp reached it, or an open found the log ending at
    /// or below it (a power loss took a copy only the page cache held) or had no view
    /// of it.
    fn moved(&self, tp: &TopicPartition, offset: Offset, from: usize, to: usize) -> bool {
        let facts = self.facts;
        let alarms = &facts.alarms;
        alarms
            .cuts(tp)
            .any(|c| from < c.index && c.index < to && c.offset <= offset)
            || alarms
                .clamps(tp)
                .any(|c| from < c.index && c.index < to && c.hwm <= offset)
            || facts.restarts.iter().any(|(&incarnation, &restart)| {
                // A restart whose view the world could not take (no directory) proves
                // nothing was kept.
                from < restart
                    && restart < to
                    && alarms
                        .disk_at(tp, incarnation)
                        .is_none_or(|d| d.tail <= offset)
            })
    }

    /// Every copy of `id` the world named on `tp` after `after`, in an open's hidden
    /// tail or in the frames a damage hit (decoded before it): (the listing's history
    /// index, the copy's offset).
    fn listed_copies(
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
