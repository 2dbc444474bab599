//! The shrinker against predicates that do not depend on an engine bug: "some crash
//! happened" (any swarm seed with crashes satisfies it, and one scheduled crash is the
//! smallest run that does), and one that only the original run satisfies (the
//! explicit schedule cannot reproduce it, so the shrink must say so and keep the swarm).

use cafelog_sim::profile::Profile;
use cafelog_sim::scenario::{Expect, Scenario, VerdictKind};
use cafelog_sim::shrink::{Limits, Sizes, shrink};
use cafelog_sim::world::{RunOutcome, RunSpec, run};

/// A quick seed with several crashes (found by scanning; asserted below).
const SEED: u64 = 183;

#[test]
fn a_crash_predicate_shrinks_to_one_scheduled_crash_and_round_trips() {
    // Without corrupt writes: one that poisons a partition restarts the node, a crash
    // no schedule entry is needed for.
    let without = ["corrupt_write".to_owned()];
    let spec = RunSpec::from_seed_without(SEED, &Profile::quick(), &without).expect("spec");
    let keep = |o: &RunOutcome| o.paths.crashes > 0;
    let mut lines = Vec::new();
    let shrunk = shrink(&spec, &keep, Limits::runs(150), &mut |l| {
        lines.push(l.to_owned())
    })
    .expect("shrinks");
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
    // An explicit schedule repeats the run to the same trace hash: only a swarm run
    // numbers its faults.
    let keep = |o: &RunOutcome| o.trace_hash == original && !o.swarm_faults.is_empty();
    let shrunk =
        shrink(&spec, &keep, Limits::runs(40), &mut |_| {}).expect("the start run qualifies");
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

/// A candidate whose run outlives the limit of one run (here 0.1 ms, which no run
/// meets) is dropped as not failing the same way, and the shrink goes on to its end.
#[test]
fn a_candidate_run_past_its_limit_is_dropped_and_the_shrink_goes_on() {
    let spec = RunSpec::from_seed(SEED, &Profile::quick());
    let keep = |_: &RunOutcome| true;
    let limits = Limits {
        run: Some(std::time::Duration::from_micros(100)),
        ..Limits::runs(20)
    };
    let shrunk = shrink(&spec, &keep, limits, &mut |_| {}).expect("the start run qualifies");
    assert_eq!(shrunk.spec.workload, spec.workload, "no candidate was kept");
    assert!(shrunk.attempts > 1);
    assert!(
        shrunk
            .notes
            .iter()
            .any(|n| n.contains(&format!("{} candidate runs hung", shrunk.attempts - 1))),
        "{:?}",
        shrunk.notes
    );
}

#[test]
fn a_passing_run_is_not_shrunk() {
    let spec = RunSpec::from_seed(SEED, &Profile::quick());
    let never = |_: &RunOutcome| false;
    let e = shrink(&spec, &never, Limits::runs(10), &mut |_| {}).expect_err("nothing to shrink");
    assert!(e.contains("does not fail as required"), "{e}");
}

#[test]
fn the_same_failure_means_the_same_checker_on_the_same_partition() {
    use cafelog_sim::check::{CheckerName, Failure, RecordRef, Verdict};
    use cafelog_sim::history::TopicPartition;
    use cafelog_sim::shrink::Target;
    let spec = RunSpec::from_seed(SEED, &Profile::quick());
    let passing = run(&spec);
    let failing = |checker: CheckerName, partition: u32| {
        let mut o = run(&spec);
        let tp = TopicPartition::new("topic-0", partition);
        o.verdict = Verdict::SafetyFailure(Failure {
            checker,
            message: "lost".into(),
            records: vec![RecordRef::new(&tp, Some(3), Some(7))],
            context: Vec::new(),
            other_violations: 0,
        });
        o
    };
    let target = Target::of(&failing(CheckerName::NoLostAck, 1).verdict);
    assert!(target.matches(&failing(CheckerName::NoLostAck, 1)));
    assert!(
        !target.matches(&failing(CheckerName::NoLostAck, 0)),
        "another partition"
    );
    assert!(
        !target.matches(&failing(CheckerName::BoundedDuplicates, 1)),
        "another checker"
    );
    assert!(!target.matches(&passing));
}

/// The events of `outcome` up to and including its last injected fault, as text.
fn up_to_last_fault(outcome: &RunOutcome) -> Vec<String> {
    use cafelog_sim::history::EventKind;
    let events = outcome.history.events();
    let last = events
        .iter()
        .rposition(|e| matches!(e.kind, EventKind::Fault { .. }))
        .unwrap_or(0);
    events[..=last].iter().map(|e| e.to_string()).collect()
}

#[test]
fn an_explicit_schedule_repeats_the_swarm_run_to_its_last_fault() {
    use cafelog_sim::shrink::schedule_from_history;
    let (mut repeated, mut tried) = (0, 0);
    for seed in 0..40 {
        let spec = RunSpec::from_seed(seed, &Profile::quick());
        let swarm = run(&spec);
        if swarm.paths.crashes == 0 || swarm.paths.bit_flips == 0 {
            continue;
        }
        tried += 1;
        let mut explicit = spec.clone();
        explicit.schedule = Some(schedule_from_history(&swarm, false));
        let again = run(&explicit);
        if up_to_last_fault(&swarm) == up_to_last_fault(&again) {
            repeated += 1;
        } else {
            eprintln!("seed {seed}: not repeated");
        }
    }
    assert!(tried >= 10, "{tried} seeds with crashes and flips");
    // The schedule's timers are not the swarm's, so madsim may order two wakeups of
    // the same instant the other way round and the runs part there (8 of these 13
    // repeat today; none did before kills and flips were recorded exactly).
    assert!(repeated * 5 >= tried * 3, "{repeated} of {tried} repeated");
}

#[test]
fn a_drawn_wal_segment_size_is_written_and_read_back() {
    let mut spec = RunSpec::from_seed(SEED, &Profile::quick());
    spec.workload.wal_segment_bytes = 4_096;
    spec.workload.frontier_at_open = true;
    let expect = Expect {
        verdict: VerdictKind::Pass,
        checker: None,
        reaches: vec![],
        injects: vec![],
    };
    let text = Scenario::from_spec(&spec, expect.clone())
        .to_toml("a small WAL")
        .expect("serialises");
    assert!(text.contains("[store]\nwal_segment_bytes = 4096"), "{text}");
    let back = Scenario::parse("small_wal", &text).expect("parses back");
    assert_eq!(back.spec().workload.wal_segment_bytes, 4_096);
    // At the engine's default the table is left out.
    spec.workload.wal_segment_bytes = cafelog_sim::world::workload::default_wal_segment_bytes();
    let text = Scenario::from_spec(&spec, expect)
        .to_toml("default")
        .unwrap();
    assert!(!text.contains("[store]"), "{text}");
    // Frontiers left to their clients' first touch are written and read back too.
    spec.workload.frontier_at_open = false;
    let text = Scenario::from_spec(&spec, expect_pass())
        .to_toml("lazy")
        .unwrap();
    assert!(text.contains("\nfrontier_at_open = false"), "{text}");
    let back = Scenario::parse("lazy", &text).expect("parses back");
    assert!(!back.spec().workload.frontier_at_open);
}

fn expect_pass() -> Expect {
    Expect {
        verdict: VerdictKind::Pass,
        checker: None,
        reaches: vec![],
        injects: vec![],
    }
}

/// A quick seed whose swarm kills at its own times only (no aimed crashes, which wait
/// for an acknowledgement) and injects at least four faults.
fn unaimed_swarm_seed() -> (RunSpec, RunOutcome) {
    (0..200)
        .map(|seed| RunSpec::from_seed(seed, &Profile::quick()))
        .filter(|s| s.mix.crash_after_commit_fraction == 0.0 && s.mix.crashes_max > 0)
        .map(|s| {
            let o = run(&s);
            (s, o)
        })
        .find(|(_, o)| o.swarm_faults.len() >= 4 && o.kills.len() >= 3)
        .expect("a seed in 0..200")
}

#[test]
fn the_swarm_is_cut_by_fault_number() {
    let (spec, full) = unaimed_swarm_seed();
    // Two kills and no flip, from the swarm (an explicit schedule injects no numbered
    // faults): the cut must keep exactly two numbers, both kills.
    let keep = |o: &RunOutcome| {
        !o.swarm_faults.is_empty()
            && o.kills.len() >= 2
            && o.faults.get("bit_flip").copied().unwrap_or(0) == 0
    };
    assert!(full.swarm_faults.len() > 2, "{:?}", full.swarm_faults);
    let shrunk = shrink(&spec, &keep, Limits::runs(200), &mut |_| {}).expect("qualifies");
    assert!(!shrunk.explicit, "{:?}", shrunk.notes);
    let only = shrunk.spec.mix.only.clone().expect("cut by number");
    assert_eq!(only.len(), 2, "two kills are enough: {only:?}");
    assert_eq!(shrunk.outcome.swarm_faults, only);
    assert_eq!(shrunk.outcome.kills.len(), 2, "{:?}", shrunk.outcome.kills);
    assert!(only.iter().all(|n| full.swarm_faults.contains(n)));
    // Every number cut: no swarm fault at all.
    let mut none = spec.clone();
    none.mix.only = Some(Vec::new());
    let bare = run(&none);
    assert!(
        bare.swarm_faults.is_empty() && bare.kills.is_empty(),
        "{:?}",
        bare.kills
    );
    // The cut, written as a scenario and read back, is the same run.
    let expect = Expect {
        verdict: VerdictKind::of(&shrunk.outcome.verdict),
        checker: shrunk.outcome.verdict.failure().map(|f| f.checker),
        reaches: vec![],
        injects: vec![],
    };
    let text = Scenario::from_spec(&shrunk.spec, expect)
        .to_toml("cut in a test")
        .expect("serialises");
    assert!(text.contains("only = ["), "{text}");
    let scenario = Scenario::parse("cut", &text).expect("parses back");
    assert_eq!(scenario.spec().mix.only, shrunk.spec.mix.only);
    assert_eq!(run(&scenario.spec()).trace_hash, shrunk.outcome.trace_hash);
}

#[test]
fn request_drops_are_written_and_read_back_with_a_swarm_or_a_schedule() {
    let mut spec = (0..100)
        .map(|seed| RunSpec::from_seed(seed, &Profile::quick()))
        .find(|s| s.mix.cancel_probability > 0.0)
        .expect("a seed with request drops");
    let explicit = [false, true];
    for ((loops, settles), explicit) in [(false, true), (true, false), (true, true)]
        .into_iter()
        .flat_map(|d| explicit.map(|e| (d, e)))
    {
        // An explicit schedule replaces the swarm's faults, not the server's cancels.
        spec.schedule = explicit.then(Vec::new);
        spec.mix.loop_drops = loops;
        spec.mix.settle_drops = settles;
        let expect = Expect {
            verdict: VerdictKind::Pass,
            checker: None,
            reaches: vec![],
            injects: vec![],
        };
        let text = Scenario::from_spec(&spec, expect)
            .to_toml("drops")
            .expect("serialises");
        let back = Scenario::parse("drops", &text).expect("parses back").spec();
        assert_eq!(
            (back.mix.loop_drops, back.mix.settle_drops),
            (loops, settles),
            "{text}"
        );
        assert_eq!(
            back.mix.cancel_probability, spec.mix.cancel_probability,
            "{text}"
        );
        assert_eq!(back.schedule.is_some(), explicit);
    }
}

/// The paths of the fsync EIO faults of a run, in order.
fn fsync_eio_paths(outcome: &RunOutcome) -> Vec<String> {
    use cafelog_sim::history::{EventKind, FaultKind};
    outcome
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault {
                kind: FaultKind::FsyncEio { .. },
                path,
                ..
            } => Some(path.clone().unwrap_or_default()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_aimed_fsync_fault_strikes_only_its_file() {
    use cafelog_sim::swarm::FaultMix;
    use cafelog_sim::world::{Action, ScheduledFault, Trigger};
    let mut spec = RunSpec::from_seed(3, &Profile::quick());
    spec.mix = FaultMix::none();
    let at = |path: Option<&str>| {
        let mut s = spec.clone();
        s.schedule = Some(vec![ScheduledFault {
            trigger: Trigger::AtMs(50),
            action: Action::FsyncEio {
                path: path.map(str::to_owned),
            },
        }]);
        fsync_eio_paths(&run(&s))
    };
    // Unaimed, the next fsync of any file fails; aimed, the next of that file only.
    let unaimed = at(None);
    assert_eq!(unaimed.len(), 1, "{unaimed:?}");
    let topic = &spec.workload.topics.last().expect("a topic").name;
    let aim = format!("/data/topics/{topic}/p00000/00000000000000000000.log");
    assert_ne!(
        unaimed[0], aim,
        "pick a seed whose first fsync is another file's"
    );
    assert_eq!(at(Some(&aim)), vec![aim.clone()]);
    assert!(at(Some("/data/no/such/file")).is_empty());
}
