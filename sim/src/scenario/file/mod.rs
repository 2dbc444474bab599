//! The TOML layout of a scenario file, one struct per table, with the checks that give
//! a bad file a precise error (the toml crate adds the line and column).
//! The file itself, its expectation and profile are here; topics, clients, faults and
//! the schedule each have a file.
//!
//! Every knob has a default so a scenario names only what its story needs: topic knobs
//! default to the engine's (`TopicConfig::default()`), the disk to a fault-free one
//! (`FaultOptions::none()`), the profile to `quick`'s durations.
//!
//! Invariants (checked while deserialising, so they carry a position):
//! - a schedule entry has exactly one trigger (`at_ms`, `at_ns`, `after_acks`,
//!   `after_alarm` with an optional `alarm_count`, or `while_down`), and exactly
//!   the fields its action needs (`file` for a bit flip, `back_ms` for a clock step);
//! - ranges written as `[lo, hi]` have `lo <= hi`;
//! - topic names are valid and unique; producers and consumers name an existing topic
//!   and partition (checked in [`super::Scenario::parse`], which names the entry).

use crate::check::CheckerName;
use crate::history::FileKind;
use crate::world::{Action, AlarmName, FlipAt, ScheduledFault, Trigger};
use cafelog_engine::format::Codec;
use cafelog_engine::log::{FsyncPolicy, LogConfig};
use cafelog_engine::store::TopicConfig;
use serde::{Deserialize, Serialize};

mod clients;
mod faults;
mod schedule;
mod topic;

pub use clients::*;
pub use faults::*;
pub use schedule::*;
pub use topic::*;

/// A whole scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Drives madsim's scheduling, the workload's dice and the disk's dice.
    pub seed: u64,
    pub expect: Expect,
    #[serde(default)]
    pub profile: ProfileSpec,
    pub topics: Vec<TopicSpec>,
    #[serde(default)]
    pub producers: Vec<ProducerSpec>,
    #[serde(default)]
    pub consumers: Vec<ConsumerSpec>,
    #[serde(default)]
    pub disk: DiskSpec,
    /// Store-wide knobs; absent when each is the engine's default.
    #[serde(default, skip_serializing_if = "StoreSpec::is_default")]
    pub store: StoreSpec,
    /// Random crashes, flips and clock steps drawn from the seed, instead of a schedule
    /// (what `shrink` writes when the explicit schedule does not reproduce a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmSpec>,
    /// Requests dropped part-way, with an explicit schedule (a swarm has its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<CancelSpec>,
    #[serde(default)]
    pub schedule: Vec<ScheduleEntry>,
}

/// The verdict kinds a scenario can expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Pass,
    SafetyFailure,
    LivenessFailure,
    SimulatorCrash,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Pass => "pass",
            VerdictKind::SafetyFailure => "safety_failure",
            VerdictKind::LivenessFailure => "liveness_failure",
            VerdictKind::SimulatorCrash => "simulator_crash",
        }
    }

    pub fn of(verdict: &crate::check::Verdict) -> Self {
        use crate::check::Verdict;
        match verdict {
            Verdict::Pass => VerdictKind::Pass,
            Verdict::SafetyFailure(_) => VerdictKind::SafetyFailure,
            Verdict::LivenessFailure(_) => VerdictKind::LivenessFailure,
            Verdict::SimulatorCrash { .. } => VerdictKind::SimulatorCrash,
        }
    }
}

/// What the run must end with, and the paths it must reach on the way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawExpect")]
pub struct Expect {
    pub verdict: VerdictKind,
    /// The checker a failure names (required for safety and liveness failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checker: Option<CheckerName>,
    /// Path names (as `Paths::entries` spells them) that must be reached at least once:
    /// the scenario is named after them, so a run that stops reaching them fails.
    #[serde(default)]
    pub reaches: Vec<String>,
    /// Fault kinds (as the run's fault counts name them) that must be injected.
    #[serde(default)]
    pub injects: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    verdict: VerdictKind,
    #[serde(default)]
    checker: Option<CheckerName>,
    #[serde(default)]
    reaches: Vec<String>,
    #[serde(default)]
    injects: Vec<String>,
}

impl TryFrom<RawExpect> for Expect {
    type Error = String;
    fn try_from(raw: RawExpect) -> Result<Self, String> {
        match (raw.verdict, raw.checker) {
            (VerdictKind::SafetyFailure, None) => {
                return Err("a safety_failure must name its checker (checker = \"...\")".into());
            }
            (VerdictKind::SafetyFailure, Some(c)) if c.is_liveness() => {
                return Err(format!("{c} is the liveness checker: say liveness_failure"));
            }
            (VerdictKind::LivenessFailure, Some(c)) if !c.is_liveness() => {
                return Err(format!("{c} is a safety checker: say safety_failure"));
            }
            (VerdictKind::Pass | VerdictKind::SimulatorCrash, Some(c)) => {
                return Err(format!(
                    "checker = \"{c}\" only goes with safety_failure or liveness_failure"
                ));
            }
            _ => {}
        }
        let known: Vec<&str> = crate::world::recorder::Paths::default()
            .entries()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        if let Some(bad) = raw.reaches.iter().find(|r| !known.contains(&r.as_str())) {
            return Err(format!(
                "unknown path {bad:?} in reaches; known: {}",
                known.join(", ")
            ));
        }
        if let Some(bad) = raw
            .injects
            .iter()
            .find(|r| !FAULT_NAMES.contains(&r.as_str()))
        {
            return Err(format!(
                "unknown fault {bad:?} in injects; known: {}",
                FAULT_NAMES.join(", ")
            ));
        }
        let checker = match raw.verdict {
            VerdictKind::LivenessFailure => raw.checker.or(Some(CheckerName::DeliveredAfterHeal)),
            _ => raw.checker,
        };
        Ok(Expect {
            verdict: raw.verdict,
            checker,
            reaches: raw.reaches,
            injects: raw.injects,
        })
    }
}

/// Durations of the run (simulated ms) and its record cap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileSpec {
    pub produce_ms: u64,
    pub heal_ms: u64,
    pub delivery_bound_ms: u64,
    pub records_max: u64,
    /// The only produce ids sent, when set (ascending); the producers draw the others
    /// and go on without sending them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_ids: Option<Vec<u64>>,
}

impl Default for ProfileSpec {
    fn default() -> Self {
        let quick = crate::profile::Profile::quick();
        ProfileSpec {
            produce_ms: quick.produce_ms,
            heal_ms: quick.heal_ms,
            delivery_bound_ms: quick.delivery_bound_ms,
            records_max: quick.records_max,
            only_ids: None,
        }
    }
}

/// `[lo, hi]` with `lo <= hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "[u64; 2]", into = "[u64; 2]")]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
}

impl TryFrom<[u64; 2]> for Range {
    type Error = String;
    fn try_from([lo, hi]: [u64; 2]) -> Result<Self, String> {
        if lo > hi {
            return Err(format!("range [{lo}, {hi}] is inverted"));
        }
        Ok(Range { lo, hi })
    }
}

impl From<Range> for [u64; 2] {
    fn from(r: Range) -> Self {
        [r.lo, r.hi]
    }
}
