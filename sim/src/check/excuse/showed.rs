//! A fault only the platter holds (a lost fsync, a misdirected or torn write) can take
//! a segment's frame only once a power loss shows it: until then the page cache serves
//! the engine's bytes, through process crashes too. And an open in between whose HWM
//! was at or below the record wrote its frame back from the page cache and fsynced it
//! (recovery's write-back), so the platter holds it again: an open that began after
//! the fault, and whose write-back no platter-only fault of its own took.

use super::Excuses;
use crate::check::contract::Reach;
use crate::history::{Alarm, FileKind, Offset, TopicPartition};

impl Excuses<'_, '_> {
    /// Whether the platter-only segment fault `r` could have taken the frame of `tp`
    /// at `offset` (acknowledged at history index `ack`) before history index `before`:
    /// a power loss came after both, before `before`, with no write-back of the frame
    /// in between. Other reaches answer true: this asks only what the platter hides.
    pub(super) fn showed(
        &self,
        r: &Reach,
        tp: &TopicPartition,
        offset: Option<Offset>,
        ack: Option<usize>,
        before: usize,
    ) -> bool {
        if r.file != FileKind::Segment || !r.platter_only() {
            return true;
        }
        let from = ack.map_or(r.fault_index, |a| a.max(r.fault_index));
        let Some(loss) = self
            .facts
            .crashes
            .iter()
            .find(|c| !c.process && c.index > from)
        else {
            return false;
        };
        loss.index < before
            && !offset.is_some_and(|o| self.wrote_back(tp, o, r.fault_index, loss.index))
    }

    /// Whether an open of `tp` wrote the frame at `offset` back onto the platter after
    /// the fault at history index `fault` and before `to`: it came up with its HWM at or
    /// below `offset` (its write-back rewrote and fsynced every frame above the HWM),
    /// its recovery began after the fault (an open whose own write-back the fault struck
    /// repaired nothing), and no platter-only fault of `tp`'s segments that can reach
    /// `offset` struck between its restart and its `log_opened` (a lost or misdirected
    /// fsync of the write-back, or of recovery's truncation, left the platter as it
    /// was; a lost fsync of the write-back is no reach of the record's own, which was
    /// acknowledged before it).
    fn wrote_back(&self, tp: &TopicPartition, offset: Offset, fault: usize, to: usize) -> bool {
        let facts = self.facts;
        facts.alarms.of(tp).iter().any(|a| {
            let Some(&start) = facts.restarts.get(&a.incarnation) else {
                return false;
            };
            fault < start
                && a.index < to
                && matches!(a.alarm, Alarm::LogOpened { hwm, .. } if hwm <= offset)
                && !facts.reaches.iter().any(|o| {
                    o.file == FileKind::Segment
                        && o.tp.as_ref() == Some(tp)
                        && o.platter_only()
                        && start < o.fault_index
                        && o.fault_index < a.index
                        && o.offsets.is_none_or(|range| range.contains(offset))
                })
        })
    }
}
