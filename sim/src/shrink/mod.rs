//! Shrinking: from a failing run, find a much smaller one that still fails the same
//! way, and hand it back as a [`RunSpec`] a scenario file can hold.
//!
//! 1. The swarm's random crashes, bit flips, clock steps and fsync faults are read back
//!    from the history and written as an explicit schedule
//!    ([`schedule::schedule_from_history`]); the first variant that still fails the
//!    same way replaces the swarm. If none does, delta debugging cuts the swarm's
//!    faults by number (`FaultMix::only`), and the explicit form is tried again on the
//!    smaller run.
//! 2. Delta debugging over an explicit schedule's entries ([`schedule::ddmin`]).
//! 3. Greedy: try each one-step-smaller candidate ([`candidates`]: a schedule entry or a
//!    numbered swarm fault, a topic, partition, producer or consumer fewer; fewer
//!    records, a shorter run, or half the records with a consumer dropping every
//!    delivery; a knob back at its default; the disk's last fault of a kind cut; a
//!    fault off; last, timed kills aimed at the acknowledgement they followed) and keep
//!    the first that still fails the same way; start over from it. Stop when no
//!    candidate is kept. A run still in swarm form then tries the explicit form once
//!    more, and if it repeats, steps 2 and 3 run again.
//! 4. Delta debugging over the records produced (`Profile::only_ids`: the producers
//!    draw every record and send only those ids), then the greedy pass again.
//! 5. The run without each fault and each record, one at a time: a note in the file
//!    when every one of them is needed, else the cut, and steps 3 and 4 again.
//!
//! "The same way" ([`Target`]): the same verdict and checker, and the first violation
//! names a record on the same partition, so the shrink cannot slide to another bug.
//! Bound: at most [`Limits::runs`] runs and [`Limits::time`] of wall time, whichever
//! comes first; what was found by then is returned.

mod aim;
mod candidates;
pub mod schedule;
mod steps;

use std::time::{Duration, Instant};

use crate::check::{CheckerName, Verdict};
use crate::history::TopicPartition;
use crate::scenario::VerdictKind;
use crate::world::{RunOutcome, RunSpec, run};
pub use candidates::changed_knobs;
pub use schedule::schedule_from_history;
use steps::Runner;

/// The failure a shrink must preserve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub verdict: VerdictKind,
    pub checker: Option<CheckerName>,
    /// The partition of the first record the failure names, when it names one.
    pub tp: Option<TopicPartition>,
}

impl Target {
    pub fn of(verdict: &Verdict) -> Target {
        let failure = verdict.failure();
        Target {
            verdict: VerdictKind::of(verdict),
            checker: failure.map(|f| f.checker),
            tp: failure.and_then(|f| f.records.iter().find_map(|r| r.tp.clone())),
        }
    }

    pub fn matches(&self, outcome: &RunOutcome) -> bool {
        let v = &outcome.verdict;
        let failure = v.failure();
        VerdictKind::of(v) == self.verdict
            && failure.map(|f| f.checker) == self.checker
            && self.tp.as_ref().is_none_or(|tp| {
                failure.is_some_and(|f| f.records.iter().any(|r| r.tp.as_ref() == Some(tp)))
            })
    }
}

/// How much a shrink may spend.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Runs in all, the first one included.
    pub runs: usize,
    /// Wall time, if bounded.
    pub time: Option<Duration>,
    /// Wall time of one run, if bounded: a candidate still running then (a deadlock, or
    /// a loop that lets no simulated time pass) is dropped as not failing the same way.
    pub run: Option<Duration>,
}

impl Limits {
    /// A bound on runs alone (tests: the same tries on every machine).
    pub fn runs(runs: usize) -> Limits {
        Limits {
            runs,
            time: None,
            run: None,
        }
    }
}

/// How big a run is, dimension by dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sizes {
    pub records_produced: u64,
    /// Explicit schedule entries, or for a swarm run the faults it drew (crashes,
    /// bit flips, clock steps, fsync faults).
    pub schedule_entries: usize,
    pub topics: usize,
    pub partitions: u32,
    pub producers: usize,
    pub consumers: usize,
    /// Topic knobs away from their defaults, over all topics.
    pub knobs_changed: usize,
    pub events: usize,
    pub sim_ms: u64,
}

impl Sizes {
    pub fn of(spec: &RunSpec, outcome: &RunOutcome) -> Sizes {
        let topics = &spec.workload.topics;
        Sizes {
            records_produced: outcome.records_produced,
            schedule_entries: match &spec.schedule {
                Some(s) => s.len(),
                None => schedule_from_history(outcome, true).len(),
            },
            topics: topics.len(),
            partitions: topics.iter().map(|t| t.config.partitions).sum(),
            producers: spec.workload.producers.len(),
            consumers: spec.workload.consumers.len(),
            knobs_changed: topics
                .iter()
                .map(|t| changed_knobs(&t.config).count())
                .sum(),
            events: outcome.history.len(),
            sim_ms: outcome.sim_ms,
        }
    }

    /// Each dimension's name and value, in the order reports print them.
    pub fn dimensions(&self) -> [(&'static str, u64); 9] {
        [
            ("records produced", self.records_produced),
            ("schedule entries", self.schedule_entries as u64),
            ("topics", self.topics as u64),
            ("partitions", u64::from(self.partitions)),
            ("producers", self.producers as u64),
            ("consumers", self.consumers as u64),
            ("knobs changed", self.knobs_changed as u64),
            ("events", self.events as u64),
            ("simulated ms", self.sim_ms),
        ]
    }
}

impl std::fmt::Display for Sizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "records produced={} schedule entries={} topics={} partitions={} events={} \
             sim_ms={}",
            self.records_produced,
            self.schedule_entries,
            self.topics,
            self.partitions,
            self.events,
            self.sim_ms
        )
    }
}

/// What a shrink found.
#[derive(Debug)]
pub struct Shrunk {
    pub spec: RunSpec,
    pub outcome: RunOutcome,
    pub before: Sizes,
    pub after: Sizes,
    /// Runs spent, the first one included.
    pub attempts: usize,
    /// Wall time spent.
    pub elapsed: Duration,
    /// Whether the swarm faults could be replaced by an explicit schedule.
    pub explicit: bool,
    /// Every step kept, in order (what the shrink removed or reset).
    pub steps: Vec<String>,
    /// What happened, for the report and the scenario's header.
    pub notes: Vec<String>,
}

/// Shrinks `start` while `keep` holds. `progress` receives one line per kept step.
#[allow(
    clippy::disallowed_methods,
    reason = "the shrink's wall-time budget is the host's time, outside every run"
)]
pub fn shrink(
    start: &RunSpec,
    keep: &dyn Fn(&RunOutcome) -> bool,
    limits: Limits,
    progress: &mut dyn FnMut(&str),
) -> Result<Shrunk, String> {
    let mut runner = Runner {
        keep,
        limits,
        started: Instant::now(),
        attempts: 0,
        hung: 0,
    };
    let first = run(start);
    runner.attempts = 1;
    if !keep(&first) {
        return Err(format!(
            "seed {} does not fail as required (verdict: {})",
            start.seed, first.verdict
        ));
    }
    let before = Sizes::of(start, &first);
    progress(&format!("start: {before}"));
    let mut notes = Vec::new();
    let mut steps = Vec::new();
    let mut best = (start.clone(), first);
    let mut explicit = start.schedule.is_some();
    if !explicit {
        explicit = steps::make_explicit(&mut runner, &mut best, &mut notes, progress);
    }
    if !explicit && let Some(cut) = steps::cut_swarm(&mut runner, &best) {
        let label = format!(
            "the swarm's faults {} -> {} (delta debugging over their numbers)",
            best.1.swarm_faults.len(),
            cut.1.swarm_faults.len()
        );
        progress(&format!("{} kept: {label}", runner.tag()));
        steps.push(label);
        best = cut;
        // Fewer faults, fewer same-instant races: the explicit form may repeat now.
        explicit = steps::make_explicit(&mut runner, &mut best, &mut notes, progress);
    }
    if explicit {
        steps::cut_schedule(&mut runner, &mut best, &mut steps, progress);
    }
    let mut stopped = steps::greedy(&mut runner, &mut best, &mut steps, progress);
    // A smaller run races less at one instant: its faults may repeat explicitly now.
    if !explicit && !stopped && steps::make_explicit(&mut runner, &mut best, &mut notes, progress) {
        explicit = true;
        steps::cut_schedule(&mut runner, &mut best, &mut steps, progress);
        stopped = steps::greedy(&mut runner, &mut best, &mut steps, progress);
    }
    // Last, the records themselves: cut after everything else, since each record a
    // cut above removes is one fewer to try here.
    // Each greedy cut moves the timing, so the records may cut again after it.
    while !stopped && steps::cut_records(&mut runner, &mut best, &mut steps, progress) {
        stopped = steps::greedy(&mut runner, &mut best, &mut steps, progress);
    }
    // A delta debugging cut the limits ended early is no cut, and leaves no sign.
    stopped |= runner.spent();
    while !stopped {
        match steps::each_needed(&mut runner, &best) {
            steps::Needed::Each { faults, records } => {
                notes.push(format!(
                    "the failure needs every fault and record it keeps ({faults} faults, \
                     {records} records): without any one of them the run does not fail this \
                     way (each tried)"
                ));
                break;
            }
            steps::Needed::Cut(label, cut) => {
                progress(&format!("{} kept: {label}", runner.tag()));
                steps.push(label);
                best = *cut;
                stopped = steps::greedy(&mut runner, &mut best, &mut steps, progress);
                while !stopped && steps::cut_records(&mut runner, &mut best, &mut steps, progress) {
                    stopped = steps::greedy(&mut runner, &mut best, &mut steps, progress);
                }
                stopped |= runner.spent();
            }
            steps::Needed::Stopped => stopped = true,
        }
    }
    if stopped {
        notes.push(format!(
            "stopped at the limit ({} runs, {:.0} s)",
            runner.attempts,
            runner.started.elapsed().as_secs_f64()
        ));
    }
    if runner.hung > 0 {
        notes.push(format!(
            "{} candidate runs hung past the limit of one run and were dropped: a deadlock \
             or a loop the failure's cut exposed",
            runner.hung
        ));
    }
    if !explicit {
        notes.push(
            "no explicit schedule reproduced the failure: the swarm draws the faults, and \
             `only` lists the ones it injects"
                .into(),
        );
    }
    let after = Sizes::of(&best.0, &best.1);
    progress(&format!("end after {} runs: {after}", runner.attempts));
    Ok(Shrunk {
        spec: best.0,
        outcome: best.1,
        before,
        after,
        attempts: runner.attempts,
        elapsed: runner.started.elapsed(),
        explicit,
        steps,
        notes,
    })
}
