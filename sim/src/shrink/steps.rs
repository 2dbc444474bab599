//! The shrink's steps: the runs within the limits, the swarm made explicit or cut by
//! fault number, delta debugging over a schedule, and the greedy pass.

use super::{Limits, Sizes, candidates, schedule};
use crate::world::{RunOutcome, RunSpec, run};
use std::time::Instant;

/// The runs of one shrink, within its limits.
pub(super) struct Runner<'a> {
    pub(super) keep: &'a dyn Fn(&RunOutcome) -> bool,
    pub(super) limits: Limits,
    pub(super) started: Instant,
    pub(super) attempts: usize,
}

impl Runner<'_> {
    /// Runs `spec` and says whether it fails the same way, or `None` when the limits
    /// are spent.
    pub(super) fn try_run(&mut self, spec: &RunSpec) -> Option<(bool, RunOutcome)> {
        if self.spent() {
            return None;
        }
        self.attempts += 1;
        let outcome = run(spec);
        Some(((self.keep)(&outcome), outcome))
    }

    fn spent(&self) -> bool {
        self.attempts >= self.limits.runs
            || self
                .limits
                .time
                .is_some_and(|t| self.started.elapsed() >= t)
    }

    pub(super) fn tag(&self) -> String {
        format!(
            "[{}/{} runs, {:.1}s]",
            self.attempts,
            self.limits.runs,
            self.started.elapsed().as_secs_f64()
        )
    }
}

/// Replaces the swarm of `best` by an explicit schedule of its faults, if one fails the
/// same way; says whether it did.
pub(super) fn make_explicit(
    runner: &mut Runner<'_>,
    best: &mut (RunSpec, RunOutcome),
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> bool {
    for (label, candidate) in schedule::explicit_variants(&best.0, &best.1) {
        let Some((kept, outcome)) = runner.try_run(&candidate) else {
            return false;
        };
        if kept {
            progress(&format!(
                "explicit schedule ({label}) reproduces the failure"
            ));
            notes.push(format!(
                "the swarm's faults became an explicit schedule ({label})"
            ));
            *best = (candidate, outcome);
            return true;
        }
        progress(&format!(
            "explicit schedule ({label}) does not reproduce it"
        ));
    }
    false
}

/// Delta debugging over the swarm's injected faults by number (`FaultMix::only`): the
/// smallest set found that still fails the same way, when smaller than all of them.
pub(super) fn cut_swarm(
    runner: &mut Runner<'_>,
    best: &(RunSpec, RunOutcome),
) -> Option<(RunSpec, RunOutcome)> {
    let numbers = &best.1.swarm_faults;
    let mut found: Option<(RunSpec, RunOutcome)> = None;
    let kept = schedule::ddmin(numbers, &mut |subset| {
        let mut candidate = best.0.clone();
        candidate.mix.only = Some(subset.to_vec());
        let (kept, outcome) = runner.try_run(&candidate)?;
        if kept
            && found
                .as_ref()
                .is_none_or(|(s, _)| s.mix.only.as_ref().is_some_and(|o| o.len() > subset.len()))
        {
            found = Some((candidate, outcome));
        }
        Some(kept)
    });
    found.filter(|(s, _)| kept.len() < numbers.len() && s.mix.only.as_deref() == Some(&kept[..]))
}

fn schedule_len(spec: &RunSpec) -> usize {
    spec.schedule.as_ref().map_or(0, Vec::len)
}

/// Delta debugging over an explicit schedule's entries, keeping the smallest that
/// still fails the same way.
pub(super) fn cut_schedule(
    runner: &mut Runner<'_>,
    best: &mut (RunSpec, RunOutcome),
    steps: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) {
    let Some(schedule) = best.0.schedule.clone() else {
        return;
    };
    let mut found: Option<(RunSpec, RunOutcome)> = None;
    let kept = schedule::ddmin(&schedule, &mut |entries| {
        let mut candidate = best.0.clone();
        candidate.schedule = Some(entries.to_vec());
        let (kept, outcome) = runner.try_run(&candidate)?;
        if kept
            && found
                .as_ref()
                .is_none_or(|(s, _)| schedule_len(s) > entries.len())
        {
            found = Some((candidate, outcome));
        }
        Some(kept)
    });
    if let Some((spec, outcome)) = found
        && schedule_len(&spec) == kept.len()
        && kept.len() < schedule.len()
    {
        let label = format!(
            "schedule {} -> {} entries (delta debugging)",
            schedule.len(),
            kept.len()
        );
        progress(&format!("{} kept: {label}", runner.tag()));
        steps.push(label);
        *best = (spec, outcome);
    }
}

/// The greedy pass: the first one-step-smaller candidate that still fails the same way
/// is kept, and the pass starts over from it, until none is. Whether the limits
/// stopped it.
pub(super) fn greedy(
    runner: &mut Runner<'_>,
    best: &mut (RunSpec, RunOutcome),
    steps: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> bool {
    'passes: loop {
        for (label, candidate) in candidates::candidates(&best.0, &best.1) {
            let Some((kept, outcome)) = runner.try_run(&candidate) else {
                return true;
            };
            if kept {
                progress(&format!(
                    "{} kept: {label} ({})",
                    runner.tag(),
                    Sizes::of(&candidate, &outcome)
                ));
                steps.push(label);
                *best = (candidate, outcome);
                // The other candidates were cut from the old best: start over.
                continue 'passes;
            }
        }
        return false;
    }
}
