//! [`StableReport`]: the part of a run's outcome that only the seed and the code
//! determine, for snapshots. Wall-clock values never enter it; simulated times,
//! offsets, counts and the trace hash do (they are derived from the seed).

use super::VerdictKind;
use crate::history::EventKind;
use crate::world::RunOutcome;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a snapshot holds about one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StableReport {
    pub verdict: VerdictKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checker: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub records_produced: u64,
    pub accounting: Option<crate::check::AccountingCounts>,
    /// Only the paths reached (count > 0), by name.
    pub paths: BTreeMap<String, u64>,
    pub faults: BTreeMap<String, u64>,
    /// Per partition: the last sampled in-memory and persisted HWM and log start.
    pub partitions: BTreeMap<String, PartitionEnd>,
    pub events: usize,
    pub sim_ms: u64,
    pub trace_hash: String,
}

/// Where a partition ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PartitionEnd {
    pub hwm: u64,
    pub persisted_hwm: Option<u64>,
    pub log_start: u64,
}

impl StableReport {
    pub fn of(outcome: &RunOutcome) -> Self {
        let mut partitions: BTreeMap<String, PartitionEnd> = BTreeMap::new();
        for event in outcome.history.events() {
            match &event.kind {
                EventKind::HwmObserved {
                    tp,
                    hwm,
                    persisted_hwm,
                    ..
                } => {
                    let end = partitions.entry(tp.to_string()).or_default();
                    end.hwm = *hwm;
                    end.persisted_hwm = *persisted_hwm;
                }
                EventKind::LogStartObserved { tp, log_start } => {
                    partitions.entry(tp.to_string()).or_default().log_start = *log_start;
                }
                _ => {}
            }
        }
        let failure = outcome.verdict.failure();
        let message = match &outcome.verdict {
            crate::check::Verdict::SimulatorCrash { message } => Some(message.clone()),
            _ => failure.map(|f| f.message.clone()),
        };
        StableReport {
            verdict: VerdictKind::of(&outcome.verdict),
            checker: failure.map(|f| f.checker.to_string()),
            message,
            records_produced: outcome.records_produced,
            accounting: outcome.report.as_ref().map(|r| r.accounting.counts()),
            paths: outcome
                .paths
                .entries()
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (k.to_owned(), n))
                .collect(),
            faults: outcome.faults.clone(),
            partitions,
            events: outcome.history.len(),
            sim_ms: outcome.sim_ms,
            trace_hash: format!("{:016x}", outcome.trace_hash),
        }
    }
}
