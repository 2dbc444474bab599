//! One record's story: the events of the history that bear on the record `id` at
//! `offset` of `tp`, each with a note saying what it meant for that record (where its
//! copy stood at a crash, what an open found there, which damage named the record).
//! Events that do not touch the record, its copy or its WAL entry are left out.
//!
//! The story follows the record's copy: it starts at the acknowledged offset, is gone
//! once an open cuts at or below it, and is found again where the world lists the
//! record by identity (an open's hidden tail, the frames a damage hit) or delivers it.
//! Once no copy is known and its WAL entry is destroyed, crashes say nothing more about
//! the record and are left out (restarts and what each open reads stay: an open may
//! still list a copy a replay made).

use super::Subject;
use crate::check::contract::{Contract, contract};
use crate::check::facts::Facts;
use crate::history::{Alarm, Event, EventKind, FaultKind, FileKind, Offset, parse_payload_id};

/// Where the story believes the record's copy is.
pub(super) struct Tracker<'a> {
    facts: &'a Facts<'a>,
    s: &'a Subject,
    /// The offset of the copy the story follows; `None` once a cut took it.
    copy: Option<Offset>,
    /// Its WAL entry was destroyed.
    entry_lost: bool,
}

impl<'a> Tracker<'a> {
    pub(super) fn new(facts: &'a Facts<'a>, s: &'a Subject) -> Self {
        Tracker {
            facts,
            s,
            copy: s.offset,
            entry_lost: false,
        }
    }

    /// The note for `event`, or `None` when it does not bear on the record.
    pub(super) fn note(&mut self, index: usize, event: &Event) -> Option<String> {
        let note = self.describe(index, event)?;
        match &event.kind {
            EventKind::HiddenAtOpen { tp, held, .. } | EventKind::DamageHeld { tp, held, .. }
                if *tp == self.s.tp =>
            {
                if let Some(c) = held.iter().find(|c| Some(c.id) == self.s.id) {
                    self.copy = Some(c.offset);
                }
            }
            EventKind::Delivery {
                tp,
                offset,
                payload,
                ..
            } if *tp == self.s.tp
                && parse_payload_id(payload)
                    .ok()
                    .is_some_and(|id| Some(id) == self.s.id) =>
            {
                self.copy = Some(*offset);
            }
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. },
                ..
            } if *tp == self.s.tp && self.copy.is_some_and(|c| *offset <= c) => self.copy = None,
            EventKind::WalEntriesDamaged { .. } => self.entry_lost = true,
            _ => {}
        }
        Some(note)
    }

    fn describe(&self, index: usize, event: &Event) -> Option<String> {
        let (facts, s) = (self.facts, self.s);
        let tp = &s.tp;
        let o = self.copy;
        let silent = o.is_none() && self.entry_lost;
        match &event.kind {
            EventKind::ProduceAttempt { id, .. } if Some(*id) == s.id => Some("produced".into()),
            EventKind::ProduceAck {
                id,
                tp: t,
                offset,
                committed_at_ms,
            } if Some(*id) == s.id => Some(format!(
                "acknowledged at {t}@{}{}",
                offset.map_or("?".into(), |o| o.to_string()),
                committed_at_ms.map_or(String::new(), |c| format!(", committed at {c} ms"))
            )),
            EventKind::ProduceFailed { id, error } if Some(*id) == s.id => {
                Some(format!("the producer saw an error: {error}"))
            }
            EventKind::Crash { .. } | EventKind::Restart | EventKind::DiskAtOpen { .. }
                if silent =>
            {
                None
            }
            EventKind::Crash {
                partitions,
                process,
            } => {
                let p = partitions.iter().find(|p| p.tp == *tp)?;
                let what = if *process {
                    "process crash (the page cache survives)"
                } else {
                    "power loss"
                };
                Some(format!(
                    "{what}: persisted HWM {}, tail the next open reads {}{}",
                    p.persisted_hwm,
                    p.durable_tail,
                    o.map_or("; no copy known in the log".into(), |o| {
                        let at = if o < p.persisted_hwm {
                            "below the persisted HWM: kept and visible"
                        } else if o < p.durable_tail {
                            "in the hidden tail: on the log but above the persisted HWM, so \
                         the open hides it and the WAL replay must restore the record"
                        } else {
                            "past the tail: not in the log, only the WAL entry can restore it"
                        };
                        format!("; offset {o} {at}")
                    })
                ))
            }
            EventKind::Restart => Some(format!("restart: incarnation {}", event.incarnation)),
            EventKind::DiskAtOpen {
                tp: t,
                disk,
                while_open,
            } if t == tp => {
                let again = if *while_open {
                    " (again: damage landed while the open ran)"
                } else {
                    ""
                };
                Some(format!(
                    "the open reads {disk}{again}{}",
                    o.map_or("; no copy known in the log".into(), |o| format!(
                        "; offset {o} {}",
                        place(o, disk)
                    ))
                ))
            }
            EventKind::HiddenAtOpen {
                tp: t,
                from,
                to,
                held,
            } if t == tp => listing(
                held,
                s,
                o,
                &format!("hidden tail [{from}, {to}) holds"),
                "a copy at",
            ),
            EventKind::DamageHeld {
                tp: t,
                held,
                fault_index,
            } if t == tp => listing(
                held,
                s,
                o,
                &format!("the fault #{fault_index} hit"),
                "the copy at",
            ),
            EventKind::Fault {
                kind, tp: Some(t), ..
            } if t == tp => fault_note(kind, o),
            EventKind::Fault { kind, tp: None, .. } => {
                let named = facts
                    .wal_damage_by_fault
                    .get(&index)
                    .is_some_and(|ids| s.id.is_some_and(|id| ids.contains(&id)))
                    || facts.reaches.iter().any(|r| {
                        r.fault_index == index && s.id.is_some_and(|id| r.ids.contains(&id))
                    });
                named.then(|| format!("{}: reaches this record's WAL entry", in_or_out(kind)))
            }
            EventKind::WalEntriesDamaged {
                first_replay,
                entries,
                ..
            } => {
                let e = entries.iter().find(|e| Some(e.id) == s.id && e.tp == *tp)?;
                Some(format!(
                    "its WAL entry (seq {}) destroyed; the first open to replay the WAL after \
                 it is incarnation {first_replay}",
                    e.seq
                ))
            }
            EventKind::EngineAlarm {
                tp: Some(t), alarm, ..
            } if t == tp => alarm_note(alarm, o),
            EventKind::EngineAlarm {
                tp: None, alarm, ..
            } => match alarm {
                Alarm::WalDamaged { .. } => Some("the WAL's open reported damage".into()),
                Alarm::WalCheckpointUnreadable => {
                    Some("the WAL checkpoint was unreadable: the replay starts lower".into())
                }
                Alarm::WalPoisoned => Some("a WAL fsync failed: the WAL is poisoned".into()),
                _ => None,
            },
            EventKind::PartitionRefused { tp: t, .. } if t == tp => {
                Some("the partition is refused: nothing on it is served".into())
            }
            EventKind::PartitionPoisoned { tp: t } if t == tp => {
                Some("the partition is poisoned until a restart".into())
            }
            EventKind::Delivery {
                tp: t,
                offset,
                payload,
                attempt,
                ..
            } if t == tp => {
                let id = parse_payload_id(payload).ok();
                if id.is_some() && id == s.id {
                    Some(format!("delivered at {offset} (attempt {attempt})"))
                } else if Some(*offset) == o {
                    Some(format!(
                        "offset {offset} delivered {}, not this record",
                        id.map_or("an unreadable payload".into(), |id| format!("id {id}"))
                    ))
                } else {
                    None
                }
            }
            EventKind::Heal => Some("heal: no fault from here on".into()),
            _ => None,
        }
    }
}

/// A listing by identity (`held`) as it bears on the record: its own copies, or else
/// the other record at its copy's offset; `None` when it names neither.
fn listing(
    held: &[crate::history::HeldCopy],
    s: &Subject,
    o: Option<Offset>,
    what: &str,
    own: &str,
) -> Option<String> {
    let mine: Vec<String> = held
        .iter()
        .filter(|c| Some(c.id) == s.id)
        .map(|c| c.offset.to_string())
        .collect();
    if !mine.is_empty() {
        return Some(format!("{what} {own} {}", mine.join(", ")));
    }
    let other = held.iter().find(|c| Some(c.offset) == o)?;
    Some(format!(
        "{what} id {} at {}, not this record",
        other.id, other.offset
    ))
}

/// Where `o` stands in what an open reads.
fn place(o: Offset, disk: &crate::history::DiskView) -> String {
    if o < disk.log_start {
        "below the log start".into()
    } else if disk.bad.as_ref().is_some_and(|b| b.offset <= o) {
        "at or past the bad frame: the open cuts it".into()
    } else if o < disk.hwm {
        "below the HWM: visible".into()
    } else if o < disk.tail {
        "in the hidden tail".into()
    } else {
        "past the valid tail: not on the log".into()
    }
}

fn in_or_out(kind: &FaultKind) -> String {
    let side = match contract(kind) {
        Contract::In => "in contract",
        Contract::Out => "out of contract",
    };
    side.to_owned()
}

/// A fault on the record's partition: damage at rest that reaches its offset, or any
/// fault on its files but the segments (a word, a failed fsync), which can move it.
fn fault_note(kind: &FaultKind, o: Option<Offset>) -> Option<String> {
    if matches!(kind, FaultKind::Latency { .. }) {
        return None;
    }
    match kind.segment_damage() {
        Some((Some(range), _)) => {
            let o = o?;
            if range.contains(o) {
                Some(format!("{}: reaches offset {o}", in_or_out(kind)))
            } else {
                // Damage below the copy: an open that cuts there takes the copy too.
                (range.start < o).then(|| {
                    format!(
                        "{}: reaches [{}, {}), below the copy at {o}",
                        in_or_out(kind),
                        range.start,
                        range.end
                    )
                })
            }
        }
        Some((None, _)) => Some(format!("{}: its reach is unknown", in_or_out(kind))),
        None => {
            let file = match kind {
                FaultKind::FsyncEio { file }
                | FaultKind::LostFsync { file, .. }
                | FaultKind::TornWrite { file }
                | FaultKind::LostWrite { file }
                | FaultKind::Enospc { file }
                | FaultKind::BitFlip { file, .. } => Some(*file),
                _ => None,
            };
            let segment = file == Some(FileKind::Segment);
            Some(format!(
                "{}{}",
                in_or_out(kind),
                if segment {
                    ": on the log's segments"
                } else {
                    ""
                }
            ))
        }
    }
}

/// What an engine alarm on the record's partition did at its offset.
fn alarm_note(alarm: &Alarm, o: Option<Offset>) -> Option<String> {
    let at = |cut: Offset| match o {
        Some(o) if cut <= o => format!(": the log from {cut} is gone, the copy at {o} with it"),
        Some(o) => format!(": above offset {o}"),
        None => String::new(),
    };
    match alarm {
        Alarm::TornTail { offset, .. } => {
            Some(format!("the open cut at {offset} (R1){}", at(*offset)))
        }
        Alarm::Hole { offset, .. } => Some(format!("the open cut at {offset} (R2){}", at(*offset))),
        Alarm::Salvaged {
            offered,
            kept,
            copied,
            ..
        } => Some(format!(
            "the R2 salvage wrote {kept} of {offered} readable records past the hole into \
             the WAL, and a second copy of {copied} whose entry it still held"
        )),
        Alarm::Refused { .. } => Some("the open refused the partition (R3)".into()),
        Alarm::Clamp {
            persisted_hwm, hwm, ..
        } => Some(format!(
            "the open clamped the HWM {persisted_hwm} to {hwm} (R4){}",
            match o {
                Some(o) if *hwm <= o && o < *persisted_hwm => format!(": offset {o} given up"),
                _ => String::new(),
            }
        )),
        Alarm::LogOpened { hwm, tail, .. } => {
            Some(format!("the log opened: HWM {hwm}, tail {tail}"))
        }
        Alarm::HiddenExposed { from, to } => Some(format!(
            "the hidden tail [{from}, {to}) exposed{}",
            match o {
                Some(o) if *from <= o && o < *to => format!(": offset {o} visible again"),
                _ => String::new(),
            }
        )),
        Alarm::FrameSkipped { base, records } | Alarm::RecordsSkipped { base, records } => {
            let covers = o.is_some_and(|o| *base <= o && o < base + records);
            covers.then(|| format!("skipped at consume time: [{base}, {})", base + records))
        }
        Alarm::LogStartMoved { from, log_start } => {
            let covers = o.is_some_and(|o| *from <= o && o < *log_start);
            covers.then(|| format!("retention moved the log start from {from} to {log_start}"))
        }
        Alarm::FrontierReset { log_start } => {
            Some(format!("the frontier reset to the log start {log_start}"))
        }
        Alarm::FrontierClamped { value, clamped } => {
            Some(format!("the frontier {value} clamped to {clamped}"))
        }
        _ => None,
    }
}
