//! `Clamped`: an R4 clamp gave up the offsets `[hwm, persisted_hwm)` of a partition, a
//! recorded loss. The row covers a record at its acknowledged offset inside that range,
//! or, by identity, the copy the world last listed inside it (the WAL replay re-commits
//! a record a cut took at another offset, and a later clamp can take that copy), when
//! no other known copy may outlive the clamp.
//!
//! Not asked: whether the WAL still held the record's entry at the clamping open (its
//! replay would then re-commit it). The WAL checkpoint passes an entry only after the
//! HWM persisted past its commit, and the world does not decode the checkpoint; see
//! `sim/HARNESS.md`, "Known holes".

use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{Offset, ProduceId, TopicPartition};

impl Excuses<'_, '_> {
    /// `Clamped`: a clamp on `tp` after `after` (and before `before`) whose given-up
    /// range holds `offset`.
    pub fn clamped(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        after: usize,
        before: usize,
    ) -> Option<Excuse> {
        let c = self.facts.alarms.clamps(tp).find(|c| {
            after < c.index && c.index < before && c.hwm <= offset && offset < c.persisted_hwm
        })?;
        Some(Excuse::new(
            ExcuseKind::Clamped,
            vec![c.index],
            format!("{tp} offsets [{}, {})", c.hwm, c.persisted_hwm),
        ))
    }

    /// `Clamped`, for an HWM that fell: a clamp on `tp` between `after` and `before`
    /// that gave up at least `drop` records.
    pub fn clamped_by(
        &self,
        tp: &TopicPartition,
        drop: u64,
        after: usize,
        before: usize,
    ) -> Option<Excuse> {
        let c = self
            .facts
            .alarms
            .clamps(tp)
            .find(|c| after < c.index && c.index < before && c.lost >= drop)?;
        Some(Excuse::new(
            ExcuseKind::Clamped,
            vec![c.index],
            format!("{tp} HWM {} -> {}", c.persisted_hwm, c.hwm),
        ))
    }

    /// `Clamped`, by copy: a clamp on `tp` after `after` gave up the last copy of `id`:
    /// at `acked` (the acknowledged or delivered offset, known from `after`) or where
    /// the world listed it before the clamp (a hidden tail, or the frames a damage hit),
    /// at an offset nothing moved between then and the clamping open's restart (that
    /// open's own cut is what the clamp records). No other known copy may outlive the
    /// clamp, and no later listing names the record.
    pub fn clamped_copy(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        acked: Option<Offset>,
        after: usize,
    ) -> Option<Excuse> {
        let listed = self.listed_copies(tp, id, after);
        let copies: Vec<(usize, Offset)> = acked
            .map(|o| (after, o))
            .into_iter()
            .chain(listed.iter().copied())
            .collect();
        let (c, at, copy) = self
            .facts
            .alarms
            .clamps(tp)
            .filter(|c| c.index > after)
            // A clamp followed by a listing of the record took no last copy; try the
            // next.
            .filter(|c| !listed.iter().any(|&(listed_at, _)| listed_at > c.index))
            .find_map(|c| {
                let taken = c.hwm..c.persisted_hwm;
                let own = self
                    .facts
                    .restarts
                    .get(&c.incarnation)
                    .map_or(c.index, |&r| r.min(c.index));
                let mut opened = own;
                // Opens killed just before the clamp's, whose cuts lie at or above its
                // HWM, are part of it: the clamp's view holds nothing there, so what
                // they cut is what the clamp gave up. What they listed (their hidden
                // tail, damage before the clamp's restart) still names a copy: a copy
                // counts if listed before the clamp's own restart and nothing but
                // those opens' cuts moved it since.
                let mut inc = c.incarnation;
                while inc > 0 && !self.facts.opened.contains(&(inc - 1)) {
                    let Some(&r) = self.facts.restarts.get(&(inc - 1)) else {
                        break;
                    };
                    let cuts_above = self
                        .facts
                        .alarms
                        .cuts(tp)
                        .filter(|x| x.incarnation == inc - 1)
                        .all(|x| x.offset >= c.hwm);
                    if !cuts_above {
                        break;
                    }
                    opened = opened.min(r);
                    inc -= 1;
                }
                // A copy listed before the walked opens may have moved only before
                // them; one they listed, only by what came after it, their cuts aside.
                let walked = inc..c.incarnation;
                copies
                    .iter()
                    .find(|&&(at, o)| {
                        at < own
                            && taken.contains(&o)
                            && !if at < opened {
                                self.moved(tp, o, at, opened)
                            } else {
                                self.moved_but(tp, o, at, own, &walked)
                            }
                            && !self.other_copy(tp, &copies, c.index, &taken, at, o)
                    })
                    .map(|&(at, o)| (c, at, o))
            })?;
        let range = format!("{tp} offsets [{}, {})", c.hwm, c.persisted_hwm);
        Some(Excuse::new(
            ExcuseKind::Clamped,
            vec![c.index],
            if at == after && Some(copy) == acked {
                range
            } else {
                format!("{range}, holding its copy at offset {copy}")
            },
        ))
    }
}
