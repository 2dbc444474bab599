//! `frontier_durable`: an open loads at least the last frontier the engine made durable
//! and at most one it began to write since.

use super::*;

impl Run {
    /// The engine's replace of orders/0's `consumer.offset` with `value`: begun, and
    /// (when `returned`) durable.
    fn persist(&mut self, value: u64, returned: bool) -> &mut Self {
        self.alarm(Some(0), Alarm::FrontierPersisting { value })
            .with(|t, h| {
                h.frontier_written(t, &tp(0), value);
            });
        if returned {
            self.alarm(Some(0), Alarm::FrontierPersisted { value });
        }
        self
    }

    /// An open of orders/0 that found the file holding `raw` and loaded `loaded`.
    fn loads(&mut self, raw: u64, loaded: u64) -> &mut Self {
        self.with(|t, h| {
            h.frontier_loaded(t, &tp(0), raw, loaded);
        })
    }
}

/// Ids 1..=6 at offsets 0..6 of orders/0, all acked; frontier 2 persisted (the replace
/// returned), then 4 begun and cut off by the crash.
fn persisted_then_crashed(second_returned: bool) -> Run {
    let mut r = Run::new();
    r.produced(6).hwm(0, 6, 6, 6);
    for offset in 0..6 {
        r.deliver(offset + 1, 0, offset, 1_000 + offset)
            .consume(0, offset);
    }
    r.persist(2, true).persist(4, second_returned);
    r.crash(&[(0, 6, 6, 6)]).restart().open_clean(0, 6, 6);
    r
}

#[test]
fn frontier_durable_fires_when_an_open_rewinds_past_a_durable_frontier() {
    let mut r = persisted_then_crashed(false);
    r.loads(2, 0);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::FrontierDurable),
        &[
            "frontier of orders/0 loaded as 0",
            "inc 1 is below 2, which the engine persisted",
            "no fault on consumer.offset",
        ],
    );
}

#[test]
fn the_last_durable_value_or_one_begun_since_is_accepted_nothing_above() {
    for loaded in [2, 4] {
        let mut r = persisted_then_crashed(false);
        r.loads(loaded, loaded);
        let report = r.report();
        assert_clean(&report);
        assert_eq!(report.frontier_durable.loads, 1);
        assert_eq!(report.frontier_durable.held_to_durable, 1);
    }
    // The replace of 4 returned: 2 is no longer enough.
    let mut r = persisted_then_crashed(true);
    r.loads(2, 2);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::FrontierDurable),
        &["loaded as 2", "is below 4"],
    );
    // 5 was never begun (the raw word agrees, so only this checker can see it).
    let mut r = persisted_then_crashed(false);
    r.loads(4, 5);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::FrontierDurable),
        &[
            "loaded as 5",
            "above every value the engine began to write",
            "(4)",
        ],
    );
}

/// Frontier 2 persisted, then the replace of 4 returned with a lost fsync of `file`
/// (of orders/0, reaching `reach`) while it ran; a crash, and an open that loads
/// `loaded`.
fn lost_fsync_while_persisting(
    file: FileKind,
    reach: Option<OffsetRange>,
    loaded: u64,
) -> CheckReport {
    let mut r = Run::new();
    r.produced(6).hwm(0, 6, 6, 6);
    for offset in 0..6 {
        r.deliver(offset + 1, 0, offset, 1_000 + offset)
            .consume(0, offset);
    }
    r.persist(2, true)
        .alarm(Some(0), Alarm::FrontierPersisting { value: 4 })
        .fault(
            FaultKind::LostFsync {
                file,
                offsets: reach,
            },
            Some(0),
        )
        .alarm(Some(0), Alarm::FrontierPersisted { value: 4 });
    r.crash(&[(0, 6, 6, 6)])
        .restart()
        .open_clean(0, 6, 6)
        .loads(loaded, loaded);
    r.report()
}

#[test]
fn a_lost_directory_fsync_can_undo_the_rename_back_to_the_durable_value_only() {
    let run = |loaded| lost_fsync_while_persisting(FileKind::Other, None, loaded);
    let report = run(2);
    assert_clean(&report);
    assert_eq!(report.frontier_durable.excused.len(), 1);
    assert!(
        report.frontier_durable.excused[0]
            .to_string()
            .starts_with("out_of_contract")
    );
    assert_mentions(
        &fires_only(&run(0), CheckerName::FrontierDurable),
        &["loaded as 0", "is below 2"],
    );
}

#[test]
fn a_lost_fsync_of_the_word_excuses_only_its_reach() {
    // The temp file's data was lost, not the rename: only the reach the world computed
    // (the durable value 2 up to 4) excuses a lower value.
    let reach = Some(OffsetRange { start: 2, end: 4 });
    let run = |loaded| lost_fsync_while_persisting(FileKind::ConsumerOffset, reach, loaded);
    let report = run(2);
    assert!(messages_of(&report, CheckerName::FrontierDurable).is_empty());
    assert_eq!(report.frontier_durable.excused.len(), 1);
    assert_mentions(
        &messages_of(&run(0), CheckerName::FrontierDurable),
        &["loaded as 0", "is below 4"],
    );
}

#[test]
fn the_engines_reset_at_load_must_land_on_the_log_start_it_names() {
    // A flip of the word after the last replace: no durable bound is left, and the
    // engine's reset (its cause) puts the frontier at the log start, nowhere else.
    let run = |loaded: u64| {
        let mut r = persisted_then_crashed(true);
        r.fault(
            FaultKind::BitFlip {
                file: FileKind::ConsumerOffset,
                offsets: None,
                below_hwm: None,
            },
            Some(0),
        )
        .alarm(Some(0), Alarm::FrontierReset { log_start: 0 })
        .loads(0, loaded);
        r.report()
    };
    let report = run(0);
    assert!(messages_of(&report, CheckerName::FrontierDurable).is_empty());
    assert_eq!(report.frontier_durable.excused.len(), 1);
    assert_mentions(
        &messages_of(&run(3), CheckerName::FrontierDurable),
        &[
            "loaded as 3",
            "after the engine reset it to the log start 0",
        ],
    );
}

#[test]
fn a_fault_before_the_durable_replace_causes_no_reset() {
    // The flip came before the replace of 2 and 4 rewrote the file: nothing excuses a
    // reset, here or in `alarms_explained`.
    let mut r = Run::new();
    r.produced(6).hwm(0, 6, 6, 6);
    for offset in 0..6 {
        r.deliver(offset + 1, 0, offset, 1_000 + offset)
            .consume(0, offset);
    }
    r.fault(
        FaultKind::BitFlip {
            file: FileKind::ConsumerOffset,
            offsets: None,
            below_hwm: None,
        },
        Some(0),
    )
    .persist(2, true)
    .persist(4, true)
    .crash(&[(0, 6, 6, 6)])
    .restart()
    .open_clean(0, 6, 6)
    .alarm(Some(0), Alarm::FrontierReset { log_start: 0 })
    .loads(0, 0);
    let report = r.report();
    assert_mentions(
        &messages_of(&report, CheckerName::FrontierDurable),
        &["loaded as 0", "is below 4"],
    );
    assert_mentions(
        &messages_of(&report, CheckerName::AlarmsExplained),
        &["frontier_reset", "no fault on its consumer.offset"],
    );
}

#[test]
fn a_replace_reported_durable_that_never_began_is_a_violation() {
    let mut r = Run::new();
    r.alarm(Some(0), Alarm::FrontierPersisted { value: 3 });
    assert_mentions(
        &fires_only(&r.report(), CheckerName::FrontierDurable),
        &[
            "reported frontier 3 of orders/0 persisted",
            "without having begun",
        ],
    );
}

#[test]
fn an_open_killed_in_its_own_clamp_may_leave_the_lower_value() {
    // The open after a loss clamps the word from 4 down to 3 and dies before the
    // replace returns: its rename may have landed, so 3 is as good as 4; 2 is not.
    let run = |loaded: u64| {
        let mut r = persisted_then_crashed(true);
        r.persist(3, false)
            .crash(&[(0, 6, 6, 6)])
            .restart()
            .open_clean(0, 6, 6)
            .loads(loaded, loaded);
        r.report()
    };
    let report = run(3);
    assert!(messages_of(&report, CheckerName::FrontierDurable).is_empty());
    // No fault was needed to get there: nothing is excused.
    assert!(report.frontier_durable.excused.is_empty());
    assert_mentions(
        &messages_of(&run(2), CheckerName::FrontierDurable),
        &["loaded as 2", "is below 3"],
    );
}
