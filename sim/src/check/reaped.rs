//! What the reaper took: each segment a retention sweep moved out of the log, from
//! the engine's account (`log_start_moved`) and the disk's (`SegmentCreated`,
//! `SegmentDeleted`, `SegmentsListed`). `retention_safe` judges each; `no_lost_ack`'s
//! `retention` row, `frontier_safe`, `woken_promptly` and `redelivered_after_expiry`
//! let the engine forget what a reap took, and only while it stays taken.
//!
//! A sweep moves the log start first (readers forget the records below it at once)
//! and unlinks the files after, or, dropped or failed part-way, leaves the unlinks to
//! the next sweep. So a reap dates from its move. Its file is back, and its records
//! with it, when a later restart's listing of the directory holds the base again
//! before a new file of that base was created: a crash came before the unlink, or
//! before the directory fsync that made it durable.
//!
//! Invariants: reaps are in history order of their moves; an unlink of the same file
//! again in the same incarnation (a dropped sweep's list finished by the next) reaps
//! nothing more; an unlink no move announced is still a reap, marked `unannounced`,
//! which `retention_safe` rule 4 refuses.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{
    Alarm, EventKind, HeldCopy, History, Incarnation, Offset, ProduceId, TopicPartition,
};

/// A segment the reaper took out of the log: offsets `[base, end)` of `tp`, forgotten
/// by readers at history `index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reaped {
    pub tp: TopicPartition,
    pub base: Offset,
    /// `None`: no higher segment existed (the active one was deleted).
    pub end: Option<Offset>,
    /// The move (or, `unannounced`, the unlink).
    pub index: usize,
    /// The incarnation whose engine moved it out.
    pub incarnation: Incarnation,
    /// The unlink the engine asked for in that incarnation, if it came.
    pub unlinked: Option<usize>,
    /// The first later restart whose listing held the file again: the records are
    /// back from then on.
    pub back_at: Option<usize>,
    /// The highest frontier the engine wrote in the move's incarnation after the move:
    /// offsets below it stay settled after a crash brings the file back.
    pub frontier_passed: Option<Offset>,
    /// No move announced it: the engine unlinked a segment readers could still serve.
    pub unannounced: bool,
    /// The records the file held when the engine asked to unlink it.
    pub held: Vec<HeldCopy>,
    /// The highest HWM the engine had shown on `tp` in this incarnation before the
    /// move (its open, its samples, and every offset it acknowledged or delivered lies
    /// below the HWM): the records below it were visible to consumers.
    pub shown_hwm: Offset,
}

impl Reaped {
    /// A reap of `[base, end)` of `tp` at history `index`, moved out by `incarnation`:
    /// announced, not yet unlinked, its file not back.
    fn moved(
        tp: &TopicPartition,
        base: Offset,
        end: Option<Offset>,
        index: usize,
        incarnation: Incarnation,
        shown_hwm: Offset,
    ) -> Self {
        Reaped {
            tp: tp.clone(),
            base,
            end,
            index,
            incarnation,
            unlinked: None,
            back_at: None,
            frontier_passed: None,
            unannounced: false,
            held: Vec::new(),
            shown_hwm,
        }
    }

    pub fn contains(&self, offset: Offset) -> bool {
        self.base <= offset && self.end.is_some_and(|e| offset < e)
    }

    /// The offset of a copy of `id` the file held that consumers could have read.
    pub fn visible_copy(&self, id: ProduceId) -> Option<Offset> {
        self.held
            .iter()
            .find(|c| c.id == id && c.offset < self.shown_hwm)
            .map(|c| c.offset)
    }

    /// The reap took its records for good: no restart found the file again.
    pub fn stands(&self) -> bool {
        self.back_at.is_none()
    }

    /// The records were gone at history `index`: moved out before it, the file not
    /// back yet.
    pub fn gone_at(&self, index: usize) -> bool {
        self.index < index && self.back_at.is_none_or(|b| index < b)
    }

    /// `offset` counts as settled for the frontier at history `index`: taken then, or
    /// passed by a frontier the engine wrote while it was taken (the value a later
    /// incarnation loads).
    pub fn settles(&self, offset: Offset, index: usize) -> bool {
        self.contains(offset)
            && self.index < index
            && (self.gone_at(index) || self.frontier_passed.is_some_and(|f| offset < f))
    }
}

/// The segment files each partition holds as the disk shows them: created, listed at
/// a restart (what the crash left), unlinked.
#[derive(Default)]
pub struct LiveSegments(BTreeMap<TopicPartition, BTreeSet<Offset>>);

impl LiveSegments {
    /// Follows one event. `false` for an unlink of a file that was not there (a second
    /// unlink deletes nothing), `true` otherwise.
    pub fn observe(&mut self, kind: &EventKind) -> bool {
        match kind {
            EventKind::SegmentCreated { tp, base } => {
                self.0.entry(tp.clone()).or_default().insert(*base);
            }
            EventKind::SegmentsListed { tp, bases } => {
                self.0.insert(tp.clone(), bases.iter().copied().collect());
            }
            EventKind::SegmentDeleted { tp, base, .. } => {
                return self.0.get_mut(tp).is_some_and(|b| b.remove(base));
            }
            _ => {}
        }
        true
    }

    pub fn of(&self, tp: &TopicPartition) -> Option<&BTreeSet<Offset>> {
        self.0.get(tp)
    }
}

/// The highest HWM the engine showed on each partition in its current incarnation.
#[derive(Default)]
struct Shown(BTreeMap<TopicPartition, (Incarnation, Offset)>);

impl Shown {
    fn show(&mut self, tp: &TopicPartition, incarnation: Incarnation, hwm: Offset) -> Offset {
        let s = self.0.entry(tp.clone()).or_insert((incarnation, hwm));
        if s.0 != incarnation {
            *s = (incarnation, hwm);
        }
        s.1 = s.1.max(hwm);
        s.1
    }
}

/// Every segment the reaper took out of the log, in the order of the moves.
pub fn reaped(history: &History) -> Vec<Reaped> {
    let mut out: Vec<Reaped> = Vec::new();
    let mut live = LiveSegments::default();
    let mut opened: BTreeSet<(TopicPartition, Incarnation)> = BTreeSet::new();
    // Per partition and base: the reap moved out in this incarnation, not yet unlinked.
    let mut moved: BTreeMap<(TopicPartition, Offset), (Incarnation, usize)> = BTreeMap::new();
    // Per partition and base: the reaps whose file may still come back.
    let mut may_return: BTreeMap<(TopicPartition, Offset), Vec<usize>> = BTreeMap::new();
    let mut shown = Shown::default();
    for (index, event) in history.events().iter().enumerate() {
        let inc = event.incarnation;
        let was_live = live.observe(&event.kind);
        match &event.kind {
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogOpened { hwm, .. },
                raised_in,
            } => {
                let inc = raised_in.unwrap_or(inc);
                opened.insert((tp.clone(), inc));
                shown.show(tp, inc, *hwm);
            }
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogStartMoved { log_start, .. },
                raised_in,
            } => {
                let inc = raised_in.unwrap_or(inc);
                let Some(bases) = live.of(tp) else {
                    continue;
                };
                let shown_hwm = shown.show(tp, inc, 0);
                for &base in bases.range(..*log_start) {
                    let key = (tp.clone(), base);
                    if moved.get(&key).is_some_and(|m| m.0 == inc) {
                        continue;
                    }
                    moved.insert(key.clone(), (inc, out.len()));
                    may_return.entry(key).or_default().push(out.len());
                    let end = bases.range(base + 1..).next().copied();
                    out.push(Reaped::moved(tp, base, end, index, inc, shown_hwm));
                }
            }
            EventKind::HwmObserved { tp, hwm, .. } => {
                shown.show(tp, inc, *hwm);
            }
            EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                ..
            }
            | EventKind::Delivery { tp, offset, .. } => {
                shown.show(tp, inc, offset + 1);
            }
            EventKind::FrontierWritten { tp, frontier } => {
                for r in out
                    .iter_mut()
                    .filter(|r| &r.tp == tp && r.incarnation == inc && r.back_at.is_none())
                {
                    r.frontier_passed = r.frontier_passed.max(Some(*frontier));
                }
            }
            EventKind::SegmentCreated { tp, base } => {
                // A new file of that base: a later listing shows it, not the reaped one.
                may_return.remove(&(tp.clone(), *base));
            }
            EventKind::SegmentsListed { tp, bases } => {
                for base in bases {
                    for i in may_return.remove(&(tp.clone(), *base)).unwrap_or_default() {
                        out[i].back_at = Some(index);
                    }
                }
            }
            EventKind::SegmentDeleted { tp, base, held } => {
                // A second unlink of a file (a dropped sweep's, finished by the next)
                // deletes nothing more.
                if !was_live || !opened.contains(&(tp.clone(), inc)) {
                    continue;
                }
                let bases = live.of(tp).expect("the unlinked file was live");
                match moved.remove(&(tp.clone(), *base)) {
                    Some((moved_in, i)) if moved_in == inc => {
                        out[i].unlinked = Some(index);
                        out[i].held = held.clone();
                    }
                    _ => {
                        let key = (tp.clone(), *base);
                        may_return.entry(key).or_default().push(out.len());
                        let end = bases.range(base + 1..).next().copied();
                        let shown_hwm = shown.show(tp, inc, 0);
                        out.push(Reaped {
                            unlinked: Some(index),
                            unannounced: true,
                            held: held.clone(),
                            ..Reaped::moved(tp, *base, end, index, inc, shown_hwm)
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}
