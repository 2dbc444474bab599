//! `bounded_duplicates`: hidden-tail budgets.

use super::*;

#[test]
fn bounded_duplicates_fires_on_any_duplicate_in_a_crash_free_run() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .deliver(1, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@1",
            "a crash-free run has no duplicates",
        ],
    );
}

#[test]
fn redelivery_of_one_offset_is_not_a_duplicate() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .with(|t, h| {
            h.nack(t, &tp(0), 0);
        })
        .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2)
        .consume(0, 0);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.accounting.counts().duplicated, 0);
}

#[test]
fn hidden_tail_allows_exactly_its_size_in_duplicates_and_one_more_fails() {
    // clean_run has a hidden tail [1, 3) and both of its records duplicated.
    let mut r = clean_run();
    assert_clean(&r.report());
    // A third duplicate: id 1 (offset 0, below the persisted HWM) shows up again.
    r.deliver(1, 0, 6, 1_020).consume(0, 6);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@6",
            "orders/0 hidden tail [1, 3) does not hold offset 0, 2 of bound 2 used",
        ],
    );
    assert_eq!(report.bounded_duplicates.duplicates, 3);
}
