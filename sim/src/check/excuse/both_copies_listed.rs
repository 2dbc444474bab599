//! `BothCopiesDamaged`, by a listed copy: the row for a record whose last log copy was
//! not the acknowledged one but a copy a WAL replay re-committed elsewhere (after a cut
//! took the acknowledged one), which the world listed by identity in the frames a
//! damage hit (`DamageHeld`). Its WAL entry and that copy were both destroyed at rest,
//! with no open in between that completed, or got through the WAL's replay, so no
//! engine could bring the record back.

use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{Alarm, EventKind, Incarnation, Offset, ProduceId, TopicPartition};

/// The WAL damage a row rests on: the fault, its `WalEntriesDamaged` event, and the
/// first open whose replay reads the WAL after it.
#[derive(Clone, Copy)]
struct WalLoss {
    fault: usize,
    event: usize,
    first_replay: Incarnation,
}

/// The log damage a row rests on: the `DamageHeld` event, its fault, and the offset of
/// the copy it names.
#[derive(Clone, Copy)]
struct LogLoss {
    held: usize,
    fault: usize,
    offset: Offset,
}

impl Excuses<'_, '_> {
    /// `BothCopiesDamaged`, by a listed copy, for `id` acknowledged at `acked` of `tp`
    /// (history index `ack_index`). All of:
    /// - a `WalEntriesDamaged` event after the ack names `id` on `tp`, and no R2
    ///   salvage after it kept records (which writes them into the WAL again);
    /// - a `DamageHeld` after the ack names `id`'s copy at `x`, and no later listing
    ///   names `id` anywhere;
    /// - no open completed, or got through the WAL's replay, between the two damages;
    ///   when the log damage came first, no open started between them at all;
    /// - the first open that completed after both (or, when the log damage came last,
    ///   one that started after the WAL damage and cut at or below `x` after the log
    ///   damage landed during its scan) replays the damaged WAL, and it, or a killed
    ///   open after the log damage, announced a cut at or below `x`; its first view
    ///   holds no copy of `id` in its hidden tail below its own lowest cut;
    /// - every other copy known before the log damage had moved (the acknowledged one,
    ///   other listings), and of the opens since the ack that could replay the entry,
    ///   at most one left a re-commit that nothing cut or lost since, at or below `x`.
    pub fn both_copies_damaged_listed(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        acked: Offset,
        ack_index: usize,
    ) -> Option<Excuse> {
        let facts = self.facts;
        let events = facts.history.events();
        let listed = self.listed_copies(tp, id, ack_index);
        let wal_losses =
            facts
                .wal_damage
                .get(&id)?
                .iter()
                .filter_map(|&event| match &events[event].kind {
                    EventKind::WalEntriesDamaged {
                        fault_index,
                        first_replay,
                        entries,
                    } if *fault_index > ack_index
                        && entries.iter().any(|e| e.id == id && e.tp == *tp) =>
                    {
                        Some(WalLoss {
                            fault: *fault_index,
                            event,
                            first_replay: *first_replay,
                        })
                    }
                    _ => None,
                });
        for wal in wal_losses {
            let salvaged = facts.alarms.of(tp).iter().any(|a| {
                a.index > wal.fault && matches!(a.alarm, Alarm::Salvaged { kept, .. } if kept > 0)
            });
            if salvaged {
                continue;
            }
            let log_losses = listed
                .iter()
                .filter_map(|&(held, offset)| match &events[held].kind {
                    EventKind::DamageHeld { fault_index, .. } => Some(LogLoss {
                        held,
                        fault: *fault_index,
                        offset,
                    }),
                    _ => None,
                });
            for log in log_losses {
                if let Some(excuse) = self.both_lost(tp, id, (acked, ack_index), &listed, wal, log)
                {
                    return Some(excuse);
                }
            }
        }
        None
    }

    /// The row for one pair of damages; `ack` is (offset, history index).
    fn both_lost(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        (acked, ack_index): (Offset, usize),
        listed: &[(usize, Offset)],
        wal: WalLoss,
        log: LogLoss,
    ) -> Option<Excuse> {
        let facts = self.facts;
        let x = log.offset;
        let (start, end) = (wal.fault.min(log.fault), wal.fault.max(log.fault));
        // The first open that completed after both damages, and its restart. When the
        // log damage came last and landed while an open that started after the WAL
        // damage was scanning, that open counts once it cut at or below the copy after
        // the damage: its scan saw the damage, and its replay read the damaged WAL.
        let saw_log_damage = |inc: Incarnation| {
            wal.fault < log.fault
                && facts
                    .alarms
                    .cuts(tp)
                    .any(|c| c.incarnation == inc && c.index > log.fault && c.offset <= x)
        };
        let (&completed, &done) = facts.opened_at.iter().find(|&(&inc, _)| {
            facts
                .restarts
                .get(&inc)
                .is_some_and(|&r| r > end || (r > start && saw_log_damage(inc)))
        })?;
        let restart = facts.restarts[&completed];
        if completed < wal.first_replay {
            return None;
        }
        // Nothing between the damages could have saved the record.
        let between = facts
            .restarts
            .iter()
            .filter(|&(_, &r)| start < r && r < restart);
        for (&inc, &r) in between {
            let saving = facts.opened.contains(&inc)
                || facts.alarms.wal_damaged_in(inc)
                || (log.fault < wal.fault && r < wal.fault);
            if saving {
                return None;
            }
        }
        // The engine saw the log damage: a cut at or below the copy after it, up to the
        // completed open.
        let cut = facts
            .alarms
            .cuts(tp)
            .find(|c| c.index > log.fault && c.index < done && c.offset <= x)?;
        // Its hidden tail holds no copy of `id` that it did not cut away.
        let view = facts.alarms.disk_at(tp, completed)?;
        let own_cut = facts
            .alarms
            .cuts(tp)
            .filter(|c| c.incarnation == completed)
            .map(|c| c.offset)
            .min()
            .unwrap_or(Offset::MAX);
        if facts
            .held_at_open(tp, completed)
            .iter()
            .any(|c| c.id == id && view.hwm <= c.offset && c.offset < own_cut)
        {
            return None;
        }
        // No other copy known before the damage survives it; none is known after.
        if acked != x && !self.moved(tp, acked, ack_index, log.fault) {
            return None;
        }
        if listed.iter().any(|&(at, o)| {
            at > log.held || (at < log.fault && o != x && !self.moved(tp, o, at, log.fault))
        }) {
            return None;
        }
        if !self.one_recommit_at_most(tp, ack_index, log.fault, wal.first_replay, x) {
            return None;
        }
        Some(Excuse::new(
            ExcuseKind::BothCopiesDamaged,
            vec![wal.fault, wal.event, log.fault, cut.index],
            format!(
                "{tp} id {id}: its WAL entry destroyed by the {}; its last log copy, at \
                 offset {x}, in the frame the {} hit",
                facts.describe_fault(wal.fault),
                facts.describe_fault(log.fault)
            ),
        ))
    }

    /// Whether, of the opens after `ack_index` and before `before` that could replay
    /// the entry (before `first_replay`), at most one left a re-commit that may still
    /// be there at `before`, and at an offset up to `x` (so that it can be the copy at
    /// `x`). A replay commits at or past its open's floor (the tail it found, or its
    /// lowest cut); the re-commit is gone when a later open found the log ending
    /// cleanly at or below that floor, or cut there.
    fn one_recommit_at_most(
        &self,
        tp: &TopicPartition,
        ack_index: usize,
        before: usize,
        first_replay: Incarnation,
        x: Offset,
    ) -> bool {
        let facts = self.facts;
        let replays: Vec<(Incarnation, usize, Offset)> = facts
            .restarts
            .iter()
            .filter(|&(&inc, &r)| ack_index < r && r < before && inc < first_replay)
            .map(|(&inc, &r)| {
                let tail = facts.alarms.disk_at(tp, inc).map_or(0, |v| v.tail);
                let cut = facts
                    .alarms
                    .cuts(tp)
                    .filter(|c| c.incarnation == inc)
                    .map(|c| c.offset)
                    .min();
                (inc, r, cut.map_or(tail, |c| c.min(tail)))
            })
            .collect();
        let survivors: Vec<Offset> = replays
            .iter()
            .filter(|&&(inc, r, floor)| {
                let lost_at_restart = facts.restarts.iter().any(|(&later, &lr)| {
                    later > inc
                        && r < lr
                        && lr < before
                        && facts
                            .alarms
                            .disk_at(tp, later)
                            .is_some_and(|v| v.tail <= floor && v.bad.is_none())
                });
                let cut_later = facts
                    .alarms
                    .cuts(tp)
                    .any(|c| c.incarnation > inc && c.index < before && c.offset <= floor);
                !lost_at_restart && !cut_later
            })
            .map(|&(_, _, floor)| floor)
            .collect();
        survivors.len() <= 1 && survivors.iter().all(|&floor| floor <= x)
    }
}
