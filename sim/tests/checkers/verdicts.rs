//! Verdicts, exit codes and checker names.

use super::*;

#[test]
fn safety_failure_wins_over_liveness_and_shows_events_around_it() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .with(|t, h| {
            h.heal(t);
        })
        .wait(5_000)
        .counters(0, 0, 0)
        .counters(0, 0, 0);
    let report = r.report();
    assert_eq!(
        report.failed_checkers(),
        vec![CheckerName::NoLostAck, CheckerName::DeliveredAfterHeal]
    );
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict.exit_code(), EXIT_SAFETY_FAILURE);
    let line = verdict.to_string();
    assert!(!line.contains('\n'), "{line}");
    assert!(line.ends_with("(+1 more violations)"), "{line}");
    let failure = verdict.failure().expect("a failure");
    assert_eq!(failure.checker, CheckerName::NoLostAck);
    // Focus on the ack (#1) with two events either side: #0..=#3.
    let indices: Vec<usize> = failure.context.iter().map(|c| c.index).collect();
    assert_eq!(indices, vec![0, 1, 2, 3]);
    let focus: Vec<usize> = failure
        .context
        .iter()
        .filter(|c| c.focus)
        .map(|c| c.index)
        .collect();
    assert_eq!(focus, vec![1]);
    assert!(
        failure
            .context_lines()
            .contains("> #1 t=20ms inc=0 produce_ack id=1 orders/0 offset=0")
    );
}

#[test]
fn simulator_crash_is_its_own_verdict() {
    let payload = std::panic::catch_unwind(|| {
        History::new()
            .heal(1)
            .fault(2, FaultKind::ClockStep { back_ms: 1 }, None, None);
    })
    .expect_err("a fault after heal panics");
    let verdict = Verdict::from_panic(payload.as_ref());
    assert_eq!(verdict.exit_code(), EXIT_SIMULATOR_CRASH);
    assert!(
        verdict
            .to_string()
            .starts_with("SIMULATOR CRASH: fault injected after heal"),
        "{verdict}"
    );
    let codes = [
        EXIT_PASS,
        EXIT_SAFETY_FAILURE,
        EXIT_LIVENESS_FAILURE,
        EXIT_SIMULATOR_CRASH,
    ];
    for (i, a) in codes.iter().enumerate() {
        for b in &codes[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn checker_names_are_stable_snake_case() {
    let names: Vec<&str> = CheckerName::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "no_lost_ack",
            "bounded_duplicates",
            "monotonic_commit_time",
            "stable_offsets",
            "no_corrupt_delivery",
            "frontier_safe",
            "frontier_durable",
            "poison_acks_nothing",
            "alarms_explained",
            "delay_gate",
            "lease_exclusive",
            "retention_safe",
            "layout",
            "delivered_after_heal",
            "redelivered_after_expiry",
            "woken_promptly",
            "hwm_persisted",
            "wal_progress",
            "retention_progress",
            "frontier_progress",
        ]
    );
    for checker in CheckerName::ALL {
        assert_eq!(
            serde_json::to_string(&checker).expect("serialises"),
            format!("\"{checker}\"")
        );
    }
}
