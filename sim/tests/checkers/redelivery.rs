//! `redelivered_after_expiry`: after the heal, an unsettled delivery comes back once
//! its lease can have expired, a nacked one at once, and every delivered record is in
//! the end acked.

use super::*;

/// Topic `orders` with leases of 300 ms; id 1 at offset 0 acknowledged, the heal, and
/// its delivery, which the consumer neither acks nor nacks.
fn dropped_after_heal() -> Run {
    let mut r = Run::with_setup(0, 0, 300);
    r.produce(1, 0, 0, 15).with(|t, h| {
        h.heal(t);
    });
    r.deliver(1, 0, 0, 15);
    r
}

#[test]
fn an_unsettled_delivery_comes_back_once_its_lease_expired() {
    // Lease 300 ms plus the bound of 100 ms: back after 200 ms is in time, after 600
    // ms late, and never is a hang.
    let run = |wait: u64| {
        let mut r = dropped_after_heal();
        r.wait(wait).deliver(1, 0, 0, 15).consume(0, 0);
        r.report()
    };
    assert_clean(&run(200));
    assert_mentions(
        &fires_only(&run(600), CheckerName::RedeliveredAfterExpiry),
        &[
            "orders/0 offset 0 delivered at t=",
            "never settled, delivered again only at t=",
            "lease plus 100 ms",
        ],
    );
    let mut never = dropped_after_heal();
    never.wait(1_000).hwm(0, 1, 1, 1);
    let report = never.report();
    assert_mentions(
        &fires_only(&report, CheckerName::RedeliveredAfterExpiry),
        &["never delivered again"],
    );
    let verdict = report.verdict(&never.h, &CONFIG);
    assert_eq!(verdict.exit_code(), EXIT_LIVENESS_FAILURE);
    // A history that ends before the deadline cannot tell.
    let mut early = dropped_after_heal();
    early.wait(100).hwm(0, 1, 1, 1);
    let report = early.report();
    assert!(messages_of(&report, CheckerName::RedeliveredAfterExpiry).is_empty());
    assert_eq!(report.redelivered_after_expiry.inconclusive, 1);
}

#[test]
fn a_nacked_delivery_comes_back_within_the_bound_not_the_lease() {
    let run = |wait: u64| {
        let mut r = dropped_after_heal();
        r.with(|t, h| {
            h.nack(t, &tp(0), 0);
        })
        .wait(wait)
        .deliver(1, 0, 0, 15)
        .consume(0, 0);
        r.report()
    };
    assert_clean(&run(50));
    // Within the lease, but 250 ms after the nack.
    assert_mentions(
        &fires_only(&run(250), CheckerName::RedeliveredAfterExpiry),
        &["orders/0 offset 0 nacked at t=", "delivered again only at"],
    );
    assert_eq!(run(50).redelivered_after_expiry.after_nack, 1);
}

/// Orders keeping segments 1,000 ms: id 1 at offset 0 of segment 0, delivered and
/// never acked; segment 2 seals it.
fn delivered_in_a_sealed_segment() -> Run {
    let mut r = Run::with_retention(1_000);
    r.segment(0, true)
        .opened(0, 0, 0)
        .committed(1, 0)
        .deliver(1, 0, 0, 35)
        .segment(2, true);
    r
}

#[test]
fn a_record_delivered_and_never_acked_is_a_hang_unless_a_reap_took_it() {
    // Delivered before the heal, dropped, and the crash after it ended the lease: the
    // frontier should have brought it back within the delivery bound (1,000 ms),
    // unless the reaper deleted its segment (sealed by segment 2, and aged) by then.
    let run = |reap_after: Option<(u64, u64)>| {
        let mut r = delivered_in_a_sealed_segment();
        r.crash(&[(0, 1, 1, 1)])
            .restart()
            .opened(0, 1, 1)
            .with(|t, h| {
                h.heal(t);
            });
        // The move of the log start, and the unlink `unlink` ms after it (a sweep
        // dropped part-way leaves it to the next).
        if let Some((wait, unlink)) = reap_after {
            r.wait(wait)
                .move_log_start(0, 2)
                .wait(unlink)
                .segment(0, false);
        }
        r.wait(1_500).hwm(0, 1, 1, 1);
        r.report()
    };
    assert_mentions(
        &fires_only(&run(None), CheckerName::RedeliveredAfterExpiry),
        &[
            "1 acknowledged record(s) on orders/0 delivered but never acked",
            "id 1 (last delivered t=",
        ],
    );
    assert_clean(&run(Some((950, 0))));
    // The engine forgot the record at the move: an unlink after the deadline is late
    // only when the move was.
    assert_clean(&run(Some((950, 300))));
    // A reap after the deadline came too late to excuse the hang.
    assert!(!messages_of(&run(Some((1_200, 0))), CheckerName::RedeliveredAfterExpiry).is_empty());
}

#[test]
fn a_reap_a_restart_undid_ends_no_redelivery() {
    // Id 1 delivered and never acked; a sweep moved the log start past it and was
    // dropped before its unlink; the crash after it left segment 0 on disk (listed
    // again) or not. Back on disk, the record is owed again after the heal.
    let run = |listed_again: bool| {
        let mut r = delivered_in_a_sealed_segment();
        r.wait(1_000)
            .move_log_start(0, 2)
            .crash(&[(0, 1, 1, 1)])
            .restart();
        let bases = if listed_again { vec![0, 2] } else { vec![2] };
        r.with(|t, h| {
            h.segments_listed(t, &tp(0), bases);
        })
        .opened(0, 1, 1)
        .with(|t, h| {
            h.heal(t);
        })
        .wait(1_500)
        .hwm(0, 1, 1, 1);
        r.report()
    };
    assert!(messages_of(&run(false), CheckerName::RedeliveredAfterExpiry).is_empty());
    assert_mentions(
        &messages_of(&run(true), CheckerName::RedeliveredAfterExpiry),
        &["delivered but never acked", "id 1 (last delivered t="],
    );
}

/// Ids 1-3 at offsets 0-2, all delivered, ids 1 and 2 acked; a crash hides offsets 1-2,
/// a flip destroys id 3's WAL entry and another its frame, and the open after it
/// announces `cut` when given; the heal, and 2 s pass. Id 3 is never acked.
fn delivered_then_both_copies_destroyed(cut: Option<u64>) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .consume(0, 0)
        .consume(0, 1)
        .crash(&[(0, 1, 3, 3)])
        .wal_entry_flipped(2, 3, 1)
        .fault(flip_above_hwm(2), Some(0))
        .restart();
    if let Some(offset) = cut {
        r.alarm(Some(0), super::loss::hole_at(offset));
    }
    r.with(|t, h| {
        h.frontier_observed(t, &tp(0), 1);
        h.heal(t);
    })
    .wait(2_000)
    .hwm(0, 1, 1, 1);
    r
}

#[test]
fn a_record_whose_copies_were_both_destroyed_after_its_delivery_owes_no_ack() {
    // Fresh quick seed 140012377: delivered, dropped, then both its WAL entry and its
    // frame destroyed at rest before any open could replay it; no engine can deliver
    // it again. The excuse rests on the engine's cut of the damaged frame.
    let report = delivered_then_both_copies_destroyed(Some(2)).report();
    assert!(
        messages_of(&report, CheckerName::RedeliveredAfterExpiry).is_empty(),
        "{:#?}",
        report.violations()
    );
    assert!(
        report
            .redelivered_after_expiry
            .excused
            .iter()
            .any(|e| e.kind == cafelog_sim::check::excuse::ExcuseKind::BothCopiesDamaged)
    );
    assert_mentions(
        &messages_of(
            &delivered_then_both_copies_destroyed(None).report(),
            CheckerName::RedeliveredAfterExpiry,
        ),
        &["delivered but never acked by any consumer: id 3"],
    );
}

#[test]
fn an_obligation_a_crash_ends_only_after_it_was_due_was_late() {
    // Dropped after the heal (lease 300 ms, bound 100 ms: due 400 ms later); a crash
    // before that ends the lease, one after it comes too late to excuse the hang.
    let run = |wait: u64| {
        let mut r = dropped_after_heal();
        r.wait(wait)
            .crash(&[(0, 1, 1, 1)])
            .restart()
            .hwm(0, 1, 1, 1);
        r.report()
    };
    assert!(messages_of(&run(200), CheckerName::RedeliveredAfterExpiry).is_empty());
    assert_mentions(
        &messages_of(&run(600), CheckerName::RedeliveredAfterExpiry),
        &["not delivered again before the crash"],
    );
}

#[test]
fn a_nack_after_the_heal_is_timed_whatever_delivery_it_settles() {
    // Delivered before the heal (untracked by the expiry rule), nacked after it: back
    // within the bound (100 ms), not only at the lease's end (300 ms).
    let run = |wait: u64| {
        let mut r = Run::with_setup(0, 0, 300);
        r.produce(1, 0, 0, 15).deliver(1, 0, 0, 15).with(|t, h| {
            h.heal(t);
        });
        r.with(|t, h| {
            h.nack(t, &tp(0), 0);
        })
        .wait(wait)
        .deliver(1, 0, 0, 15)
        .consume(0, 0)
        .wait(500)
        .hwm(0, 1, 1, 1);
        r.report()
    };
    assert!(messages_of(&run(50), CheckerName::RedeliveredAfterExpiry).is_empty());
    assert_mentions(
        &messages_of(&run(250), CheckerName::RedeliveredAfterExpiry),
        &["orders/0 offset 0 nacked at t=", "delivered again only at"],
    );
}

#[test]
fn a_late_ack_after_a_restart_settles_the_record_an_unclaimed_lease_carried() {
    // Fresh default seed 3908431805: id 63 delivered just before a process crash; after
    // the restart a receive whose consumer had given up leased offset 0 again (a
    // delivery no one claimed), and the first consumer's late ack settled that lease.
    let run = |unclaimed: Option<Option<u64>>| {
        let mut r = Run::with_setup(0, 0, 300);
        r.produce(1, 0, 0, 15)
            .deliver(1, 0, 0, 15)
            .process_crash(&[(0, 1, 1, 1)])
            .restart();
        if let Some(id) = unclaimed {
            let asked = r.now();
            r.wait(5).with(|t, h| {
                h.deliveries_unclaimed(t, &tp(0), vec![0], vec![id], asked);
            });
        }
        r.consume(0, 0)
            .with(|t, h| {
                h.heal(t);
            })
            .wait(2_000)
            .hwm(0, 1, 1, 1);
        r.report()
    };
    let settled = run(Some(Some(1)));
    assert!(
        settled.violations().is_empty(),
        "{:#?}",
        settled.violations()
    );
    // Without the lease, the engine accepted an ack it must refuse, and the delivery of
    // id 1 before the crash is still owed.
    let stale = run(None);
    assert_mentions(
        &messages_of(&stale, CheckerName::LeaseExclusive),
        &[
            "orders/0 offset 0: the engine accepted an ack",
            "no receive of incarnation 1 leased it",
        ],
    );
    assert_mentions(
        &messages_of(&stale, CheckerName::RedeliveredAfterExpiry),
        &["delivered but never acked by any consumer: id 1"],
    );
    // A lease whose payload named no id settles nothing for rule 3.
    let unknown = run(Some(None));
    assert!(messages_of(&unknown, CheckerName::LeaseExclusive).is_empty());
    assert_mentions(
        &messages_of(&unknown, CheckerName::RedeliveredAfterExpiry),
        &["delivered but never acked by any consumer: id 1"],
    );
}

#[test]
fn a_reap_in_a_later_incarnation_ends_a_delivery_every_crash_kept() {
    // Fresh default seed 3908438458: id 625 delivered and never acked; every crash kept
    // its offset below the persisted HWM; the reaper deleted its segment three
    // incarnations later, and a flip below it cut the world's decode at the unlink
    // short, so the deletion names no copy of it.
    // The crash leaves the persisted HWM and the durable tail `crash`; the open
    // reports HWM and tail `opened`.
    let run_held = |crash: (u64, u64), clamp: bool, opened: (u64, u64), held: Vec<HeldCopy>| {
        let mut r = delivered_in_a_sealed_segment();
        r.crash(&[(0, crash.0, crash.1, 1)])
            .restart()
            .opened(0, opened.0, opened.1);
        if clamp {
            r.alarm(
                Some(0),
                Alarm::Clamp {
                    persisted_hwm: 1,
                    hwm: 0,
                    lost: 1,
                },
            );
        }
        r.with(|t, h| {
            h.heal(t);
        })
        .wait(950)
        .move_log_start(0, 2)
        .with(move |t, h| {
            h.segment_deleted(t, &tp(0), 0, held);
        })
        .wait(1_500)
        .hwm(0, 1, 1, 1);
        r.report()
    };
    let run_with = |crash, clamp, opened| run_held(crash, clamp, opened, Vec::new());
    let run = |persisted: u64, clamp: bool| run_with((persisted, 1), clamp, (1, 1));
    let kept = run(1, false);
    assert!(
        messages_of(&kept, CheckerName::RedeliveredAfterExpiry).is_empty(),
        "{:#?}",
        kept.violations()
    );
    // In a hidden tail (the persisted HWM at the offset, the durable tail past it) the
    // open keeps the record where it is (storage-engine.md: new commits append past the
    // hidden tail), and the reap took it.
    let hidden = run_with((0, 1), false, (0, 1));
    assert!(
        messages_of(&hidden, CheckerName::RedeliveredAfterExpiry).is_empty(),
        "{:#?}",
        hidden.violations()
    );
    // The decode at the unlink names another record at the offset: the open wrote
    // there whatever tail it reported, and the delivered record was owed.
    let other = HeldCopy {
        offset: 0,
        id: 9,
        committed_at_ms: 0,
    };
    assert_mentions(
        &messages_of(
            &run_held((0, 1), false, (0, 1), vec![other]),
            CheckerName::RedeliveredAfterExpiry,
        ),
        &["delivered but never acked by any consumer: id 1"],
    );
    // At or past the durable tail the crash left the offset free, and the open may have
    // put another record there by the reap: the delivered one was owed.
    assert_mentions(
        &messages_of(
            &run_with((0, 0), false, (0, 0)),
            CheckerName::RedeliveredAfterExpiry,
        ),
        &["delivered but never acked by any consumer: id 1"],
    );
    // An open that kept a tail at or below the offset (whatever the crash said) may have
    // put another record there.
    assert_mentions(
        &messages_of(
            &run_with((1, 1), false, (0, 0)),
            CheckerName::RedeliveredAfterExpiry,
        ),
        &["delivered but never acked by any consumer: id 1"],
    );
    // A clamp at the open is its own excuse (the record may be gone), never the reap's.
    let clamped = run(1, true);
    assert!(messages_of(&clamped, CheckerName::RedeliveredAfterExpiry).is_empty());
    assert_eq!(clamped.redelivered_after_expiry.ended_by_engine, 0);
    assert_eq!(clamped.redelivered_after_expiry.excused.len(), 1);
}
