//! `hwm_persisted`: once faults stop, the persisted HWM follows the HWM at a bounded
//! interval (the spec: "persisted ... at a bounded interval"). The HWM persister wakes
//! every `hwm_persist_interval` and writes the word when the HWM moved, so an HWM the
//! engine showed at `t` is on disk by `t + interval + slack`.
//!
//! Why it matters though no record is lost without it: a persister that stalls leaves
//! every later crash a hidden tail as long as the stall, and the WAL checkpoint (which
//! waits for the persisted HWM) stops moving, so the WAL grows and each replay commits
//! more again. Every other checker budgets for what the persisted word says, so only
//! this one sees the persister stop.
//!
//! Judged from the world's samples: the HWM the engine showed (`HwmObserved`) against
//! the word the world read on the platter (`HwmWordObserved`, never the engine's own
//! account of what it persisted), pairing a word read at `t` with the last HWM shown
//! in the same incarnation at or before `t - bound`, for words read at least `bound`
//! after both the heal and the incarnation's restart; and before the heal too when the
//! disk answers at once (no I/O latency in the run) until a persister loop is dropped
//! or the WAL is poisoned in that incarnation (a persister starved under load and
//! caught up once the producers stop would pass every judgement after the heal).
//! Not judged: a partition from the moment it is poisoned, by the engine's alarm or
//! the world's report, whichever came first (a poison stops the persister until a
//! restart; before it, the persister owed its interval as anywhere); one whose `hwm` file took a fault in that incarnation (a word the disk
//! failed to write stays wrong until the HWM next moves; the next open rewrites it),
//! or an out-of-contract one in any incarnation up to it (a misdirected write may have
//! left the file a length no write of the word repairs); a topic whose interval the
//! history does not record (`RunStarted`, histories from before it was).

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{
    Alarm, EventKind, FaultKind, FileKind, Incarnation, Offset, RequestKind, TopicPartition,
};

/// Slack past the interval: a sampling period (100 ms), the persist's write and fsync
/// behind a flush holding the file lock, and a scheduling turn.
pub const SLACK_MS: u64 = 250;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HwmPersistedReport {
    /// Samples judged (each against an earlier one).
    pub checked: usize,
    /// (partition, incarnation) judged only until the partition was poisoned in it.
    pub poisoned: Vec<(TopicPartition, Incarnation)>,
    /// (partition, incarnation) not judged because its `hwm` file took a fault in it,
    /// or an out-of-contract one before it.
    pub word_faulted: Vec<(TopicPartition, Incarnation)>,
    pub violations: Vec<Violation>,
}

struct Shown {
    index: usize,
    at_ms: u64,
    hwm: Offset,
}

struct Word {
    index: usize,
    at_ms: u64,
    word: Offset,
}

type Key = (TopicPartition, Incarnation);

pub fn check(facts: &Facts<'_>) -> HwmPersistedReport {
    let mut report = HwmPersistedReport::default();
    let Some((_, heal_ms)) = facts.heal else {
        return report;
    };
    let mut shown: BTreeMap<Key, Vec<Shown>> = BTreeMap::new();
    let mut words: BTreeMap<Key, Vec<Word>> = BTreeMap::new();
    let mut poisoned: BTreeMap<Key, usize> = BTreeMap::new();
    let mut hwm_faults: BTreeMap<Key, usize> = BTreeMap::new();
    let mut broken_from: BTreeMap<TopicPartition, Incarnation> = BTreeMap::new();
    let mut intervals: BTreeMap<&str, u64> = BTreeMap::new();
    let mut disk_slow = true;
    // Per incarnation, the first moment its early judgement ends: a dropped persister
    // loop (restarted after a delay, for every partition alike) or a poisoned WAL.
    let mut early_until: BTreeMap<Incarnation, u64> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let key = |tp: &TopicPartition| (tp.clone(), event.incarnation);
        match &event.kind {
            EventKind::RunStarted {
                topics,
                io_latency_max_ms,
                ..
            } => {
                disk_slow = *io_latency_max_ms > 0;
                for topic in topics {
                    if let Some(ms) = topic.hwm_persist_ms {
                        intervals.insert(&topic.name, ms);
                    }
                }
            }
            EventKind::HwmObserved { tp, hwm, .. } => {
                shown.entry(key(tp)).or_default().push(Shown {
                    index,
                    at_ms: event.at_ms,
                    hwm: *hwm,
                })
            }
            EventKind::HwmWordObserved { tp, word } => {
                words.entry(key(tp)).or_default().push(Word {
                    index,
                    at_ms: event.at_ms,
                    // A missing or short file is a word of 0 (as the engine reads it).
                    word: word.unwrap_or(0),
                })
            }
            // The engine's alarm comes as the poison strikes, the world's report up to
            // a sampling period later: whichever came first.
            EventKind::PartitionPoisoned { .. }
            | EventKind::EngineAlarm {
                alarm: Alarm::Poisoned { .. },
                ..
            } => {
                if let Some((tp, incarnation)) = event.poisoned() {
                    poisoned.entry((tp.clone(), incarnation)).or_insert(index);
                }
            }
            EventKind::Fault {
                kind:
                    FaultKind::Cancel {
                        request: RequestKind::Loop,
                    },
                path,
                ..
            } if path.as_deref() == Some("hwm_persister") => {
                early_until.entry(event.incarnation).or_insert(event.at_ms);
            }
            EventKind::EngineAlarm {
                alarm: Alarm::WalPoisoned,
                ..
            } => {
                early_until.entry(event.incarnation).or_insert(event.at_ms);
            }
            EventKind::Fault {
                kind, tp: Some(tp), ..
            } if kind.file() == Some(FileKind::Hwm) => {
                hwm_faults.entry(key(tp)).or_insert(index);
                if kind.is_out_of_contract() {
                    broken_from.entry(tp.clone()).or_insert(event.incarnation);
                }
            }
            _ => {}
        }
    }
    for (key, words) in &words {
        let (tp, incarnation) = key;
        let Some(&interval) = intervals.get(tp.topic.as_str()) else {
            continue;
        };
        // A poison stops the persister: judged only the words read before it, each
        // paired with a deadline that also passed before it.
        let poisoned_at = poisoned
            .get(key)
            .map_or(u64::MAX, |&index| facts.at_ms(index));
        if poisoned.contains_key(key) {
            report.poisoned.push(key.clone());
        }
        let broken = broken_from.get(tp).is_some_and(|from| from <= incarnation);
        if hwm_faults.contains_key(key) || broken {
            report.word_faulted.push(key.clone());
            continue;
        }
        let shown = shown.get(key).map_or(&[][..], Vec::as_slice);
        let bound = interval + SLACK_MS;
        let started = facts
            .restarts
            .get(incarnation)
            .map_or(0, |&restart| facts.at_ms(restart));
        let from = heal_ms.max(started) + bound;
        // Before the heal too, where nothing may hold the persister back: a disk that
        // answers at once, no persister loop dropped and no WAL poisoned so far in the
        // incarnation (and, as after the heal, no poison and no fault on the word).
        let early_end = early_until.get(incarnation).copied().unwrap_or(u64::MAX);
        let judged = |w: &&Word| {
            w.at_ms < poisoned_at
                && (w.at_ms >= from
                    || (!disk_slow && w.at_ms >= started + bound && w.at_ms < early_end))
        };
        for word in words.iter().filter(judged) {
            let Some(earlier) = shown.iter().rev().find(|e| e.at_ms + bound <= word.at_ms) else {
                continue;
            };
            report.checked += 1;
            if word.word < earlier.hwm {
                report.violations.push(Violation {
                    message: format!(
                        "{tp}: the HWM was {} at t={}ms and the `hwm` word on disk still {} \
                         at t={}ms, {}ms later (hwm_persist_interval {interval}ms, bound \
                         {bound}ms; {})",
                        earlier.hwm,
                        earlier.at_ms,
                        word.word,
                        word.at_ms,
                        word.at_ms - earlier.at_ms,
                        if word.at_ms >= from {
                            format!("faults healed at t={heal_ms}ms")
                        } else {
                            "before the heal, on a disk that answers at once".to_string()
                        }
                    ),
                    records: vec![RecordRef::new(tp, Some(word.word), None)],
                    events: vec![earlier.index, word.index],
                });
                // One per partition and incarnation: the rest repeat it.
                break;
            }
        }
    }
    report
}
