//! `monotonic_commit_time`.

use super::*;

#[test]
fn monotonic_commit_time_fires_when_a_restart_lets_commit_time_go_back() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .fault(FaultKind::ClockStep { back_ms: 200 }, None)
        .produce(2, 0, 1, 900)
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, 1, 900)
        .consume(0, 1);
    let messages = fires_only(&r.report(), CheckerName::MonotonicCommitTime);
    assert_mentions(
        &messages,
        &[
            "orders/0: committed_at_ms decreases along offsets",
            "offset 0 has 1000",
            "offset 1 has 900",
            "inc 1",
        ],
    );
}
