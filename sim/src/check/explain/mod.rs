//! `replay --explain`: for a record a violation names, the chain of events the checkers
//! read about it (produced, acknowledged at an offset, where that offset stood at each
//! crash, what each open found and cut there, the damage that named the record or its
//! WAL entry, its deliveries) and, for a lost record, every excuse row the loss checker
//! tried, with what it found or lacked ([`rows`]). It asks the same [`Facts`] and
//! [`Excuses`](crate::check::excuse::Excuses) the checkers asked, so it cannot tell a
//! different story from the verdict's.

mod rows;
mod story;

use super::facts::Facts;
use super::{CheckReport, CheckerName};
use crate::history::{History, Offset, ProduceId, TopicPartition};
use std::fmt::Write as _;

pub use rows::{Answer, Row};

/// A record the violations name, on a partition, with the checkers that name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub checkers: Vec<CheckerName>,
    pub tp: TopicPartition,
    pub id: Option<ProduceId>,
    pub offset: Option<Offset>,
}

/// The records `report`'s violations name on a partition, in checker order, each once.
pub fn subjects(report: &CheckReport) -> Vec<Subject> {
    let mut out: Vec<Subject> = Vec::new();
    for (checker, v) in report.violations() {
        for r in &v.records {
            let Some(tp) = &r.tp else { continue };
            let same = |s: &&mut Subject| s.tp == *tp && s.id == r.id && s.offset == r.offset;
            match out.iter_mut().find(|s| same(s)) {
                Some(s) if !s.checkers.contains(&checker) => s.checkers.push(checker),
                Some(_) => {}
                None => out.push(Subject {
                    checkers: vec![checker],
                    tp: tp.clone(),
                    id: r.id,
                    offset: r.offset,
                }),
            }
        }
    }
    out
}

/// One record's explanation: its story and, for a lost one, the excuse rows.
pub struct Explanation {
    pub subject: Subject,
    /// (history index, the event as the trace prints it, what it meant for the record).
    pub story: Vec<(usize, String, String)>,
    pub rows: Vec<Row>,
}

/// The explanation of `s` in `history`.
pub fn explain(history: &History, s: &Subject) -> Explanation {
    let facts = Facts::new(history);
    let from =
        s.id.and_then(|id| facts.attempts.get(&id).copied())
            .unwrap_or(0);
    let mut tracker = story::Tracker::new(&facts, s);
    let story = history
        .events()
        .iter()
        .enumerate()
        .skip(from)
        .filter_map(|(i, e)| tracker.note(i, e).map(|n| (i, e.to_string(), n)))
        .collect();
    let lost = s.checkers.contains(&CheckerName::NoLostAck);
    let rows = match (lost, s.id.and_then(|id| Some((id, *facts.acks.get(&id)?)))) {
        (true, Some((id, ack))) => rows::rows(&facts, s, id, ack),
        _ => Vec::new(),
    };
    Explanation {
        subject: s.clone(),
        story,
        rows,
    }
}

impl Explanation {
    /// The explanation as text, one event or row per line.
    pub fn render(&self) -> String {
        let s = &self.subject;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "explain [{}] {} {}{}:",
            if s.checkers.is_empty() {
                "no violation".to_owned()
            } else {
                s.checkers
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            s.tp,
            s.id.map_or("a record".into(), |id| format!("id {id}")),
            s.offset
                .map_or(String::new(), |o| format!(" at offset {o}"))
        );
        for (index, event, note) in &self.story {
            let _ = writeln!(out, "  #{index} {event}");
            let _ = writeln!(out, "      -> {note}");
        }
        if !self.rows.is_empty() {
            let _ = writeln!(out, "  excuses the loss checker tried:");
        }
        for row in &self.rows {
            let answer = match &row.answer {
                Answer::Applies(e) => format!("applies: {e}"),
                Answer::Lacks(what) => format!("does not apply: {what}"),
                Answer::Rejected(found) => format!(
                    "does not apply: it found {}, and they do not meet its rule: {}",
                    found
                        .iter()
                        .map(|i| format!("#{i}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    row.kind.rule()
                ),
            };
            let _ = writeln!(out, "    {}: {answer}", row.name);
        }
        out
    }
}
