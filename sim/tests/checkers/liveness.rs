//! `delivered_after_heal`.

use super::*;

fn late_run(delivered_after_heal_ms: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .with(|t, h| {
            h.heal(t);
        })
        .wait(delivered_after_heal_ms)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0);
    r
}

#[test]
fn delivered_after_heal_fires_on_a_delivery_later_than_the_bound() {
    assert_clean(&late_run(500).report());
    let r = late_run(1_500);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::DeliveredAfterHeal);
    assert_mentions(
        &messages,
        &[
            "1 acknowledged record(s) on orders/0 not delivered within 1000 ms of the heal",
            "id 1 at offset 0",
            "delivered t=",
        ],
    );
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict.exit_code(), EXIT_LIVENESS_FAILURE);
    assert!(
        verdict
            .to_string()
            .starts_with("LIVENESS FAILURE [delivered_after_heal] ")
    );
}

#[test]
fn delivered_after_heal_is_inconclusive_when_the_history_ends_early() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000).with(|t, h| {
        h.heal(t);
    });
    let report = r.report();
    // The record is lost at the end (no_lost_ack), but liveness cannot call it a hang.
    assert_eq!(report.failed_checkers(), vec![CheckerName::NoLostAck]);
    assert_eq!(report.delivered_after_heal.inconclusive, vec![1]);
}
