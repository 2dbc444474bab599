//! `Skipped`: a consume-time skip (a frame or envelope that failed its checks below the
//! HWM, counted) took the record's copy. The row names the copy by identity: at its
//! acknowledged offset while no cut or clamp has put another record there, or where an
//! open's hidden tail listed it (the WAL replay re-commits a record a cut took at
//! another offset). A skip of whatever now sits at the acknowledged offset is no skip
//! of the record.

use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{EventKind, Offset, ProduceId, TopicPartition};

impl Excuses<'_, '_> {
    /// `Skipped`: a consume-time skip on `tp` after `after` whose frame held a copy of
    /// `id`: at `offset` (acknowledged or delivered at `after`) with no cut or clamp at
    /// or below it since, or at an offset a later open's hidden tail listed for `id`
    /// with no cut or clamp at or below it between that open and the skip. No open
    /// after the skip found another copy of `id` in its hidden tail.
    pub fn skipped(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        after: usize,
    ) -> Option<Excuse> {
        let listed = self.listed_copies(tp, id, after);
        let (s, copy) = self
            .facts
            .alarms
            .skips(tp)
            .filter(|s| s.index > after)
            .find_map(|s| {
                let kept =
                    |from: usize, o: Offset| s.contains(o) && !self.moved(tp, o, from, s.index);
                if kept(after, offset) {
                    return Some((s, offset));
                }
                listed
                    .iter()
                    .find(|&&(at, o)| at < s.index && kept(at, o))
                    .map(|&(_, o)| (s, o))
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

    /// Whether a cut or clamp on `tp` between history indices `from` and `to` reached
    /// `offset`: the record there since `from` may no longer be the one it was.
    fn moved(&self, tp: &TopicPartition, offset: Offset, from: usize, to: usize) -> bool {
        let alarms = &self.facts.alarms;
        alarms
            .cuts(tp)
            .any(|c| from < c.index && c.index < to && c.offset <= offset)
            || alarms
                .clamps(tp)
                .any(|c| from < c.index && c.index < to && c.hwm <= offset)
    }

    /// Every copy of `id` an open after `after` listed in `tp`'s hidden tail: (the
    /// listing's history index, the copy's offset).
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
                EventKind::HiddenAtOpen { tp: t, held, .. } if t == tp => Some((index, held)),
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
