//! The records a run sends (`Profile::only_ids`): the producers draw every record and
//! send only the ids listed, so those keep their keys and bodies; a scenario file holds
//! the list; and the shrink cuts records one by one where a smaller cap cannot.

use cafelog_sim::history::{EventKind, ProduceId};
use cafelog_sim::profile::Profile;
use cafelog_sim::scenario::{Expect, Scenario, VerdictKind};
use cafelog_sim::shrink::{Limits, shrink};
use cafelog_sim::world::{RunOutcome, RunSpec, run};
use std::collections::BTreeMap;

/// Every record sent: its topic, key and payload, by id.
fn sent(outcome: &RunOutcome) -> BTreeMap<ProduceId, (String, Vec<u8>, Vec<u8>)> {
    outcome
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProduceAttempt {
                id,
                topic,
                key,
                payload,
                ..
            } => Some((*id, (topic.clone(), key.clone(), payload.clone()))),
            _ => None,
        })
        .collect()
}

#[test]
fn only_the_listed_ids_are_sent_each_as_it_was_drawn() {
    let spec = RunSpec::from_seed(7, &Profile::quick());
    let all = sent(&run(&spec));
    assert!(all.len() > 30, "{}", all.len());
    let listed: Vec<u64> = all.keys().copied().filter(|id| id % 3 == 1).collect();
    let mut cut = spec.clone();
    cut.profile.only_ids = Some(listed.clone());
    let outcome = run(&cut);
    let some = sent(&outcome);
    assert_eq!(outcome.records_produced, some.len() as u64);
    // The run's timing moves (fewer calls), so the last few may fall past produce_ms;
    // the rest are all sent, and nothing else is.
    assert!(some.keys().all(|id| listed.contains(id)), "{some:?}");
    assert!(
        some.len() * 10 >= listed.len() * 9,
        "{} of {}",
        some.len(),
        listed.len()
    );
    for (id, record) in &some {
        assert_eq!(Some(record), all.get(id), "id {id} as the full run drew it");
    }
}

#[test]
fn a_scenario_keeps_the_list_and_refuses_one_out_of_order() {
    let mut spec = RunSpec::from_seed(7, &Profile::quick());
    spec.profile.only_ids = Some(vec![2, 5, 9]);
    let expect = Expect {
        verdict: VerdictKind::Pass,
        checker: None,
        reaches: vec![],
        injects: vec![],
    };
    let text = Scenario::from_spec(&spec, expect.clone())
        .to_toml("three records")
        .expect("serialises");
    assert!(text.contains("only_ids = [2, 5, 9]"), "{text}");
    let back = Scenario::parse("three", &text).expect("parses back");
    assert_eq!(back.spec().profile.only_ids, Some(vec![2, 5, 9]));
    assert_eq!(run(&back.spec()).trace_hash, run(&spec).trace_hash);
    let refused = Scenario::parse("bad", &text.replace("[2, 5, 9]", "[2, 9, 9]"))
        .map(|_| ())
        .expect_err("a repeated id is refused");
    assert!(
        refused.to_string().contains("only_ids must ascend"),
        "{refused}"
    );
    // Without a list, the key is left out.
    spec.profile.only_ids = None;
    let text = Scenario::from_spec(&spec, expect).to_toml("all").unwrap();
    assert!(!text.contains("only_ids"), "{text}");
}

/// A predicate that needs one record acknowledged, late in the run: no cap on the
/// records keeps fewer than the ids before it, and the cut by id keeps it alone.
#[test]
fn the_shrink_cuts_the_records_a_cap_cannot() {
    let spec = RunSpec::from_seed(7, &Profile::quick());
    let needed: ProduceId = 20;
    let keep = move |o: &RunOutcome| {
        o.history
            .events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ProduceAck { id, .. } if *id == needed))
    };
    let shrunk = shrink(&spec, &keep, Limits::runs(400), &mut |_| {}).expect("qualifies");
    assert_eq!(
        shrunk.spec.profile.only_ids,
        Some(vec![needed]),
        "{:?}",
        shrunk.steps
    );
    assert_eq!(shrunk.after.records_produced, 1);
    assert!(
        shrunk.notes.iter().any(|n| n.starts_with(
            "the failure needs every fault and record it keeps (0 faults, 1 records)"
        )),
        "{:?}",
        shrunk.notes
    );
    assert!(
        shrunk
            .steps
            .iter()
            .any(|s| s.contains("delta debugging over the ids")),
        "{:?}",
        shrunk.steps
    );
    assert!(keep(&run(&shrunk.spec)));
}
