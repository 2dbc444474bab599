//! `woken_promptly`: a receive parked when a record becomes deliverable to it (commit,
//! nack, expired lease, opened delay gate) answers within the wake bound (50 ms here),
//! unless another consumer took the record; and each exit of the rule (a crash in the
//! window, slow I/O before the heal, a skip, a reap, the end of the history) is
//! needed and no wider.

use super::*;

impl Run {
    /// A receive of orders/0 asked at `asked` that came back empty now.
    fn empty_receive(&mut self, asked: u64) -> &mut Self {
        self.with(|t, h| {
            h.receive_empty(t, &tp(0), asked, None);
        })
    }

    /// Id `id` at `offset` of orders/0 delivered now to a receive asked at `asked`.
    fn deliver_asked(
        &mut self,
        id: ProduceId,
        offset: u64,
        commit_ms: u64,
        asked: u64,
    ) -> &mut Self {
        self.deliver(id, 0, offset, commit_ms).with_last(|h| {
            h.asked_at(asked);
        })
    }

    /// Runs `f` on the history without moving the clock (for the event just recorded).
    fn with_last(&mut self, f: impl FnOnce(&mut History)) -> &mut Self {
        f(&mut self.h);
        self
    }
}

/// A topic without a delay gate (leases of 300 ms); a consumer's receive of orders/0
/// parks at t=0; id 1 is acknowledged at offset 0 at t=20 (made deliverable).
/// `io_latency_max_ms`: how long the disk may sleep per operation until the heal, at
/// `heal_at` (before the ack at 0, else just after it).
fn parked_then_committed_healing(io_latency_max_ms: u64, heal_at: Option<u64>) -> Run {
    let mut r = Run::new();
    let topic = cafelog_sim::history::TopicSetup {
        name: "orders".into(),
        partitions: 2,
        delay_ms: 0,
        lease_ms: 300,
        retention_ms: None,
        hwm_persist_ms: None,
        reaper_interval_ms: None,
    };
    r.h.run_started(0, 0, vec![topic], io_latency_max_ms, None, false);
    if heal_at == Some(0) {
        r.h.heal(0);
    }
    r.attempt(1, 0);
    let t = r.now();
    r.h.produce_ack(t, 1, &tp(0), Some(0), None);
    if let Some(at) = heal_at.filter(|&at| at > 0) {
        r.h.heal(at);
        r.t = at;
    }
    r
}

fn parked_then_committed(io_latency_max_ms: u64) -> Run {
    parked_then_committed_healing(io_latency_max_ms, None)
}

#[test]
fn a_commit_wakes_the_parked_receive_within_the_bound() {
    // The receive asked at t=0 (before the attempt at 10, the ack at 20).
    let woken_after = |wait: u64| {
        let mut r = parked_then_committed(0);
        r.wait(wait)
            .deliver_asked(1, 0, 15, 0)
            .wait(500)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    let report = woken_after(0);
    assert_clean(&report);
    assert_eq!(report.woken_promptly.timed_by_cause.get("commit"), Some(&1));
    assert_mentions(
        &fires_only(&woken_after(100), CheckerName::WokenPromptly),
        &[
            "orders/0 offset 0 deliverable from t=20ms (committed, acked at t=20ms)",
            "a receive asked at t=0ms waited until t=130ms, delivered only at t=130ms",
            "more than 50 ms (the wake bound) after t=20ms",
        ],
    );
}

#[test]
fn a_park_that_times_out_empty_over_a_deliverable_record_missed_its_wake_up() {
    // Parked from t=0, empty at t=200 although id 1 was deliverable from t=20; the next
    // receive gets it at once.
    let mut r = parked_then_committed(0);
    r.wait(160).empty_receive(0);
    let asked = r.t;
    r.deliver_asked(1, 0, 15, asked).wait(500).hwm(0, 1, 1, 1);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::WokenPromptly),
        &[
            "a receive asked at t=0ms waited until t=190ms",
            "not delivered before t=200ms",
        ],
    );
    // A park that ended (timed out at t=50) before the record was due owes nothing
    // more: the receives asked later are the next rule's business (none was waiting).
    let mut r = parked_then_committed(0);
    r.wait(20).empty_receive(0).wait(30);
    let asked = r.t;
    r.deliver_asked(1, 0, 15, asked).wait(500).hwm(0, 1, 1, 1);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.woken_promptly.timed, 1);
}

#[test]
fn another_consumer_taking_the_record_in_time_satisfies_the_rule() {
    // The parked receive stays parked (another receive took the record at t=40).
    let mut r = parked_then_committed(0);
    r.deliver_asked(1, 0, 15, 25).wait(300).empty_receive(0);
    r.wait(500).hwm(0, 1, 1, 1);
    assert_clean(&r.report());
}

#[test]
fn a_receive_asked_after_the_record_became_deliverable_finds_it_at_once() {
    let asked_late = |park: bool| {
        let mut r = parked_then_committed(0);
        r.wait(400);
        let asked = r.t;
        if park {
            r.wait(190).empty_receive(asked);
        }
        let again = r.t;
        r.deliver_asked(1, 0, 15, again).wait(500).hwm(0, 1, 1, 1);
        r.report()
    };
    let report = asked_late(false);
    assert_clean(&report);
    assert_eq!(report.woken_promptly.timed, 1);
    // Parked for 200 ms although the record was deliverable when it asked.
    assert_mentions(
        &fires_only(&asked_late(true), CheckerName::WokenPromptly),
        &[
            "a receive asked at t=420ms waited until t=620ms, not delivered before t=630ms",
            "after t=420ms",
        ],
    );
}

#[test]
fn a_nack_wakes_the_parked_receive() {
    // Delivered at t=30 (asked at 25), nacked at 40; a second receive parks from 35.
    let run = |wait: u64| {
        let mut r = parked_then_committed(0);
        r.deliver_asked(1, 0, 15, 25)
            .with(|t, h| {
                h.nack(t, &tp(0), 0);
            })
            .wait(wait)
            .deliver_asked(1, 0, 15, 35)
            .consume(0, 0)
            .wait(500)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    assert_clean(&run(0));
    assert_mentions(
        &fires_only(&run(100), CheckerName::WokenPromptly),
        &[
            "deliverable from t=40ms (nacked at t=40ms)",
            "waited until t=150ms",
        ],
    );
    // An ack the engine accepted after the nack (a consumer settling the delivery it
    // got before a restart: acks name offsets) settled the record: nothing was owed
    // (quick seed 769).
    let mut r = parked_then_committed(0);
    r.deliver_asked(1, 0, 15, 25)
        .with(|t, h| {
            h.nack(t, &tp(0), 0);
        })
        .consume(0, 0)
        .wait(200)
        .empty_receive(35)
        .wait(500)
        .hwm(0, 1, 1, 1);
    assert_clean(&r.report());
}

#[test]
fn an_expired_lease_wakes_the_parked_receive_at_the_next_tick() {
    // Delivered at t=30 (lease 300 ms, ticker 10 ms): deliverable again by t=341;
    // a receive parked from t=35.
    let run = |wait: u64| {
        let mut r = parked_then_committed(0);
        r.deliver_asked(1, 0, 15, 25)
            .wait(wait)
            .deliver_asked(1, 0, 15, 35)
            .consume(0, 0)
            .wait(500)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    // Redelivered at t=340 and t=380: both by t=391.
    assert_clean(&run(300));
    assert_clean(&run(340));
    assert_mentions(
        &fires_only(&run(400), CheckerName::WokenPromptly),
        &[
            "deliverable from t=341ms (its lease from t=30ms expired)",
            "waited until t=440ms",
            "after t=341ms",
        ],
    );
    // Acked before it expired: nothing owed.
    let mut r = parked_then_committed(0);
    r.deliver_asked(1, 0, 15, 25)
        .wait(100)
        .consume(0, 0)
        .wait(700)
        .empty_receive(35)
        .hwm(0, 1, 1, 1);
    assert_clean(&r.report());
}

#[test]
fn an_opened_delay_gate_wakes_the_parked_receive() {
    // Delay 100 ms, wall clock at 0 when the run starts: id 1 committed at 15 opens at
    // wall 115, noticed by the tick by t=126. A receive parked from t=0.
    let run = |at: u64| {
        let mut r = Run::with_setup(0, 100, 30_000);
        r.produce(1, 0, 0, 15);
        r.t = at;
        r.deliver_asked(1, 0, 15, 0)
            .consume(0, 0)
            .wait(500)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    assert_clean(&run(160));
    // Never delivered before a crash, the commit time unknown: the gate is open by the
    // ack plus the delay (the engine's clock runs at least as fast as simulated time),
    // noticed by t=131.
    let mut r = Run::with_setup(0, 100, 30_000);
    r.produce(1, 0, 0, 15);
    r.t = 180;
    r.empty_receive(0).crash(&[(0, 1, 1, 1)]);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::WokenPromptly),
        &[
            "deliverable from t=131ms (its delay gate open, acked at t=20ms)",
            "waited until t=190ms",
        ],
    );
    assert_mentions(
        &fires_only(&run(200), CheckerName::WokenPromptly),
        &[
            "deliverable from t=126ms (its delay gate open, acked at t=20ms)",
            "waited until t=210ms",
            "after t=126ms",
        ],
    );
}

#[test]
fn a_receive_the_crash_killed_waited_until_the_crash() {
    // Parked from t=0 and killed with the node at `killed_at`; id 1 deliverable from 20.
    let killed_at = |at: u64| {
        let mut r = parked_then_committed(0);
        r.t = at - 10;
        r.with(|t, h| {
            h.receive_killed(t, &tp(0), 0);
        })
        .crash(&[(0, 1, 1, 1)])
        .restart();
        let asked = r.t;
        r.deliver_asked(1, 0, 15, asked).wait(500).hwm(0, 1, 1, 1);
        r.report()
    };
    assert_clean(&killed_at(60));
    assert_mentions(
        &fires_only(&killed_at(100), CheckerName::WokenPromptly),
        &["a receive asked at t=0ms waited until t=100ms, not delivered since"],
    );
    // A receive still waiting when the history ends is not judged.
    let mut r = parked_then_committed(0);
    r.wait(500).hwm(0, 1, 1, 1);
    assert!(messages_of(&r.report(), CheckerName::WokenPromptly).is_empty());
}

#[test]
fn slow_io_is_judged_only_from_when_the_disk_answers_at_once() {
    // I/O may sleep up to 20 ms per operation until the heal, before and after its
    // effect, and the ticker's next round comes a tick (10 ms) later: a wait counts from
    // the heal plus 50 ms. The receive parked from t=0 answers empty at `empty_at`.
    let late = |heal_at: u64, empty_at: u64| {
        let mut r = parked_then_committed_healing(20, Some(heal_at));
        r.t = empty_at - 10;
        r.empty_receive(0);
        let asked = r.t;
        r.deliver_asked(1, 0, 15, asked)
            .consume(0, 0)
            .wait(500)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    // Healed at 21: calm from 71, and 39 ms of calm waiting is within the bound.
    let report = late(21, 110);
    assert_clean(&report);
    assert_eq!(report.woken_promptly.not_judged, 1);
    // 70 ms of calm waiting is not, though the record became deliverable before.
    assert_mentions(
        &fires_only(&late(21, 141), CheckerName::WokenPromptly),
        &["waited until t=141ms", "after t=71ms"],
    );
    // Healed at t=0: calm from 50.
    assert_mentions(
        &fires_only(&late(0, 110), CheckerName::WokenPromptly),
        &["waited until t=110ms", "after t=50ms"],
    );
}

/// A frontier the engine loaded on first touch above the record settles it (a flip of
/// `consumer.offset` after the open can put it there: fresh quick seed
/// 682641406004225); one at or below it does not.
#[test]
fn a_frontier_loaded_above_the_record_ends_the_obligation() {
    for (loaded, ends) in [(1, true), (0, false)] {
        let mut r = parked_then_committed(0);
        r.with(|t, h| {
            h.frontier_loaded(t, &tp(0), 1, loaded);
        })
        .wait(200)
        .empty_receive(0)
        .wait(500)
        .hwm(0, 1, 1, 1);
        let report = r.report();
        assert_eq!(
            messages_of(&report, CheckerName::WokenPromptly).is_empty(),
            ends,
            "loaded {loaded}"
        );
        assert_eq!(report.woken_promptly.ended_by_engine, u64::from(ends));
    }
}

#[test]
fn a_skip_or_a_reap_of_the_record_ends_the_obligation() {
    // The engine skipped the frame holding offset 0 (its alarm): nothing to deliver.
    let mut r = parked_then_committed(0);
    r.alarm(
        Some(0),
        Alarm::FrameSkipped {
            base: 0,
            records: 1,
        },
    )
    .wait(200)
    .empty_receive(0)
    .wait(500)
    .hwm(0, 1, 1, 1);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::WokenPromptly).is_empty());
    assert_eq!(report.woken_promptly.ended_by_engine, 1);
    // A skip of another frame does not.
    let mut r = parked_then_committed(0);
    r.alarm(
        Some(0),
        Alarm::FrameSkipped {
            base: 1,
            records: 1,
        },
    )
    .wait(200)
    .empty_receive(0)
    .wait(500)
    .hwm(0, 1, 1, 1);
    assert!(!messages_of(&r.report(), CheckerName::WokenPromptly).is_empty());
    // The reaper deleted segment 0 (offset 0; segment 1 follows) after the open and
    // before the record was due; the same unlink after the window does not count.
    let reaped_at = |wait: u64| {
        let mut r = parked_then_committed(0);
        r.opened(0, 0, 0)
            .segment(0, true)
            .segment(1, true)
            .wait(wait)
            .reap(0)
            .wait(300)
            .empty_receive(0)
            .wait(500)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    let report = reaped_at(0);
    assert!(messages_of(&report, CheckerName::WokenPromptly).is_empty());
    assert_eq!(report.woken_promptly.ended_by_engine, 1);
    assert!(!messages_of(&reaped_at(100), CheckerName::WokenPromptly).is_empty());
}

#[test]
fn a_wait_within_the_bound_is_never_a_violation_even_if_the_record_never_comes() {
    // The receive came back empty 30 ms after the record became deliverable; the
    // history ends there (what became of the record is `no_lost_ack`'s to judge).
    let mut r = parked_then_committed(0);
    r.wait(20).empty_receive(0);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::WokenPromptly).is_empty());
    assert_eq!(report.woken_promptly.timed, 1);
}
