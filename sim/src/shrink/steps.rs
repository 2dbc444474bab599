//! The shrink's steps: the runs within the limits, the swarm made explicit or cut by
//! fault number, delta debugging over a schedule, and the greedy pass.

use super::{Limits, Sizes, candidates, schedule};
use crate::history::EventKind;
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
    ddmin_run(runner, &best.0, &best.1.swarm_faults, &|spec, numbers| {
        spec.mix.only = Some(numbers)
    })
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
    let Some(cut) = ddmin_run(runner, &best.0, &schedule, &|spec, entries| {
        spec.schedule = Some(entries)
    }) else {
        return;
    };
    let label = format!(
        "schedule {} -> {} entries (delta debugging)",
        schedule.len(),
        cut.0.schedule.as_ref().map_or(0, Vec::len)
    );
    progress(&format!("{} kept: {label}", runner.tag()));
    steps.push(label);
    *best = cut;
}

/// Delta debugging over the records the run produced (`Profile::only_ids`): the
/// producers still draw every record, so those kept go out with their ids, keys and
/// bodies, at about the times they did. Says whether it cut any.
pub(super) fn cut_records(
    runner: &mut Runner<'_>,
    best: &mut (RunSpec, RunOutcome),
    steps: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> bool {
    let produced: Vec<u64> = best
        .1
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProduceAttempt { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    let Some(cut) = ddmin_run(runner, &best.0, &produced, &|spec, mut ids| {
        ids.sort_unstable();
        spec.profile.only_ids = Some(ids);
    }) else {
        return false;
    };
    let label = format!(
        "records {} -> {} (delta debugging over the ids produced)",
        produced.len(),
        cut.0.profile.only_ids.as_ref().map_or(0, Vec::len)
    );
    progress(&format!("{} kept: {label}", runner.tag()));
    steps.push(label);
    *best = cut;
    true
}

/// Delta debugging over `items` of the run `base`, a subset put in place by `apply`:
/// the run of the smallest subset that still fails the same way, when smaller than
/// `items`.
fn ddmin_run<T: Clone + PartialEq>(
    runner: &mut Runner<'_>,
    base: &RunSpec,
    items: &[T],
    apply: &dyn Fn(&mut RunSpec, Vec<T>),
) -> Option<(RunSpec, RunOutcome)> {
    let mut found: Option<(Vec<T>, RunSpec, RunOutcome)> = None;
    let kept = schedule::ddmin(items, &mut |subset| {
        let mut candidate = base.clone();
        apply(&mut candidate, subset.to_vec());
        let (kept, outcome) = runner.try_run(&candidate)?;
        if kept && found.as_ref().is_none_or(|(f, ..)| f.len() > subset.len()) {
            found = Some((subset.to_vec(), candidate, outcome));
        }
        Some(kept)
    });
    found
        .filter(|(subset, ..)| *subset == kept && kept.len() < items.len())
        .map(|(_, spec, outcome)| (spec, outcome))
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
