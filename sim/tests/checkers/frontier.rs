//! `frontier_safe`.

use super::*;

fn frontier_recovered_as(value: u64) -> Run {
    let mut r = Run::new();
    for (id, offset) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
        r.produce(id, 0, offset, 1_000 + offset)
            .deliver(id, 0, offset, 1_000 + offset)
            .consume(0, offset);
        if offset % 2 == 1 {
            r.with(|t, h| {
                h.frontier_written(t, &tp(0), offset + 1);
            });
        }
    }
    r.hwm(0, 4, 4, 4)
        .crash(&[(0, 4, 4, 4)])
        .restart()
        .hwm(0, 4, 4, 4)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), value);
        });
    r
}

#[test]
fn frontier_safe_fires_when_the_frontier_passes_an_unacked_offset() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 0)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 2);
        })
        .consume(0, 1);
    let messages = fires_only(&r.report(), CheckerName::FrontierSafe);
    assert_mentions(
        &messages,
        &[
            "frontier of orders/0 written as 2",
            "passes unacknowledged offset 1",
        ],
    );
}

#[test]
fn frontier_safe_accepts_an_old_or_new_value_and_fires_on_a_torn_one() {
    assert_clean(&frontier_recovered_as(2).report());
    assert_clean(&frontier_recovered_as(4).report());
    assert_clean(&frontier_recovered_as(0).report());
    let messages = fires_only(
        &frontier_recovered_as(3).report(),
        CheckerName::FrontierSafe,
    );
    assert_mentions(
        &messages,
        &[
            "frontier of orders/0 recovered as 3",
            "was never written (torn?)",
            "[2, 4]",
        ],
    );
    // A torn high word: never written and far past any ack.
    let torn = (1 << 32) | 2;
    let messages = fires_only(
        &frontier_recovered_as(torn).report(),
        CheckerName::FrontierSafe,
    );
    assert_mentions(
        &messages,
        &["recovered as 4294967298", "passes unacknowledged offset 4"],
    );
    assert_mentions(&messages, &["recovered as 4294967298", "never written"]);
}

#[test]
fn a_frontier_may_pass_a_segment_the_reaper_deleted_before_the_log_start_is_sampled() {
    // Fresh quick seed 160017591: the reaper deleted segment 0 (offsets 0 and 1, id 2
    // never acked), the engine moved its frontier to 2 at once, and the partition was
    // refused at every later open, so no log start was ever sampled past 0.
    let run = |reap: bool| {
        let mut r = Run::two_segments(10);
        r.deliver(1, 0, 0, 15).consume(0, 0).wait(100);
        if reap {
            r.reap(0);
        }
        r.with(|t, h| {
            h.frontier_written(t, &tp(0), 2);
        });
        r.report()
    };
    assert!(messages_of(&run(true), CheckerName::FrontierSafe).is_empty());
    assert_mentions(
        &messages_of(&run(false), CheckerName::FrontierSafe),
        &["written as 2", "passes unacknowledged offset 1"],
    );
}

/// orders/0: ids 1-4 at offsets 0-3, offsets 0-2 acknowledged, frontier 2 written. A
/// flip takes `consumer.offset` 2 -> 1026; then, with `overwritten`, the engine writes
/// frontier 3 and a crash and an open that reads 3 back follow (the write lasted; no open
/// ever read the flip), else a crash and an open that reads the flip's 1026 and clamps
/// it to 4. Then the engine writes frontier 4 over unacknowledged offset 3.
fn frontier_past_a_flip(overwritten: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 4, 4);
    for offset in 0..3 {
        r.deliver(offset + 1, 0, offset, 1_000 + offset)
            .consume(0, offset);
    }
    r.frontier_written(0, 2)
        .fault(offset_flip(2, 1026), Some(0));
    if overwritten {
        r.frontier_written(0, 3)
            .crash(&[(0, 4, 4, 4)])
            .restart()
            .open_clean(0, 4, 4)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 3);
            });
    } else {
        r.crash(&[(0, 4, 4, 4)])
            .restart()
            .open_clean(0, 4, 4)
            .frontier_clamped(0, 1026, 4);
    }
    r.frontier_written(0, 4);
    r
}

/// A flip excuses frontiers past unacknowledged offsets in its range only once an open
/// read it: one the engine overwrote first moved nothing (helper-35, 2026-12-05).
#[test]
fn a_flip_no_open_read_excuses_no_frontier() {
    let messages = fires_only(
        &frontier_past_a_flip(true).report(),
        CheckerName::FrontierSafe,
    );
    assert_mentions(
        &messages,
        &["written as 4", "passes unacknowledged offset 3"],
    );
    assert!(
        messages_of(
            &frontier_past_a_flip(false).report(),
            CheckerName::FrontierSafe
        )
        .is_empty()
    );
}

/// Offsets 0-3 delivered and acked, the frontier written as 2 and 4; a crash, and the
/// open loads `loaded`; then offset `offset` (id `offset + 1`) is delivered again,
/// before the world saw the load when `early`.
fn delivered_after_load(loaded: u64, offset: u64, early: bool) -> CheckReport {
    let mut r = frontier_recovered_as(4);
    let id = offset + 1;
    if early {
        r.deliver(id, 0, offset, 1_000 + offset);
    }
    r.with(|t, h| {
        h.frontier_loaded(t, &tp(0), 4, loaded);
    });
    if !early {
        r.deliver(id, 0, offset, 1_000 + offset);
    }
    r.report()
}

#[test]
fn nothing_below_the_frontier_an_open_loaded_is_delivered_again() {
    let report = delivered_after_load(4, 3, false);
    assert_mentions(
        &messages_of(&report, CheckerName::FrontierSafe),
        &[
            "orders/0 delivered offset 3",
            "inc 1",
            "below the frontier 4 the engine loaded there",
        ],
    );
    assert_eq!(report.frontier_safe.deliveries_above_loaded, 1);
    // At the loaded frontier, or before the world saw the load: not this rule's.
    for report in [
        delivered_after_load(3, 3, false),
        delivered_after_load(4, 3, true),
    ] {
        assert!(
            messages_of(&report, CheckerName::FrontierSafe)
                .iter()
                .all(|m| !m.contains("the engine loaded there")),
            "{:?}",
            messages_of(&report, CheckerName::FrontierSafe)
        );
    }
}
