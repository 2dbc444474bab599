//! Every excuse a checker may make, in one table: a typed row with its rule, the events
//! it rests on (history indices) and exactly what it covers. Checkers ask the
//! questions below; they do not grow excuses of their own.
//!
//! An excuse rests on one of two things, never on "some fault happened":
//! - something the engine recorded (an alarm: a refusal, a clamp, a cut, a skip), which
//!   `alarms_explained` in turn holds to an injected cause and to the oracle's own
//!   decode of the disk; or
//! - an out-of-contract fault whose reach ([`super::contract`]) names the record.
//!
//! No row switches a check off for a partition or for the rest of a run: each covers
//! the offsets (or produce ids) its cause names, and only after that cause happened.
//! `tests/checkers/excuses.rs` holds the decision table: for each row a history that
//! needs it, and the same history one step wider (one offset further, one partition
//! more, one crash later) that it must not excuse.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

mod both_copies;
mod both_copies_listed;
mod clamped;
mod copies;
mod gaps;
mod gone;
mod replayed;
mod showed;
mod skipped;

use super::contract::{LOG_FILES, Reach};
use super::facts::Facts;
use crate::history::{
    Alarm, FileKind, Incarnation, Offset, OffsetRange, ProduceId, TopicPartition,
};

/// The rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExcuseKind {
    Refused,
    Clamped,
    Skipped,
    Retention,
    OutOfContract,
    BothCopiesDamaged,
    CutAboveHwm,
    LastHiddenTail,
    HiddenTail,
    DamagedCopyRecommitted,
    CheckpointLost,
    DamageNeverScanned,
    DamageDeletedBeforeScan,
    DamageRepairedBeforeScan,
}

impl ExcuseKind {
    pub const ALL: [ExcuseKind; 14] = [
        ExcuseKind::Refused,
        ExcuseKind::Clamped,
        ExcuseKind::Skipped,
        ExcuseKind::Retention,
        ExcuseKind::OutOfContract,
        ExcuseKind::BothCopiesDamaged,
        ExcuseKind::CutAboveHwm,
        ExcuseKind::LastHiddenTail,
        ExcuseKind::HiddenTail,
        ExcuseKind::DamagedCopyRecommitted,
        ExcuseKind::CheckpointLost,
        ExcuseKind::DamageNeverScanned,
        ExcuseKind::DamageDeletedBeforeScan,
        ExcuseKind::DamageRepairedBeforeScan,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExcuseKind::Refused => "refused",
            ExcuseKind::Clamped => "clamped",
            ExcuseKind::Skipped => "skipped",
            ExcuseKind::Retention => "retention",
            ExcuseKind::OutOfContract => "out_of_contract",
            ExcuseKind::BothCopiesDamaged => "both_copies_damaged",
            ExcuseKind::CutAboveHwm => "cut_above_hwm",
            ExcuseKind::LastHiddenTail => "last_hidden_tail",
            ExcuseKind::HiddenTail => "hidden_tail",
            ExcuseKind::DamagedCopyRecommitted => "damaged_copy_recommitted",
            ExcuseKind::CheckpointLost => "checkpoint_lost",
            ExcuseKind::DamageNeverScanned => "damage_never_scanned",
            ExcuseKind::DamageDeletedBeforeScan => "damage_deleted_before_scan",
            ExcuseKind::DamageRepairedBeforeScan => "damage_repaired_before_scan",
        }
    }

    /// The row's rule, in one line.
    pub fn rule(self) -> &'static str {
        match self {
            ExcuseKind::Refused => {
                "a record acknowledged before its partition was refused (R3), or its topic \
                 (topic.conf unreadable): nothing on it can be delivered"
            }
            ExcuseKind::Clamped => {
                "a record at an offset a recorded clamp (R4) gave up, [hwm, persisted), \
                 read or acknowledged before the clamp"
            }
            ExcuseKind::Skipped => {
                "a record in a frame the engine skipped at consume time with a counter, \
                 acknowledged before the skip"
            }
            ExcuseKind::Retention => {
                "a record a segment the reaper deleted after its ack held below the HWM the \
                 engine had shown (the unlink the world saw, judged by retention_safe): at \
                 its acknowledged offset with no cut or clamp there since, or a copy \
                 elsewhere the world decoded from the file"
            }
            ExcuseKind::OutOfContract => {
                "a record an out-of-contract fault's reach names (its offsets on its \
                 partition, or its WAL entry)"
            }
            ExcuseKind::BothCopiesDamaged => {
                "a record whose WAL entry and own log frame were both destroyed by damage \
                 at rest before any open could use either"
            }
            ExcuseKind::CutAboveHwm => {
                "an offset an open cut (R1/R2, at or below it) while it lay at or above the \
                 persisted HWM that open read: the WAL refills it with other records"
            }
            ExcuseKind::LastHiddenTail => {
                "a read offset still in the hidden tail the last crash left, at the end of \
                 the run"
            }
            ExcuseKind::HiddenTail => {
                "a second copy of a record whose earlier copy lay in a crash's hidden tail, \
                 within that crash's budget"
            }
            ExcuseKind::DamagedCopyRecommitted => {
                "a second copy of a record whose earlier copy the engine gave up as \
                 unreadable (a skipped frame, a recorded clamp) before the second copy \
                 appeared"
            }
            ExcuseKind::CheckpointLost => {
                "a second copy committed by the replay of an open that found the WAL \
                 checkpoint unreadable"
            }
            ExcuseKind::DamageNeverScanned => {
                "damage at rest that no open scanned before the run ended"
            }
            ExcuseKind::DamageDeletedBeforeScan => {
                "damage at rest in a segment retention deleted before an open scanned it"
            }
            ExcuseKind::DamageRepairedBeforeScan => {
                "damage at rest that a later write covered before an open read it: every \
                 view of the disk the first open to read it took (reference decoder) before \
                 its account of the partition holds valid frames through the damaged offsets \
                 and no bad region at or below them"
            }
        }
    }
}

impl fmt::Display for ExcuseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How long a data file's fault keeps a word apart from the log, for
/// [`Excuses::out_of_contract_gap`] (a word file's own fault lasts as its reach says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapLasts {
    /// Until the next crash: an in-memory word, rebuilt from the disk by the next open.
    UntilCrash,
    /// Through the incarnation after the next crash: a word an open reads back from
    /// what the crash made durable (a log start from the directory).
    ThroughNextIncarnation,
    /// Until the engine writes `hwm` again after the crash that sealed the fault: the
    /// persisted word stays past the lost frames, open after open (a killed open
    /// rewrites nothing), until a clamp rewrites it. The engine reports a persisted HWM
    /// only once its fsync returned, so from that report on the word is the engine's.
    UntilHwmRewritten,
    /// The persisted word itself, as the engine reports it or the platter holds it at a
    /// crash: a data file's fault as [`GapLasts::UntilCrash`]; a flipped or torn word's
    /// until the engine reports a word it wrote after the fault ([`Reach::rewritten`]),
    /// since from that report on the platter holds the engine's word, whatever the open
    /// that read the wrong one went on to do.
    PersistedWord,
}

/// One excuse made: the row, the events it rests on, and what it covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Excuse {
    pub kind: ExcuseKind,
    /// History indices of the events it rests on (alarms, faults, crashes).
    pub causes: Vec<usize>,
    /// What it covers, in words (partition, offsets, ids).
    pub covers: String,
}

impl Excuse {
    pub(super) fn new(kind: ExcuseKind, causes: Vec<usize>, covers: String) -> Self {
        Excuse {
            kind,
            causes,
            covers,
        }
    }
}

impl fmt::Display for Excuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}) resting on events", self.kind, self.covers)?;
        for c in &self.causes {
            write!(f, " #{c}")?;
        }
        Ok(())
    }
}

/// How many times each row fired in a run.
pub fn tally<'e>(excuses: impl IntoIterator<Item = &'e Excuse>) -> BTreeMap<ExcuseKind, u64> {
    let mut out = BTreeMap::new();
    for e in excuses {
        *out.entry(e.kind).or_insert(0) += 1;
    }
    out
}

/// The questions checkers ask.
pub struct Excuses<'f, 'h> {
    facts: &'f Facts<'h>,
    /// The observation being excused read the page cache (a process crash's state), not
    /// the platter: a fault on the platter alone cannot have moved it before a power loss.
    reads_cache: bool,
    /// `both_copies_damaged`'s rows from the copies a killed replay left, by partition,
    /// record and the replay's incarnation: every copy's row follows each later replay
    /// again, so without it a run of killed replays costs a factorial.
    recommitted: std::cell::RefCell<RecommittedRows>,
}

/// See [`Excuses`]'s `recommitted`.
type RecommittedRows = BTreeMap<(TopicPartition, ProduceId, Incarnation), Option<Excuse>>;

impl<'f, 'h> Excuses<'f, 'h> {
    pub fn new(facts: &'f Facts<'h>) -> Self {
        Excuses {
            facts,
            reads_cache: false,
            recommitted: Default::default(),
        }
    }

    /// The same excuses, for an observation of the page cache when `yes`.
    pub fn reading_cache(mut self, yes: bool) -> Self {
        self.reads_cache = yes;
        self
    }

    /// `Refused`: the first refusal of `tp` (or of its whole topic, whose topic.conf
    /// the open could not read) after `after` that no later open of `tp` got past.
    pub fn refused(&self, tp: &TopicPartition, after: usize) -> Option<Excuse> {
        if let Some(refusal) = self.facts.alarms.refusal_after(tp, after) {
            return Some(Excuse::new(
                ExcuseKind::Refused,
                vec![refusal.index],
                format!("every record of {tp}"),
            ));
        }
        // A refused topic opens none of its partitions: one that raises an alarm later
        // was opened again.
        let reopened = self.facts.alarms.last_opened(tp, after);
        let topic = self.facts.alarms.store.iter().find(|a| {
            a.index > after
                && reopened.is_none_or(|o| a.incarnation > o)
                && matches!(&a.alarm, crate::history::Alarm::TopicRefused { topic } if *topic == tp.topic)
        })?;
        Some(Excuse::new(
            ExcuseKind::Refused,
            vec![topic.index],
            format!("every record of topic {}", tp.topic),
        ))
    }

    /// `Refused`, for record `id` acknowledged at `offset` (history index `after`): the
    /// first refusal of `tp` after it, when that refusal could take the record. The
    /// world lists what the refused open could see (`HeldAtRefusal`): the records of
    /// the segments' readable frames and the WAL entries a replay would commit. The
    /// frames a fault damaged since the produce the decoder cannot read: those the world
    /// named by identity (`DamageHeld`: a replay may have moved the record into one)
    /// hold what they name, the others whatever lay at the offsets the fault reached.
    /// And a record acknowledged at or past the bad region: the frames there are read
    /// by hunting, which a stray or damaged frame can mislead. A record in none of them
    /// was gone before the refusal. Without a listing, or with no offset acknowledged,
    /// every record.
    pub fn refused_record(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Option<Offset>,
        after: usize,
    ) -> Option<Excuse> {
        use crate::history::EventKind;
        let excuse = self.refused(tp, after)?;
        let refusal = *excuse.causes.first()?;
        let events = self.facts.history.events();
        let (bad, log, wal) = match events.get(refusal + 1).map(|e| &e.kind) {
            Some(EventKind::HeldAtRefusal {
                tp: t,
                bad_offset,
                log,
                wal,
            }) if t == tp => (*bad_offset, log, wal),
            _ => return Some(excuse),
        };
        let Some(offset) = offset else {
            return Some(excuse);
        };
        // Damage can come before `after` when that is a delivery: from the produce on.
        let since = self
            .facts
            .attempts
            .get(&id)
            .map_or(after, |&a| a.min(after));
        let between = |i: usize| since < i && i < refusal;
        // In-contract damage at rest: what the world named (`DamageHeld`, recorded
        // right after its fault), else whatever lay at the offsets it reached.
        let damaged_at_rest = || {
            let named = |i: usize| match events.get(i + 1).map(|e| &e.kind) {
                Some(EventKind::DamageHeld {
                    fault_index, held, ..
                }) if *fault_index == i => Some(held),
                _ => None,
            };
            self.facts.segment_damage.get(tp).is_some_and(|damage| {
                damage.iter().any(|&i| {
                    between(i)
                        && self.facts.damage_readable_at(i, refusal)
                        && match named(i) {
                            Some(held) => held.iter().any(|c| c.id == id),
                            None => match &events[i].kind {
                                EventKind::Fault { kind, .. } => kind
                                    .segment_damage()
                                    .is_some_and(|(o, _)| o.is_none_or(|r| r.contains(offset))),
                                _ => false,
                            },
                        }
                })
            })
        };
        // Out of contract (a lost fsync or a misdirected write of a segment): its
        // reach, a part at a time, or a copy of the record the world named in it; not
        // once an open came up with its HWM at or below that copy before the refusal
        // (its write-back rewrote the frame from the page cache, or its replay
        // committed the record again), nor when an open before the fault had hidden
        // that copy and its replay committed the record again elsewhere (helper-66
        // #5), and only once a power loss showed it.
        let reached = || {
            self.facts.reaches.iter().any(|r| {
                let at = if r.reaches_offset(tp, offset) {
                    Some(offset)
                } else {
                    r.copy_at(tp, id)
                };
                r.file == FileKind::Segment
                    && between(r.fault_index)
                    && at.is_some_and(|o| {
                        !self.opened_below(tp, o, r.fault_index, refusal)
                            && !self.hidden_and_replayed(tp, id, o, since, r.fault_index)
                            && self.showed(r, tp, Some(o), None, refusal)
                    })
            })
        };
        let damaged = || damaged_at_rest() || reached();
        // At or past the bad region the decoder's reading of the frames is not the
        // engine's to trust either (a stray or damaged frame can hide the next from a
        // hunt).
        let past_bad = bad.is_some_and(|bad| offset >= bad);
        let taken = past_bad || log.contains(&id) || wal.contains(&id) || damaged();
        taken.then_some(excuse)
    }

    /// `Retention`: a segment of `tp` the reaper moved out of the log after `after`
    /// (the record's acknowledgement), and that no restart found again (a reap
    /// `retention_safe` judges), held it below the HWM the engine had shown in that
    /// incarnation, so consumers could have read it: at `offset`, its acknowledged one,
    /// while every open in between kept a tail above the offset (a hidden tail keeps
    /// its records where they are; new commits go past it) and none cut or clamped at
    /// or below it (either would have let another record in there; a frame there
    /// damaged at rest is still the record's, which the decode cannot name), and the
    /// world's decode of the file at the unlink names no other record there; or a copy
    /// of it elsewhere (the WAL replay re-commits a record a cut or a hidden tail took),
    /// by the world's decode of the file at the unlink. A record left in a hidden tail
    /// the engine never showed again is no reaped record of consumers'.
    pub fn retention(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Option<Offset>,
        after: usize,
    ) -> Option<Excuse> {
        let reaped = || {
            self.facts
                .reaped
                .iter()
                .filter(move |r| &r.tp == tp && r.index > after && r.stands())
        };
        let at_ack = offset.and_then(|offset| {
            reaped().find(|r| {
                r.contains(offset)
                    && offset < r.shown_hwm
                    && !r.held.iter().any(|c| c.offset == offset && c.id != id)
                    && self.facts.alarms.of(tp).iter().all(|a| match a.alarm {
                        Alarm::LogOpened { tail, .. } => {
                            !(after < a.index && a.index < r.index) || offset < tail
                        }
                        _ => true,
                    })
                    && !self
                        .facts
                        .alarms
                        .cuts(tp)
                        .any(|c| after < c.index && c.index < r.index && c.offset <= offset)
                    && !self
                        .facts
                        .alarms
                        .clamps(tp)
                        .any(|c| after < c.index && c.index < r.index && c.hwm <= offset)
            })
        });
        if let Some(r) = at_ack {
            return Some(Excuse::new(
                ExcuseKind::Retention,
                vec![r.index],
                format!(
                    "{tp} offsets [{}, {}) in a reaped segment (HWM shown {})",
                    r.base,
                    r.end.unwrap_or(r.base),
                    r.shown_hwm
                ),
            ));
        }
        if let Some((r, copy)) = reaped().find_map(|r| Some((r, r.visible_copy(id)?))) {
            return Some(Excuse::new(
                ExcuseKind::Retention,
                vec![r.index],
                format!(
                    "{tp} copy at offset {copy} in reaped segment {} (HWM shown {})",
                    r.base, r.shown_hwm
                ),
            ));
        }
        let (r, damage, copy) = reaped()
            .find_map(|r| Some((r, self.damage_named_copy(tp, id, r, after)?)))
            .map(|(r, (damage, copy))| (r, damage, copy))?;
        Some(Excuse::new(
            ExcuseKind::Retention,
            vec![damage, r.index],
            format!(
                "{tp} copy at offset {copy} in reaped segment {} (HWM shown {}), which \
                 damage at rest hid from the decode at the unlink",
                r.base, r.shown_hwm
            ),
        ))
    }

    /// A copy of `id` in the file reap `r` took that in-contract damage at rest, after
    /// `after` (the ack), hid from the world's decode at the unlink: the world named it
    /// by identity when the damage landed (`DamageHeld`), in that very file, below the
    /// HWM the engine had shown, and no cut or clamp at or below it came between the
    /// damage and the reap. Returns the damage's index and the copy's offset.
    fn damage_named_copy(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        r: &crate::check::reaped::Reaped,
        after: usize,
    ) -> Option<(usize, Offset)> {
        let events = self.facts.history.events();
        events
            .get(after..r.index)?
            .iter()
            .find_map(|e| match &e.kind {
                crate::history::EventKind::DamageHeld {
                    fault_index,
                    tp: t,
                    held,
                } if t == tp && after < *fault_index => {
                    let crate::history::EventKind::Fault {
                        kind,
                        path: Some(path),
                        ..
                    } = &events[*fault_index].kind
                    else {
                        return None;
                    };
                    // Only damage at rest names copies (`DamageHeld`); say so, so that a
                    // future emitter does not join this row unread.
                    matches!(
                        kind,
                        crate::history::FaultKind::BitFlip { .. }
                            | crate::history::FaultKind::LatentSector { .. }
                    )
                    .then_some(())?;
                    (crate::reference::partition::segment_base_of_path(path)? == r.base)
                        .then_some(())?;
                    let copy = held
                        .iter()
                        .find(|c| c.id == id && r.contains(c.offset) && c.offset < r.shown_hwm)?
                        .offset;
                    let alarms = &self.facts.alarms;
                    let between = |i: usize| *fault_index < i && i < r.index;
                    let moved = alarms
                        .cuts(tp)
                        .any(|c| between(c.index) && c.offset <= copy)
                        || alarms.clamps(tp).any(|c| between(c.index) && c.hwm <= copy);
                    (!moved).then_some((*fault_index, copy))
                }
                _ => None,
            })
    }

    /// `OutOfContract`: the first out-of-contract fault before `before` whose reach
    /// covers the record.
    pub fn out_of_contract(
        &self,
        tp: &TopicPartition,
        offset: Option<Offset>,
        id: Option<ProduceId>,
        ack_index: Option<usize>,
        before: usize,
    ) -> Option<Excuse> {
        self.out_of_contract_each_on(&[], tp, offset, id, ack_index, before)
            .next()
    }

    /// Every fault [`Excuses::out_of_contract`] could name, in history order, on one of
    /// `files` only (none: any file): for a row that only some files can answer, or that
    /// asks more of the fault than its reach (helper-70: an earlier fault that covers the
    /// record but fails the row must not hide a later one).
    pub fn out_of_contract_each_on<'s>(
        &'s self,
        files: &'s [FileKind],
        tp: &'s TopicPartition,
        offset: Option<Offset>,
        id: Option<ProduceId>,
        ack_index: Option<usize>,
        before: usize,
    ) -> impl Iterator<Item = Excuse> + 's {
        self.facts
            .reaches
            .iter()
            .filter(move |r| {
                r.fault_index < before
                    && (files.is_empty() || r.on(files))
                    && r.covers(tp, offset, id, ack_index)
                    && self.wal_entry_needed(r, tp, offset, id, ack_index)
                    && self.showed(r, tp, offset, ack_index, before)
                    && !self.replay_restores(r, tp, offset, id, ack_index)
            })
            .map(move |r| self.excuse_of(r, tp))
    }

    fn excuse_of(&self, r: &Reach, tp: &TopicPartition) -> Excuse {
        let what = match (r.offsets, r.ids.is_empty()) {
            (Some(range), _) => format!("{tp} offsets {range}"),
            (None, false) => format!("{} WAL entries", r.ids.len()),
            (None, true) => format!("{tp} acknowledgements until the next crash"),
        };
        Excuse::new(
            ExcuseKind::OutOfContract,
            vec![r.fault_index],
            format!(
                "{} reaching {what}",
                self.facts.describe_fault(r.fault_index)
            ),
        )
    }
}
