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
mod skipped;

use super::contract::{LOG_FILES, Reach};
use super::facts::Facts;
use crate::history::{Alarm, FileKind, Offset, OffsetRange, ProduceId, TopicPartition};

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
}

impl<'f, 'h> Excuses<'f, 'h> {
    pub fn new(facts: &'f Facts<'h>) -> Self {
        Excuses {
            facts,
            reads_cache: false,
        }
    }

    /// The same excuses, for an observation of the page cache when `yes`.
    pub fn reading_cache(mut self, yes: bool) -> Self {
        self.reads_cache = yes;
        self
    }

    /// `Refused`: the first refusal of `tp` (or of its whole topic, whose topic.conf
    /// the open could not read) after `after`.
    pub fn refused(&self, tp: &TopicPartition, after: usize) -> Option<Excuse> {
        if let Some(refusal) = self.facts.alarms.refusal_after(tp, after) {
            return Some(Excuse::new(
                ExcuseKind::Refused,
                vec![refusal.index],
                format!("every record of {tp}"),
            ));
        }
        let topic = self.facts.alarms.store.iter().find(|a| {
            a.index > after
                && matches!(&a.alarm, crate::history::Alarm::TopicRefused { topic } if *topic == tp.topic)
        })?;
        Some(Excuse::new(
            ExcuseKind::Refused,
            vec![topic.index],
            format!("every record of topic {}", tp.topic),
        ))
    }

    /// `Retention`: a segment of `tp` the reaper moved out of the log after `after`
    /// (the record's acknowledgement), and that no restart found again (a reap
    /// `retention_safe` judges), held it below the HWM the engine had shown in that
    /// incarnation, so consumers could have read it: at `offset`, its acknowledged one, with no engine cut or clamp at or below the
    /// offset in between (which would have put another record there; a frame there
    /// damaged at rest is still the record's, which the decode cannot name); or a copy
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
        let (r, copy) = reaped().find_map(|r| Some((r, r.visible_copy(id)?)))?;
        Some(Excuse::new(
            ExcuseKind::Retention,
            vec![r.index],
            format!(
                "{tp} copy at offset {copy} in reaped segment {} (HWM shown {})",
                r.base, r.shown_hwm
            ),
        ))
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
        let r: &Reach = self.facts.reaches.iter().find(|r| {
            r.fault_index < before
                && r.covers(tp, offset, id, ack_index)
                && self.wal_entry_needed(r, tp, offset, id, ack_index)
        })?;
        let what = match (r.offsets, r.ids.is_empty()) {
            (Some(range), _) => format!("{tp} offsets {range}"),
            (None, false) => format!("{} WAL entries", r.ids.len()),
            (None, true) => format!("{tp} acknowledgements until the next crash"),
        };
        Some(Excuse::new(
            ExcuseKind::OutOfContract,
            vec![r.fault_index],
            format!(
                "{} reaching {what}",
                self.facts.describe_fault(r.fault_index)
            ),
        ))
    }

    /// Why record `id` of `tp`, acknowledged at `offset` when known (history index
    /// `after`), can have been lost: of every row that covers a record no consumer was
    /// ever given, the one whose causes came first.
    pub fn record_gone(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Option<Offset>,
        after: usize,
    ) -> Option<Excuse> {
        self.gone(tp, id, offset, after, true)
    }

    /// Why the copy of record `id` delivered at `offset` of `tp` (history index `after`)
    /// can be gone for good: the rows of [`Excuses::record_gone`] but `retention`'s,
    /// which forgives a reap of any copy consumers could have read, while this copy
    /// was read and must itself be gone (its own reap ends the obligation where it is
    /// judged, `redelivered_after_expiry`).
    pub fn delivered_copy_gone(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Offset,
        after: usize,
    ) -> Option<Excuse> {
        self.gone(tp, id, Some(offset), after, false)
    }

    fn gone(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        offset: Option<Offset>,
        after: usize,
        any_copy: bool,
    ) -> Option<Excuse> {
        // A record's frame exists from its commit, which can come before the client
        // hears the ack; a delivered copy is known only from its delivery.
        let since = if any_copy {
            self.facts
                .attempts
                .get(&id)
                .map_or(after, |&a| a.min(after))
        } else {
            after
        };
        let by_offset = |o: Offset| {
            [
                self.skipped(tp, id, o, after, since),
                self.both_copies_damaged(tp, id, o, after),
                self.both_copies_damaged_listed(tp, id, o, after),
            ]
        };
        // Of the rows that apply, the one whose causes all came first: what made the
        // record unreachable, and what a deadline is measured against (a reap after a
        // frontier jump already lost it is no cause of the loss).
        [
            self.refused(tp, after),
            any_copy
                .then(|| self.retention(tp, id, offset, after))
                .flatten(),
            self.out_of_contract(tp, offset, Some(id), Some(after), usize::MAX),
            self.stranded_copy(tp, id, after),
            self.clamped_copy(tp, id, offset, after),
        ]
        .into_iter()
        .chain(offset.map(by_offset).into_iter().flatten())
        .flatten()
        .min_by_key(|e| e.causes.iter().max().copied().unwrap_or(0))
    }

    /// `OutOfContract`, by a copy: after `after`, an open left the last copy of `id`
    /// (the WAL replay re-commits a record a cut took at another offset) where a word
    /// fault made it unreachable, and that fault, still live at the open, moved its
    /// word across the copy's offset. Two places, each with the one word that can strand
    /// a copy there:
    /// - a frontier loaded past the last one the engine wrote skipped it
    ///   (`FrontierSkipped`, which lists only records with no copy at or above the
    ///   loaded frontier): a fault on `consumer.offset`;
    /// - it lay in the hidden tail of the open (`HiddenAtOpen`), which the WAL replay
    ///   re-commits only for entries past its checkpoint, and the checkpoint moves by the
    ///   HWM the engine believed persisted: a fault on `hwm`.
    pub fn stranded_copy(
        &self,
        tp: &TopicPartition,
        id: ProduceId,
        after: usize,
    ) -> Option<Excuse> {
        use crate::history::EventKind;
        let events = self.facts.history.events();
        events
            .iter()
            .enumerate()
            .skip(after + 1)
            .find_map(|(index, e)| {
                let (file, from, to, held, place) = match &e.kind {
                    EventKind::FrontierSkipped {
                        tp: t,
                        from,
                        to,
                        held,
                    } if t == tp => (
                        FileKind::ConsumerOffset,
                        from,
                        to,
                        held,
                        "the frontier it moved skipped",
                    ),
                    EventKind::HiddenAtOpen {
                        tp: t,
                        from,
                        to,
                        held,
                    } if t == tp => (FileKind::Hwm, from, to, held, "the HWM it moved hid"),
                    _ => return None,
                };
                let copy = held.iter().find(|c| c.id == id)?.offset;
                let r = self.facts.reaches.iter().find(|r| {
                    r.file == file
                        && r.tp.as_ref() == Some(tp)
                        && r.offsets.is_some_and(|o| o.contains(copy))
                        && r.live_at(self.facts, index, None)
                })?;
                Some(Excuse::new(
                    ExcuseKind::OutOfContract,
                    vec![r.fault_index, index],
                    format!(
                        "{}: {place} [{from}, {to}), which held a copy at offset {copy}",
                        self.facts.describe_fault(r.fault_index)
                    ),
                ))
            })
    }

    /// Whether the record needed the WAL entry `r` destroyed: a reach by WAL entry
    /// covers a record only if its log copy was not yet committed below the persisted
    /// HWM at the first crash after the ack and the fault (from there on the log copy is
    /// what recovery trusts, and the entry is spent). Without a crash after, the
    /// running engine never read the entry back. When a crash lies between the ack and
    /// the fault, the record may sit at another offset since (a replay re-committed
    /// it), so the ack's offset proves nothing and the entry is taken as needed.
    fn wal_entry_needed(
        &self,
        r: &Reach,
        tp: &TopicPartition,
        offset: Option<Offset>,
        id: Option<ProduceId>,
        ack_index: Option<usize>,
    ) -> bool {
        let (Some(id), Some(offset), Some(ack)) = (id, offset, ack_index) else {
            return true;
        };
        if !r.ids.contains(&id) || self.facts.crash_between(ack, r.fault_index) {
            return true;
        }
        let from = ack.max(r.fault_index);
        self.facts
            .crashes
            .iter()
            .find(|c| c.index > from)
            .and_then(|c| c.partitions.get(tp))
            .is_some_and(|p| offset >= p.persisted_hwm)
    }

    /// `CutAboveHwm`: an open after `after` and before `before` cut `tp` at or below
    /// `offset` while `offset` lay at or above the persisted HWM that open read (the
    /// hidden tail, or beyond it).
    pub fn cut_above_hwm(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        after: usize,
        before: usize,
    ) -> Option<Excuse> {
        let cut = self.facts.alarms.cuts(tp).find(|c| {
            after < c.index
                && c.index < before
                && c.offset <= offset
                && self
                    .facts
                    .alarms
                    .disk_at(tp, c.incarnation)
                    .is_some_and(|d| offset >= d.persisted_hwm.unwrap_or(0))
        })?;
        Some(Excuse::new(
            ExcuseKind::CutAboveHwm,
            vec![cut.index],
            format!("{tp} offsets from {}", cut.offset),
        ))
    }

    /// `OutOfContract`, for a word out of step with the log (an HWM beyond the durable
    /// tail, an HWM or log start that fell): the first out-of-contract fault on a file
    /// of `files` of `tp`, injected before `index` and with its window still open there
    /// (a data file's until the next crash, a word file's as [`Reach::window_end`]
    /// says), whose offsets meet the gap `[low, high)` the word moved across (or are
    /// unknown). Which files can move which word is the caller's to say: a lost segment
    /// frame lowers the tail, only a fault on `hwm` moves the persisted HWM down.
    /// `lasts` says how long a data file's fault keeps the word apart from the log.
    pub fn out_of_contract_gap(
        &self,
        tp: &TopicPartition,
        files: &[FileKind],
        gap: OffsetRange,
        index: usize,
        lasts: GapLasts,
    ) -> Option<Excuse> {
        let r = self.facts.reaches_before(tp, index).find(|r| {
            // A platter-only fault (a lost fsync, a misdirected or torn write) is sealed
            // by the next power loss, not by a process crash: the page cache kept the
            // engine's bytes, so the opens between saw no gap to clamp.
            let sealed = if r.platter_only() && !r.until_crash() {
                self.facts.next_power_loss_after(r.fault_index)
            } else {
                r.window_end
            };
            let end = match lasts {
                _ if r.until_crash() => r.window_end,
                GapLasts::UntilCrash => sealed,
                GapLasts::ThroughNextIncarnation => self.facts.next_crash_after(r.window_end),
                // A data file's fault moves the persisted word away from the log at the
                // crash that seals it (`window_end`); `hwm` writes before that crash
                // were built on the frames it lost and do not close the gap.
                GapLasts::UntilHwmRewritten => {
                    if sealed == usize::MAX {
                        usize::MAX
                    } else {
                        super::contract::hwm_rewritten_after_crash(self.facts, tp, sealed)
                            .unwrap_or(usize::MAX)
                    }
                }
            };
            let begun = match lasts {
                // The word is read back from the directory only after the crash that
                // lost its fsync.
                GapLasts::ThroughNextIncarnation => index > r.window_end,
                // A lost fsync of `hwm` leaves the older word: lower, never past the log,
                // unless the write it lost was a clamp's, down across the gap.
                GapLasts::UntilHwmRewritten if r.file == FileKind::Hwm && r.lost_fsync() => {
                    r.offsets.is_some_and(|o| {
                        self.facts.alarms.clamps(tp).any(|c| {
                            c.index < r.fault_index && c.hwm == o.start && c.persisted_hwm == o.end
                        })
                    })
                }
                GapLasts::UntilHwmRewritten => true,
                GapLasts::UntilCrash => true,
            };
            // A platter-only fault shows in the page cache only after a power loss.
            let shown = !self.reads_cache
                || !r.platter_only()
                || self.facts.power_loss_between(r.fault_index, index);
            r.on(files) && begun && shown && index <= end && self.lowers_tail_to(r, tp, gap, index)
        })?;
        Some(Excuse::new(
            ExcuseKind::OutOfContract,
            vec![r.fault_index],
            format!(
                "{} reaching {tp} {} across the gap {gap}",
                self.facts.describe_fault(r.fault_index),
                r.offsets
                    .map_or_else(|| "offsets unknown".to_owned(), |o| o.to_string())
            ),
        ))
    }

    /// Whether `r` can account for the gap `[low, high)` at `index`. A fault on a log
    /// file loses frames from its own first offset on, so the durable tail (`low`)
    /// lies in the part of its reach the engine has not written again since: a cut at or
    /// below an offset removed the fault's frame there (once its open finished), and
    /// for a platter-only fault every open that began since wrote back and fsynced the
    /// frames at and above the HWM it recovered. A word file's fault only needs to meet
    /// the gap.
    fn lowers_tail_to(
        &self,
        r: &Reach,
        tp: &TopicPartition,
        gap: OffsetRange,
        index: usize,
    ) -> bool {
        if !r.meets(gap) {
            return false;
        }
        if !r.on(LOG_FILES) {
            return true;
        }
        let Some(range) = r.offsets else {
            return true;
        };
        let cut = r.cut_by(self.facts, index);
        let written_back = self
            .facts
            .alarms
            .of(tp)
            .iter()
            .filter(|a| {
                // An open that began after the fault: the write-back of one running at
                // the fault may be the very write the fault sent astray.
                r.platter_only()
                    && a.index < index
                    && self
                        .facts
                        .restarts
                        .get(&a.incarnation)
                        .is_some_and(|&restart| restart > r.fault_index)
            })
            .filter_map(|a| match a.alarm {
                Alarm::LogOpened { hwm, .. } => Some(hwm),
                _ => None,
            });
        let end = cut.chain(written_back).fold(range.end, Offset::min);
        range.start <= gap.start && gap.start < end
    }

    /// `LastHiddenTail`: `offset`, read at `read_index`, lies in the hidden tail the
    /// last crash before `final_index` left on `tp`.
    pub fn last_hidden_tail(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        read_index: usize,
        final_index: usize,
    ) -> Option<Excuse> {
        let crash = self.facts.crash_before(final_index)?;
        let p = crash.partitions.get(tp)?;
        (crash.index > read_index && p.hidden_tail().contains(offset)).then(|| {
            Excuse::new(
                ExcuseKind::LastHiddenTail,
                vec![crash.index],
                format!("{tp} hidden tail {}", p.hidden_tail()),
            )
        })
    }

    /// Whether the record at `offset` of `tp`, observed at `index`, may since hold
    /// another record or be gone, legitimately: a clamp, a cut above the HWM, or an
    /// out-of-contract fault reaching it, after the observation.
    pub fn superseded(&self, tp: &TopicPartition, offset: Offset, index: usize) -> Option<Excuse> {
        self.clamped(tp, offset, index, usize::MAX)
            .or_else(|| self.cut_above_hwm(tp, offset, index, usize::MAX))
            .or_else(|| self.out_of_contract(tp, Some(offset), None, Some(index), usize::MAX))
    }
}
