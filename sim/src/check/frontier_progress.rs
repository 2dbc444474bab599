//! `frontier_progress` (liveness): once faults stop, the consumer frontier on the
//! platter follows the acks at a bounded interval (the spec: the frontier is persisted
//! at a ~100 ms cadence). The store's persister wakes every `frontier_persist_interval`
//! and replaces `consumer.offset` with the frontier, capped by the persisted HWM, when
//! that moved; so a frontier the acks had carried to `f` by `t` is in the word on the
//! platter by `t + interval + slack`.
//!
//! Why it matters though no record is lost without it: a persister that stalls (an
//! interval read in the wrong unit, a loop that stops) makes every crash redeliver
//! everything acked since its last write, and every other checker takes a redelivery
//! of an acked offset as in contract: `frontier_durable` bounds the loaded frontier
//! only by what the engine itself reported persisted.
//!
//! What is due is a lower bound worked out from the history alone, per partition and
//! incarnation: from the frontier the open loaded (`FrontierObserved::loaded`), the
//! longest run of offsets each delivered and then acked in that incarnation after the
//! load (an accepted ack settles for good, and the engine accepts one only of a lease
//! of its own incarnation), capped by the persisted HWM the engine showed by then
//! (`HwmObserved`). Offsets settled otherwise (a skip, retention) only leave the bound
//! lower. It is owed only once it passed the loaded frontier (before that, the engine
//! has nothing new to write). The word is the world's read of the platter
//! (`FrontierWordObserved`), never the engine's account of it.
//!
//! Judged for words read after the heal, the incarnation's open and the bound, and
//! before the partition was poisoned in that incarnation. The bound is the interval,
//! a store tick, [`SLACK_MS`] and two of the disk's longest sleeps (a replace begun
//! before the heal may still sleep through it). The persister measures its interval
//! on the engine's monotonic clock, which a wall-clock step does not move. The run of
//! acks starts at the frontier the open loaded, and is owed only past the word the open
//! read, which the engine takes as persisted (a clamp may load below it; a replace
//! whose directory fsync a crash cut leaves an older word on the platter).
//! Not judged: a partition whose `consumer.offset` or own directory took, in that
//! incarnation, a fault the engine cannot see (damage at rest, a lost or misplaced
//! write, a lost fsync: it takes the word as written and writes again only when the
//! frontier next moves), or an out-of-contract one in any incarnation up to it; a
//! failed write is retried at the next interval, so it excuses nothing. A run whose
//! interval the history does not record is not judged.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::facts::Facts;
use super::hwm_persisted::SLACK_MS;
use super::{RecordRef, Violation};
use crate::history::{Alarm, EventKind, FaultKind, FileKind, Incarnation, Offset, TopicPartition};

/// The store's tick, on which the persister runs (`StoreConfig::tick_interval`).
const TICK_MS: u64 = 10;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrontierProgressReport {
    /// Words judged (each against the frontier due by then).
    pub checked: usize,
    /// (partition, incarnation) not judged because `consumer.offset` or the directory
    /// took a fault in it, or an out-of-contract one before it.
    pub word_faulted: Vec<(TopicPartition, Incarnation)>,
    pub violations: Vec<Violation>,
}

/// The history's own partition names, not clones (this walk sees every sample).
type Key<'h> = (&'h TopicPartition, Incarnation);

/// What an open loaded.
#[derive(Clone, Copy)]
struct Loaded {
    /// The engine's frontier: where the run of acks starts.
    frontier: Offset,
    /// What the engine takes as persisted: the word it read (the log start when the
    /// word was torn; never below the frontier): only a run past it is owed.
    persisted: Offset,
}

/// One partition's incarnation, as the history shows it.
#[derive(Default)]
struct Track {
    /// The open's load, and when.
    loaded: Option<(Loaded, u64)>,
    delivered: BTreeSet<Offset>,
    acked: BTreeSet<Offset>,
    /// The run of acked offsets from `loaded`: its end, as it grew (time, end, index).
    due: Vec<(u64, Offset, usize)>,
    /// The persisted HWM the engine showed (time, value).
    persisted: Vec<(u64, Offset)>,
    /// The word on the platter (time, word, index).
    words: Vec<(u64, Offset, usize)>,
    poisoned_ms: Option<u64>,
}

impl Track {
    fn end(&self) -> Option<Offset> {
        self.due
            .last()
            .map(|d| d.1)
            .or(self.loaded.map(|l| l.0.frontier))
    }

    /// Extends the acked run past `loaded` after an ack at `at_ms`.
    fn advance(&mut self, at_ms: u64, index: usize) {
        let Some(mut end) = self.end() else {
            return;
        };
        let start = end;
        while self.acked.contains(&end) {
            end += 1;
        }
        if end > start {
            self.due.push((at_ms, end, index));
        }
    }

    /// What was due by `t`: the acked run's end then, capped by the persisted HWM
    /// shown by then (`None`: nothing beyond the loaded frontier). `t` only grows
    /// from call to call, so `cursor` (the entries of `due` and `persisted` at or
    /// before the last `t`) moves forward.
    fn due_at(&self, t: u64, cursor: &mut (usize, usize)) -> Option<(Offset, usize)> {
        while self.due.get(cursor.0).is_some_and(|d| d.0 <= t) {
            cursor.0 += 1;
        }
        while self.persisted.get(cursor.1).is_some_and(|p| p.0 <= t) {
            cursor.1 += 1;
        }
        let (_, end, index) = *self.due.get(cursor.0.checked_sub(1)?)?;
        let persisted = self.persisted.get(cursor.1.checked_sub(1)?)?.1;
        let due = end.min(persisted);
        (due > self.loaded?.0.persisted).then_some((due, index))
    }
}

/// A fault whose call returned success: the engine takes the word as written.
fn unseen(kind: &FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::BitFlip { .. }
            | FaultKind::LatentSector { .. }
            | FaultKind::LostWrite { .. }
            | FaultKind::TornWrite { .. }
            | FaultKind::CorruptWrite { .. }
            | FaultKind::CorruptWriteLeft { .. }
            | FaultKind::Misdirected { .. }
            | FaultKind::LostFsync { .. }
    )
}

pub fn check(facts: &Facts<'_>) -> FrontierProgressReport {
    let mut report = FrontierProgressReport::default();
    let Some((_, heal_ms)) = facts.heal else {
        return report;
    };
    let mut interval_ms = None;
    let mut latency_ms = 0;
    let mut tracks: BTreeMap<Key, Track> = BTreeMap::new();
    let mut faulted: BTreeSet<Key> = BTreeSet::new();
    let mut broken_from: BTreeMap<&TopicPartition, Incarnation> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let key = |tp| (tp, event.incarnation);
        let at = event.at_ms;
        match &event.kind {
            EventKind::RunStarted {
                frontier_persist_ms,
                io_latency_max_ms,
                ..
            } => {
                interval_ms = *frontier_persist_ms;
                latency_ms = *io_latency_max_ms;
            }
            EventKind::FrontierObserved {
                tp,
                frontier,
                loaded: Some(loaded),
                ..
            } => {
                // A torn word reads as `u64::MAX`; the engine resets to the log start,
                // which the frontier it loaded is.
                let persisted = if *frontier == u64::MAX {
                    *loaded
                } else {
                    (*frontier).max(*loaded)
                };
                let load = Loaded {
                    frontier: *loaded,
                    persisted,
                };
                tracks.entry(key(tp)).or_default().loaded = Some((load, at));
            }
            EventKind::Delivery { tp, offset, .. } => {
                let track = tracks.entry(key(tp)).or_default();
                if track.loaded.is_some() {
                    track.delivered.insert(*offset);
                }
            }
            EventKind::Ack { tp, offset } => {
                let track = tracks.entry(key(tp)).or_default();
                if track.delivered.contains(offset) {
                    track.acked.insert(*offset);
                    track.advance(at, index);
                }
            }
            EventKind::HwmObserved {
                tp,
                persisted_hwm: Some(persisted),
                ..
            } => tracks
                .entry(key(tp))
                .or_default()
                .persisted
                .push((at, *persisted)),
            EventKind::FrontierWordObserved { tp, word } => tracks
                .entry(key(tp))
                .or_default()
                .words
                // A missing or short file is a frontier of 0 (as the engine reads it).
                .push((at, word.unwrap_or(0), index)),
            EventKind::PartitionPoisoned { .. }
            | EventKind::EngineAlarm {
                alarm: Alarm::Poisoned { .. },
                ..
            } => {
                if let Some(key) = event.poisoned() {
                    tracks.entry(key).or_default().poisoned_ms.get_or_insert(at);
                }
            }
            // Only faults the engine cannot see from its calls' results; a directory
            // fault without a partition is the topic's, the root's or the WAL's, none
            // of which holds a partition's rename.
            EventKind::Fault {
                kind, tp: Some(tp), ..
            } if matches!(
                kind.file(),
                Some(FileKind::ConsumerOffset | FileKind::Directory)
            ) && (kind.is_out_of_contract() || unseen(kind)) =>
            {
                if kind.is_out_of_contract() {
                    broken_from.entry(tp).or_insert(event.incarnation);
                }
                faulted.insert(key(tp));
            }
            _ => {}
        }
    }
    let Some(interval) = interval_ms else {
        return report;
    };
    for (key, track) in &tracks {
        let (tp, incarnation) = key;
        let Some((_, loaded_ms)) = track.loaded else {
            continue;
        };
        let broken = broken_from.get(tp).is_some_and(|from| from <= incarnation);
        if faulted.contains(key) || broken {
            report.word_faulted.push(((*tp).clone(), *incarnation));
            continue;
        }
        let mut cursor = (0, 0);
        let poisoned_ms = track.poisoned_ms.unwrap_or(u64::MAX);
        let bound = interval + TICK_MS + SLACK_MS + 2 * latency_ms;
        for &(at, word, word_index) in &track.words {
            if at >= poisoned_ms || at < heal_ms.max(loaded_ms) + bound {
                continue;
            }
            let Some((due, due_index)) = track.due_at(at - bound, &mut cursor) else {
                continue;
            };
            report.checked += 1;
            if word < due {
                report.violations.push(Violation {
                    message: format!(
                        "{tp}: offsets below {due} were acked by t={}ms and the \
                         `consumer.offset` word on disk was still {word} at t={at}ms \
                         (frontier_persist_interval {interval}ms, bound {bound}ms; faults \
                         healed at t={heal_ms}ms)",
                        facts.at_ms(due_index),
                    ),
                    records: vec![RecordRef::new(tp, Some(word), None)],
                    events: vec![due_index, word_index],
                });
                // One per partition and incarnation: the rest repeat it.
                break;
            }
        }
    }
    report
}
