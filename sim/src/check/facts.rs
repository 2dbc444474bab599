//! An index over a history, built once, that every checker reads: where the crashes,
//! restarts, acknowledgements, faults, WAL damage, completed opens and the engine's
//! alarms are, and the reach of every out-of-contract fault. Keeping these answers in
//! one place keeps the excuses ([`super::excuse`]) identical across checkers.
//!
//! Invariants asserted while indexing (a violation is a simulator bug): produce ids
//! are attempted at most once; every restart follows a crash of the previous
//! incarnation.

use std::collections::{BTreeMap, BTreeSet};

use super::alarms::AlarmIndex;
use super::contract::{self, Contract, Reach};
use crate::history::{
    CrashPartition, EventKind, FaultKind, History, Incarnation, Offset, ProduceId, TopicPartition,
};

/// A crash, with the state of each partition the next open reads.
#[derive(Clone, Debug)]
pub struct CrashFact {
    pub index: usize,
    pub at_ms: u64,
    pub incarnation: Incarnation,
    /// A process crash: the page cache survived, so what it held is not yet durable.
    pub process: bool,
    pub partitions: BTreeMap<TopicPartition, CrashPartition>,
}

/// A word flip as a read saw it ([`Facts::word_flipped`]): the name read, the word
/// before and after.
#[derive(Clone, Copy, Debug)]
pub struct WordMove<'a> {
    pub read_as: &'a str,
    pub from: Offset,
    pub to: Offset,
    /// The flip hit the file the engine last wrote the partition's frontier to.
    pub written: bool,
}

#[derive(Debug)]
pub struct Facts<'h> {
    pub history: &'h History,
    pub crashes: Vec<CrashFact>,
    /// Index of each incarnation's Restart event (incarnation 0 has none).
    pub restarts: BTreeMap<Incarnation, usize>,
    pub heal: Option<(usize, u64)>,
    pub attempts: BTreeMap<ProduceId, usize>,
    /// First ProduceAck of each id.
    pub acks: BTreeMap<ProduceId, usize>,
    /// Per partition and incarnation, the lowest offset acknowledged to a produce: the
    /// store takes produces only once its open returned, so its replay's copies lie
    /// below it.
    pub first_acked: BTreeMap<(TopicPartition, Incarnation), Offset>,
    /// Indices of in-contract damage at rest (bit flips) to a partition's segments.
    pub segment_damage: BTreeMap<TopicPartition, Vec<usize>>,
    /// Per produce id, the [`EventKind::WalEntriesDamaged`] events that name it.
    pub wal_damage: BTreeMap<ProduceId, Vec<usize>>,
    /// Per fault index, the produce ids whose WAL entries it destroyed.
    pub wal_damage_by_fault: BTreeMap<usize, BTreeSet<ProduceId>>,
    /// Per (partition, produce id), the [`EventKind::SalvageWrote`] events whose WAL
    /// entries (kept or copied) hold it.
    pub salvage_wrote: BTreeMap<(TopicPartition, ProduceId), Vec<usize>>,
    /// Per (partition, produce id), the incarnations a process crash ended with an
    /// entry of it in the WAL's page cache and not on the platter (`WalCachedAtKill`).
    pub cached_at_kill: BTreeMap<(TopicPartition, ProduceId), BTreeSet<Incarnation>>,
    /// Per (partition, produce id), the incarnations a process crash ended in an open
    /// that had announced an R2 hole there, with a durable, readable WAL entry of it
    /// (`WalDurableAtKill`).
    pub durable_at_kill: BTreeMap<(TopicPartition, ProduceId), BTreeSet<Incarnation>>,
    /// Per (partition, produce id), the power losses (their history index) whose disk
    /// kept a cached-only entry of it (`WalKeptAtPowerLoss`).
    pub kept_at_power_loss: BTreeMap<(TopicPartition, ProduceId), BTreeSet<usize>>,
    /// Incarnations whose store open completed: the world recorded what it found (a
    /// frontier or a refusal per partition). Such an open replayed the whole WAL.
    pub opened: BTreeSet<Incarnation>,
    /// The history index at which each of those opens was seen complete.
    pub opened_at: BTreeMap<Incarnation, usize>,
    /// The history index of the world's read of the WAL checkpoint at each restart
    /// (`CheckpointAtOpen`).
    checkpoints_at_open: BTreeMap<Incarnation, usize>,
    /// The engine's alarms and the disk each open read.
    pub alarms: AlarmIndex,
    /// The reach of every out-of-contract fault, in history order.
    pub reaches: Vec<Reach>,
    /// Every segment the reaper deleted, in history order (judged by `retention_safe`).
    pub reaped: Vec<super::reaped::Reaped>,
    /// Per partition, the highest log start observed and the event showing it.
    log_starts: BTreeMap<TopicPartition, (Offset, usize)>,
}

impl<'h> Facts<'h> {
    pub fn new(history: &'h History) -> Self {
        let mut facts = Facts {
            history,
            crashes: Vec::new(),
            restarts: BTreeMap::new(),
            heal: None,
            attempts: BTreeMap::new(),
            acks: BTreeMap::new(),
            first_acked: BTreeMap::new(),
            segment_damage: BTreeMap::new(),
            wal_damage: BTreeMap::new(),
            wal_damage_by_fault: BTreeMap::new(),
            salvage_wrote: BTreeMap::new(),
            cached_at_kill: BTreeMap::new(),
            durable_at_kill: BTreeMap::new(),
            kept_at_power_loss: BTreeMap::new(),
            opened: BTreeSet::new(),
            opened_at: BTreeMap::new(),
            checkpoints_at_open: BTreeMap::new(),
            alarms: AlarmIndex::new(history),
            reaches: Vec::new(),
            reaped: super::reaped::reaped(history),
            log_starts: BTreeMap::new(),
        };
        for (index, event) in history.events().iter().enumerate() {
            match &event.kind {
                EventKind::ProduceAttempt { id, .. } => {
                    let previous = facts.attempts.insert(*id, index);
                    assert!(previous.is_none(), "produce id {id} attempted twice");
                }
                EventKind::ProduceAck { id, tp, offset, .. } => {
                    facts.acks.entry(*id).or_insert(index);
                    if let Some(offset) = *offset {
                        facts
                            .first_acked
                            .entry((tp.clone(), event.incarnation))
                            .and_modify(|o| *o = (*o).min(offset))
                            .or_insert(offset);
                    }
                }
                EventKind::Crash {
                    partitions,
                    process,
                } => facts.crashes.push(CrashFact {
                    index,
                    at_ms: event.at_ms,
                    incarnation: event.incarnation,
                    process: *process,
                    partitions: partitions
                        .iter()
                        .map(|p| (p.tp.clone(), p.clone()))
                        .collect(),
                }),
                EventKind::Restart => {
                    let incarnation = &event.incarnation; // the new one
                    assert!(
                        facts
                            .crashes
                            .last()
                            .is_some_and(|c| c.incarnation + 1 == *incarnation),
                        "restart into incarnation {incarnation} without a crash of the previous one"
                    );
                    facts.restarts.insert(*incarnation, index);
                }
                EventKind::CheckpointAtOpen { .. } => {
                    facts.checkpoints_at_open.insert(event.incarnation, index);
                }
                EventKind::PartitionRefused { .. } | EventKind::FrontierObserved { .. } => {
                    facts.opened.insert(event.incarnation);
                    facts.opened_at.entry(event.incarnation).or_insert(index);
                }
                EventKind::Fault {
                    kind, tp: Some(tp), ..
                } if kind.segment_damage().is_some()
                    && contract::contract(kind) == Contract::In =>
                {
                    facts
                        .segment_damage
                        .entry(tp.clone())
                        .or_default()
                        .push(index)
                }
                EventKind::LogStartObserved { tp, log_start } => {
                    let entry = facts.log_starts.entry(tp.clone()).or_insert((0, index));
                    if *log_start > entry.0 {
                        *entry = (*log_start, index);
                    }
                }
                EventKind::Heal => {
                    facts.heal.get_or_insert((index, event.at_ms));
                }
                EventKind::WalKeptAtPowerLoss { entries } => {
                    let crash = facts.crashes.last().map_or(0, |c| c.index);
                    for e in entries {
                        facts
                            .kept_at_power_loss
                            .entry((e.tp.clone(), e.id))
                            .or_default()
                            .insert(crash);
                    }
                }
                EventKind::WalCachedAtKill { entries } => {
                    killed_with(&mut facts.cached_at_kill, entries, event.incarnation);
                }
                EventKind::WalDurableAtKill { entries } => {
                    killed_with(&mut facts.durable_at_kill, entries, event.incarnation);
                }
                EventKind::SalvageWrote { tp, kept, copied } => {
                    for &id in kept.iter().chain(copied) {
                        let wrote = facts.salvage_wrote.entry((tp.clone(), id)).or_default();
                        if wrote.last() != Some(&index) {
                            wrote.push(index);
                        }
                    }
                }
                EventKind::WalEntriesDamaged {
                    entries,
                    fault_index,
                    ..
                } => {
                    for entry in entries {
                        let named = facts.wal_damage.entry(entry.id).or_default();
                        if named.last() != Some(&index) {
                            named.push(index);
                        }
                        facts
                            .wal_damage_by_fault
                            .entry(*fault_index)
                            .or_default()
                            .insert(entry.id);
                    }
                }
                _ => {}
            }
        }
        facts.reaches = contract::reaches(&facts);
        facts
    }

    /// The WAL checkpoint the world read at the restart of `incarnation`: `None` when it
    /// recorded none, `Some(None)` when the file did not read, else its floors.
    pub fn checkpoint_at_open(
        &self,
        incarnation: Incarnation,
    ) -> Option<Option<&[crate::history::CheckpointFloor]>> {
        self.checkpoint_read(incarnation)
            .map(|(floors, _)| floors.as_deref())
    }

    /// The world's `CheckpointAtOpen` at the restart of `incarnation`: its floors, and
    /// the last flip of the file it read (`flipped`), if a flip hit that file.
    pub fn checkpoint_read(
        &self,
        incarnation: Incarnation,
    ) -> Option<(&Option<Vec<crate::history::CheckpointFloor>>, Option<usize>)> {
        let &index = self.checkpoints_at_open.get(&incarnation)?;
        match &self.history.events()[index].kind {
            EventKind::CheckpointAtOpen { floors, flipped } => Some((floors, *flipped)),
            _ => unreachable!("indexed as a checkpoint read"),
        }
    }

    /// The world's readings of the fault at `fault_index` (`CheckpointDamaged`,
    /// `FlipMissedCache`), which it records with the fault, at the same instant.
    pub fn recorded_with(&self, fault_index: usize) -> impl Iterator<Item = &EventKind> + '_ {
        let events = self.history.events();
        let at_ms = events[fault_index].at_ms;
        events[fault_index + 1..]
            .iter()
            .take_while(move |e| e.at_ms == at_ms)
            .map(|e| &e.kind)
            .filter(move |kind| match kind {
                EventKind::CheckpointDamaged { fault_index: f, .. }
                | EventKind::FlipMissedCache { fault_index: f }
                | EventKind::WordFlipped { fault_index: f, .. } => *f == fault_index,
                _ => false,
            })
    }

    /// Whether the flip at `fault_index` missed the page cache (`FlipMissedCache`): only
    /// the platter holds it.
    pub fn flip_missed_cache(&self, fault_index: usize) -> bool {
        self.recorded_with(fault_index)
            .any(|kind| matches!(kind, EventKind::FlipMissedCache { .. }))
    }

    /// Whether a read at history index `at` can have met the damage the fault at
    /// `fault_index` did: any fault but a flip the page cache did not take, which only
    /// an open after a power loss (one between the two) reads (helper-108).
    pub fn damage_readable_at(&self, fault_index: usize, at: usize) -> bool {
        !self.flip_missed_cache(fault_index) || self.power_loss_between(fault_index, at)
    }

    /// The move the flip at `fault_index` made to an 8-byte word as a read sees it
    /// (`WordFlipped`). `None` when the page cache did not take it or a word did not
    /// decode.
    pub fn word_flipped(&self, fault_index: usize) -> Option<WordMove<'_>> {
        self.recorded_with(fault_index).find_map(|kind| match kind {
            EventKind::WordFlipped {
                read_as,
                from,
                to,
                written,
                ..
            } => Some(WordMove {
                read_as: read_as.as_str(),
                from: *from,
                to: *to,
                written: *written,
            }),
            _ => None,
        })
    }

    pub fn incarnation_at(&self, index: usize) -> Incarnation {
        self.history.events()[index].incarnation
    }

    pub fn at_ms(&self, index: usize) -> u64 {
        self.history.events()[index].at_ms
    }

    /// The highest log start observed for `tp` in the run (retention only moves it
    /// up), with the event that showed it.
    pub fn log_start_reached(&self, tp: &TopicPartition) -> Option<(Offset, usize)> {
        self.log_starts.get(tp).copied().filter(|(s, _)| *s > 0)
    }

    /// The highest log start observed for `tp` (0 when none).
    pub fn final_log_start(&self, tp: &TopicPartition) -> Offset {
        self.log_starts.get(tp).map_or(0, |(s, _)| *s)
    }

    /// Whether an R2 salvage after history index `index` wrote, or may have written, a
    /// WAL entry of `id` on `tp`: one whose `salvage_wrote` names it (see
    /// [`EventKind::SalvageWrote`]), or one killed before it could say: an open that
    /// announced an R2 cut on `tp`, was still running at `index` (killed by a power loss
    /// after it, or by a process crash that left an entry of `id` in the WAL,
    /// [`Facts::kept_in_cache`]; a process crash before `index` counts only so too), and
    /// then neither
    /// raised `r2_salvaged` or `log_opened` there nor completed, and may have been
    /// offered `id` ([`Facts::may_offer`]). The salvage writes and fsyncs before its
    /// alarm; the alarm is missing from an open that goes on only when nothing past the
    /// hole was readable.
    pub fn salvaged_after(&self, tp: &TopicPartition, id: ProduceId, index: usize) -> bool {
        use crate::history::Alarm;
        let named = self
            .salvage_wrote
            .get(&(tp.clone(), id))
            .is_some_and(|wrote| wrote.iter().any(|&w| w > index));
        let alarms = self.alarms.of(tp);
        let killed_salvaging = alarms.iter().any(|hole| {
            matches!(hole.alarm, Alarm::Hole { .. })
                && !self.opened.contains(&hole.incarnation)
                && self.crash_ending(hole.incarnation).is_none_or(|c| {
                    (c.index > index && !c.process) || self.kept_in_cache(tp, id, c, index)
                })
                && !alarms.iter().any(|a| {
                    a.incarnation == hole.incarnation
                        && matches!(a.alarm, Alarm::Salvaged { .. } | Alarm::LogOpened { .. })
                })
                && self.may_offer(tp, id, hole.incarnation)
        });
        named || killed_salvaging
    }

    /// Whether the process crash `c` left an entry of `id` on `tp` in the WAL that the
    /// next opens read and may re-commit the record from: one the world saw at the kill
    /// in the page cache only, or (for a kill after the WAL fault at `index`) a durable
    /// one, which the fault left or the open it cut short wrote; and that the first
    /// power loss after the kill, if it came before that fault or an open completed
    /// after `c` (whichever is later), kept (`WalKeptAtPowerLoss`). A durable copy the
    /// open wrote before the fault is the fault's to name, not this. A salvage buffers
    /// its entries and writes them right before its fsync, so a kill before that left
    /// nothing.
    fn kept_in_cache(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        c: &CrashFact,
        index: usize,
    ) -> bool {
        let key = (tp.clone(), id);
        let of_c = |map: &BTreeMap<_, BTreeSet<Incarnation>>| {
            map.get(&key)
                .is_some_and(|incs| incs.contains(&c.incarnation))
        };
        let left = of_c(&self.cached_at_kill) || (c.index > index && of_c(&self.durable_at_kill));
        let completed = self
            .opened_at
            .iter()
            .find(|&(inc, _)| self.restarts.get(inc).is_some_and(|&r| r > c.index))
            .map_or(usize::MAX, |(_, &done)| done);
        // The first power loss after the kill decided whether the write reached the
        // platter (kept) or was dropped; the world says which. A kept write is on the
        // platter from then on, like any other.
        let kept = self.kept_at_power_loss.get(&key);
        let dropped = self
            .crashes
            .iter()
            .find(|p| !p.process && c.index < p.index)
            .is_some_and(|p| {
                p.index < index.max(completed) && kept.is_none_or(|k| !k.contains(&p.index))
            });
        c.process && left && !dropped
    }

    /// The readable records past the hole the open of `incarnation` will cut `tp` at
    /// (R2), by identity (the world's `PastHoleAtOpen`, recorded at the restart from
    /// the image that open reads); `None` when the world listed none.
    pub fn past_hole_at_open(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
    ) -> Option<&[crate::history::HeldCopy]> {
        self.opening_events(incarnation)?
            .find_map(|e| match &e.kind {
                EventKind::PastHoleAtOpen { tp: t, held } if t == tp => Some(held.as_slice()),
                _ => None,
            })
    }

    /// Whether the R2 salvage of the open of `incarnation` may have been offered a
    /// record of `id` on `tp`: the salvage writes only the readable records past the
    /// hole, which the world lists at the restart (`PastHoleAtOpen`). Damage at rest to
    /// `tp`'s segments while that open ran may have moved the hole below the listed one
    /// (and more records past it), so the listing bounds the offer only without it; and
    /// without a listing nothing does.
    pub fn may_offer(&self, tp: &TopicPartition, id: ProduceId, incarnation: Incarnation) -> bool {
        let Some(&restart) = self.restarts.get(&incarnation) else {
            return true;
        };
        let listed = self.past_hole_at_open(tp, incarnation);
        let end = self
            .crash_ending(incarnation)
            .map_or(usize::MAX, |crash| crash.index);
        let damaged_while_open = self
            .segment_damage
            .get(tp)
            .is_some_and(|damage| damage.iter().any(|&d| restart < d && d < end));
        damaged_while_open || listed.is_none_or(|held| held.iter().any(|c| c.id == id))
    }

    /// The last crash recorded before `index`.
    pub fn crash_before(&self, index: usize) -> Option<&CrashFact> {
        self.crashes.iter().rev().find(|c| c.index < index)
    }

    /// The crash recorded at history index `index`, if one was.
    pub fn crash_at(&self, index: usize) -> Option<&CrashFact> {
        self.crashes.iter().find(|c| c.index == index)
    }
    /// The records the open of `incarnation` found in `tp`'s hidden tail, by identity
    /// (the world's `HiddenAtOpen`, recorded at the restart; none when it held none).
    pub fn held_at_open(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
    ) -> &[crate::history::HeldCopy] {
        let Some(mut events) = self.opening_events(incarnation) else {
            return &[];
        };
        events
            .find_map(|e| match &e.kind {
                EventKind::HiddenAtOpen { tp: t, held, .. } if t == tp => Some(held.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }

    /// The events of `incarnation` from its restart on (`None` for incarnation 0, which
    /// has no restart): where the world records what each open will find.
    fn opening_events(
        &self,
        incarnation: Incarnation,
    ) -> Option<impl Iterator<Item = &crate::history::Event>> {
        let &restart = self.restarts.get(&incarnation)?;
        Some(
            self.history.events()[restart..]
                .iter()
                .take_while(move |e| e.incarnation == incarnation),
        )
    }

    /// The records damage at rest took from `tp` between `crash` and the restart after
    /// it, by identity (the world's `DamageHeld`, read from the durable image just
    /// before the damage landed): copies the image held at the crash.
    pub fn damage_took_at_crash<'a>(
        &'a self,
        tp: &'a TopicPartition,
        crash: &CrashFact,
    ) -> impl Iterator<Item = &'a crate::history::HeldCopy> + 'a {
        let restart = self
            .restarts
            .get(&(crash.incarnation + 1))
            .copied()
            .unwrap_or(self.history.events().len());
        self.history.events()[crash.index..restart]
            .iter()
            .filter_map(move |e| match &e.kind {
                EventKind::DamageHeld { tp: t, held, .. } if t == tp => Some(held.iter()),
                _ => None,
            })
            .flatten()
    }

    /// The records the open of `incarnation` could see on `tp` (from its log start to
    /// the HWM it trusted, by identity) when the world found the WAL checkpoint
    /// unreadable at its restart (the world's `VisibleAtOpen`); `None` otherwise.
    pub fn visible_at_open(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
    ) -> Option<&[crate::history::HeldCopy]> {
        self.opening_events(incarnation)?
            .find_map(|e| match &e.kind {
                EventKind::VisibleAtOpen { tp: t, held, .. } if t == tp => Some(held.as_slice()),
                _ => None,
            })
    }

    /// The crash that ended `incarnation`.
    pub fn crash_ending(&self, incarnation: Incarnation) -> Option<&CrashFact> {
        self.crashes.iter().find(|c| c.incarnation == incarnation)
    }

    /// The index of the first crash after `index`, or `usize::MAX` when none follows:
    /// damage injected before it can still reach the recovery after the crash before it
    /// (the open that follows a restart may still be scanning when it lands).
    pub fn next_crash_after(&self, index: usize) -> usize {
        self.crashes
            .iter()
            .find(|c| c.index > index)
            .map_or(usize::MAX, |c| c.index)
    }

    /// The index of the first power loss (not a process crash) after `index`, or
    /// `usize::MAX`: where damage that only the platter holds first shows.
    pub fn next_power_loss_after(&self, index: usize) -> usize {
        self.crashes
            .iter()
            .find(|c| !c.process && c.index > index)
            .map_or(usize::MAX, |c| c.index)
    }

    /// Whether a power loss (not a process crash) lies strictly between two indices.
    pub fn power_loss_between(&self, after: usize, before: usize) -> bool {
        self.crashes
            .iter()
            .any(|c| !c.process && after < c.index && c.index < before)
    }

    /// Whether a crash lies strictly between two history indices.
    pub fn crash_between(&self, after: usize, before: usize) -> bool {
        self.crashes
            .iter()
            .any(|c| after < c.index && c.index < before)
    }

    /// The out-of-contract reaches on `tp` injected before `index`. A fault on no
    /// partition's files (the WAL, `topic.conf`) reaches a partition only through the
    /// ids or alarms it names, never through this.
    pub fn reaches_before<'a>(
        &'a self,
        tp: &'a TopicPartition,
        index: usize,
    ) -> impl Iterator<Item = &'a Reach> + 'a {
        self.reaches
            .iter()
            .filter(move |r| r.fault_index < index && r.tp.as_ref() == Some(tp))
    }

    /// Short description of a fault event, for messages.
    pub fn describe_fault(&self, index: usize) -> String {
        let event = &self.history.events()[index];
        match &event.kind {
            EventKind::Fault { kind, .. } => {
                format!("{} at t={}ms", fault_name(kind), event.at_ms)
            }
            _ => format!("event #{index}"),
        }
    }
}

pub fn fault_name(kind: &FaultKind) -> &'static str {
    match kind {
        FaultKind::Crash => "crash",
        FaultKind::ProcessCrash => "process crash",
        FaultKind::TornWrite { .. } => "torn write",
        FaultKind::LostWrite { .. } => "lost write",
        FaultKind::FsyncEio { .. } => "fsync EIO",
        FaultKind::LostFsync { .. } => "lost fsync",
        FaultKind::BitFlip { .. } => "bit flip",
        FaultKind::Misdirected { .. } => "misdirected write",
        FaultKind::LatentSector { .. } => "latent sector error",
        FaultKind::CorruptWrite { .. } => "corrupt write",
        FaultKind::CorruptWriteLeft { .. } => "corrupt write left by a killed write-back",
        FaultKind::Enospc { .. } => "ENOSPC",
        FaultKind::Latency { .. } => "latency",
        FaultKind::ClockStep { .. } => "clock step",
        FaultKind::Cancel { .. } => "cancelled request",
    }
}

/// Files each WAL entry a kill left under its (partition, record), with the incarnation
/// the kill ended.
fn killed_with(
    map: &mut BTreeMap<(TopicPartition, ProduceId), BTreeSet<Incarnation>>,
    entries: &[crate::history::DamagedWalEntry],
    incarnation: Incarnation,
) {
    for e in entries {
        map.entry((e.tp.clone(), e.id))
            .or_default()
            .insert(incarnation);
    }
}
