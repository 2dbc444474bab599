//! The outcome of one run, with a process exit code per kind so that CI and the
//! shrinker can tell an engine bug from a simulator bug without parsing text.
//!
//! | verdict           | exit code | meaning                                   |
//! |-------------------|-----------|-------------------------------------------|
//! | `Pass`            | 0         | every checker passed                      |
//! | `SafetyFailure`   | 10        | a safety checker found a violation        |
//! | `LivenessFailure` | 11        | only the liveness checker found one       |
//! | `SimulatorCrash`  | 12        | the harness itself panicked (not a verdict on the engine) |

use std::any::Any;
use std::fmt;

use serde::Serialize;

use super::{CheckConfig, CheckReport, CheckerName, RecordRef};
use crate::history::{Event, History};

pub const EXIT_PASS: i32 = 0;
pub const EXIT_SAFETY_FAILURE: i32 = 10;
pub const EXIT_LIVENESS_FAILURE: i32 = 11;
pub const EXIT_SIMULATOR_CRASH: i32 = 12;
// 1 and 2 are what a plain panic / clap usage error give; keep ours apart.
const _: () = assert!(EXIT_SAFETY_FAILURE > 2 && EXIT_LIVENESS_FAILURE > EXIT_SAFETY_FAILURE);
const _: () = assert!(EXIT_SIMULATOR_CRASH > EXIT_LIVENESS_FAILURE);

/// A history event shown next to a failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContextEvent {
    pub index: usize,
    /// Whether the violation is about this event (the others are surroundings).
    pub focus: bool,
    pub event: Event,
}

impl fmt::Display for ContextEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.focus { '>' } else { ' ' };
        write!(f, "{mark} #{} {}", self.index, self.event)
    }
}

/// The first violation found, with the events around it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub checker: CheckerName,
    pub message: String,
    pub records: Vec<RecordRef>,
    pub context: Vec<ContextEvent>,
    /// Violations found besides this one, over all checkers.
    pub other_violations: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    Pass,
    SafetyFailure(Failure),
    LivenessFailure(Failure),
    SimulatorCrash { message: String },
}

/// At most this many focus events get surroundings, so a failure stays readable.
const FOCUS_EVENTS_MAX: usize = 4;

impl Verdict {
    pub(super) fn from_report(
        report: &CheckReport,
        history: &History,
        config: &CheckConfig,
    ) -> Self {
        let all = report.violations();
        let chosen = all
            .iter()
            .find(|(c, _)| !c.is_liveness())
            .or_else(|| all.first());
        let Some((checker, violation)) = chosen else {
            return Verdict::Pass;
        };
        let events = history.events();
        let mut indices = std::collections::BTreeSet::new();
        for focus in violation.events.iter().take(FOCUS_EVENTS_MAX) {
            let from = focus.saturating_sub(config.context_events);
            let to = (focus + config.context_events).min(events.len().saturating_sub(1));
            indices.extend(from..=to);
        }
        let context = indices
            .into_iter()
            .filter_map(|index| {
                events.get(index).map(|event| ContextEvent {
                    index,
                    focus: violation.events.contains(&index),
                    event: event.clone(),
                })
            })
            .collect();
        let failure = Failure {
            checker: *checker,
            message: violation.message.clone(),
            records: violation.records.clone(),
            context,
            other_violations: all.len() - 1,
        };
        if checker.is_liveness() {
            Verdict::LivenessFailure(failure)
        } else {
            Verdict::SafetyFailure(failure)
        }
    }

    /// The verdict for a harness that panicked; `payload` is what `catch_unwind` gave.
    pub fn from_panic(payload: &(dyn Any + Send)) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-string payload".to_owned()
        };
        Verdict::SimulatorCrash { message }
    }

    /// A panic in the checkers themselves: a simulator crash that says where it was.
    pub fn checker_panic(payload: &(dyn Any + Send)) -> Self {
        match Verdict::from_panic(payload) {
            Verdict::SimulatorCrash { message } => Verdict::SimulatorCrash {
                message: format!("the checkers panicked: {message}"),
            },
            other => other,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Pass => EXIT_PASS,
            Verdict::SafetyFailure(_) => EXIT_SAFETY_FAILURE,
            Verdict::LivenessFailure(_) => EXIT_LIVENESS_FAILURE,
            Verdict::SimulatorCrash { .. } => EXIT_SIMULATOR_CRASH,
        }
    }

    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Verdict::SafetyFailure(f) | Verdict::LivenessFailure(f) => Some(f),
            _ => None,
        }
    }

    pub fn is_pass(&self) -> bool {
        *self == Verdict::Pass
    }
}

/// One line (newlines in messages are flattened).
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = match self {
            Verdict::Pass => "PASS".to_owned(),
            Verdict::SafetyFailure(failure) | Verdict::LivenessFailure(failure) => {
                let kind = if matches!(self, Verdict::SafetyFailure(_)) {
                    "SAFETY FAILURE"
                } else {
                    "LIVENESS FAILURE"
                };
                let more = match failure.other_violations {
                    0 => String::new(),
                    n => format!(" (+{n} more violations)"),
                };
                format!("{kind} [{}] {}{more}", failure.checker, failure.message)
            }
            Verdict::SimulatorCrash { message } => format!("SIMULATOR CRASH: {message}"),
        };
        f.write_str(&line.replace(['\n', '\r'], " "))
    }
}

impl Failure {
    /// The context events, one per line, for a detailed report.
    pub fn context_lines(&self) -> String {
        self.context.iter().map(|c| format!("{c}\n")).collect()
    }
}
