//! `Skipped`: a consume-time skip (a frame or envelope that failed its checks below the
//! HWM, counted) took the record's copy. The row names the copy by identity: at its
//! acknowledged offset while no cut or clamp has put another record there, or where an
//! open's hidden tail listed it (the WAL replay re-commits a record a cut took at
//! another offset). A skip of whatever now sits at the acknowledged offset is no skip
//! of the record, and a skip of one copy is no loss while another may survive it.

use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{Offset, ProduceId, TopicPartition};

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
                            && !self.other_copy(
                                tp,
                                &copies,
                                s.index,
                                &(s.base..s.base + s.records),
                                from,
                                c,
                            )
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
}
