//! `delay_gate`: deliveries of delayed topics wait for `committed_at_ms + delay_ms` by
//! the highest clock the engine may read, and commit times never run ahead of it.

use super::*;
use cafelog_sim::history::TopicSetup;

/// A run of topic `orders` (2 partitions) with `delay_ms`, whose wall clock reads the
/// simulated time (base 0).
fn delayed(delay_ms: u64) -> Run {
    let mut r = Run::new();
    r.h.run_started(
        0,
        0,
        vec![TopicSetup {
            name: "orders".into(),
            partitions: 2,
            delay_ms,
            lease_ms: 1_000,
        }],
    );
    r
}

#[test]
fn delay_gate_fires_on_a_delivery_before_its_gate_opens() {
    // Committed at 20 with a delay of 100, delivered at t=30 (the clock may read 31 with
    // its slack): 89 ms early.
    let mut r = delayed(100);
    r.produce(1, 0, 0, 20).deliver(1, 0, 0, 20);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::DelayGate);
    assert_mentions(
        &messages,
        &[
            "orders/0 offset 0",
            "before its delay gate opened",
            "89 ms early",
        ],
    );
    // After the delay it passes; so does any delivery of an undelayed topic.
    let mut r = delayed(100);
    r.produce(1, 0, 0, 20).wait(100).deliver(1, 0, 0, 20);
    assert_clean(&r.report());
    let mut r = delayed(0);
    r.produce(1, 0, 0, 20).deliver(1, 0, 0, 20);
    assert_clean(&r.report());
    // Without the run's setup the checker knows no delay and checks nothing.
    let mut r = Run::new();
    r.produce(1, 0, 0, 20).deliver(1, 0, 0, 20);
    assert_eq!(r.report().delay_gate.gated_deliveries, 0);
}

#[test]
fn after_a_clock_step_back_the_floor_opens_gates_and_no_further() {
    // Committed at 20, crash at t=30, the clock steps back 1000 ms while the node is
    // down. The floor lets the engine's clock go on from the crash's 30: at t=160 it may
    // read at most 30 + (160 - 50) = 140 (restart at t=50), so a delay of 100 (gate at
    // 120) is open and one of 200 (gate at 220) is not.
    let run = |delay: u64| {
        let mut r = delayed(delay);
        r.produce(1, 0, 0, 20)
            .crash(&[(0, 1, 1, 1)])
            .fault(FaultKind::ClockStep { back_ms: 1_000 }, None)
            .restart()
            .wait(100)
            .deliver(1, 0, 0, 20);
        r.report()
    };
    assert_clean(&run(100));
    assert_mentions(
        &fires_only(&run(200), CheckerName::DelayGate),
        &["before its delay gate opened"],
    );
}

#[test]
fn a_commit_time_ahead_of_every_clock_the_engine_can_read_fails() {
    // Defect 14 of HARNESS.md in small: after a restart the floor counts the time since
    // the process started, not since the open, so commit times jump ahead.
    let mut r = delayed(0);
    r.produce(1, 0, 0, 20)
        .crash(&[(0, 1, 1, 1)])
        .fault(FaultKind::ClockStep { back_ms: 1_000 }, None)
        .restart()
        .produce(2, 0, 1, 20 + 5_000);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::DelayGate),
        &[
            "committed at 5020",
            "ahead of any clock the engine can have read",
        ],
    );
}
