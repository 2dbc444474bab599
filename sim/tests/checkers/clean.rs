//! A clean history with a crash, a hidden tail and its duplicates passes every checker.

use super::*;

#[test]
fn clean_history_passes_every_checker() {
    let r = clean_run();
    let report = r.report();
    assert_clean(&report);
    let counts = report.accounting.counts();
    assert_eq!(counts.acknowledged, 6);
    assert_eq!(counts.delivered, 6);
    assert_eq!(counts.lost, 0);
    assert_eq!(counts.duplicated, 2);
    assert_eq!(counts.unexpected, 0);
    assert_eq!(counts.corrupt, 0);
    let crash = &report.bounded_duplicates.crashes[0];
    assert_eq!((crash.bound, crash.count), (2, 2));
    assert_eq!(report.delivered_after_heal.checked, 6);
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict, Verdict::Pass);
    assert_eq!(verdict.exit_code(), EXIT_PASS);
    assert_eq!(verdict.to_string(), "PASS");
}

#[test]
fn clean_history_survives_a_json_round_trip() {
    let r = clean_run();
    let json = serde_json::to_string(&r.h).expect("serialises");
    let back: History = serde_json::from_str(&json).expect("parses");
    assert_eq!(back, r.h);
    assert_clean(&check(&back, &CONFIG));
}
