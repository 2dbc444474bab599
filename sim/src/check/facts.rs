//! An index over a history, built once, that every checker reads: where the crashes,
//! restarts, refusals, counters, clamps, out-of-contract faults, WAL damage and
//! completed opens are. Keeping these answers in one place keeps the excuses identical
//! across checkers.
//!
//! Invariants asserted while indexing (a violation is a simulator bug): produce ids
//! are attempted at most once; every restart follows a crash of the previous
//! incarnation.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{
    CrashPartition, EventKind, FaultKind, FileKind, History, Incarnation, Offset, ProduceId,
    TopicPartition,
};

/// A crash, with the durable state of each partition.
#[derive(Clone, Debug)]
pub struct CrashFact {
    pub index: usize,
    pub at_ms: u64,
    pub incarnation: Incarnation,
    pub partitions: BTreeMap<TopicPartition, CrashPartition>,
}

/// A restart after which the engine recorded loss on a partition (the R4 clamp):
/// offsets at or above `from_offset` may hold different records than before.
#[derive(Clone, Debug)]
pub struct Clamp {
    pub restart_index: usize,
    pub incarnation: Incarnation,
    pub from_offset: Offset,
    pub recorded_loss_records: u64,
}

/// Per incarnation, the highest counter values seen for one partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterMax {
    pub recorded_loss_records: u64,
    pub skipped_records: u64,
}

#[derive(Debug)]
pub struct Facts<'h> {
    pub history: &'h History,
    pub crashes: Vec<CrashFact>,
    /// Index of each incarnation's Restart event (incarnation 0 has none).
    pub restarts: BTreeMap<Incarnation, usize>,
    pub refusals: BTreeMap<TopicPartition, Vec<(usize, String)>>,
    /// Out-of-contract fault indices; key `None` for faults not tied to a partition.
    pub out_of_contract: BTreeMap<Option<TopicPartition>, Vec<usize>>,
    pub counters: BTreeMap<TopicPartition, BTreeMap<Incarnation, CounterMax>>,
    pub clamps: BTreeMap<TopicPartition, Vec<Clamp>>,
    pub heal: Option<(usize, u64)>,
    pub attempts: BTreeMap<ProduceId, usize>,
    /// First ProduceAck of each id.
    pub acks: BTreeMap<ProduceId, usize>,
    /// Indices of damage at rest (bit flip, misdirected write) to a partition's segments.
    pub segment_damage: BTreeMap<TopicPartition, Vec<usize>>,
    /// Indices of bit flips in a partition's `hwm` or `consumer.offset` (undetectable).
    pub metadata_damage: BTreeMap<TopicPartition, Vec<usize>>,
    /// Per produce id, the [`EventKind::WalEntriesDamaged`] events that name it.
    pub wal_damage: BTreeMap<ProduceId, Vec<usize>>,
    /// Incarnations whose store open completed: the world recorded what it found (a
    /// frontier or a refusal per partition). Such an open replayed the whole WAL.
    pub opened: BTreeSet<Incarnation>,
}

/// Why both durable copies of an acknowledged record are gone: its ingress WAL entry and
/// its frame in the partition log (see [`Facts::both_copies_damaged`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BothCopies {
    /// The [`EventKind::WalEntriesDamaged`] event that names the record.
    pub wal_damage_index: usize,
    /// The crash whose recovery found the log copy destroyed (or never durable).
    pub crash_index: usize,
    /// Both halves, in words, for the report.
    pub detail: String,
}

impl<'h> Facts<'h> {
    /// The highest log start observed for `tp` in the run (retention only moves it up).
    pub fn final_log_start(&self, tp: &TopicPartition) -> Offset {
        self.history
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::LogStartObserved { tp: t, log_start } if t == tp => Some(*log_start),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// A flip in `tp`'s `hwm` or `consumer.offset` after `index`: it can move the
    /// frontier past records acknowledged before it, which are then never delivered.
    pub fn metadata_damage_after(&self, tp: &TopicPartition, index: usize) -> Option<usize> {
        self.metadata_damage
            .get(tp)?
            .iter()
            .copied()
            .find(|d| *d > index)
    }

    /// A crash between `from` and `to` whose hidden tail on `tp` holds `offset`, with
    /// damage at rest to `tp`'s segments injected before its restart: recovery may
    /// truncate that tail by rule R2 (a bad frame above the persisted HWM), and the WAL
    /// re-commits its records at fresh offsets, so the record at `offset` may change.
    pub fn damaged_hidden_tail(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        from: usize,
        to: usize,
    ) -> Option<String> {
        let damage = self.segment_damage.get(tp)?;
        self.crashes
            .iter()
            .filter(|c| c.index > from && c.index < to)
            .find_map(|c| {
                let p = c.partitions.get(tp)?;
                if !p.hidden_tail().contains(offset) {
                    return None;
                }
                let until = self.next_crash_after(c.index);
                damage.iter().find(|d| **d < until).map(|d| {
                    format!(
                        "damage at rest (event {d}) in the hidden tail {}..{} of the crash at t={}ms \
                         (R2 truncates a bad frame above the persisted HWM)",
                        p.persisted_hwm, p.durable_tail, c.at_ms
                    )
                })
            })
    }

    /// Whether both durable copies of the record `id`, acknowledged at `ack_index` at
    /// `offset` of `tp`, were destroyed at rest, so that no engine could bring it back.
    /// All of:
    /// - the first crash after the ack finds `offset` at or above the persisted HWM:
    ///   from the open after it the WAL entry is what restores the record;
    /// - a [`EventKind::WalEntriesDamaged`] names `id` on `tp` with a `first_replay` no
    ///   later than the first open after that crash that completed, and every open in
    ///   between (killed or failed, so the world saw no frontier) left `tp`'s durable
    ///   tail where it was: no replay copied the record while its entry was readable;
    /// - at that crash, or one ending such a killed open, with `offset` still at or above
    ///   the persisted HWM, its log copy was gone: `offset` at or past the durable tail
    ///   (the frame never became durable, or a bad frame ends the log below it), or
    ///   segment damage (a bit flip or a misdirected write) injected since the crash
    ///   before the ack and before the next crash, to the frame holding `offset`, at or
    ///   above the persisted HWM, so recovery cut the log there (a cut below it salvages
    ///   the record's readable frame when its WAL entry is gone).
    ///
    /// What stays approximate: an open killed right after its replay made the copy
    /// durable but before the world saw its frontier, with no net growth of the tail.
    pub fn both_copies_damaged(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        ack_index: usize,
    ) -> Option<BothCopies> {
        let events = self.history.events();
        let (wal_damage_index, first_replay, wal_fault_index, seq) = self
            .wal_damage
            .get(&id)?
            .iter()
            .filter_map(|&index| match &events[index].kind {
                EventKind::WalEntriesDamaged {
                    fault_index,
                    first_replay,
                    entries,
                } => entries
                    .iter()
                    .find(|e| e.id == id && e.tp == *tp)
                    .map(|e| (index, *first_replay, *fault_index, e.seq)),
                _ => unreachable!("wal_damage indexes WalEntriesDamaged events"),
            })
            .min_by_key(|&(index, first_replay, _, _)| (first_replay, index))?;
        let after_ack: Vec<&CrashFact> = self
            .crashes
            .iter()
            .filter(|c| c.index > ack_index)
            .collect();
        // The first crash after the ack, with the record above its persisted HWM: below
        // it, R3 protects the log copy (and a checkpoint may have dropped the entry); a
        // later crash that finds it above the HWM again means the HWM fell, which the
        // clamp and `hwm`-flip rules judge.
        let first = *after_ack.first()?;
        if first
            .partitions
            .get(tp)
            .is_none_or(|p| offset < p.persisted_hwm)
        {
            return None;
        }
        // The crashes whose recovery may have lost the log copy: that one, and those that
        // ended opens killed before they replayed, up to the one that read the damage.
        let mut candidates = vec![first];
        let mut tail = first.partitions.get(tp)?.durable_tail;
        for incarnation in first.incarnation + 1..first_replay {
            if self.opened.contains(&incarnation) {
                // That open replayed the WAL while the entry was still readable.
                return None;
            }
            // Killed or failed while opening: did anything become durable on `tp`?
            let ended = self.crashes.iter().find(|c| c.incarnation == incarnation)?;
            let ended_tail = ended.partitions.get(tp)?.durable_tail;
            if ended_tail > tail {
                return None;
            }
            tail = ended_tail;
            candidates.push(ended);
        }
        let floor = self.crash_before(ack_index).map(|c| c.index);
        let (crash, log_copy) = candidates.iter().find_map(|c| {
            let p = c.partitions.get(tp)?;
            if offset < p.persisted_hwm {
                return None;
            }
            let why = if offset >= p.durable_tail {
                format!(
                    "not in the durable log at the crash at t={}ms (durable tail {})",
                    c.at_ms, p.durable_tail
                )
            } else {
                let until = self.next_crash_after(c.index);
                let d = self.segment_cut(tp, offset, p.persisted_hwm, floor, until)?;
                format!(
                    "{} (event {d}) in its frame, above the persisted HWM {}: \
                     recovery after the crash at t={}ms cut the log there (R2)",
                    self.describe_fault(d),
                    p.persisted_hwm,
                    c.at_ms
                )
            };
            Some((c, why))
        })?;
        Some(BothCopies {
            wal_damage_index,
            crash_index: crash.index,
            detail: format!(
                "both durable copies destroyed: its WAL entry (seq {seq}) by the {} (event \
                 {wal_fault_index}) before the open of incarnation {first_replay} read the \
                 WAL; its log copy: {log_copy}",
                self.describe_fault(wal_fault_index)
            ),
        })
    }

    /// The first segment damage on `tp` after `after` (from the start: `None`) and before
    /// `before` (a bit flip or a misdirected write) that hit the frame holding `offset`,
    /// starting at or above `persisted_hwm`: recovery truncates the log at that bad frame
    /// (R1 or R2). Damage to a frame below it does not reach the record: the cut then
    /// salvages every readable record past it whose WAL entry is gone.
    fn segment_cut(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        persisted_hwm: Offset,
        after: Option<usize>,
        before: usize,
    ) -> Option<usize> {
        let events = self.history.events();
        let from = after.map_or(0, |a| a + 1);
        (from..before.min(events.len())).find(|index| match &events[*index].kind {
            EventKind::Fault {
                kind, tp: Some(t), ..
            } => {
                t == tp
                    && kind
                        .segment_damage()
                        .and_then(|(offsets, _)| offsets)
                        .is_some_and(|range| range.contains(offset) && range.start >= persisted_hwm)
            }
            _ => false,
        })
    }

    pub fn new(history: &'h History) -> Self {
        let mut facts = Facts {
            history,
            crashes: Vec::new(),
            restarts: BTreeMap::new(),
            refusals: BTreeMap::new(),
            out_of_contract: BTreeMap::new(),
            counters: BTreeMap::new(),
            clamps: BTreeMap::new(),
            heal: None,
            attempts: BTreeMap::new(),
            acks: BTreeMap::new(),
            segment_damage: BTreeMap::new(),
            metadata_damage: BTreeMap::new(),
            wal_damage: BTreeMap::new(),
            opened: BTreeSet::new(),
        };
        // First HWM observation per (partition, incarnation): where a clamp starts.
        let mut first_hwm: BTreeMap<(TopicPartition, Incarnation), Offset> = BTreeMap::new();
        for (index, event) in history.events().iter().enumerate() {
            match &event.kind {
                EventKind::ProduceAttempt { id, .. } => {
                    let previous = facts.attempts.insert(*id, index);
                    assert!(previous.is_none(), "produce id {id} attempted twice");
                }
                EventKind::ProduceAck { id, .. } => {
                    facts.acks.entry(*id).or_insert(index);
                }
                EventKind::Crash { partitions } => facts.crashes.push(CrashFact {
                    index,
                    at_ms: event.at_ms,
                    incarnation: event.incarnation,
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
                EventKind::PartitionRefused { tp, reason } => {
                    facts
                        .refusals
                        .entry(tp.clone())
                        .or_default()
                        .push((index, reason.clone()));
                    facts.opened.insert(event.incarnation);
                }
                EventKind::Fault {
                    kind, tp: Some(tp), ..
                } if kind.segment_damage().is_some() && !kind.is_out_of_contract() => facts
                    .segment_damage
                    .entry(tp.clone())
                    .or_default()
                    .push(index),
                EventKind::Fault {
                    kind:
                        FaultKind::BitFlip {
                            file: FileKind::Hwm | FileKind::ConsumerOffset,
                            ..
                        },
                    tp: Some(tp),
                    ..
                } => {
                    facts
                        .metadata_damage
                        .entry(tp.clone())
                        .or_default()
                        .push(index);
                    facts
                        .out_of_contract
                        .entry(Some(tp.clone()))
                        .or_default()
                        .push(index);
                }
                EventKind::Fault { kind, tp, .. } if kind.is_out_of_contract() => facts
                    .out_of_contract
                    .entry(tp.clone())
                    .or_default()
                    .push(index),
                EventKind::EngineCounters {
                    tp,
                    recorded_loss_records,
                    skipped_records,
                } => {
                    let max = facts
                        .counters
                        .entry(tp.clone())
                        .or_default()
                        .entry(event.incarnation)
                        .or_default();
                    max.recorded_loss_records =
                        max.recorded_loss_records.max(*recorded_loss_records);
                    max.skipped_records = max.skipped_records.max(*skipped_records);
                }
                EventKind::HwmObserved { tp, hwm, .. } => {
                    first_hwm
                        .entry((tp.clone(), event.incarnation))
                        .or_insert(*hwm);
                }
                EventKind::Heal => {
                    facts.heal.get_or_insert((index, event.at_ms));
                }
                EventKind::WalEntriesDamaged { entries, .. } => {
                    for entry in entries {
                        let named = facts.wal_damage.entry(entry.id).or_default();
                        if named.last() != Some(&index) {
                            named.push(index);
                        }
                    }
                }
                EventKind::FrontierObserved { .. } => {
                    facts.opened.insert(event.incarnation);
                }
                _ => {}
            }
        }
        for (tp, per_incarnation) in &facts.counters {
            for (incarnation, max) in per_incarnation {
                let Some(restart_index) = facts.restarts.get(incarnation) else {
                    // Loss recorded by the first boot: nothing was read before it.
                    continue;
                };
                if max.recorded_loss_records == 0 {
                    continue;
                }
                // The clamp moved the HWM down to `persisted - recorded loss`; the first
                // HWM seen may already be higher (the WAL replay commits at open).
                let clamped = facts
                    .crash_before(*restart_index)
                    .and_then(|c| c.partitions.get(tp))
                    .map(|p| {
                        p.persisted_hwm
                            .saturating_sub(max.recorded_loss_records)
                            .min(p.durable_tail)
                    });
                let first = first_hwm.get(&(tp.clone(), *incarnation)).copied();
                let from_offset = match (first, clamped) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => a.or(b).unwrap_or(0),
                };
                facts.clamps.entry(tp.clone()).or_default().push(Clamp {
                    restart_index: *restart_index,
                    incarnation: *incarnation,
                    from_offset,
                    recorded_loss_records: max.recorded_loss_records,
                });
            }
        }
        facts
    }

    pub fn incarnation_at(&self, index: usize) -> Incarnation {
        self.history.events()[index].incarnation
    }

    pub fn at_ms(&self, index: usize) -> u64 {
        self.history.events()[index].at_ms
    }

    /// The last crash recorded before `index`.
    pub fn crash_before(&self, index: usize) -> Option<&CrashFact> {
        self.crashes.iter().rev().find(|c| c.index < index)
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

    /// The first flip in `tp`'s `hwm` file strictly between two history indices.
    pub fn hwm_flip_between(
        &self,
        tp: &TopicPartition,
        after: usize,
        before: usize,
    ) -> Option<usize> {
        let events = self.history.events();
        self.metadata_damage.get(tp)?.iter().copied().find(|index| {
            after < *index
                && *index < before
                && matches!(
                    &events[*index].kind,
                    EventKind::Fault {
                        kind: FaultKind::BitFlip {
                            file: FileKind::Hwm,
                            ..
                        },
                        ..
                    }
                )
        })
    }

    /// Whether a crash lies strictly between two history indices.
    pub fn crash_between(&self, after: usize, before: usize) -> bool {
        self.crashes
            .iter()
            .any(|c| after < c.index && c.index < before)
    }

    /// Total loss the engine recorded on `tp`: clamp counters plus consume-time skips,
    /// summed over incarnations.
    pub fn recorded_loss_total(&self, tp: &TopicPartition) -> u64 {
        self.counters.get(tp).map_or(0, |per| {
            per.values()
                .map(|m| m.recorded_loss_records + m.skipped_records)
                .sum()
        })
    }

    /// Highest recorded-loss (clamp) counter of `tp` in one incarnation.
    pub fn recorded_loss_in(&self, tp: &TopicPartition, incarnation: Incarnation) -> u64 {
        self.counters
            .get(tp)
            .and_then(|per| per.get(&incarnation))
            .map_or(0, |m| m.recorded_loss_records)
    }

    /// The first refusal of `tp`, if any.
    pub fn refusal(&self, tp: &TopicPartition) -> Option<&(usize, String)> {
        self.refusals.get(tp).and_then(|r| r.first())
    }

    /// The first refusal of `tp` in `incarnation`.
    pub fn refusal_in(&self, tp: &TopicPartition, incarnation: Incarnation) -> Option<usize> {
        self.refusals.get(tp).and_then(|r| {
            r.iter()
                .map(|(i, _)| *i)
                .find(|i| self.incarnation_at(*i) == incarnation)
        })
    }

    /// Out-of-contract faults on `tp` (or on no particular partition), in order.
    pub fn out_of_contract_on(&self, tp: &TopicPartition) -> BTreeSet<usize> {
        let mut faults = BTreeSet::new();
        for key in [Some(tp.clone()), None] {
            if let Some(list) = self.out_of_contract.get(&key) {
                faults.extend(list.iter().copied());
            }
        }
        faults
    }

    /// The first out-of-contract fault on `tp` (or on no partition) injected before
    /// `index`. Called per record: no allocation.
    pub fn out_of_contract_before(&self, tp: &TopicPartition, index: usize) -> Option<usize> {
        let on_tp = self.out_of_contract.get(&Some(tp.clone()));
        let anywhere = self.out_of_contract.get(&None);
        on_tp
            .into_iter()
            .chain(anywhere)
            .filter_map(|faults| faults.first().copied())
            .filter(|fault| *fault < index)
            .min()
    }

    /// An out-of-contract fault on `tp` whose window holds the ack at `ack_index`: the
    /// fault came first and no crash lies between them. A lost fsync can only destroy
    /// what was acknowledged on the strength of a sync after it, and its damage is
    /// fixed by the next crash.
    pub fn out_of_contract_window(&self, tp: &TopicPartition, ack_index: usize) -> Option<usize> {
        self.out_of_contract_on(tp)
            .into_iter()
            .rev()
            .find(|fault| *fault < ack_index && !self.crash_between(*fault, ack_index))
    }

    /// Out-of-contract faults on `tp` in the incarnation that `crash` ended.
    pub fn out_of_contract_in_incarnation(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
    ) -> Option<usize> {
        self.out_of_contract_on(tp)
            .into_iter()
            .find(|fault| self.incarnation_at(*fault) == incarnation)
    }

    /// A clamp on `tp` between two indices that covers `offset`: the record there may
    /// legitimately have changed or vanished.
    pub fn clamp_covering(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        after: usize,
        before: usize,
    ) -> Option<&Clamp> {
        self.clamps.get(tp).and_then(|clamps| {
            clamps.iter().find(|c| {
                after < c.restart_index && c.restart_index < before && offset >= c.from_offset
            })
        })
    }

    /// Whether what was observed at `offset` of `tp` at `index` may have been replaced
    /// later legitimately: a recorded clamp after it covers the offset, a later crash's
    /// hidden tail that damage at rest let recovery truncate (R2), or a crash after it
    /// followed an out-of-contract fault on `tp`.
    pub fn superseded(&self, tp: &TopicPartition, offset: Offset, index: usize) -> bool {
        self.clamp_covering(tp, offset, index, usize::MAX).is_some()
            || self
                .damaged_hidden_tail(tp, offset, index, usize::MAX)
                .is_some()
            || self
                .out_of_contract_before(tp, usize::MAX)
                .is_some_and(|fault| {
                    // The first crash after both the fault and the observation.
                    self.crashes
                        .iter()
                        .any(|c| c.index > index && c.index > fault)
                })
    }

    /// The first event after `index` that shows the engine detected damage on `tp`: a
    /// refusal, or a rise of its recorded-loss or skip counters above what they were
    /// at `index`.
    pub fn detection_after(&self, tp: &TopicPartition, index: usize) -> Option<usize> {
        let events = self.history.events();
        let at_incarnation = events[index].incarnation;
        let mut baseline = 0;
        for event in &events[..index] {
            if let EventKind::EngineCounters {
                tp: t,
                recorded_loss_records,
                skipped_records,
            } = &event.kind
                && t == tp
                && event.incarnation == at_incarnation
            {
                baseline = baseline.max(recorded_loss_records + skipped_records);
            }
        }
        events
            .iter()
            .enumerate()
            .skip(index + 1)
            .find(|(_, event)| match &event.kind {
                EventKind::PartitionRefused { tp: t, .. } => t == tp,
                EventKind::EngineCounters {
                    tp: t,
                    recorded_loss_records,
                    skipped_records,
                } => {
                    let before = if event.incarnation == at_incarnation {
                        baseline
                    } else {
                        0
                    };
                    t == tp && recorded_loss_records + skipped_records > before
                }
                _ => false,
            })
            .map(|(i, _)| i)
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
        FaultKind::TornWrite { .. } => "torn write",
        FaultKind::LostWrite { .. } => "lost write",
        FaultKind::FsyncEio { .. } => "fsync EIO",
        FaultKind::LostFsync { .. } => "lost fsync",
        FaultKind::BitFlip { .. } => "bit flip",
        FaultKind::Misdirected { .. } => "misdirected write",
        FaultKind::Enospc { .. } => "ENOSPC",
        FaultKind::Latency { .. } => "latency",
        FaultKind::ClockStep { .. } => "clock step",
    }
}
