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
        idle_wakes: Vec::new(),
        swarm_faults: Vec::new(),
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

/// A run with faults on every lane: the shared WAL, a clock step, a partition's
/// segments at one instant (more than the tag rows hold), and a partition that never
/// held a record.
fn many_faults() -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .with(|t, h| {
            h.hwm_observed(t, &tp(1), 0, Some(0), Some(0));
        })
        .wal_entry_flipped(2, 3, 1)
        .fault(FaultKind::ClockStep { back_ms: 250 }, None);
    r.with(|t, h| {
        for start in 0..6 {
            h.fault(t, flip_above_hwm(start), Some(&tp(0)), None);
        }
    });
    r.crash(&[(0, 1, 3, 3), (1, 0, 0, 0)])
        .restart()
        .open_clean(0, 1, 3)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
            h.frontier_observed(t, &tp(1), 0);
        })
        .delivered(3);
    r
}

#[test]
fn shared_files_get_their_own_lane_and_tags_never_pile_up() {
    let svg = cafelog_sim::timeline::render(&outcome(&many_faults()));
    // The WAL flip and the clock step are store-wide, told once, not on a partition.
    assert!(svg.contains("store-wide: the WAL"), "{svg}");
    assert_eq!(svg.matches("bit_flip wal</text>").count(), 1, "{svg}");
    assert!(svg.contains("clock -250ms"), "{svg}");
    assert!(svg.contains("WAL entries destroyed: ids 3"), "{svg}");
    // orders/1 never held a record: one line, not a panel.
    assert!(svg.contains("no record reached orders/1"), "{svg}");
    assert!(!svg.contains(">orders/1</text>"), "{svg}");
    // Six flips at one instant: three rows of tags fit, all six are in the table, and
    // each tick carries its event.
    let tags = (1..=6)
        .filter(|i| svg.contains(&format!("font-size=\"10\">F{i}</text>")))
        .count();
    assert_eq!(tags, 3, "{svg}");
    for i in 1..=6 {
        assert!(
            svg.contains(&format!(">F{i}</tspan>")),
            "F{i} in the table: {svg}"
        );
    }
    // Each note's event is the title of its tick and of its table line.
    assert_eq!(svg.matches("<title>t=").count(), 2 * (6 + 3), "{svg}");
}

#[test]
fn timelines_of_a_failing_an_excused_and_a_faulty_run_stay_as_drawn() {
    let mut lost = Run::new();
    lost.produced(2).deliver(1, 0, 0, 1_000).wait(5_000);
    insta::assert_snapshot!("failing", cafelog_sim::timeline::render(&outcome(&lost)));
    insta::assert_snapshot!(
        "excused",
        cafelog_sim::timeline::render(&outcome(&super::loss::clamped_run(1)))
    );
    insta::assert_snapshot!(
        "many_faults",
        cafelog_sim::timeline::render(&outcome(&many_faults()))
    );
}
