//! Frontiers loaded on first touch: `frontier_safe` holds every delivery to a load the
//! engine reported in its incarnation, and `frontier_durable` holds a running
//! incarnation's replaces to the word its open left (rule 3) and bounds a late load by
//! the log start retention left.

use super::*;

impl Run {
    /// orders/0's `consumer.offset` replaced with `value` by the engine: begun and
    /// returned.
    pub(super) fn replaced(&mut self, value: u64) -> &mut Self {
        self.alarm(Some(0), Alarm::FrontierPersisting { value })
            .with(|t, h| {
                h.frontier_written(t, &tp(0), value);
            })
            .alarm(Some(0), Alarm::FrontierPersisted { value })
    }

    /// The engine's account of loading orders/0's frontier: the word read, `loaded`.
    pub(super) fn loaded(&mut self, raw: u64, loaded: u64) -> &mut Self {
        self.alarm(Some(0), Alarm::FrontierLoaded { loaded })
            .with(|t, h| {
                h.frontier_loaded(t, &tp(0), raw, loaded);
            })
    }
}

/// Ids 1..=6 at offsets 0..6 of orders/0, all acked, frontier 4 durable; a crash, and
/// the open left the word at 4 (its observation, before any load).
fn reopened_with_word_4() -> Run {
    let mut r = Run::new();
    acked_4_durable_then_reopened(&mut r).frontier_seen(0, 4);
    r
}

/// Ids 1..=6 at offsets 0..6 of orders/0, all acked, frontier 4 durable; a crash and a
/// clean open (HWM 6), not yet up.
pub(super) fn acked_4_durable_then_reopened(r: &mut Run) -> &mut Run {
    r.produced(6).hwm(0, 6, 6, 6);
    for offset in 0..6 {
        r.deliver(offset + 1, 0, offset, 1_000 + offset)
            .consume(0, offset);
    }
    r.replaced(4)
        .crash(&[(0, 6, 6, 6)])
        .restart()
        .open_clean(0, 6, 6)
}

#[test]
fn a_replace_below_the_word_the_open_left_gives_back_durable_consumption() {
    // Before any load (a persister writing a queue it never loaded) and after one.
    for load_first in [false, true] {
        let mut r = reopened_with_word_4();
        if load_first {
            r.loaded(4, 4);
        }
        let report = r.replaced(0).report();
        let messages = fires_only(&report, CheckerName::FrontierDurable);
        assert_mentions(
            &messages,
            &[
                "began to write frontier 0",
                "inc 1",
                "below 4, the word its open left",
            ],
        );
        // The replace before the crash had no open of its incarnation to hold it to.
        assert_eq!(report.frontier_durable.replaces_held, 1);
    }
    // At or above the word: nothing.
    let mut r = reopened_with_word_4();
    r.loaded(4, 4).replaced(4).replaced(6);
    assert_clean(&r.report());
}

#[test]
fn a_replace_below_one_begun_earlier_in_the_incarnation_is_a_violation() {
    let mut r = reopened_with_word_4();
    r.loaded(4, 4).replaced(6).replaced(5);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::FrontierDurable),
        &[
            "began to write frontier 5",
            "below 6, a value it began to write earlier",
        ],
    );
}

#[test]
fn the_opens_own_clamp_is_not_held_to_the_word_it_lowers() {
    // The open read 9 above its HWM 6 and lowered the word before it came up: only its
    // `frontier_clamped` account speaks for that replace; rule 3's floor is the word
    // the open left.
    let mut r = Run::new();
    r.produced(6).hwm(0, 6, 6, 6);
    r.crash(&[(0, 6, 6, 6)]).restart().open_clean(0, 6, 6);
    r.alarm(
        Some(0),
        Alarm::FrontierClamped {
            value: 9,
            clamped: 6,
        },
    )
    .replaced(6)
    .frontier_seen(0, 6);
    let report = r.report();
    assert!(
        messages_of(&report, CheckerName::FrontierDurable).is_empty(),
        "{:?}",
        messages_of(&report, CheckerName::FrontierDurable)
    );
    assert_eq!(report.frontier_durable.replaces_held, 0);
}

#[test]
fn only_a_flip_of_the_word_the_open_or_the_load_read_excuses_a_lowered_replace() {
    // A flip after the open moves the word a load on first touch reads.
    for flip in [true, false] {
        let mut r = reopened_with_word_4();
        if flip {
            r.fault(offset_flip(1, 4), Some(0));
        }
        let report = r.loaded(1, 1).replaced(1).report();
        let lowered = messages_of(&report, CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains("began to write frontier 1"));
        assert_eq!(lowered, !flip, "flip {flip}: {:?}", report.frontier_durable);
        assert_eq!(
            report
                .frontier_durable
                .excused
                .iter()
                .any(|e| e.covers.contains("replace 1 below 4")),
            flip
        );
    }
}

#[test]
fn a_flip_after_the_load_excuses_no_lowered_replace() {
    let mut r = reopened_with_word_4();
    r.loaded(4, 4).fault(offset_flip(1, 4), Some(0)).replaced(1);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::FrontierDurable),
        &["began to write frontier 1", "below 4"],
    );
}

#[test]
fn an_unreadable_word_is_judged_at_the_load_that_reads_it() {
    // The open left a word that is not one; the load reset to the log start first.
    let mut r = reopened_with_word_4();
    r.frontier_seen(0, u64::MAX)
        .alarm(Some(0), Alarm::FrontierReset { log_start: 0 })
        .loaded(u64::MAX, 0);
    assert!(messages_of(&r.report(), CheckerName::FrontierSafe).is_empty());
    // A load that took it without a reset passes every unacknowledged offset.
    let mut r = reopened_with_word_4();
    r.frontier_seen(0, u64::MAX).loaded(u64::MAX, 6);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::FrontierSafe),
        &["recovered as 18446744073709551615"],
    );
}

/// A run whose history says every load is reported, with ids 1..=3 at offsets 0..3.
fn reporting_run() -> Run {
    let mut r = reporting_start();
    r.produced(3).hwm(0, 3, 3, 3);
    r
}

/// A run whose history says every load (and every open's word) is reported.
pub(super) fn reporting_start() -> Run {
    let mut r = Run::new();
    r.h.run_started(0, 0, vec![orders_topic(0, 30_000)], 0, None, true);
    r
}

#[test]
fn a_delivery_before_its_incarnation_reported_a_load_is_a_violation() {
    let mut r = reporting_run();
    r.deliver(1, 0, 0, 1_000);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::FrontierSafe),
        &[
            "orders/0 delivered offset 0",
            "inc 0 before the engine reported loading",
        ],
    );
    // A load of the previous incarnation does not do for this one.
    let mut r = reporting_run();
    r.loaded(0, 0)
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .open_clean(0, 3, 3)
        .frontier_seen(0, 0)
        .deliver(1, 0, 0, 1_000);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::FrontierSafe),
        &["inc 1 before the engine reported loading"],
    );
    // Loaded first: held to the load, and clean.
    let mut r = reporting_run();
    r.loaded(0, 0).deliver(1, 0, 0, 1_000);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::FrontierSafe).is_empty());
    assert_eq!(report.frontier_safe.deliveries_above_loaded, 1);
    // Histories that predate the account are not held to it.
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).deliver(1, 0, 0, 1_000);
    assert!(messages_of(&r.report(), CheckerName::FrontierSafe).is_empty());
}

#[test]
fn a_load_after_retention_moved_the_log_start_may_start_there_and_no_higher() {
    // Nothing ever persisted; retention moved the log start to 3 before the first
    // touch, so the engine clamps the absent word's 0 up to it.
    for (loaded, fires) in [(3, false), (4, true)] {
        let mut r = Run::new();
        r.produced(6).hwm(0, 6, 6, 6);
        r.crash(&[(0, 6, 6, 6)]).restart().open_clean(0, 6, 6);
        r.frontier_seen(0, 0)
            .alarm(
                Some(0),
                Alarm::LogStartMoved {
                    from: 0,
                    log_start: 3,
                },
            )
            .loaded(0, loaded);
        let above = messages_of(&r.report(), CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains("is above every value the engine began to write"));
        assert_eq!(above, fires, "loaded {loaded}");
    }
}

#[test]
fn an_answer_no_consumer_claimed_is_held_to_the_load_too() {
    for (offset, fires) in [(3, true), (4, false)] {
        let mut r = reopened_with_word_4();
        r.loaded(4, 4).with(|t, h| {
            h.deliveries_unclaimed(
                t,
                &tp(0),
                vec![5, offset],
                vec![Some(6), Some(offset + 1)],
                t,
            );
        });
        let report = r.report();
        let below = messages_of(&report, CheckerName::FrontierSafe)
            .iter()
            .any(|m| {
                m.contains(&format!("delivered offset {offset}"))
                    && m.contains("below the frontier 4")
            });
        assert_eq!(below, fires, "offset {offset}");
        assert_eq!(report.frontier_safe.deliveries_above_loaded, 2);
    }
}
