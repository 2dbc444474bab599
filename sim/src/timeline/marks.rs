//! What the checkers concluded, drawn over the run: every record a violation names (a
//! red cross, labelled with the checkers and the id, one mark per record and time) and
//! every lost record an excuse covered (a ring, labelled with the excuse), at the time
//! it was acknowledged; and the events a violation names on the partition (a red
//! tick on its top edge), each with the event as its hover title.
//!
//! A record a violation names without an offset or a partition has no place on a panel
//! and is left out; the verdict line at the top still names it.

use crate::check::{CheckReport, CheckerName};
use crate::history::{EventKind, History, ProduceId, TopicPartition};
use std::collections::BTreeMap;

/// At most this many marks of each kind per panel (the rest are thinned evenly).
pub const MARKS_MAX: usize = 40;

pub struct Mark {
    pub t: u64,
    pub offset: u64,
    pub label: String,
    /// The whole story, for the hover title: the violation messages or the excuse.
    pub title: String,
}

#[derive(Default)]
pub struct Marks {
    pub violations: Vec<Mark>,
    pub excused: Vec<Mark>,
    /// (t, the event as the trace prints it) of each event a violation names here.
    pub events: Vec<(u64, String)>,
}

/// The marks of `report`, per partition.
pub fn of(report: Option<&CheckReport>, history: &History) -> BTreeMap<TopicPartition, Marks> {
    let mut out: BTreeMap<TopicPartition, Marks> = BTreeMap::new();
    let Some(report) = report else {
        return out;
    };
    let acked: BTreeMap<ProduceId, u64> = history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProduceAck { id, .. } => Some((*id, e.at_ms)),
            _ => None,
        })
        .collect();
    for checker in CheckerName::ALL {
        for v in report.violations_of(checker) {
            // Without an ack (a duplicate, a corrupt byte), the first event it names.
            let fallback = v
                .events
                .first()
                .and_then(|i| history.events().get(*i))
                .map(|e| e.at_ms);
            for r in &v.records {
                let (Some(tp), Some(offset)) = (&r.tp, r.offset) else {
                    continue;
                };
                let Some(t) = r.id.and_then(|id| acked.get(&id).copied()).or(fallback) else {
                    continue;
                };
                let id = r.id.map_or_else(String::new, |id| format!(" id {id}"));
                let marks = out.entry(tp.clone()).or_default();
                for &i in &v.events {
                    if let Some(e) = history.events().get(i) {
                        let named = (e.at_ms, format!("#{i} {e}"));
                        if !marks.events.contains(&named) {
                            marks.events.push(named);
                        }
                    }
                }
                // One mark per record and time: checkers naming the same record share it.
                match marks
                    .violations
                    .iter_mut()
                    .find(|m| m.t == t && m.offset == offset && m.label.ends_with(&id))
                {
                    Some(m) => {
                        let checkers = &m.label[..m.label.len() - id.len()];
                        m.label = format!("{checkers}, {checker}{id}");
                        m.title = format!("{}\n{checker}: {}", m.title, v.message);
                    }
                    None => marks.violations.push(Mark {
                        t,
                        offset,
                        label: format!("{checker}{id}"),
                        title: format!("{checker}: {}", v.message),
                    }),
                }
            }
        }
    }
    for e in &report.no_lost_ack.excused {
        let Some(offset) = e.offset else { continue };
        let t = history.events().get(e.ack_index).map_or(0, |ev| ev.at_ms);
        out.entry(e.tp.clone()).or_default().excused.push(Mark {
            t,
            offset,
            label: e.excuse.kind.to_string(),
            title: format!("excused at offset {offset}: {}", e.excuse),
        });
    }
    out
}
