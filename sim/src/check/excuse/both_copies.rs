//! `BothCopiesDamaged`: the row for a record whose WAL entry and log copy were both
//! destroyed at rest. It follows the record through every open killed before one
//! completed, since a killed open may have copied it again (a replay that read its
//! entry, a salvage past an R2 hole) before the damage caught up with every copy.

use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{
    Alarm, EventKind, FileKind, Incarnation, Offset, OpenRule, ProduceId, TopicPartition,
};

/// The first incarnation whose replay reads the WAL damage the fault at `fault_index`
/// did, the world's `first_replay` for it: for a flip the page cache did not take, no
/// earlier than the open after the first power loss since (helper-108); `None` when
/// none came.
fn first_replay_reading(
    facts: &crate::check::facts::Facts<'_>,
    fault_index: usize,
    first_replay: Incarnation,
) -> Option<Incarnation> {
    if !facts.flip_missed_cache(fault_index) {
        return Some(first_replay);
    }
    facts
        .crashes
        .iter()
        .find(|c| !c.process && c.index > fault_index)
        .map(|c| first_replay.max(c.incarnation + 1))
}

/// One `WalEntriesDamaged` event as [`Excuses::wal_damage_of`] reads it.
struct WalDamage<S> {
    index: usize,
    first_replay: Incarnation,
    fault_index: usize,
    seqs: S,
}

impl Excuses<'_, '_> {
    /// `BothCopiesDamaged`: both durable copies of the record `id`, acknowledged at
    /// `ack_index` at `offset` of `tp`, were destroyed at rest, so that no engine could
    /// bring it back. All of:
    /// - the first crash after the ack finds `offset` at or above the persisted HWM:
    ///   from the open after it the WAL entry is what restores the record;
    /// - a `WalEntriesDamaged` event names `id` on `tp` (and, for each salvage that wrote
    ///   it into the WAL again before that fault, another of its entries is named
    ///   destroyed) with a `first_replay` no later
    ///   than the first open after that crash that completed with `tp` open (not
    ///   refused), and every open in between (killed or failed, so the world saw no
    ///   frontier, or one that refused `tp` and so used neither copy) left `tp`'s durable
    ///   tail where it was, or the next open found no copy of `id` where a replay of
    ///   that open could have put one (its hidden tail, held by identity): no replay
    ///   copied the record while its entry was readable;
    /// - at that crash, or one ending such a killed open, with `offset` still at or
    ///   above the persisted HWM, its log copy was gone: `offset` at or past the
    ///   durable tail at a power loss (the frame never became durable, or a bad frame
    ///   ends the log below it), or in-contract damage at rest to the frame holding `offset` (a cut below
    ///   it salvages the record's readable frame), injected since the crash before the
    ///   ack and before the next crash, and seen: an open after it, up to the one that
    ///   completed, announced a cut at or below `offset`.
    pub fn both_copies_damaged(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        ack_index: usize,
    ) -> Option<Excuse> {
        let floor = self
            .facts
            .crash_before(ack_index)
            .map_or(0, |c| c.index + 1);
        self.both_copies_damaged_since(tp, id, offset, ack_index, floor)
    }

    /// [`Excuses::both_copies_damaged`], with damage to the log copy counted only from
    /// history index `damage_from` on: the copy was written after it.
    fn both_copies_damaged_since(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        ack_index: usize,
        damage_from: usize,
    ) -> Option<Excuse> {
        let facts = self.facts;
        let events = facts.history.events();
        let (wal_damage_index, first_replay, wal_fault_index) = self
            .wal_damage_of(tp, id)
            .filter_map(|mut d| {
                d.seqs
                    .next()
                    .map(|_| (d.index, d.first_replay, d.fault_index))
            })
            .min_by_key(|&(index, first_replay, _)| (first_replay, index))?;
        let mut after_ack = facts.crashes.iter().filter(|c| c.index > ack_index);
        let first = after_ack.next()?;
        if first
            .partitions
            .get(tp)
            .is_none_or(|p| offset < p.persisted_hwm)
        {
            return None;
        }
        // In-contract damage at rest to the frame holding `offset`, injected from
        // `damage_from` (the crash before the ack, or a replay's alarm) and before
        // `until`. The caller has `offset` at or above the persisted HWM, so that frame
        // is in the hidden tail; the damage may reach below it too (a latent sector
        // names every frame it shares a byte with).
        let frame_damage = |until: usize| {
            facts
                .segment_damage
                .get(tp)
                .into_iter()
                .flatten()
                .copied()
                .filter(move |&d| {
                    damage_from <= d
                        && d < until
                        && match &events[d].kind {
                            crate::history::EventKind::Fault { kind, .. } => kind
                                .segment_damage()
                                .and_then(|(offsets, _)| offsets)
                                .is_some_and(|r| r.contains(offset)),
                            _ => false,
                        }
                })
        };
        // An open of `incarnation` cut the log at or below `offset` after damage `d` to
        // its frame that it could read: the engine saw it, and the log copy was gone
        // from then on (a flip the page cache missed is read only after a power loss).
        let cut_after = |d: usize, incarnation: crate::history::Incarnation| {
            facts.alarms.cuts(tp).any(|cut| {
                cut.index > d
                    && cut.offset <= offset
                    && cut.incarnation == incarnation
                    && facts.damage_readable_at(d, cut.index)
            })
        };
        // An R2 salvage after the WAL damage wrote the record into the WAL again, under
        // a new seq: it has a readable entry after all.
        if facts.salvaged_after(tp, id, wal_fault_index) {
            return None;
        }
        let mut candidates = vec![first];
        // The tail the open of `completed` found.
        let mut tail = first.partitions.get(tp)?.durable_tail;
        let mut completed = first.incarnation + 1;
        // An open that refused `tp` left it as it was: its log untouched and no replay
        // into it, whatever the rest of the store did.
        let refused = |inc: Incarnation| facts.alarms.refused_in(tp, inc);
        while !facts.opened.contains(&completed) || refused(completed) {
            let lowest_cut = facts
                .alarms
                .cuts(tp)
                .filter(|cut| cut.incarnation == completed)
                .map(|cut| cut.offset)
                .min();
            if completed >= first_replay
                && !refused(completed)
                && facts.alarms.wal_damaged_in(completed)
                && !self.found_no_copy(tp, id, completed, offset)
                && !frame_damage(usize::MAX).any(|d| cut_after(d, completed))
                && !self.hidden_again(tp, id, completed + 1, offset)
            {
                // That killed open got through the WAL's replay with the entry already
                // gone; what it did next (exposing the hidden tail) may have saved the
                // log copy it found. Unless it found none, or had already cut the
                // damaged frame away (its log open comes before the replay): then there
                // was no copy left to save; or the next open found the copy hidden
                // again: then no exposure of it lasted.
                return None;
            }
            let ended = facts.crash_ending(completed)?;
            let ended_tail = ended.partitions.get(tp)?.durable_tail;
            // A replay of that open appends at its tail, or lower after its cut; one
            // that read the entry (or a tail that grew) may have copied the record there,
            // and only the next open's hidden tail, by identity, says it did not.
            let floor = lowest_cut.map_or(tail, |cut| cut.min(tail));
            let replayed_below =
                completed < first_replay && lowest_cut.is_some_and(|c| c <= offset);
            if replayed_below || ended_tail > tail {
                // A replay that read the readable entry wrote the record again: the row
                // starts over from that copy, if the next open found it hidden or the
                // damage at the crash that killed the replay took it.
                let no_copy = self.found_no_copy(tp, id, completed + 1, floor);
                let taken = facts.damage_took_at_crash(tp, ended).any(|c| c.id == id);
                if !no_copy || taken {
                    let followed = (completed < first_replay)
                        .then(|| self.recommitted(tp, id, offset, completed))
                        .flatten();
                    // With no copy at the next open, the row still holds as it was:
                    // whatever the replay wrote was gone by then.
                    if followed.is_some() || !no_copy {
                        return followed;
                    }
                }
            }
            tail = ended_tail;
            candidates.push(ended);
            completed += 1;
        }
        if first_replay > completed {
            // The first open that completed replayed the WAL while the entry was
            // readable: it wrote the record again, and the row starts over from that
            // copy, the next open's hidden one (by identity), as from an
            // acknowledgement: the entry and that copy are its two copies now.
            return self.recommitted(tp, id, offset, completed);
        }
        // A salvage before the WAL fault gave the record an entry of its own, under
        // another seq: damage the first open that completed could read must name one
        // more destroyed entry of `id` for each (damage after it saved nothing).
        let salvaged_before = facts
            .salvage_wrote
            .get(&(tp.clone(), id))
            .map_or(0, |wrote| {
                wrote.iter().filter(|&&w| w < wal_fault_index).count()
            });
        if salvaged_before > 0 {
            let destroyed: std::collections::BTreeSet<u64> = self
                .wal_damage_of(tp, id)
                .filter(|d| d.first_replay <= completed)
                .flat_map(|d| d.seqs)
                .collect();
            if destroyed.len() <= salvaged_before {
                return None;
            }
        }
        let (crash, log_cause) = candidates.iter().find_map(|c| {
            let p = c.partitions.get(tp)?;
            if offset < p.persisted_hwm {
                return None;
            }
            // Past the tail at a power loss, the frame is gone from the platter; past
            // the tail a process crash's cache shows, it may be a truncation still
            // pending, which a later power loss undoes. At a later crash than the
            // first, the frame was durable: only a cut an open announced at or below
            // `offset` (which `alarms_explained` holds to the disk) may have taken it,
            // and a tail that fell under no such cut is the engine's own truncation
            // (helper-105).
            let announced = c.index == first.index
                || facts.alarms.cuts(tp).any(|cut| {
                    cut.offset <= offset
                        && first.incarnation < cut.incarnation
                        && cut.incarnation <= completed
                });
            if offset >= p.durable_tail && !c.process && announced {
                return Some((c, None));
            }
            let until = facts.next_crash_after(c.index).min(events.len());
            let d = frame_damage(until).next()?;
            // The engine saw it: an open up to the one that completed cut the log at
            // or below `offset` after the damage landed.
            (first.incarnation + 1..=completed)
                .any(|incarnation| cut_after(d, incarnation))
                .then_some((c, Some(d)))
        })?;
        let mut causes = vec![wal_fault_index, wal_damage_index, crash.index];
        causes.extend(log_cause);
        Some(Excuse::new(
            ExcuseKind::BothCopiesDamaged,
            causes,
            format!(
                "{tp} offset {offset} (id {id}): its WAL entry destroyed by the {}; its log copy {}",
                facts.describe_fault(wal_fault_index),
                match log_cause {
                    Some(d) => format!("in the frame the {} hit", facts.describe_fault(d)),
                    None => format!("not durable at the crash at t={}ms", crash.at_ms),
                }
            ),
        ))
    }

    /// Every `WalEntriesDamaged` event that may name `id`, with the seqs of `id`'s entries
    /// on `tp` it names (none when it names only other records' entries).
    fn wal_damage_of<'a>(
        &'a self,
        tp: &'a TopicPartition,
        id: ProduceId,
    ) -> impl Iterator<Item = WalDamage<impl Iterator<Item = u64> + 'a>> + 'a {
        let facts = self.facts;
        let events = facts.history.events();
        facts
            .wal_damage
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(move |&index| match &events[index].kind {
                EventKind::WalEntriesDamaged {
                    fault_index,
                    first_replay,
                    entries,
                } => Some(WalDamage {
                    index,
                    first_replay: first_replay_reading(facts, *fault_index, *first_replay)?,
                    fault_index: *fault_index,
                    seqs: entries
                        .iter()
                        .filter(move |e| e.id == id && e.tp == *tp)
                        .map(|e| e.seq),
                }),
                _ => unreachable!("wal_damage indexes WalEntriesDamaged events"),
            })
    }

    /// [`Excuses::both_copies_damaged`] from the copy of `id` the replay of the open of
    /// `incarnation` committed on `tp`: the one the next open found in its hidden tail
    /// (or the damage at the crash ending that open took, just before the world's
    /// listing), taken as acknowledged at that replay's alarm, with only damage after
    /// that alarm counted against it (earlier damage hit the frame the replay
    /// replaced). When the next open found more than one copy hidden (the replay wrote
    /// the record again beside the one followed so far), each must be destroyed in its
    /// own right, every row resting on its own damage. `None` when that open replayed
    /// nothing into `tp`, or no such copy was found, or the next open's HWM lies above
    /// `before`, the offset of the copy followed so far (an older copy may have
    /// outlived the damage to the new one).
    fn recommitted(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        before: Offset,
        incarnation: Incarnation,
    ) -> Option<Excuse> {
        let replay = self.facts.alarms.of(tp).iter().find(|a| {
            a.incarnation == incarnation && matches!(a.alarm, Alarm::ReplayCommitting { .. })
        })?;
        let taken = self
            .facts
            .crash_ending(incarnation)
            .into_iter()
            .flat_map(|crash| self.facts.damage_took_at_crash(tp, crash));
        let copies: std::collections::BTreeSet<Offset> = self
            .facts
            .held_at_open(tp, incarnation + 1)
            .iter()
            .chain(taken)
            .filter(|c| c.id == id)
            .map(|c| c.offset)
            .collect();
        let next_hwm = self.facts.alarms.disk_at(tp, incarnation + 1)?.hwm;
        if copies.is_empty() || next_hwm > before {
            return None;
        }
        let key = (tp.clone(), id, incarnation);
        if let Some(row) = self.recommitted.borrow().get(&key) {
            return row.clone();
        }
        let floor = self
            .facts
            .crash_before(replay.index)
            .map_or(0, |c| c.index + 1)
            .max(replay.index);
        let row = (|| {
            let mut rows = copies
                .into_iter()
                .map(|copy| self.both_copies_damaged_since(tp, id, copy, replay.index, floor));
            let mut excuse = rows.next()??;
            for row in rows {
                let row = row?;
                for cause in row.causes {
                    if !excuse.causes.contains(&cause) {
                        excuse.causes.push(cause);
                    }
                }
                // Rows that followed the same later replay share its clauses.
                for clause in row.covers.split("; ") {
                    if !excuse.covers.split("; ").any(|c| c == clause) {
                        excuse.covers = format!("{}; {clause}", excuse.covers);
                    }
                }
            }
            Some(excuse)
        })();
        self.recommitted.borrow_mut().insert(key, row.clone());
        row
    }

    /// Whether the open before `incarnation` (killed) exposed nothing over `offset` on
    /// `tp`, and the open of `incarnation` read `tp`'s `hwm` word at or below `offset` in
    /// every view it took, with `id`'s copy still at `offset`: listed hidden by that
    /// open, or taken by damage at rest at the crash that killed the one before (the
    /// world read it there just before): no exposure lasted.
    /// An exposure announced (`hidden_exposed`, raised before the word is written) may
    /// have persisted the word, and a word found low again then says the engine lost
    /// it, which no fault explains; unless the kill was a process crash whose page
    /// cache, as the world read it, still held the word at or below `offset`, the
    /// engine had issued the word's write past `offset` (`HwmWriteIssued`), no fault
    /// touched the `hwm` file since the announcement, and the kill came within one of
    /// the disk's longest pauses after it: the word's write waits on nothing else (the
    /// alarm comes with the log's `io` lock held, and nothing else takes the `hwm` lock
    /// before the store's open returns), and lands in the cache after its first pause.
    /// Then the exposure's write never happened, and no engine could have made it
    /// happen sooner.
    fn hidden_again(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        incarnation: Incarnation,
        offset: Offset,
    ) -> bool {
        let facts = self.facts;
        let killing = incarnation
            .checked_sub(1)
            .and_then(|killed| facts.crash_ending(killed));
        let exposure = facts.alarms.of(tp).iter().find(|a| {
            a.incarnation + 1 == incarnation
                && matches!(a.alarm, Alarm::HiddenExposed { from, to } if from <= offset && offset < to)
        });
        if let Some(exposure) = exposure {
            let pause_max = facts.history.events().iter().find_map(|e| match &e.kind {
                EventKind::RunStarted {
                    io_latency_max_ms, ..
                } => Some(*io_latency_max_ms),
                _ => None,
            });
            let never_written = killing.zip(pause_max).is_some_and(|(crash, pause)| {
                let between = &facts.history.events()[exposure.index..crash.index];
                let word_faulted = between.iter().any(|e| {
                    matches!(&e.kind, EventKind::Fault { kind, tp: Some(t), .. }
                        if t == tp && kind.file() == Some(FileKind::Hwm))
                });
                // The engine did set out to write the word past the copy.
                let issued = between.iter().any(|e| {
                    matches!(&e.kind, EventKind::HwmWriteIssued { tp: t, word }
                        if t == tp && *word > offset)
                });
                crash.process
                    && issued
                    && !word_faulted
                    && crash.at_ms <= facts.at_ms(exposure.index) + pause
                    && crash
                        .partitions
                        .get(tp)
                        .is_some_and(|p| p.persisted_hwm <= offset)
            });
            if !never_written {
                return false;
            }
        }
        let views = facts.alarms.views_before(tp, incarnation, usize::MAX);
        let taken = killing
            .into_iter()
            .flat_map(|crash| facts.damage_took_at_crash(tp, crash));
        !views.is_empty()
            && views
                .iter()
                .all(|v| v.persisted_hwm.is_some_and(|p| p <= offset))
            && facts
                .held_at_open(tp, incarnation)
                .iter()
                .chain(taken)
                .any(|c| c.id == id && c.offset == offset)
    }

    /// Whether the open of `incarnation` found no copy of `id` on `tp` at or above
    /// `floor` that it could have kept: the valid extent of its first view ends at or
    /// below `floor`, or the records from `floor` lie in its hidden tail and none is
    /// `id`'s. An R2 open whose salvage was not recorded may have kept a readable frame
    /// past its hole (the salvage writes it into the WAL before the alarm), so it
    /// proves nothing, unless the world's listing of the readable records past the
    /// hole has none of `id`'s (`may_offer`).
    fn found_no_copy(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        incarnation: Incarnation,
        floor: Offset,
    ) -> bool {
        let facts = self.facts;
        let Some(view) = facts.alarms.disk_at(tp, incarnation) else {
            return false;
        };
        let salvage_shown = facts
            .alarms
            .of(tp)
            .iter()
            .any(|a| a.incarnation == incarnation && matches!(a.alarm, Alarm::Salvaged { .. }));
        if view.rule == OpenRule::Hole && !salvage_shown && facts.may_offer(tp, id, incarnation) {
            return false;
        }
        if view.tail <= floor {
            return true;
        }
        view.hwm <= floor
            && !facts
                .held_at_open(tp, incarnation)
                .iter()
                .any(|c| c.id == id && c.offset >= floor)
    }
}
