//! `frontier_progress`: after the heal the `consumer.offset` word on the platter
//! follows the acks within the frontier persister's interval, a tick and 250 ms; only
//! offsets delivered and acked in the incarnation count, capped by the persisted HWM.

use super::*;
use cafelog_sim::history::{FileKind, TopicSetup};

/// Topic `orders` (1 partition), frontier persister every 100 ms (`None`: not
/// recorded): a bound of 360 ms. The open loaded frontier `loaded` at t=5.
fn setup_loaded(interval: Option<u64>, loaded: u64) -> Run {
    setup_on_disk(interval, loaded, 0)
}

/// [`setup_loaded`] on a disk that may sleep up to `latency_ms` per operation until
/// the heal.
fn setup_on_disk(interval: Option<u64>, loaded: u64, latency_ms: u64) -> Run {
    let mut r = Run::new();
    let topic = TopicSetup {
        name: "orders".into(),
        partitions: 1,
        delay_ms: 0,
        lease_ms: 30_000,
        retention_ms: None,
        hwm_persist_ms: None,
        reaper_interval_ms: None,
    };
    r.h.run_started(0, 0, vec![topic], latency_ms, interval, false);
    r.h.frontier_loaded(5, &tp(0), loaded, loaded);
    r.t = 10;
    r
}

/// [`setup_loaded`] from frontier 0.
fn setup(interval: Option<u64>) -> Run {
    setup_loaded(interval, 0)
}

/// Ids 1..=3 at offsets 0..3, each delivered (`delivered`) and acked, the last ack at
/// t=130.
fn acked(r: &mut Run, delivered: bool) {
    for id in 1..=3 {
        let commit = r.t + 15;
        r.produce(id, 0, id - 1, commit);
        if delivered {
            r.deliver(id, 0, id - 1, commit);
        }
        r.consume(0, id - 1);
    }
}

/// HWM 3, persisted `persisted`, shown at t=135; the heal at t=140 (words are judged
/// from 500 on); then samples every 100 ms over `[200, 1000]`, the word on disk `early`
/// until `from`, then `late`.
fn samples(r: &mut Run, persisted: u64, early: u64, from: u64, late: u64) {
    r.h.hwm_observed(135, &tp(0), 3, Some(persisted), None);
    r.h.heal(140);
    for at in (200..=1_000).step_by(100) {
        r.h.hwm_observed(at, &tp(0), 3, Some(persisted), None);
        let word = if at >= from { late } else { early };
        r.h.frontier_word_observed(at, &tp(0), Some(word));
    }
    r.t = 1_000;
}

/// The acks of offsets 0..3 done by t=100, every offset persisted; the word 3 from
/// `from` on, 0 before.
fn persisted_from(from: u64) -> CheckReport {
    let mut r = setup(Some(100));
    acked(&mut r, true);
    samples(&mut r, 3, 0, from, 3);
    r.report()
}

#[test]
fn a_frontier_word_that_never_follows_the_acks_fires() {
    let report = persisted_from(u64::MAX);
    let messages = fires_only(&report, CheckerName::FrontierProgress);
    assert_mentions(
        &messages,
        &[
            "orders/0: offsets below 3 were acked by t=",
            "`consumer.offset` word on disk was still 0 at t=500ms",
            "frontier_persist_interval 100ms, bound 360ms",
        ],
    );
    assert!(CheckerName::FrontierProgress.is_liveness());
}

#[test]
fn a_word_within_the_bound_passes_and_one_sample_later_fails() {
    // The last ack at t=130: a word read at 500 owes it (130 + 360 <= 500).
    let report = persisted_from(500);
    assert_clean(&report);
    assert!(report.frontier_progress.checked > 0);
    fires_only(&persisted_from(600), CheckerName::FrontierProgress);
}

#[test]
fn what_is_due_is_capped_by_the_persisted_hwm_the_engine_showed() {
    // Persisted HWM 2: the engine writes 2, which is all that is due.
    let run = |word: u64| {
        let mut r = setup(Some(100));
        acked(&mut r, true);
        samples(&mut r, 2, 0, 300, word);
        r.report()
    };
    assert!(messages_of(&run(2), CheckerName::FrontierProgress).is_empty());
    assert_mentions(
        &messages_of(&run(1), CheckerName::FrontierProgress),
        &["offsets below 2 were acked", "still 1 at t=500ms"],
    );
}

#[test]
fn acks_of_offsets_not_delivered_in_the_incarnation_are_not_owed() {
    // The engine settles only leases of its own incarnation: an ack the history shows
    // with no delivery since the open is no evidence the frontier moved.
    let mut r = setup(Some(100));
    acked(&mut r, false);
    samples(&mut r, 3, 0, u64::MAX, 0);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::FrontierProgress).is_empty());
    assert_eq!(report.frontier_progress.checked, 0);
}

#[test]
fn a_word_above_the_loaded_frontier_is_owed_only_once_acks_pass_it() {
    // The open loaded 5 (acks of 0..3 were already below it): nothing new is due.
    let mut r = setup_loaded(Some(100), 5);
    acked(&mut r, true);
    samples(&mut r, 3, 5, u64::MAX, 5);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::FrontierProgress).is_empty());
    assert_eq!(report.frontier_progress.checked, 0);
}

#[test]
fn a_fault_the_engine_cannot_see_on_the_word_or_its_directory_leaves_it_unjudged() {
    // A lost write returns success: the engine takes the word as written and writes
    // again only when the frontier next moves.
    for file in [FileKind::ConsumerOffset, FileKind::Directory] {
        let mut r = setup(Some(100));
        r.h.fault(8, FaultKind::LostWrite { file }, Some(&tp(0)), None);
        acked(&mut r, true);
        samples(&mut r, 3, 0, u64::MAX, 0);
        let report = r.report();
        assert!(
            messages_of(&report, CheckerName::FrontierProgress).is_empty(),
            "{file:?}"
        );
        assert_eq!(report.frontier_progress.word_faulted.len(), 1);
    }
    // A failed write (the engine retries at the next interval), or a fault on another
    // file of the partition, leaves the word owed.
    for fault in [
        FaultKind::Enospc {
            file: FileKind::ConsumerOffset,
        },
        FaultKind::LostWrite {
            file: FileKind::Segment,
        },
    ] {
        let mut r = setup(Some(100));
        r.h.fault(8, fault, Some(&tp(0)), None);
        acked(&mut r, true);
        samples(&mut r, 3, 0, u64::MAX, 0);
        assert!(!messages_of(&r.report(), CheckerName::FrontierProgress).is_empty());
    }
}

#[test]
fn a_step_of_the_wall_clock_does_not_widen_the_bound_and_disk_latency_does() {
    // The persister measures its interval on the engine's monotonic clock.
    let mut r = setup(Some(100));
    r.h.fault(8, FaultKind::ClockStep { back_ms: 300 }, None, None);
    acked(&mut r, true);
    samples(&mut r, 3, 0, u64::MAX, 0);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::FrontierProgress),
        &["still 0 at t=500ms", "bound 360ms"],
    );
    // A disk that slept up to 150 ms per operation until the heal: two such sleeps
    // more, so a word read at 800 is judged first.
    let run = |from: u64| {
        let mut r = setup_on_disk(Some(100), 0, 150);
        acked(&mut r, true);
        samples(&mut r, 3, 0, from, 3);
        r.report()
    };
    assert!(messages_of(&run(800), CheckerName::FrontierProgress).is_empty());
    assert_mentions(
        &messages_of(&run(900), CheckerName::FrontierProgress),
        &["still 0 at t=800ms", "bound 660ms"],
    );
}

#[test]
fn owed_is_only_what_passed_the_word_the_open_read_counted_from_what_it_loaded() {
    // The open read word 3 and loaded 0 (clamped): the engine may take 3 as persisted
    // and write nothing until its frontier passes it.
    let mut r = setup(Some(100));
    r.h.frontier_loaded(6, &tp(0), 3, 0);
    acked(&mut r, true);
    samples(&mut r, 3, 0, u64::MAX, 0);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::FrontierProgress).is_empty());
    assert_eq!(report.frontier_progress.checked, 0);
    // The open read 1 and loaded 0: the run of acks starts at 0, so with offset 0 never
    // acked the engine's frontier stays at 0 and nothing is owed; acked too, 3 is.
    let run = |ack_first: bool| {
        let mut r = setup_loaded(Some(100), 0);
        r.h.frontier_loaded(6, &tp(0), 1, 0);
        for id in 1..=3 {
            let commit = r.t + 15;
            r.produce(id, 0, id - 1, commit)
                .deliver(id, 0, id - 1, commit);
            if ack_first || id > 1 {
                r.consume(0, id - 1);
            }
        }
        samples(&mut r, 3, 0, u64::MAX, 0);
        messages_of(&r.report(), CheckerName::FrontierProgress)
    };
    assert!(run(false).is_empty());
    assert_mentions(&run(true), &["offsets below 3 were acked"]);
}

#[test]
fn a_poisoned_partition_and_a_run_without_the_interval_are_not_judged() {
    let mut r = setup(Some(100));
    acked(&mut r, true);
    r.h.partition_poisoned(135, &tp(0));
    samples(&mut r, 3, 0, u64::MAX, 0);
    assert!(messages_of(&r.report(), CheckerName::FrontierProgress).is_empty());

    let mut r = setup(None);
    acked(&mut r, true);
    samples(&mut r, 3, 0, u64::MAX, 0);
    assert!(messages_of(&r.report(), CheckerName::FrontierProgress).is_empty());
}
