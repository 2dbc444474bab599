//! `BothCopiesDamaged`, by listed copies: the row for a record whose last log copies
//! were not (only) the acknowledged one but copies a WAL replay re-committed elsewhere,
//! which the world listed by identity in the frames one damage hit (`DamageHeld`). Its
//! WAL entry and those copies were all destroyed at rest, with no open in between that
//! completed, or got through the WAL's replay, so no engine could bring the record
//! back.

use super::Excuses;
use super::{Excuse, ExcuseKind};
use crate::history::{EventKind, Incarnation, Offset, ProduceId, TopicPartition};

/// The WAL damage a row rests on: the fault, its `WalEntriesDamaged` event, and the
/// first open whose replay reads the WAL after it.
#[derive(Clone, Copy)]
struct WalLoss {
    fault: usize,
    event: usize,
    first_replay: Incarnation,
}

/// The log damage a row rests on: the `DamageHeld` event, its fault, and the offsets
/// of the record's copies it names (one or more, ascending).
#[derive(Clone)]
struct LogLoss {
    held: usize,
    fault: usize,
    offsets: Vec<Offset>,
}

impl Excuses<'_, '_> {
    /// `BothCopiesDamaged`, by a listed copy, for `id` acknowledged at `acked` of `tp`
    /// (history index `ack_index`). All of:
    /// - a `WalEntriesDamaged` event after the ack names `id` on `tp`, and no R2
    ///   salvage after it kept records (which writes them into the WAL again);
    /// - a `DamageHeld` after the ack names `id`'s copy at `x`, and no later listing
    ///   names `id` anywhere;
    /// - no open completed, or got through the WAL's replay, between the two damages;
    ///   when the log damage came first, no open started between them at all; a killed
    ///   open after both that got through the replay counts only if its cut left a copy;
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
            if facts.salvaged_after(tp, id, wal.fault) {
                continue;
            }
            let mut log_losses: Vec<LogLoss> = Vec::new();
            for &(held, offset) in &listed {
                let EventKind::DamageHeld { fault_index, .. } = &events[held].kind else {
                    continue;
                };
                match log_losses.last_mut() {
                    Some(last) if last.held == held => last.offsets.push(offset),
                    _ => log_losses.push(LogLoss {
                        held,
                        fault: *fault_index,
                        offsets: vec![offset],
                    }),
                }
            }
            for mut log in log_losses {
                log.offsets.sort_unstable();
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
        // The lowest copy the damage took: a cut at or below it took them all.
        let x = log.offsets[0];
        let taken = |o: Offset| log.offsets.contains(&o);
        let (start, end) = (wal.fault.min(log.fault), wal.fault.max(log.fault));
        // The first open that completed after both damages, and its restart. When the
        // log damage came last and landed while an open that started after the WAL
        // damage was scanning, that open counts once the world's view of its disk taken
        // after the damage ends the log at or below the copy and it cut there after the
        // damage: its scan saw the damage, and its replay read the damaged WAL.
        let saw_log_damage = |inc: Incarnation| {
            let damaged_view = facts
                .alarms
                .disks
                .get(&(tp.clone(), inc))
                .is_some_and(|views| {
                    views.iter().any(|(i, v)| {
                        let end = v.bad.as_ref().map_or(v.tail, |b| b.offset.min(v.tail));
                        *i > log.fault && end <= x
                    })
                });
            wal.fault < log.fault
                && damaged_view
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
            // A killed open after both damages that cut at or below every copy the log
            // damage took had no copy left to expose, and its replay found the entry
            // gone: what it did after its replay saved nothing.
            let cut_every_copy = r > end
                && facts
                    .alarms
                    .cuts(tp)
                    .any(|c| c.incarnation == inc && c.index > log.fault && c.offset <= x);
            let saving = facts.opened.contains(&inc)
                || (facts.alarms.wal_damaged_in(inc) && !cut_every_copy)
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
            .filter(|c| c.incarnation == completed && c.index > log.fault)
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
        let acked_stays = !self.moved(tp, acked, ack_index, log.fault);
        if !taken(acked) && acked_stays {
            return None;
        }
        if listed.iter().any(|&(at, o)| {
            at > log.held || (at < log.fault && !taken(o) && !self.moved(tp, o, at, log.fault))
        }) {
            return None;
        }
        // The re-commits may be the copies the damage took, but for the acknowledged
        // one while it stays where it was acknowledged.
        let recommits: Vec<Offset> = log
            .offsets
            .iter()
            .copied()
            .filter(|&o| !(o == acked && acked_stays))
            .collect();
        if !self.recommits_all_taken(tp, id, ack_index, log.fault, wal.first_replay, &recommits) {
            return None;
        }
        Some(Excuse::new(
            ExcuseKind::BothCopiesDamaged,
            vec![wal.fault, wal.event, log.fault, cut.index],
            format!(
                "{tp} id {id}: its WAL entry destroyed by the {}; its last log {}, in the \
                 frame{} the {} hit",
                facts.describe_fault(wal.fault),
                match log.offsets.as_slice() {
                    [one] => format!("copy, at offset {one}"),
                    many => format!(
                        "copies, at offsets {}",
                        many.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                if log.offsets.len() > 1 { "s" } else { "" },
                facts.describe_fault(log.fault)
            ),
        ))
    }

    /// Whether every re-commit that may still be there at `before`, of the opens after
    /// `ack_index` and before `before` that could replay the entry (before
    /// `first_replay`), can be one of the copies at `recommits` (each a distinct one):
    /// a copy the damage took. A replay commits at or past its open's floor (the tail it
    /// found, or its lowest cut); the re-commit is gone when a later open found the log
    /// ending cleanly at or below that floor, or cut there, or a power loss before
    /// `before` left the log ending at or below it with no salvage of `id` since.
    fn recommits_all_taken(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        ack_index: usize,
        before: usize,
        first_replay: Incarnation,
        recommits: &[Offset],
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
        let mut survivors: Vec<Offset> = replays
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
                let lost_at_power_loss = facts.crashes.iter().any(|c| {
                    r < c.index
                        && c.index < before
                        && !c.process
                        && c.partitions
                            .get(tp)
                            .is_some_and(|p| p.durable_tail <= floor)
                        && !facts.salvaged_after(tp, id, c.index)
                });
                let cut_later = facts
                    .alarms
                    .cuts(tp)
                    .any(|c| c.incarnation > inc && c.index < before && c.offset <= floor);
                !lost_at_restart && !lost_at_power_loss && !cut_later
            })
            .map(|&(_, _, floor)| floor)
            .collect();
        // Match each survivor, lowest floor first, to the lowest free copy at or above
        // its floor; that greedy matching finds one whenever any exists.
        survivors.sort_unstable();
        let mut free: Vec<Offset> = recommits.to_vec();
        free.sort_unstable();
        survivors
            .iter()
            .all(|&floor| match free.iter().position(|&o| o >= floor) {
                Some(k) => {
                    free.remove(k);
                    true
                }
                None => false,
            })
    }
}
