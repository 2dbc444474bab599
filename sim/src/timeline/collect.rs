//! What the timeline draws, read off the history in one pass: a [`Panel`] per partition,
//! the store-wide [`Note`]s (the shared WAL's faults, alarms and destroyed entries,
//! clock steps) for their own lane, and the run-wide crashes, restarts and heal.

use super::draw::fault_label;
use crate::history::{Alarm, EventKind, FaultKind, History, TopicPartition};
use std::collections::BTreeMap;

/// Something drawn as a numbered tick and explained in the table under its lane.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Note {
    pub t: u64,
    /// A few words, in the table.
    pub label: String,
    /// The event as the trace prints it (the tick's hover title).
    pub detail: String,
    /// A cancelled request: drawn only where the lane has room left (a swarm cancels
    /// often, and the faults that damage files matter more to a reader).
    pub minor: bool,
}

/// At most `max` of `notes`, in time order: every major one first (thinned evenly when
/// they alone pass `max`), then the minor ones in the room left.
pub fn keep(notes: &[Note], max: usize) -> Vec<Note> {
    let (major, minor): (Vec<Note>, Vec<Note>) = notes.iter().cloned().partition(|n| !n.minor);
    let mut kept = super::draw::thin(&major, max);
    kept.extend(super::draw::thin(&minor, max - kept.len()));
    kept.sort_by_key(|n| n.t);
    kept
}

#[derive(Default)]
pub struct Panel {
    pub hwm: Vec<(u64, u64)>,
    pub persisted: Vec<(u64, u64)>,
    pub frontier: Vec<(u64, u64)>,
    pub frontier_observed: Vec<(u64, u64)>,
    pub acks: Vec<(u64, u64)>,
    /// (t, durable_tail, persisted_hwm) at each crash.
    pub tails: Vec<(u64, u64, u64)>,
    /// Faults on the partition's files and its refusals and poisonings.
    pub notes: Vec<Note>,
}

impl Panel {
    pub fn offset_max(&self) -> u64 {
        let points = self
            .hwm
            .iter()
            .chain(&self.persisted)
            .chain(&self.frontier)
            .chain(&self.frontier_observed)
            .chain(&self.acks)
            .map(|(_, o)| *o);
        points
            .chain(self.tails.iter().map(|(_, t, p)| (*t).max(*p)))
            .max()
            .unwrap_or(0)
    }

    /// Nothing ever reached the partition: no ack, no offset above 0, no fault.
    pub fn idle(&self) -> bool {
        self.acks.is_empty() && self.offset_max() == 0 && self.notes.is_empty()
    }
}

#[derive(Default)]
pub struct Collected {
    pub panels: BTreeMap<TopicPartition, Panel>,
    /// The store-wide lane: WAL faults, alarms and destroyed entries; clock steps.
    pub store: Vec<Note>,
    pub crashes: Vec<u64>,
    pub restarts: Vec<u64>,
    pub heal: Option<u64>,
}

pub fn collect(history: &History) -> Collected {
    let mut c = Collected::default();
    for event in history.events() {
        let t = event.at_ms;
        let note = |label: String| Note {
            t,
            label,
            detail: event.to_string(),
            minor: matches!(
                event.kind,
                EventKind::Fault {
                    kind: FaultKind::Cancel { .. },
                    ..
                }
            ),
        };
        match &event.kind {
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm,
                ..
            } => {
                let p = c.panels.entry(tp.clone()).or_default();
                p.hwm.push((t, *hwm));
                if let Some(persisted) = persisted_hwm {
                    p.persisted.push((t, *persisted));
                }
            }
            EventKind::FrontierWritten { tp, frontier } => {
                c.panels
                    .entry(tp.clone())
                    .or_default()
                    .frontier
                    .push((t, *frontier));
            }
            EventKind::FrontierObserved { tp, frontier, .. } => {
                let p = c.panels.entry(tp.clone()).or_default();
                p.frontier_observed.push((t, *frontier));
                p.frontier.push((t, *frontier));
            }
            EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                ..
            } => c
                .panels
                .entry(tp.clone())
                .or_default()
                .acks
                .push((t, *offset)),
            EventKind::Crash { partitions, .. } => {
                c.crashes.push(t);
                for cp in partitions {
                    c.panels.entry(cp.tp.clone()).or_default().tails.push((
                        t,
                        cp.durable_tail,
                        cp.persisted_hwm,
                    ));
                }
            }
            EventKind::Restart => c.restarts.push(t),
            EventKind::Heal => c.heal = Some(t),
            EventKind::Fault { kind, tp, .. } => {
                if matches!(
                    kind,
                    FaultKind::Crash | FaultKind::ProcessCrash | FaultKind::Latency { .. }
                ) {
                    continue;
                }
                let label = match kind.segment_damage() {
                    Some((Some(range), _)) => format!("{} {range}", fault_label(kind)),
                    _ => fault_label(kind),
                };
                match tp {
                    Some(tp) => c
                        .panels
                        .entry(tp.clone())
                        .or_default()
                        .notes
                        .push(note(label)),
                    None => c.store.push(note(label)),
                }
            }
            EventKind::WalEntriesDamaged { entries, .. } => {
                let ids: Vec<String> = entries.iter().map(|e| format!("{}", e.id)).collect();
                c.store.push(note(format!(
                    "WAL entries destroyed: ids {}",
                    crate::check::list(&ids, 6)
                )));
            }
            EventKind::EngineAlarm {
                tp: None, alarm, ..
            } => {
                let label = match alarm {
                    Alarm::WalDamaged { .. } => "open: WAL damaged",
                    Alarm::WalCheckpointUnreadable => "open: WAL checkpoint unreadable",
                    Alarm::WalPoisoned => "WAL poisoned",
                    _ => continue,
                };
                c.store.push(note(label.into()));
            }
            EventKind::PartitionRefused { tp, .. } => c
                .panels
                .entry(tp.clone())
                .or_default()
                .notes
                .push(note("REFUSED (R3)".into())),
            EventKind::PartitionPoisoned { tp } => c
                .panels
                .entry(tp.clone())
                .or_default()
                .notes
                .push(note("POISONED".into())),
            _ => {}
        }
    }
    c
}
