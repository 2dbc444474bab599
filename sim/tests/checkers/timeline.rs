//! `replay --timeline` draws what the checkers concluded: the records a violation names
//! and the lost records an excuse covered.

use super::*;
use cafelog_sim::world::RunOutcome;
use cafelog_sim::world::recorder::Paths;

fn outcome(r: &Run) -> RunOutcome {
    let report = r.report();
    RunOutcome {
        seed: 1,
        profile: "quick",
        verdict: report.verdict(&r.h, &CONFIG),
        report: Some(report),
        history: r.h.clone(),
        paths: Paths::default(),
        faults: Default::default(),
        fault_kinds_on: Vec::new(),
        trace_hash: 0,
        sim_ms: r.t,
        records_produced: 3,
        kills: Vec::new(),
        flips: Vec::new(),
    }
}

#[test]
fn excused_losses_are_ringed_with_their_excuse() {
    let svg = cafelog_sim::timeline::render(&outcome(&super::loss::clamped_run(1)));
    // Ids 2 and 3 were lost to the clamp: two rings, labelled with the excuse.
    assert_eq!(svg.matches("excused at offset").count(), 2, "{svg}");
    assert!(svg.contains("excused at offset 1: clamped"), "{svg}");
    assert!(!svg.contains("no_lost_ack id"), "no violation to draw");
}

#[test]
fn a_lost_record_is_crossed_and_named() {
    // Id 2 (offset 1) acknowledged, never delivered, nothing excuses it.
    let mut r = Run::new();
    r.produced(2).deliver(1, 0, 0, 1_000).wait(5_000);
    let report = r.report();
    assert!(!report.violations_of(CheckerName::NoLostAck).is_empty());
    let svg = cafelog_sim::timeline::render(&outcome(&r));
    assert!(svg.contains("no_lost_ack id 2 @1"), "{svg}");
    assert!(!svg.contains("excused at offset"));
}
