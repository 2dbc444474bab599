//! The shrinker against predicates that do not depend on an engine bug: "some crash
//! happened" (any swarm seed with crashes satisfies it, and one scheduled crash is the
//! smallest run that does), and one that only the original run satisfies (the
//! explicit schedule cannot reproduce it, so the shrink must say so and keep the swarm).

use cafelog_sim::profile::Profile;
use cafelog_sim::scenario::{Expect, Scenario, VerdictKind};
use cafelog_sim::shrink::{Sizes, shrink};
use cafelog_sim::world::{RunOutcome, RunSpec, run};

/// A quick seed with several crashes (found by scanning; asserted below).
const SEED: u64 = 183;

#[test]
fn a_crash_predicate_shrinks_to_one_scheduled_crash_and_round_trips() {
    let spec = RunSpec::from_seed(SEED, &Profile::quick());
    let keep = |o: &RunOutcome| o.paths.crashes > 0;
    let mut lines = Vec::new();
    let shrunk = shrink(&spec, &keep, 150, &mut |l| lines.push(l.to_owned())).expect("shrinks");
    assert!(shrunk.before.schedule_entries >= 3, "{:?}", shrunk.before);
    assert!(shrunk.explicit, "{:?}", shrunk.notes);
    let schedule = shrunk.spec.schedule.clone().expect("explicit");
    assert_eq!(schedule.len(), 1, "one crash is enough: {schedule:?}");
    assert!(shrunk.after.records_produced * 4 < shrunk.before.records_produced);
    assert!(shrunk.after.events * 2 < shrunk.before.events);
    assert!(shrunk.attempts <= 150);
    assert!(lines.iter().any(|l| l.contains("kept")), "{lines:?}");
    // The result is what it claims, and replays the same.
    assert!(keep(&shrunk.outcome));
    let again = run(&shrunk.spec);
    assert_eq!(again.trace_hash, shrunk.outcome.trace_hash);
    assert_eq!(Sizes::of(&shrunk.spec, &again), shrunk.after);
    // Written as a scenario and read back, it is the same run.
    let expect = Expect {
        verdict: VerdictKind::of(&again.verdict),
        checker: again.verdict.failure().map(|f| f.checker),
        reaches: vec!["crashes".into()],
        injects: vec![],
    };
    let text = Scenario::from_spec(&shrunk.spec, expect)
        .to_toml("shrunk in a test")
        .expect("serialises");
    let scenario = Scenario::parse("shrunk", &text).expect("parses back");
    let outcome = run(&scenario.spec());
    assert_eq!(outcome.trace_hash, again.trace_hash);
    assert!(scenario.judge(&outcome).ok());
}

#[test]
fn a_predicate_only_the_swarm_run_meets_falls_back_to_the_swarm_faults() {
    let spec = RunSpec::from_seed(SEED, &Profile::quick());
    let original = run(&spec).trace_hash;
    let keep = |o: &RunOutcome| o.trace_hash == original;
    let shrunk = shrink(&spec, &keep, 40, &mut |_| {}).expect("the start run qualifies");
    assert!(!shrunk.explicit);
    assert!(shrunk.spec.schedule.is_none());
    assert!(
        shrunk
            .notes
            .iter()
            .any(|n| n.contains("no explicit schedule")),
        "{:?}",
        shrunk.notes
    );
    assert_eq!(shrunk.outcome.trace_hash, original);
}

#[test]
fn a_passing_run_is_not_shrunk() {
    let spec = RunSpec::from_seed(SEED, &Profile::quick());
    let never = |_: &RunOutcome| false;
    let e = shrink(&spec, &never, 10, &mut |_| {}).expect_err("nothing to shrink");
    assert!(e.contains("does not fail as required"), "{e}");
}
