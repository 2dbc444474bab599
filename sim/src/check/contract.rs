//! The durability contract (DESIGN.md, "Durability contract"), fault kind by fault kind,
//! and the *reach* of every out-of-contract fault a run injected: which partition or
//! WAL entries it can touch and which offsets. An excuse that rests on such a fault
//! (see [`super::excuse`]) covers only what its reach names.
//!
//! | fault | contract | reach |
//! |---|---|---|
//! | crash, lost or torn unsynced write (not `hwm`), fsync EIO, ENOSPC, latency, clock step, cancelled request | in | none: nothing acknowledged may be lost |
//! | bit flip in a segment | in | the flipped frame's offsets; the engine must detect it (alarms) |
//! | bit flip in the WAL | in | the entries of the flipped frame (`WalEntriesDamaged`) |
//! | lost fsync of a segment | out | the frames it did not persist (`offsets`), on that partition, for records acknowledged after it and before an engine cut at or below their offset |
//! | lost fsync of `hwm` / `consumer.offset` | out | offsets between the durable value and the one written, for records acknowledged before the next crash (also before the fault: the word covers them) |
//! | lost fsync of a WAL file | out | the entries it did not persist (`WalEntriesDamaged`) |
//! | misdirected write to a segment | out | the frames it overwrote and the frames it was meant to write, for records acknowledged before an engine cut at or below their offset |
//! | misdirected write to the WAL | out | the entries overwritten and meant (`WalEntriesDamaged`) |
//! | bit flip in `hwm` / `consumer.offset` | out | offsets between the value before and after, for records acknowledged before the next crash |
//! | torn write of `hwm` | out | the whole partition, until the first crash after the word is rewritten (an 8-byte write lies in one sector, so the disk never tears it) |
//! | any out-of-contract fault on a topic's `topic.conf` (or its temp file) | out | nothing directly: the store refuses the topic, and the refusal (an alarm this fault must explain) is the excuse |
//!
//! How long a reach lasts: a reach names the records the fault can destroy or the
//! offsets it can move a word past, and those stay destroyed (or moved) until the file
//! is rewritten: a segment's from an engine cut on (`cuts_after`), a word's at its next
//! write (`window_end`). Excuses for a word out of step with the log (an HWM beyond the
//! tail, an HWM or log start that fell) ask, besides, whether the fault's file can move
//! that word at all ([`LOG_FILES`], [`HWM_FILE`]).
//! A fault whose reach the world could not compute (`offsets: None`) reaches the
//! records of its partition acknowledged after it and before the next crash, the
//! only acknowledgements a sync after it can have made on its strength; a fault
//! not on any partition's files reaches no partition. "The next crash" of a lost
//! fsync, a misdirected or a torn write is the next *power loss*: a process crash
//! leaves the page cache, which still shows the engine's bytes, so the fault shows
//! (and its window closes) only when power loss rebuilds the cache from the platter.

use std::collections::BTreeSet;

use super::facts::Facts;
use crate::history::{
    Alarm, Event, EventKind, FaultKind, FileKind, HeldCopy, Incarnation, Offset, OffsetRange,
    ProduceId, TopicPartition,
};

/// Files whose faults can lose or damage a partition's log frames: its segments, and its
/// directory (the entry of a new segment; the recorder names a directory's path
/// `Other` when an fsync of it is lost).
pub const LOG_FILES: &[FileKind] = &[FileKind::Segment, FileKind::Directory, FileKind::Other];

/// The `hwm` word alone.
pub const HWM_FILE: &[FileKind] = &[FileKind::Hwm];

/// In or out of the durability contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contract {
    /// The engine must keep every invariant.
    In,
    /// The engine cannot prevent loss, but must never hide it: every loss must be
    /// recorded by the engine or lie in the fault's reach.
    Out,
}

/// Where a fault kind stands.
pub fn contract(kind: &FaultKind) -> Contract {
    match kind {
        FaultKind::LostFsync { .. } | FaultKind::Misdirected { .. } => Contract::Out,
        FaultKind::BitFlip {
            file: FileKind::Hwm | FileKind::ConsumerOffset,
            ..
        } => Contract::Out,
        FaultKind::TornWrite {
            file: FileKind::Hwm,
        } => Contract::Out,
        _ => Contract::In,
    }
}

/// What one out-of-contract fault can reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The fault's history index.
    pub fault_index: usize,
    pub file: FileKind,
    /// The partition whose file it hit; `None` for the WAL and other store files.
    pub tp: Option<TopicPartition>,
    /// The topic whose `topic.conf` it hit (it explains that topic's refusal; it excuses nothing itself).
    pub topic: Option<String>,
    /// The offsets it reaches on `tp`; `None` when the world could not say.
    pub offsets: Option<OffsetRange>,
    /// The produce ids whose WAL entries it destroyed or left undurable.
    pub ids: BTreeSet<ProduceId>,
    /// The segment copies at `offsets` it reached, as the world named them
    /// (`ReachHeld`), by produce id and offset: a WAL replay can have moved a record
    /// above the offset it was acknowledged at, into the fault's frames.
    pub copies: Vec<(ProduceId, Offset)>,
    /// For a reach of unknown offsets: acknowledgements up to this history index (the
    /// next crash after the fault).
    pub window_end: usize,
    /// For a flipped or torn word: the engine's first report of a word it wrote after
    /// the fault (its fsync returned, so the platter holds the engine's word from there).
    pub rewritten: Option<usize>,
    /// The fault itself.
    pub kind: FaultKind,
    /// The engine's cuts of `tp` after the fault: (history index, first offset cut). A
    /// cut removes what the fault hit from its offset on; a record acknowledged after
    /// the cut at such an offset was written after it, out of the fault's reach.
    pub cuts_after: Vec<(usize, Offset)>,
}

impl Reach {
    /// Whether the fault can have destroyed, changed or moved a word past the record
    /// `id` at `offset` of `tp`, acknowledged (or first read) at `seen` (`None`: the
    /// question is about an offset, not one acknowledgement).
    pub fn covers(
        &self,
        tp: &TopicPartition,
        offset: Option<Offset>,
        id: Option<ProduceId>,
        seen: Option<usize>,
    ) -> bool {
        if self.after_only() && seen.is_some_and(|s| s < self.fault_index) {
            return false;
        }
        if self.until_crash() && seen.is_some_and(|s| s >= self.window_end) {
            return false;
        }
        if id.is_some_and(|id| self.ids.contains(&id)) {
            return true;
        }
        if self.tp.as_ref() != Some(tp) {
            return false;
        }
        if let (Some(offset), Some(seen)) = (offset, seen)
            && self
                .cuts_after
                .iter()
                .any(|&(cut, from)| cut < seen && from <= offset)
        {
            return false;
        }
        match (self.offsets, offset) {
            (Some(range), Some(offset)) => range.contains(offset),
            // Unknown offsets: the acknowledgements a sync after the fault made on its
            // strength, on this partition.
            _ => seen.is_some_and(|a| self.fault_index < a && a < self.window_end),
        }
    }

    /// A lost fsync of a data file (segment, WAL) reaches only what was acknowledged
    /// after it: it persisted nothing of the writes pending then, and records
    /// acknowledged before were fsynced before.
    pub fn after_only(&self) -> bool {
        self.lost_fsync() && !word_file(self.file)
    }

    /// A fault on a word file (`hwm`, `consumer.offset`) moves a value an open reads;
    /// it reaches records acknowledged (or read) before `window_end`, whatever their
    /// ack time before the fault. A lost fsync's durable value is the old, true one,
    /// which the next open reads and builds on: it ends at the next crash. A flipped
    /// word stays wrong, open after open, until the engine writes the word again: it
    /// ends at the first crash after that write.
    pub fn until_crash(&self) -> bool {
        word_file(self.file)
    }

    /// Whether the fault can undo a `consumer.offset` replace that ran from history
    /// index `begun` to `done` (its rename over the word): a lost fsync of the
    /// partition's directory (or of another file of it that holds no word) while the
    /// replace ran, so the rename may not be durable. A lost fsync of the word's own
    /// temp file is a fault of the word, with its own reach.
    pub fn undoes_rename(&self, begun: usize, done: usize) -> bool {
        self.lost_fsync()
            && matches!(self.file, FileKind::Directory | FileKind::Other)
            && begun < self.fault_index
            && self.fault_index < done
    }

    /// A lost fsync: the durable file keeps what it held before the writes it lost.
    pub fn lost_fsync(&self) -> bool {
        matches!(self.kind, FaultKind::LostFsync { .. })
    }

    /// A word file's fault that shows at the power loss after it (a lost fsync, a
    /// misdirected write): `window_end` is that power loss, and the open after it reads
    /// the word it left.
    fn word_at_crash(&self) -> bool {
        word_file(self.file)
            && !matches!(
                self.kind,
                FaultKind::BitFlip { .. } | FaultKind::TornWrite { .. }
            )
    }

    /// Whether the fault can leave a word file of the wrong length, which the next open
    /// must refuse as malformed. A flip changes bytes, never the length; a lost fsync
    /// leaves the old 8 bytes or an empty file (which the engine reads as absent); a
    /// torn write can leave a short one, a misdirected write a long one (which the
    /// engine's rewrites at position 0 never shorten).
    pub fn can_malform(&self) -> bool {
        word_file(self.file)
            && matches!(
                self.kind,
                FaultKind::TornWrite { .. } | FaultKind::Misdirected { .. }
            )
    }

    /// Whether what the fault did can still be found at history index `index` (by an
    /// open, or a read), at `offset` when one is asked about. A lost fsync of a data
    /// file shows only once a crash followed it; a segment fault's frame at `offset` is
    /// gone once an open that completed cut the log at or below it. A word file's
    /// fault lasts until `window_end`; a lost fsync's or a misdirected write's (whose
    /// `window_end` is the crash that made its word durable) until the engine writes
    /// the word again after that crash.
    pub fn live_at(&self, facts: &Facts<'_>, index: usize, offset: Option<Offset>) -> bool {
        if index <= self.fault_index {
            return false;
        }
        if word_file(self.file) {
            if self.word_at_crash() && index < self.window_end {
                // Before the power loss the page cache still shows the engine's word.
                return false;
            }
            if !self.word_at_crash() {
                return index < self.window_end;
            }
            // The crash left the word the fault made durable; it stays until the engine
            // writes the word again after that crash (killed opens write nothing).
            let Some(tp) = &self.tp else {
                return false;
            };
            if self.file == FileKind::Hwm && !hwm_left_by(facts, tp, self.window_end, self.offsets)
            {
                // A later write lasted: the crash left the engine's own word.
                return false;
            }
            let rewritten = match self.file {
                FileKind::Hwm => hwm_rewritten_after_crash(facts, tp, self.window_end),
                _ => word_rewritten(facts, self.file, tp, self.window_end, self.offsets, None)
                    .map(|w| facts.next_crash_after(w)),
            };
            return rewritten.is_none_or(|w| index < w);
        }
        if self.platter_only() && !facts.power_loss_between(self.fault_index, index) {
            return false;
        }
        !offset.is_some_and(|o| self.cut_by(facts, index).any(|from| from <= o))
    }

    /// The first offsets of the engine's cuts after the fault that took effect before
    /// `index`. A cut rewrote the frames only once its open completed: an alarm of that
    /// same open (a clamp after its cut) still sees what the fault left.
    pub fn cut_by<'a>(
        &'a self,
        facts: &'a Facts<'_>,
        index: usize,
    ) -> impl Iterator<Item = Offset> + 'a {
        self.cuts_after
            .iter()
            .filter(move |&&(cut, _)| {
                facts
                    .opened_at
                    .get(&facts.history.events()[cut].incarnation)
                    .is_some_and(|&done| cut < done && done < index)
            })
            .map(|&(_, from)| from)
    }

    /// Whether the fault hit a file of one of `files`.
    pub fn on(&self, files: &[FileKind]) -> bool {
        files.contains(&self.file)
    }

    /// Whether its offsets meet `gap` (unknown offsets meet every gap, an empty reach
    /// none).
    pub fn meets(&self, gap: OffsetRange) -> bool {
        self.offsets
            .is_none_or(|o| o.start < o.end && o.start < gap.end && gap.start < o.end)
    }

    /// A fault whose effect only the platter holds (a lost fsync, a misdirected or torn
    /// write): the page cache keeps the engine's bytes through process crashes, so it
    /// shows only after a power loss.
    pub fn platter_only(&self) -> bool {
        matches!(
            self.kind,
            FaultKind::LostFsync { .. }
                | FaultKind::Misdirected { .. }
                | FaultKind::TornWrite { .. }
        )
    }

    /// The offset of a copy of `id` on `tp` the world named in the frames the fault
    /// reached.
    /// Only rows that rest on an engine alarm read it (a refusal's, a clamp's by copy):
    /// above the persisted HWM the WAL replay restores such a copy, and a copy the
    /// engine wrote back or committed again since is no longer the fault's.
    pub fn copy_at(&self, tp: &TopicPartition, id: ProduceId) -> Option<Offset> {
        if self.tp.as_ref() != Some(tp) {
            return None;
        }
        self.copies
            .iter()
            .find(|&&(copy, _)| copy == id)
            .map(|&(_, at)| at)
    }

    /// Whether the reach includes the offset `offset` of `tp`, or everything there.
    pub fn reaches_offset(&self, tp: &TopicPartition, offset: Offset) -> bool {
        self.tp.as_ref() == Some(tp) && self.offsets.is_none_or(|r| r.contains(offset))
    }
}

/// The reach of every out-of-contract fault in the run, in history order (a
/// misdirected segment write the world split into the frames it landed on and those it
/// was meant for gives one per part).
pub fn reaches(facts: &Facts<'_>) -> Vec<Reach> {
    let events = facts.history.events();
    let mut out = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let EventKind::Fault { kind, tp, path } = &event.kind else {
            continue;
        };
        if contract(kind) == Contract::In {
            continue;
        }
        let (file, offsets) = match kind {
            FaultKind::LostFsync { file, offsets }
            | FaultKind::BitFlip { file, offsets, .. }
            | FaultKind::Misdirected { file, offsets, .. } => (*file, *offsets),
            FaultKind::TornWrite { file } => (*file, None),
            _ => unreachable!("only these kinds are out of contract"),
        };
        let ids = facts
            .wal_damage_by_fault
            .get(&index)
            .cloned()
            .unwrap_or_default();
        // The world's listing follows its fault directly.
        let held: &[HeldCopy] = match events.get(index + 1).map(|e| &e.kind) {
            Some(EventKind::ReachHeld {
                fault_index, held, ..
            }) if *fault_index == index => held,
            _ => &[],
        };
        let copies_at = |offsets: Option<OffsetRange>| -> Vec<(ProduceId, Offset)> {
            held.iter()
                .filter(|c| offsets.is_none_or(|r| r.contains(c.offset)))
                .map(|c| (c.id, c.offset))
                .collect()
        };
        // A flipped or torn word stays wrong until the engine writes it again.
        let rewritten = match kind {
            FaultKind::BitFlip { file, .. } | FaultKind::TornWrite { file } if word_file(*file) => {
                tp.as_ref().and_then(|tp| {
                    let late_to = match kind {
                        FaultKind::BitFlip { .. } => offsets.map(|r| r.start),
                        _ => None,
                    };
                    word_rewritten(facts, *file, tp, index, offsets, late_to)
                })
            }
            _ => None,
        };
        let reach = Reach {
            fault_index: index,
            file,
            tp: tp.clone(),
            copies: copies_at(offsets),
            topic: path.as_deref().and_then(config_topic),
            offsets,
            ids,
            rewritten,
            window_end: match kind {
                // What the open read from the wrong word lasts until the crash after
                // the engine wrote it again.
                FaultKind::BitFlip { file, .. } | FaultKind::TornWrite { file }
                    if word_file(*file) =>
                {
                    rewritten
                        .map_or(usize::MAX, |w| facts.next_crash_after(w))
                        .min(match (kind, file) {
                            (FaultKind::BitFlip { .. }, FileKind::Hwm) => tp
                                .as_ref()
                                .and_then(|tp| flip_clamped(facts, tp, index, offsets))
                                .map_or(usize::MAX, |open| facts.next_crash_after(open)),
                            _ => usize::MAX,
                        })
                }
                // A word's lost fsync, misdirected or torn write changes the platter
                // only; the page cache keeps the engine's word through process crashes,
                // so the next open that reads the fault's word is after a power loss.
                _ if word_file(file) => facts.next_power_loss_after(index),
                // A data file's: the acknowledgements made on its strength are those up
                // to the next crash (each later incarnation fsyncs what it acknowledges,
                // and writes back what it found above the HWM); what it lost stays
                // covered by its offsets.
                _ => facts.next_crash_after(index),
            },
            kind: kind.clone(),
            cuts_after: tp
                .as_ref()
                .filter(|_| file == FileKind::Segment)
                .map(|tp| {
                    facts
                        .alarms
                        .cuts(tp)
                        .filter(|c| c.index > index)
                        .map(|c| (c.index, c.offset))
                        .collect()
                })
                .unwrap_or_default(),
        };
        // A misdirected write that the world could split touched the frames it landed
        // on and those it was meant to write, not the offsets between them: a reach per
        // part (an empty one when it hit no frame).
        match kind {
            FaultKind::Misdirected {
                parts: Some(parts), ..
            } if parts.is_empty() => out.push(Reach {
                offsets: Some(OffsetRange { start: 0, end: 0 }),
                ..reach
            }),
            FaultKind::Misdirected {
                parts: Some(parts), ..
            } => out.extend(parts.iter().map(|&part| Reach {
                offsets: Some(part),
                copies: copies_at(Some(part)),
                ..reach.clone()
            })),
            _ => out.push(reach),
        }
    }
    out
}

/// The first open of `tp`, in an incarnation after the flip's, that clamped the flipped
/// `hwm` word down (below the flip's high end): it wrote and synced the word it came up
/// with, so the flip ends there, whatever the engine reports later. An open that kept a
/// flip's low word wrote that word back, and the flip's effect stays: only a clamp ends
/// it.
fn flip_clamped(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    fault: usize,
    offsets: Option<OffsetRange>,
) -> Option<usize> {
    let range = offsets?;
    let events = facts.history.events();
    let fault_inc = events[fault].incarnation;
    let clamped = |inc: Incarnation| {
        facts.alarms.of(tp).iter().any(|a| {
            a.incarnation == inc && a.index > fault && matches!(a.alarm, Alarm::Clamp { .. })
        })
    };
    events
        .iter()
        .enumerate()
        .skip(fault + 1)
        .find_map(|(i, e)| match &e.kind {
            EventKind::EngineAlarm {
                tp: Some(t),
                alarm: Alarm::LogOpened { hwm, .. },
                raised_in: None,
            } if t == tp
                && e.incarnation > fault_inc
                && *hwm < range.end
                && clamped(e.incarnation) =>
            {
                Some(i)
            }
            _ => None,
        })
}

/// A file holding one word the next open reads (`hwm`, `consumer.offset`).
fn word_file(file: FileKind) -> bool {
    matches!(file, FileKind::Hwm | FileKind::ConsumerOffset)
}

/// The first write of `tp`'s word file after history index `after` that lasted: the
/// engine's persisted HWM moving within an incarnation to a value the word did not
/// hold on disk between the report before the fault and the fault (neither end of
/// `flipped` nor of a flip chained before it) (`hwm`), or a frontier written
/// (`consumer.offset`) unless the next open found, instead of the value written, one
/// of `flipped`'s ends or of a later flip's before the write (the word the fault
/// left): a write the crash after it lost (the rename not yet durable) leaves the
/// fault's word in place. A replace the engine reported finished before the crash
/// lasted, whatever was read next. With `late_to` (a flip's
/// lower end), a report at or below it is a write made before the fault and reported
/// late: the engine's word only rises within an incarnation, and the word on disk
/// before the flip, which the engine had written, was at least that.
pub fn word_rewritten(
    facts: &Facts<'_>,
    file: FileKind,
    tp: &TopicPartition,
    after: usize,
    flipped: Option<OffsetRange>,
    late_to: Option<Offset>,
) -> Option<usize> {
    let events = facts.history.events();
    // The engine's persisted HWM before the fault, in its incarnation: a flip changes
    // the file, not the engine's account of it, so a later report in that incarnation
    // that differs is a write. An incarnation's first report is what its open read.
    let baseline: Option<(usize, Incarnation, Offset)> = events[..=after.min(events.len() - 1)]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| match &e.kind {
            EventKind::HwmObserved {
                tp: t,
                persisted_hwm: Some(p),
                ..
            } if t == tp => Some((i, e.incarnation, *p)),
            _ => None,
        });
    let mut persisted = baseline.map(|(_, inc, p)| (inc, p));
    // The word's values since that report, up to the fault: the ends of every flip of
    // it in between, and of every lost fsync of it (whose written end is a word the
    // engine wrote before the fault and may report only after it). A later report of
    // one is the engine's own earlier write reported late, not a rewrite after the
    // fault (flips can chain).
    let since = baseline.map_or(0, |(i, _, _)| i);
    let fault_inc = events.get(after).map(|e| e.incarnation);
    let mut held: Vec<Offset> = flipped.iter().flat_map(|r| [r.start, r.end]).collect();
    for e in &events[since..after.min(events.len())] {
        if let Some(r) = flip_of(e, file, tp) {
            held.extend([r.start, r.end]);
            continue;
        }
        let r = match &e.kind {
            // Only the incarnation that wrote it can report it late.
            EventKind::Fault {
                kind:
                    FaultKind::LostFsync {
                        file: f,
                        offsets: Some(r),
                    },
                tp: Some(t),
                ..
            } if *f == file && t == tp && Some(e.incarnation) == fault_inc => r,
            _ => continue,
        };
        held.extend([r.start, r.end]);
    }
    // A late report is one of the flip's own incarnation whose open had written the word
    // before the flip: a flip that landed before (or while) that incarnation's open, or a
    // report from a later incarnation, says nothing of what was written before it.
    let opened_after_fault = late_to.is_some()
        && events
            .iter()
            .skip(after + 1)
            .take_while(|e| Some(e.incarnation) == fault_inc)
            .any(|e| {
                matches!(&e.kind, EventKind::EngineAlarm {
                    tp: Some(t),
                    alarm: Alarm::LogOpened { .. },
                    ..
                } if t == tp)
            });
    let mut from = after;
    loop {
        let write = events
            .iter()
            .enumerate()
            .skip(from + 1)
            .find_map(|(i, e)| match (&e.kind, file) {
                (EventKind::FrontierWritten { tp: t, frontier }, FileKind::ConsumerOffset)
                    if t == tp =>
                {
                    Some((i, Some(*frontier)))
                }
                (
                    EventKind::HwmObserved {
                        tp: t,
                        persisted_hwm: Some(p),
                        ..
                    },
                    FileKind::Hwm,
                ) if t == tp => {
                    // A report of a flip's end is the word written before the flip,
                    // reported late (the engine's report trails its writes); only the
                    // incarnation that wrote it can report it late. An incarnation's
                    // first report is measured against the word its open wrote: the
                    // persister may have written another before the first sample
                    // (helper-68 F2).
                    let before = persisted
                        .filter(|&(inc, _)| inc == e.incarnation)
                        .map(|(_, before)| before)
                        .or_else(|| opened_word(facts, tp, e.incarnation, i));
                    let moved = before.is_some_and(|before| before != *p)
                        && (Some(e.incarnation) != fault_inc || !held.contains(p))
                        && late_to.is_none_or(|top| {
                            *p > top || Some(e.incarnation) != fault_inc || opened_after_fault
                        });
                    persisted = Some((e.incarnation, *p));
                    moved.then_some((i, None))
                }
                _ => None,
            })?;
        let (write, Some(written)) = write else {
            return Some(write.0);
        };
        let crash = facts.next_crash_after(write);
        let seen_next = events
            .iter()
            .enumerate()
            .skip(crash.saturating_add(1))
            .find_map(|(i, e)| match &e.kind {
                // What the open read: the value before its clamp, when it clamped.
                EventKind::EngineAlarm {
                    tp: Some(t),
                    alarm: Alarm::FrontierClamped { value, .. },
                    ..
                } if t == tp => Some((i, *value)),
                EventKind::FrontierObserved {
                    tp: t, frontier, ..
                } if t == tp => Some((i, *frontier)),
                _ => None,
            });
        // A replace the engine reported finished (temp file fsynced, renamed over,
        // directory fsynced) before the crash is on disk, whatever the open read next:
        // an older word read back is the engine's loss, not the flip's. Unless the
        // directory's fsync was lost while it ran (the rename may be undone), as
        // `frontier_durable` judges it.
        let returned = events[write + 1..crash.min(events.len())]
            .iter()
            .enumerate()
            .take_while(
                |(_, e)| !matches!(&e.kind, EventKind::FrontierWritten { tp: t, .. } if t == tp),
            )
            .find_map(|(k, e)| match &e.kind {
                EventKind::EngineAlarm {
                    tp: Some(t),
                    alarm: Alarm::FrontierPersisted { value },
                    ..
                } if t == tp && *value == written => Some(write + 1 + k),
                _ => None,
            });
        let lasted = returned.is_some_and(|done| {
            !facts
                .reaches_before(tp, done)
                .any(|f| f.undoes_rename(write, done))
        });
        // The write did not last when the open read the flip's word back, or when
        // another flip of the word before that read found one of the flip's values
        // there rather than the write's (a flip changes the word from one end of its
        // range to the other). The flip's word is also any a later flip made of it
        // before the write: flips chain.
        let undone = match (seen_next, flipped) {
            _ if lasted => false,
            (Some((read, seen)), Some(range)) if seen != written => {
                let mut ends = vec![range.start, range.end];
                for r in events[after + 1..write]
                    .iter()
                    .filter_map(|e| flip_of(e, file, tp))
                {
                    ends.extend([r.start, r.end]);
                }
                ends.contains(&seen)
                    || events[write + 1..read].iter().enumerate().any(|(k, e)| {
                        // A flip that found (or made) a word the engine wrote since
                        // `write` found the engine's word, not the fault's.
                        let engine_wrote = |v: Offset| {
                            events[write..write + 1 + k].iter().any(|w| {
                                matches!(&w.kind, EventKind::FrontierWritten { tp: t, frontier }
                                    if t == tp && *frontier == v)
                            })
                        };
                        flip_of(e, file, tp).is_some_and(|r| {
                            !engine_wrote(r.start)
                                && !engine_wrote(r.end)
                                && (ends.contains(&r.start) || ends.contains(&r.end))
                        })
                    })
            }
            _ => false,
        };
        if !undone {
            return Some(write);
        }
        from = crash;
    }
}

/// The range of the flip of `tp`'s `file` that `event` is, if it is one.
fn flip_of(event: &Event, file: FileKind, tp: &TopicPartition) -> Option<OffsetRange> {
    match &event.kind {
        EventKind::Fault {
            kind:
                FaultKind::BitFlip {
                    file: f,
                    offsets: Some(r),
                    ..
                },
            tp: Some(t),
            ..
        } if *f == file && t == tp => Some(*r),
        _ => None,
    }
}

/// The `hwm` word the open of `tp` in incarnation `inc` wrote and synced, from its
/// `LogOpened` alarm, when that came before history index `before`.
fn opened_word(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    inc: Incarnation,
    before: usize,
) -> Option<Offset> {
    facts.alarms.of(tp).iter().find_map(|a| match a.alarm {
        Alarm::LogOpened { hwm, .. } if a.incarnation == inc && a.index < before => Some(hwm),
        _ => None,
    })
}

/// When the engine had `tp`'s `hwm` in hand again after the crash at history index
/// `crash`: the first persisted HWM observed after it that differs from the one the
/// crash left (an advance), or the first open after it that came up on `tp`. One that
/// clamped a word past its log wrote and synced the clamped word before its
/// `log_opened`, whether or not the store's open completed after; one that kept the
/// word it read built on it (a low word clamps the frontier after `log_opened`) until
/// the store's open completed.
pub fn hwm_rewritten_after_crash(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    crash: usize,
) -> Option<usize> {
    let events = facts.history.events();
    let c = facts.crash_at(crash)?;
    let left = c.partitions.get(tp)?.persisted_hwm;
    let moved = events
        .iter()
        .enumerate()
        .skip(crash + 1)
        .find_map(|(i, e)| match &e.kind {
            EventKind::HwmObserved {
                tp: t,
                persisted_hwm: Some(p),
                ..
            } if t == tp && *p != left => Some(i),
            _ => None,
        });
    let opened = facts
        .alarms
        .of(tp)
        .iter()
        .filter(|a| a.incarnation > c.incarnation && matches!(a.alarm, Alarm::LogOpened { .. }))
        .find_map(|a| {
            if facts
                .alarms
                .clamps(tp)
                .any(|k| k.incarnation == a.incarnation)
            {
                Some(a.index)
            } else {
                facts
                    .opened_at
                    .get(&a.incarnation)
                    .filter(|&&done| a.index < done)
                    .copied()
            }
        });
    moved.into_iter().chain(opened).min()
}

/// Whether the crash at `crash` left `tp`'s durable `hwm` at one end of `offsets` (the
/// word a fault between those values left), or the fault's offsets are unknown. A
/// durable word elsewhere is a later write's, which lasted.
fn hwm_left_by(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    crash: usize,
    offsets: Option<OffsetRange>,
) -> bool {
    let left = facts
        .crash_at(crash)
        .and_then(|c| c.partitions.get(tp))
        .map(|p| p.persisted_hwm);
    match (left, offsets) {
        (Some(left), Some(r)) => left == r.start || left == r.end,
        _ => true,
    }
}

/// The topic whose `topic.conf` (or its temp file) `path` names.
fn config_topic(path: &str) -> Option<String> {
    let path = std::path::Path::new(path);
    let name = path.file_name()?.to_str()?;
    if name != "topic.conf" && name != "topic.conf.tmp" {
        return None;
    }
    let topic = path.parent()?.file_name()?.to_str()?;
    let topics = path.parent()?.parent()?.file_name()?.to_str()?;
    (topics == cafelog_engine::format::layout::TOPICS_DIR).then(|| topic.to_owned())
}

/// The offset below which the checkpoint damage `damage` ([`checkpoint_damage`]) can have
/// hidden `tp`'s copies from a replay: the floor the damaged file held for `tp` (0
/// without one), as the world read it just before the flip (`CheckpointDamaged`). A
/// replay from an intact floor skips only entries whose copies lie below it, so losing
/// the floor adds only re-commits of those. `None` (no bound) when the damage is an
/// out-of-contract fault, or a flip the history holds no reading of (histories recorded
/// before it was); a flip of an image that did not read destroyed nothing, and the same
/// file's flip before it is asked.
pub fn checkpoint_floor_lost(
    facts: &Facts<'_>,
    damage: usize,
    tp: &crate::history::TopicPartition,
) -> Option<Offset> {
    let mut fault = damage;
    loop {
        if !facts.history.is_flip(fault) {
            return None;
        }
        let held = facts.recorded_with(fault).find_map(|kind| match kind {
            EventKind::CheckpointDamaged { floors, .. } => Some(floors),
            _ => None,
        })?;
        match held {
            Some(floors) => {
                return Some(floors.iter().find(|f| f.tp == *tp).map_or(0, |f| f.offset));
            }
            // The same file's flip before it; else an out-of-contract fault made it
            // unreadable (it bounds nothing), or nothing did.
            None => match checkpoint_earlier(facts, fault) {
                Some(earlier) => fault = earlier,
                None if checkpoint_damage(facts, fault)
                    .is_some_and(|d| !facts.history.is_flip(d)) =>
                {
                    return None;
                }
                None => return Some(0),
            },
        }
    }
}

/// The checkpoint damage the open of `incarnation`, which raised the alarm at history
/// index `alarm`, read (helper-107 (3), helper-113): an out-of-contract fault on the
/// checkpoint's files when it is the last damage (it bounds nothing); else the last flip
/// of the file the open read ([`checkpoint_read_flips`]); else, no such flip being one
/// the open could meet, an out-of-contract fault before the alarm (no bound), or none.
/// Not a temp file's flip that no rename made that file. Histories that name no read
/// file fall back to the last damage before the alarm.
pub fn checkpoint_damage_read(
    facts: &Facts<'_>,
    alarm: usize,
    incarnation: crate::history::Incarnation,
) -> Option<usize> {
    let last = checkpoint_damage(facts, alarm)?;
    if !facts.history.is_flip(last) {
        return Some(last);
    }
    match checkpoint_read_flips(facts, alarm, incarnation) {
        Some(flips) => flips
            .last()
            .copied()
            .or_else(|| checkpoint_out_of_contract(facts, alarm)),
        None => Some(last),
    }
}

/// The flips of the WAL checkpoint file the open of `incarnation` read that it could
/// have met by history index `alarm`, in order: the last before its restart
/// (`CheckpointAtOpen::flipped`) and the same file's flips before that one (`earlier`),
/// then those while the open ran (`CheckpointDamaged::read`); each one the page cache
/// took, or that a power loss since made the platter's. `None` when the history names
/// no read file (recorded before it did).
pub fn checkpoint_read_flips(
    facts: &Facts<'_>,
    alarm: usize,
    incarnation: crate::history::Incarnation,
) -> Option<Vec<usize>> {
    let (_, mut before) = facts.checkpoint_read(incarnation)?;
    let mut flips = Vec::new();
    while let Some(fault) = before {
        flips.push(fault);
        before = checkpoint_earlier(facts, fault);
    }
    flips.reverse();
    let restart = facts.restarts.get(&incarnation).copied().unwrap_or(0);
    flips.extend((restart + 1..alarm).filter(|&i| {
        facts
            .recorded_with(i)
            .any(|kind| matches!(kind, EventKind::CheckpointDamaged { read: true, .. }))
    }));
    flips.retain(|&fault| facts.damage_readable_at(fault, alarm));
    Some(flips)
}

/// The last out-of-contract fault on the WAL checkpoint's files before history index
/// `before`.
pub fn checkpoint_out_of_contract(facts: &Facts<'_>, before: usize) -> Option<usize> {
    last_checkpoint_fault(facts, before, |kind| contract(kind) == Contract::Out)
}

/// The flip before the checkpoint flip at `fault` of the same file since the engine last
/// wrote it (`CheckpointDamaged::earlier`).
fn checkpoint_earlier(facts: &Facts<'_>, fault: usize) -> Option<usize> {
    facts.recorded_with(fault).find_map(|kind| match kind {
        EventKind::CheckpointDamaged { earlier, .. } => *earlier,
        _ => None,
    })
}

/// The last fault before history index `before` that can leave the WAL checkpoint
/// unreadable. The engine replaces the file atomically (a temp file, fsynced, renamed
/// over it), so no crash outcome (a lost or torn write) or fsync error can: only damage
/// at rest (a flip) or an out-of-contract fault, on the file or on the temp file the
/// rename makes it.
pub fn checkpoint_damage(facts: &Facts<'_>, before: usize) -> Option<usize> {
    last_checkpoint_fault(facts, before, |kind| {
        matches!(kind, FaultKind::BitFlip { .. }) || contract(kind) == Contract::Out
    })
}

/// The last fault of a kind `wanted` takes on the WAL checkpoint's files before history
/// index `before`.
fn last_checkpoint_fault(
    facts: &Facts<'_>,
    before: usize,
    wanted: impl Fn(&FaultKind) -> bool,
) -> Option<usize> {
    let files = crate::world::node::checkpoint_files();
    facts.history.events()[..before.min(facts.history.events().len())]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| match &e.kind {
            EventKind::Fault {
                kind,
                path: Some(path),
                ..
            } if files.iter().any(|f| f == std::path::Path::new(path)) && wanted(kind) => Some(i),
            _ => None,
        })
}
