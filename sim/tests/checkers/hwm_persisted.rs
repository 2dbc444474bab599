//! `hwm_persisted`: after the heal the persisted HWM follows the HWM within the
//! topic's `hwm_persist_interval` plus 250 ms; a partition from its poison on, the time
//! before the heal on a slow disk and the first bound after a restart are not judged.

use super::*;
use cafelog_sim::history::TopicSetup;

/// Topic `orders` (1 partition) whose HWM persister runs every `interval` ms, on a
/// disk that answers at once.
fn setup(interval: Option<u64>) -> Run {
    setup_with_latency(interval, 0)
}

/// [`setup`] on a disk that may sleep up to `latency_ms` per operation until the heal.
fn setup_with_latency(interval: Option<u64>, latency_ms: u64) -> Run {
    let mut r = Run::new();
    let topic = TopicSetup {
        name: "orders".into(),
        partitions: 1,
        delay_ms: 0,
        lease_ms: 300,
        retention_ms: None,
        hwm_persist_ms: interval,
        reaper_interval_ms: None,
    };
    r.h.run_started(0, 0, vec![topic], latency_ms, None, false);
    r
}

/// Samples of orders/0 every 100 ms over `[from, to]`: HWM 5, and the word on disk 5
/// from `persisted_at` on (never when `None`), else 0; the engine says so too.
fn samples(r: &mut Run, from: u64, to: u64, persisted_at: Option<u64>) {
    for at in (from..=to).step_by(100) {
        let persisted = if persisted_at.is_some_and(|p| at >= p) {
            5
        } else {
            0
        };
        r.h.hwm_observed(at, &tp(0), 5, Some(persisted), None);
        r.h.hwm_word_observed(at, &tp(0), Some(persisted));
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
            "orders/0: the HWM was 5 at t=20ms and the `hwm` word on disk still 0 at t=420ms",
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

/// [`lagging_before_the_heal`] (the word never follows, judged before the heal at
/// t=700) with orders/0 poisoned by an fsync error at `at` (between two samples), by
/// the world's report or only by the engine's alarm.
fn poisoned_at(at: u64, reported: bool) -> Run {
    let mut r = setup(Some(100));
    let before = 20 + (at - 20) / 100 * 100;
    samples(&mut r, 20, before, None);
    let eio = FaultKind::FsyncEio {
        file: FileKind::Segment,
    };
    r.h.fault(at, eio, Some(&tp(0)), None);
    if reported {
        r.h.partition_poisoned(at, &tp(0));
    } else {
        r.h.engine_alarm(
            at,
            Some(&tp(0)),
            Alarm::Poisoned {
                cancelled: false,
                directory: false,
                verify: false,
            },
            None,
        );
    }
    samples(&mut r, before + 100, 620, None);
    r.h.heal(700);
    r
}

#[test]
fn a_poison_stops_the_judgement_from_its_moment_on() {
    // The first deadline (HWM 5 at t=20, bound 350) passes at t=370: a poison before it
    // may have stopped the persister in time; one after it did not.
    for reported in [true, false] {
        let report = poisoned_at(300, reported).report();
        assert_clean(&report);
        assert_eq!(report.hwm_persisted.poisoned, vec![(tp(0), 0)]);
        let messages = fires_only(
            &poisoned_at(500, reported).report(),
            CheckerName::HwmPersisted,
        );
        assert_mentions(&messages, &["still 0 at t=420ms"]);
    }
}
#[test]
fn before_a_heal_on_a_slow_disk_and_right_after_a_restart_nothing_is_judged() {
    // Healed after every sample, on a disk with latency until the heal.
    let mut r = setup_with_latency(Some(100), 20);
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
            r.h.hwm_word_observed(at, &tp(0), Some(5));
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

#[test]
fn the_word_on_disk_is_judged_not_the_engines_account_of_it() {
    // The engine says it persisted 5; the platter still holds 0 (an fsync it skipped).
    let mut r = setup(Some(100));
    r.h.heal(10);
    for at in (20..=620).step_by(100) {
        r.h.hwm_observed(at, &tp(0), 5, Some(5), None);
        r.h.hwm_word_observed(at, &tp(0), Some(0));
    }
    r.t = 620;
    fires_only(&r.report(), CheckerName::HwmPersisted);
    // No file on the platter reads as 0 too.
    let mut r = setup(Some(100));
    r.h.heal(10);
    for at in (20..=620).step_by(100) {
        r.h.hwm_observed(at, &tp(0), 5, Some(5), None);
        r.h.hwm_word_observed(at, &tp(0), None);
    }
    r.t = 620;
    fires_only(&r.report(), CheckerName::HwmPersisted);
}

/// A power loss and a restart; the new incarnation shows HWM 9 at once while the word
/// on disk stays 5, sampled every 100 ms for 600 ms.
fn restart_lagging(r: &mut Run) {
    r.crash(&[(0, 5, 5, 5)]).restart();
    let restart = r.t;
    for at in (restart + 10..=restart + 610).step_by(100) {
        r.h.hwm_observed(at, &tp(0), 9, Some(5), None);
        r.h.hwm_word_observed(at, &tp(0), Some(5));
    }
    r.t = restart + 610;
}

#[test]
fn a_fault_on_the_word_ends_the_judgement_as_far_as_it_reaches() {
    let hwm_fault = |kind: FaultKind| {
        let mut r = setup(Some(100));
        r.t = 0;
        r.fault(kind, Some(0));
        r.h.heal(15);
        samples(&mut r, 20, 620, None);
        r
    };
    // In contract (an fsync EIO on the word): that incarnation is not judged.
    let report = hwm_fault(FaultKind::FsyncEio {
        file: FileKind::Hwm,
    })
    .report();
    assert_eq!(report.hwm_persisted.word_faulted, vec![(tp(0), 0)]);
    assert!(report.hwm_persisted.violations.is_empty());
    // An in-contract fault in an earlier incarnation: the open rewrote the word, and
    // this one is judged again.
    let mut r = hwm_fault(FaultKind::FsyncEio {
        file: FileKind::Hwm,
    });
    restart_lagging(&mut r);
    assert!(
        !r.report()
            .violations_of(CheckerName::HwmPersisted)
            .is_empty()
    );
    // Out of contract (a misdirected write into the word): no later incarnation either.
    let mut r = hwm_fault(FaultKind::Misdirected {
        file: FileKind::Hwm,
        offsets: None,
        below_hwm: None,
        parts: None,
    });
    restart_lagging(&mut r);
    let report = r.report();
    assert!(
        report.hwm_persisted.violations.is_empty(),
        "{:?}",
        report.hwm_persisted.violations
    );
    assert_eq!(
        report.hwm_persisted.word_faulted,
        vec![(tp(0), 0), (tp(0), 1)]
    );
}

/// Healed at t=700, after every sample; the word never follows the HWM. `before` runs
/// on the history first (after the run's start, before the samples).
fn lagging_before_the_heal(before: impl FnOnce(&mut Run)) -> CheckReport {
    let mut r = setup(Some(100));
    r.t = 5;
    before(&mut r);
    samples(&mut r, 20, 620, None);
    r.h.heal(700);
    r.report()
}

#[test]
fn on_a_disk_that_answers_at_once_the_time_before_the_heal_is_judged() {
    // A persister starved while the producers run, catching up once they stop, would
    // pass every judgement after the heal.
    let report = lagging_before_the_heal(|_| {});
    let messages = fires_only(&report, CheckerName::HwmPersisted);
    assert_mentions(
        &messages,
        &["the HWM was 5 at t=20ms", "still 0 at t=420ms"],
    );
    // Not after a persister loop was dropped (it comes back after a delay, for every
    // partition), nor after the WAL was poisoned (the node stops serving).
    let dropped = lagging_before_the_heal(|r| {
        r.h.fault(
            5,
            FaultKind::Cancel {
                request: cafelog_sim::history::RequestKind::Loop,
            },
            None,
            Some("hwm_persister"),
        );
    });
    assert!(dropped.hwm_persisted.violations.is_empty());
    let wal_poisoned = lagging_before_the_heal(|r| {
        r.h.engine_alarm(5, None, Alarm::WalPoisoned, None);
    });
    assert!(wal_poisoned.hwm_persisted.violations.is_empty());
    // Nor after the engine poisoned the partition, though the world never reported it
    // (its watchdog reports what it sees before it asks for the restart; CI's fresh
    // quick seed 2971744778003711 poisoned a second partition while the restart waited).
    let alarmed = lagging_before_the_heal(|r| {
        r.h.engine_alarm(
            5,
            Some(&tp(0)),
            Alarm::Poisoned {
                cancelled: false,
                directory: false,
                verify: false,
            },
            None,
        );
    });
    assert!(alarmed.hwm_persisted.violations.is_empty());
    assert_eq!(alarmed.hwm_persisted.poisoned, vec![(tp(0), 0)]);
    let elsewhere = lagging_before_the_heal(|r| {
        r.h.engine_alarm(
            5,
            Some(&tp(1)),
            Alarm::Poisoned {
                cancelled: false,
                directory: false,
                verify: false,
            },
            None,
        );
    });
    assert!(!elsewhere.hwm_persisted.violations.is_empty());
    // Another loop dropped changes nothing.
    let flusher = lagging_before_the_heal(|r| {
        r.h.fault(
            5,
            FaultKind::Cancel {
                request: cafelog_sim::history::RequestKind::Loop,
            },
            None,
            Some("flusher"),
        );
    });
    assert!(!flusher.hwm_persisted.violations.is_empty());
}
