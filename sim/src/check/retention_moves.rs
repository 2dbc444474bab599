//! `retention_safe`'s rules on the engine's account of its log start, against what
//! its readers did and what the disk holds (rules 1-4 are in `retention_safe.rs`):
//!
//! 5. **Gone.** A receive asked after a move (in the same incarnation, at a later ms)
//!    returns no offset below that move's log start: the move says readers forgot
//!    them. Deliveries the consumer never claimed count too.
//! 6. **In step.** Each move starts where the log did: at the log start of the open or
//!    of the previous move in that incarnation.
//! 7. **Nothing left behind.** A log start the engine reports as durable (its samples,
//!    its open's account) lies at or below every segment file that still exists: the
//!    engine raises it only after its unlinks and the directory fsync, so a file below
//!    it is one a sweep forgot to unlink (and the next open would start there again,
//!    or find a gap once the file's successor goes).

use std::collections::BTreeMap;

use super::reaped::LiveSegments;
use super::retention_safe::RetentionReport;
use super::{RecordRef, Violation};
use crate::history::{Alarm, Event, EventKind, Incarnation, Offset, TopicPartition};

/// A partition's log start in one incarnation: where it stands, and each move (ms,
/// log start).
type Starts = (Incarnation, Offset, Vec<(u64, Offset)>);

/// What the rules remember of each partition, event by event.
#[derive(Default)]
pub struct MoveRules {
    starts: BTreeMap<TopicPartition, Starts>,
    /// Per partition: the segment files that exist (created or listed, not unlinked).
    live: LiveSegments,
}

impl MoveRules {
    pub fn observe(&mut self, report: &mut RetentionReport, index: usize, event: &Event) {
        let inc = event.incarnation;
        self.live.observe(&event.kind);
        match &event.kind {
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogOpened { log_start, .. },
                raised_in,
            } => {
                let inc = raised_in.unwrap_or(inc);
                self.starts
                    .insert(tp.clone(), (inc, *log_start, Vec::new()));
                self.durable_start(report, index, event, tp, *log_start);
            }
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogStartMoved { from, log_start },
                raised_in,
            } => {
                let inc = raised_in.unwrap_or(inc);
                match self.starts.get_mut(tp) {
                    Some((opened_in, start, moves)) if *opened_in == inc => {
                        if from != start {
                            report.violations.push(Violation {
                                message: format!(
                                    "retention moved the log start of {tp} from {from} at \
                                     t={}ms inc {inc}, but it stood at {start}",
                                    event.at_ms
                                ),
                                records: vec![RecordRef::new(tp, Some(*from), None)],
                                events: vec![index],
                            });
                        }
                        *start = *log_start;
                        moves.push((event.at_ms, *log_start));
                    }
                    _ => {
                        let moves = vec![(event.at_ms, *log_start)];
                        self.starts.insert(tp.clone(), (inc, *log_start, moves));
                    }
                }
            }
            EventKind::Delivery {
                tp,
                offset,
                asked_at_ms: Some(asked),
                ..
            } => self.gone(report, index, event, tp, &[*offset], *asked),
            EventKind::DeliveriesUnclaimed {
                tp,
                offsets,
                asked_at_ms: Some(asked),
                ..
            } => self.gone(report, index, event, tp, offsets, *asked),
            EventKind::LogStartObserved { tp, log_start } => {
                self.durable_start(report, index, event, tp, *log_start);
            }
            _ => {}
        }
    }

    /// Rule 5 for `offsets` delivered to a receive asked at `asked`.
    fn gone(
        &self,
        report: &mut RetentionReport,
        index: usize,
        event: &Event,
        tp: &TopicPartition,
        offsets: &[Offset],
        asked: u64,
    ) {
        let Some((inc, _, moves)) = self.starts.get(tp) else {
            return;
        };
        // Moves only raise the log start: the last one before the ask is the highest.
        let before = moves.iter().rev().find(|(at, _)| *at < asked);
        let Some(&(at_ms, log_start)) = before.filter(|_| *inc == event.incarnation) else {
            return;
        };
        for offset in offsets.iter().filter(|o| **o < log_start) {
            report.violations.push(Violation {
                message: format!(
                    "{tp} offset {offset} delivered to a receive asked at t={asked}ms inc {inc}, \
                     after retention moved the log start to {log_start} at t={at_ms}ms"
                ),
                records: vec![RecordRef::new(tp, Some(*offset), None)],
                events: vec![index],
            });
        }
    }

    /// Rule 7 for a durable log start the engine reported.
    fn durable_start(
        &self,
        report: &mut RetentionReport,
        index: usize,
        event: &Event,
        tp: &TopicPartition,
        log_start: Offset,
    ) {
        let Some(&lowest) = self.live.of(tp).and_then(|l| l.first()) else {
            return;
        };
        if lowest < log_start {
            report.violations.push(Violation {
                message: format!(
                    "log start of {tp} reported as {log_start} at t={}ms inc {}, while segment \
                     file {lowest} below it still exists (never unlinked)",
                    event.at_ms, event.incarnation
                ),
                records: vec![RecordRef::new(tp, Some(lowest), None)],
                events: vec![index],
            });
        }
    }
}
