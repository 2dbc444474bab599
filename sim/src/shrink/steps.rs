//! The shrink's steps: the runs within the limits, the swarm made explicit or cut by
//! fault number, delta debugging over a schedule, and the greedy pass.

use super::{Limits, Sizes, candidates, schedule};
use crate::deadline::{Finished, run_within};
use crate::history::EventKind;
use crate::world::{RunOutcome, RunSpec, run};
use std::time::Instant;

/// The runs of one shrink, within its limits.
pub(super) struct Runner<'a> {
    pub(super) keep: &'a dyn Fn(&RunOutcome) -> bool,
    pub(super) limits: Limits,
    pub(super) started: Instant,
    pub(super) attempts: usize,
    /// Candidates dropped because their run hung past `limits.run`.
    pub(super) hung: usize,
}

impl Runner<'_> {
    /// Runs `spec`: `Some(Some(outcome))` when it fails the same way, `Some(None)` when
    /// it does not (or hung past the limit of one run: the candidate is dropped, and
    /// the shrink goes on), `None` when the limits are spent.
    pub(super) fn try_run(&mut self, spec: &RunSpec) -> Option<Option<RunOutcome>> {
        if self.spent() {
            return None;
        }
        self.attempts += 1;
        let outcome = match self.limits.run {
            None => run(spec),
            Some(limit) => {
                let spec = spec.clone();
                match run_within(limit, move || run(&spec)) {
                    Finished::Ran(outcome) => outcome,
                    Finished::Panicked(panic) => std::panic::resume_unwind(panic),
                    Finished::Hung => {
                        self.hung += 1;
                        return Some(None);
                    }
                }
            }
        };
        Some((self.keep)(&outcome).then_some(outcome))
    }

    pub(super) fn spent(&self) -> bool {
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
        let Some(kept) = runner.try_run(&candidate) else {
            return false;
        };
        if let Some(outcome) = kept {
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

/// What trying the run without each of its faults and records, one at a time, found.
pub(super) enum Needed {
    /// None can go: without any one of them the run passes or fails another way.
    Each { faults: usize, records: usize },
    /// One can go: the run without it (labelled), which still fails the same way.
    Cut(String, Box<(RunSpec, RunOutcome)>),
    /// The limits stopped the check before every one was tried.
    Stopped,
}

/// Tries `best` without each of its faults (schedule entries, or the swarm's numbered
/// faults) and each of its records, one at a time. The passes before should leave
/// nothing to cut here; this asks the runs instead of trusting that, so the file's
/// header can say that the failure needs every one of them.
pub(super) fn each_needed(runner: &mut Runner<'_>, best: &(RunSpec, RunOutcome)) -> Needed {
    let (spec, outcome) = best;
    let mut tries: Vec<(String, RunSpec)> = Vec::new();
    if let Some(schedule) = &spec.schedule {
        for i in 0..schedule.len() {
            let mut c = spec.clone();
            c.schedule.as_mut().expect("a schedule").remove(i);
            tries.push((format!("drop schedule entry {i}"), c));
        }
    } else {
        let numbers = spec.mix.only.as_ref().unwrap_or(&outcome.swarm_faults);
        for (i, n) in numbers.iter().enumerate() {
            let mut c = spec.clone();
            let mut only = numbers.clone();
            only.remove(i);
            c.mix.only = Some(only);
            tries.push((format!("drop the swarm's fault {n}"), c));
        }
    }
    let faults = tries.len();
    let ids = produced_ids(outcome);
    for (i, id) in ids.iter().enumerate() {
        let mut c = spec.clone();
        let mut only = ids.clone();
        only.remove(i);
        c.profile.only_ids = Some(only);
        tries.push((format!("drop record id {id}"), c));
    }
    for (label, candidate) in tries {
        match runner.try_run(&candidate) {
            None => return Needed::Stopped,
            Some(Some(outcome)) => return Needed::Cut(label, Box::new((candidate, outcome))),
            Some(None) => {}
        }
    }
    Needed::Each {
        faults,
        records: ids.len(),
    }
}

/// The ids the run's producers sent, in order.
fn produced_ids(outcome: &RunOutcome) -> Vec<u64> {
    outcome
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProduceAttempt { id, .. } => Some(*id),
            _ => None,
        })
        .collect()
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
    let produced = produced_ids(&best.1);
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
        let kept = runner.try_run(&candidate)?;
        let failed = kept.is_some();
        if let Some(outcome) = kept
            && found.as_ref().is_none_or(|(f, ..)| f.len() > subset.len())
        {
            found = Some((subset.to_vec(), candidate, outcome));
        }
        Some(failed)
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
            let Some(kept) = runner.try_run(&candidate) else {
                return true;
            };
            if let Some(outcome) = kept {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn acked(outcome: &RunOutcome, needed: u64) -> bool {
        outcome
            .history
            .events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ProduceAck { id, .. } if *id == needed))
    }

    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "the runner's clock is the host's, as in `shrink`"
    )]
    fn each_needed_takes_what_can_go_and_counts_what_cannot() {
        let mut spec = RunSpec::from_seed(7, &Profile::quick());
        spec.profile.only_ids = Some(vec![5, 20]);
        spec.schedule = Some(Vec::new());
        let keep = |o: &RunOutcome| acked(o, 20);
        let mut runner = Runner {
            keep: &keep,
            limits: Limits::runs(100),
            started: Instant::now(),
            attempts: 0,
            hung: 0,
        };
        let best = (spec.clone(), run(&spec));
        assert!(keep(&best.1), "id 20 is acknowledged with no faults");
        let Needed::Cut(label, cut) = each_needed(&mut runner, &best) else {
            panic!("id 5 can go");
        };
        assert_eq!(label, "drop record id 5");
        assert_eq!(cut.0.profile.only_ids, Some(vec![20]));
        assert!(matches!(
            each_needed(&mut runner, &cut),
            Needed::Each {
                faults: 0,
                records: 1
            }
        ));
        // With no run left, nothing is claimed.
        runner.limits = Limits::runs(runner.attempts);
        assert!(matches!(each_needed(&mut runner, &cut), Needed::Stopped));
    }
}
