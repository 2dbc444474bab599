//! `hwm_persisted`: after the heal the persisted HWM follows the HWM within the
//! topic's `hwm_persist_interval` plus 250 ms; a poisoned incarnation, the time before
//! the heal and the first bound after a restart are not judged.

use super::*;
use cafelog_sim::history::TopicSetup;

/// Topic `orders` (1 partition) whose HWM persister runs every `interval` ms.
fn setup(interval: Option<u64>) -> Run {
    let mut r = Run::new();
    let topic = TopicSetup {
        name: "orders".into(),
        partitions: 1,
        delay_ms: 0,
        lease_ms: 300,
        retention_ms: None,
        hwm_persist_ms: interval,
    };
    r.h.run_started(0, 0, vec![topic], 0);
    r
}

/// Samples of orders/0 every 100 ms over `[from, to]`: HWM 5, persisted 5 from
/// `persisted_at` on (never when `None`), else 0.
fn samples(r: &mut Run, from: u64, to: u64, persisted_at: Option<u64>) {
    for at in (from..=to).step_by(100) {
        let persisted = if persisted_at.is_some_and(|p| at >= p) {
            5
        } else {
            0
        };
        r.h.hwm_observed(at, &tp(0), 5, Some(persisted), None);
    }
    r.t = to;
}

/// Persister every 100 ms (a bound of 350 ms), healed at t=10; orders/0 shows HWM 5
/// from t=20 on, sampled until t=620.
fn sampled(persisted_at: Option<u64>) -> Run {
    let mut r = setup(Some(100));
    r.h.heal(10);
    samples(&mut r, 20, 620, persisted_at);
    r
}

#[test]
fn a_persisted_hwm_that_never_follows_fires() {
    let report = sampled(None).report();
    let messages = fires_only(&report, CheckerName::HwmPersisted);
    assert_mentions(
        &messages,
        &[
            "orders/0: the HWM was 5 at t=20ms and the persisted HWM still 0 at t=420ms",
            "hwm_persist_interval 100ms, bound 350ms",
        ],
    );
    assert!(CheckerName::HwmPersisted.is_liveness());
}

#[test]
fn a_persisted_hwm_within_the_bound_passes_and_one_sample_later_fails() {
    // Persisted at t=320, 300 ms after the HWM moved: within 350 ms.
    let report = sampled(Some(320)).report();
    assert_clean(&report);
    assert!(
        report.hwm_persisted.checked > 0,
        "{:?}",
        report.hwm_persisted
    );
    // At t=520, 500 ms after: the sample at 420 judges it late.
    fires_only(&sampled(Some(520)).report(), CheckerName::HwmPersisted);
}

#[test]
fn a_poisoned_incarnation_is_not_judged() {
    let mut r = sampled(None);
    r.with(|t, h| {
        h.partition_poisoned(t, &tp(0));
    });
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.hwm_persisted.poisoned, vec![(tp(0), 0)]);
}

#[test]
fn before_the_heal_and_right_after_a_restart_nothing_is_judged() {
    // Healed after every sample.
    let mut r = setup(Some(100));
    samples(&mut r, 20, 620, None);
    r.h.heal(700);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.hwm_persisted.checked, 0);
    // A restart at t=700: its samples are judged from t=1050 on, against samples of
    // its own incarnation only.
    // The HWM moves to 9 at once and the persisted HWM stays 5.
    let mut r = sampled(Some(320));
    r.crash(&[(0, 5, 5, 5)]).restart();
    let restart = r.t;
    let lagging = |r: &mut Run, from: u64, to: u64| {
        for at in (from..=to).step_by(100) {
            r.h.hwm_observed(at, &tp(0), 9, Some(5), None);
        }
        r.t = to;
    };
    lagging(&mut r, restart + 10, restart + 310);
    assert_clean(&r.report());
    lagging(&mut r, restart + 410, restart + 410);
    fires_only(&r.report(), CheckerName::HwmPersisted);
}

#[test]
fn a_history_without_the_interval_is_not_judged() {
    let mut r = setup(None);
    r.h.heal(10);
    samples(&mut r, 20, 620, None);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.hwm_persisted.checked, 0);
}
