//! `delay_gate`: deliveries of delayed topics wait for `committed_at_ms + delay_ms` by
//! the highest clock the engine may read, and commit times never run ahead of it.

use super::*;

/// A run of topic `orders` (2 partitions) with `delay_ms`, whose wall clock reads the
/// simulated time (base 0).
fn delayed(delay_ms: u64) -> Run {
    Run::with_setup(0, delay_ms, 1_000)
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
    // A gate at 150 is not open either (the stepped wall clock reads 0, not 160).
    assert_mentions(
        &fires_only(&run(130), CheckerName::DelayGate),
        &["before its delay gate opened"],
    );
}

#[test]
fn a_commit_time_ahead_of_every_clock_the_engine_can_read_fails() {
    // Defect 14 of HARNESS.md: after a restart the floor counts the time since the
    // process started, not since the open. Record 2, attempted at t=60 after the restart
    // at t=50, committed at 20 + 60 = 80 (the floor plus the time since t=0); at its
    // delivery (t=70) the clock may read at most 30 + (70 - 50) = 50, and 51 with slack.
    let run = |committed: u64| {
        let mut r = delayed(0);
        r.produce(1, 0, 0, 20)
            .crash(&[(0, 1, 1, 1)])
            .fault(FaultKind::ClockStep { back_ms: 1_000 }, None)
            .restart()
            .attempt(2, 0)
            .deliver(2, 0, 1, committed);
        messages_of(&r.report(), CheckerName::DelayGate)
    };
    assert_mentions(
        &run(80),
        &[
            "committed at 80",
            "ahead of any clock the engine can have read",
        ],
    );
    // Committed at 51 (the bound with its slack) it passes.
    assert!(run(51).is_empty());
}

/// Base 10 000: id 1 committed at 10 020; a crash at t=30 (the bound reaches 10 030);
/// the clock steps back 20 000; an incarnation from t=50 to its crash at t=260, while the
/// wall clock reads 0, leaves the bound at 10 030 + 210 = 10 240; another step back; the
/// restart at t=280 and a delivery of id 1 at t=290, with a topic delay of `delay_ms`.
fn two_crashes_two_steps(delay_ms: u64) -> CheckReport {
    let mut r = Run::with_setup(10_000, delay_ms, 1_000);
    r.produce(1, 0, 0, 10_020)
        .crash(&[(0, 1, 1, 1)])
        .fault(FaultKind::ClockStep { back_ms: 20_000 }, None)
        .restart()
        .wait(200)
        .crash(&[(0, 1, 1, 1)])
        .fault(FaultKind::ClockStep { back_ms: 1_000 }, None)
        .restart()
        .deliver(1, 0, 0, 10_020);
    r.report()
}

#[test]
fn the_bound_carries_over_crashes_from_the_wall_clock_and_the_floor() {
    // At t=290 the clock may read 10 240 + (290 - 280) = 10 250: a gate at 10 220 is
    // open, one at 10 260 is not. A bound from the wall clock alone would read 0 there,
    // one from the floor alone 250.
    let report = two_crashes_two_steps(200);
    assert!(
        messages_of(&report, CheckerName::DelayGate).is_empty(),
        "{:?}",
        report.delay_gate.violations
    );
    assert_mentions(
        &messages_of(&two_crashes_two_steps(240), CheckerName::DelayGate),
        &["before its delay gate opened", "10260"],
    );
}

#[test]
fn a_commit_time_behind_the_wall_clock_since_its_attempt_fails() {
    // The engine's clock never reads below the wall clock: a record attempted at wall
    // 10 010 cannot carry a commit time of 20 (a clock frozen at the recovered floor).
    let run = |committed: u64, step: u64| {
        let mut r = Run::with_setup(10_000, 0, 1_000);
        r.attempt(1, 0);
        if step > 0 {
            r.crash(&[(0, 0, 1, 1)])
                .fault(FaultKind::ClockStep { back_ms: step }, None)
                .restart();
        }
        r.deliver(1, 0, 0, committed);
        messages_of(&r.report(), CheckerName::DelayGate)
    };
    assert_mentions(&run(20, 0), &["committed at 20, behind the wall clock"]);
    assert!(run(10_010, 0).is_empty());
    // A step back between the attempt and the delivery lowers the floor by its size (a
    // WAL replay after the restart may commit it then).
    assert!(run(5_010, 5_000).is_empty());
    assert_mentions(&run(5_008, 5_000), &["behind the wall clock"]);
}
